// Codec of the prediction artifacts; see predictions.hpp for the layout. The
// host is little-endian (x86-64, aarch64), so the arrays are copied as bytes.
#include "workers/torch/predictions.hpp"

#include <cstring>

namespace hpo::workers::torch_trainer {
namespace {

constexpr char kMagic[8] = {'H', 'P', 'O', 'P', 'R', 'E', 'D', '1'};
constexpr std::size_t kHeader = 32;

template <class T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <class T>
void put_array(std::string& out, const std::vector<T>& v) {
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}
template <class T>
T get(std::string_view b, std::size_t off) {
  T v;
  std::memcpy(&v, b.data() + off, sizeof v);
  return v;
}

}  // namespace

std::string encode_predictions(const PredictionMatrix& m) {
  std::string out;
  out.reserve(kHeader + m.values.size() * 4 + m.labels.size() * 4 + m.row_ids.size() * 8);
  out.append(kMagic, sizeof kMagic);
  put(out, static_cast<std::uint32_t>(m.regression ? 1 : 0));
  put(out, static_cast<std::uint32_t>(0));
  put(out, static_cast<std::uint64_t>(m.rows));
  put(out, static_cast<std::uint64_t>(m.cols));
  put_array(out, m.values);
  put_array(out, m.labels);
  put_array(out, m.row_ids);
  return out;
}

Result<PredictionMatrix> decode_predictions(std::string_view b) {
  auto bad = [](const std::string& why) {
    return Error{ErrorCode::kInvalidArgument, "prediction artifact: " + why, {}};
  };
  if (b.size() < kHeader || std::memcmp(b.data(), kMagic, sizeof kMagic) != 0)
    return bad("bad magic (not HPOPRED1)");
  PredictionMatrix m;
  auto kind = get<std::uint32_t>(b, 8);
  if (kind > 1) return bad("unknown kind " + std::to_string(kind));
  m.regression = kind == 1;
  auto rows = get<std::uint64_t>(b, 16), cols = get<std::uint64_t>(b, 24);
  if (rows > (1ULL << 32) || cols > (1ULL << 20)) return bad("implausible shape");
  if (b.size() != kHeader + rows * cols * 4 + rows * 4 + rows * 8)
    return bad("size " + std::to_string(b.size()) + " does not match " + std::to_string(rows) +
               "x" + std::to_string(cols));
  m.rows = static_cast<std::int64_t>(rows);
  m.cols = static_cast<std::int64_t>(cols);
  m.values.resize(rows * cols);
  m.labels.resize(rows);
  m.row_ids.resize(rows);
  std::size_t off = kHeader;
  std::memcpy(m.values.data(), b.data() + off, rows * cols * 4);
  off += rows * cols * 4;
  std::memcpy(m.labels.data(), b.data() + off, rows * 4);
  off += rows * 4;
  std::memcpy(m.row_ids.data(), b.data() + off, rows * 8);
  return m;
}

}  // namespace hpo::workers::torch_trainer
