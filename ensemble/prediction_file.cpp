// Codec of the prediction file; see prediction_file.hpp for the layout. The
// host is little-endian (x86-64, aarch64), so the arrays are copied as bytes.
#include "ensemble/prediction_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

namespace hpo::ensemble {
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

Targets PredictionFile::targets() const {
  return targets_of(regression, labels);
}

Targets targets_of(bool regression, const std::vector<float>& labels) {
  if (regression) {
    Matrix m(static_cast<std::int64_t>(labels.size()), 1);
    for (std::size_t i = 0; i < labels.size(); ++i) m.data[i] = labels[i];
    return Targets::regression(std::move(m));
  }
  std::vector<int> classes(labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i)
    classes[i] = static_cast<int>(std::lround(labels[i]));
  return Targets::classes(std::move(classes));
}

std::string encode_prediction_file(const PredictionFile& f) {
  std::string out;
  out.reserve(kHeader + f.values.data.size() * 4 + f.labels.size() * 4 + f.row_ids.size() * 8);
  out.append(kMagic, sizeof kMagic);
  put(out, static_cast<std::uint32_t>(f.regression ? 1 : 0));
  put(out, static_cast<std::uint32_t>(0));
  put(out, static_cast<std::uint64_t>(f.values.rows));
  put(out, static_cast<std::uint64_t>(f.values.cols));
  put_array(out, f.values.data);
  put_array(out, f.labels);
  put_array(out, f.row_ids);
  return out;
}

Result<PredictionFileReader> PredictionFileReader::open(ReadAt read, std::int64_t size,
                                                        std::string what) {
  char header[kHeader];
  if (size < static_cast<std::int64_t>(kHeader))
    return Error::invalid(what, "prediction artifact: bad magic (not HPOPRED1)");
  if (auto st = read(0, kHeader, header); !st) return st.error();
  const std::string_view b(header, kHeader);
  if (std::memcmp(b.data(), kMagic, sizeof kMagic) != 0)
    return Error::invalid(what, "prediction artifact: bad magic (not HPOPRED1)");
  auto kind = get<std::uint32_t>(b, 8);
  if (kind > 1)
    return Error::invalid(what, "prediction artifact: unknown kind " + std::to_string(kind));
  auto rows = get<std::uint64_t>(b, 16), cols = get<std::uint64_t>(b, 24);
  if (rows > (1ULL << 32) || cols > (1ULL << 20))
    return Error::invalid(what, "prediction artifact: implausible shape");
  if (static_cast<std::uint64_t>(size) != kHeader + rows * cols * 4 + rows * 4 + rows * 8)
    return Error::invalid(what, "prediction artifact: size " + std::to_string(size) +
                                    " does not match " + std::to_string(rows) + "x" +
                                    std::to_string(cols));
  PredictionFileReader r;
  r.read_ = std::move(read);
  r.what_ = std::move(what);
  r.regression_ = kind == 1;
  r.rows_ = static_cast<std::int64_t>(rows);
  r.cols_ = static_cast<std::int64_t>(cols);
  return r;
}

Status PredictionFileReader::read_rows(std::int64_t first, std::int64_t count, Matrix& values,
                                       std::vector<float>* labels,
                                       std::vector<std::int64_t>* row_ids) const {
  first = std::clamp<std::int64_t>(first, 0, rows_);
  count = std::clamp<std::int64_t>(count, 0, rows_ - first);
  values.rows = count;
  values.cols = cols_;
  values.data.resize(static_cast<std::size_t>(count * cols_));
  const std::int64_t labels_at = kHeader + rows_ * cols_ * 4;
  const std::int64_t ids_at = labels_at + rows_ * 4;
  if (count == 0) {
    if (labels) labels->clear();
    if (row_ids) row_ids->clear();
    return {};
  }
  if (auto st = read_(kHeader + first * cols_ * 4, count * cols_ * 4,
                      reinterpret_cast<char*>(values.data.data()));
      !st)
    return st;
  if (labels) {
    labels->resize(static_cast<std::size_t>(count));
    if (auto st = read_(labels_at + first * 4, count * 4, reinterpret_cast<char*>(labels->data()));
        !st)
      return st;
  }
  if (row_ids) {
    row_ids->resize(static_cast<std::size_t>(count));
    if (auto st = read_(ids_at + first * 8, count * 8, reinterpret_cast<char*>(row_ids->data()));
        !st)
      return st;
  }
  return {};
}

Result<PredictionFile> PredictionFileReader::read_all() const {
  PredictionFile f;
  f.regression = regression_;
  if (auto st = read_rows(0, rows_, f.values, &f.labels, &f.row_ids); !st) return st.error();
  return f;
}

ReadAt read_from(std::shared_ptr<const std::string> bytes) {
  return [bytes = std::move(bytes)](std::int64_t offset, std::int64_t size, char* out) -> Status {
    if (offset < 0 || size < 0 || offset + size > static_cast<std::int64_t>(bytes->size()))
      return Error::invalid("range", "bytes " + std::to_string(offset) + ".." +
                                         std::to_string(offset + size) + " of " +
                                         std::to_string(bytes->size()));
    std::memcpy(out, bytes->data() + offset, static_cast<std::size_t>(size));
    return {};
  };
}

Result<PredictionFile> decode_prediction_file(std::string_view b) {
  auto bad = [](const std::string& why) {
    return Error{ErrorCode::kInvalidArgument, "prediction artifact: " + why, {}};
  };
  if (b.size() < kHeader || std::memcmp(b.data(), kMagic, sizeof kMagic) != 0)
    return bad("bad magic (not HPOPRED1)");
  PredictionFile f;
  auto kind = get<std::uint32_t>(b, 8);
  if (kind > 1) return bad("unknown kind " + std::to_string(kind));
  f.regression = kind == 1;
  auto rows = get<std::uint64_t>(b, 16), cols = get<std::uint64_t>(b, 24);
  if (rows > (1ULL << 32) || cols > (1ULL << 20)) return bad("implausible shape");
  if (b.size() != kHeader + rows * cols * 4 + rows * 4 + rows * 8)
    return bad("size " + std::to_string(b.size()) + " does not match " + std::to_string(rows) +
               "x" + std::to_string(cols));
  f.values = Matrix(static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols));
  f.labels.resize(rows);
  f.row_ids.resize(rows);
  std::size_t off = kHeader;
  std::memcpy(f.values.data.data(), b.data() + off, rows * cols * 4);
  off += rows * cols * 4;
  std::memcpy(f.labels.data(), b.data() + off, rows * 4);
  off += rows * 4;
  std::memcpy(f.row_ids.data(), b.data() + off, rows * 8);
  return f;
}

}  // namespace hpo::ensemble
