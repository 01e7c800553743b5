// The readers of prediction_reader.hpp: one pass over the text (or the .npy
// bytes) into rows, then the same checks for both formats (row ids, targets,
// probabilities) in finish().
#include "ensemble/prediction_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/text.hpp"

namespace hpo::ensemble {
namespace {

constexpr double kSumTolerance = 0.01;
constexpr double kProbabilitySlack = 1e-6;

Error bad(std::string message) {
  return Error{ErrorCode::kInvalidArgument, std::move(message), {}};
}

// A value in an error message, in quotes and cut at 40 characters.
std::string quoted_value(std::string_view s) {
  if (s.size() > 40) return fmt::format("\"{}...\"", s.substr(0, 40));
  return fmt::format("\"{}\"", s);
}

using hpo::trim_field;

bool parse_double(std::string_view s, double& out) {
  return hpo::parse_field(s, out);
}

// Where a value came from, for the error message.
struct Origin {
  std::string file;
  bool csv = true;
  std::int64_t line = 0;              // csv: 1-based line; npy: 0-based row
  std::string at(int column) const {  // column: 1-based
    if (csv) return fmt::format("{}:{}:{}", file, line, column);
    return fmt::format("{}: row {}, column {}", file, line, column - 2);
  }
  std::string row() const {
    return csv ? fmt::format("{}:{}", file, line) : fmt::format("{}: row {}", file, line);
  }
};

struct RawRow {
  std::int64_t id = 0;
  double target = 0;
  std::vector<double> values;
  Origin origin;
};

std::string expected_rows(const PredictionShape& shape) {
  if (!shape.row_ids.empty())
    return fmt::format("{} rows (the member's out-of-bag rows in HPO_BAGGING_FILE)",
                       shape.row_ids.size());
  return fmt::format("{} rows{}", shape.rows,
                     shape.rows_field.empty() ? "" : " (" + shape.rows_field + ")");
}

// Stored as float32: a double past ±FLT_MAX would become infinite.
bool fits_float(double v) {
  return std::isfinite(v) && std::abs(v) <= std::numeric_limits<float>::max();
}

// Checks one row's target and values (the values are renormalised in place).
Status check_row(RawRow& r, const PredictionShape& shape, const std::string& target_file) {
  if (!fits_float(r.target))
    return bad(fmt::format("{}: the target must be a finite number within float range (±3.4e38)",
                           r.origin.csv ? r.origin.at(2) : target_file));
  if (!shape.regression) {
    if (r.target != std::floor(r.target) || r.target < 0 ||
        r.target >= static_cast<double>(shape.classes))
      return bad(fmt::format(
          "{}: expected a class in 0..{} as the target, got {}",
          r.origin.csv ? r.origin.at(2) : target_file + ", row " + std::to_string(r.origin.line),
          shape.classes - 1, r.target));
    double sum = 0;
    for (std::size_t c = 0; c < r.values.size(); ++c) {
      double p = r.values[c];
      if (!(p >= -kProbabilitySlack && p <= 1 + kProbabilitySlack))
        return bad(fmt::format("{}: expected a class probability in [0, 1], got {}",
                               r.origin.at(static_cast<int>(c) + 3), p));
      sum += std::clamp(p, 0.0, 1.0);
    }
    if (std::abs(sum - 1) > kSumTolerance)
      return bad(fmt::format("{}: the class probabilities sum to {:.6g}, expected 1 (within {})",
                             r.origin.row(), sum, kSumTolerance));
    for (double& p : r.values) p = std::clamp(p, 0.0, 1.0) / sum;
  } else {
    for (std::size_t c = 0; c < r.values.size(); ++c)
      if (!fits_float(r.values[c]))
        return bad(fmt::format("{}: expected a finite predicted value within float range, got {}",
                               r.origin.at(static_cast<int>(c) + 3), r.values[c]));
  }
  return {};
}

// Row ids, counts, then one PredictionFile ordered by row id.
Result<PredictionFile> finish(std::vector<RawRow> rows, const std::string& file,
                              const std::string& target_file, const PredictionShape& shape) {
  const auto want =
      shape.row_ids.empty() ? shape.rows : static_cast<std::int64_t>(shape.row_ids.size());
  std::map<std::int64_t, const RawRow*> by_id;
  for (auto& r : rows) {
    if (shape.row_ids.empty()) {
      if (r.id < 0 || r.id >= shape.rows)
        return bad(fmt::format("{}: row id {} is outside 0..{} ({})",
                               r.origin.csv ? r.origin.at(1) : r.origin.row(), r.id, shape.rows - 1,
                               expected_rows(shape)));
    } else if (!std::binary_search(shape.row_ids.begin(), shape.row_ids.end(), r.id)) {
      return bad(
          fmt::format("{}: row {} is not one of the member's out-of-bag rows "
                      "(HPO_BAGGING_FILE oob_rows)",
                      r.origin.csv ? r.origin.at(1) : r.origin.row(), r.id));
    }
    auto [it, fresh] = by_id.emplace(r.id, &r);
    if (!fresh)
      return bad(fmt::format("{}: row id {} appears twice (first at {})",
                             r.origin.csv ? r.origin.at(1) : r.origin.row(), r.id,
                             it->second->origin.row()));
    if (auto st = check_row(r, shape, target_file); !st) return st.error();
  }
  if (static_cast<std::int64_t>(rows.size()) != want) {
    std::string missing;
    if (static_cast<std::int64_t>(rows.size()) < want) {
      for (std::int64_t k = 0; k < want; ++k) {
        std::int64_t id = shape.row_ids.empty() ? k : shape.row_ids[static_cast<std::size_t>(k)];
        if (!by_id.count(id)) {
          missing = fmt::format("; row id {} is missing", id);
          break;
        }
      }
    }
    return bad(fmt::format("{}: {} rows, expected {}{}", file, rows.size(), expected_rows(shape),
                           missing));
  }
  PredictionFile out;
  out.regression = shape.regression;
  const std::int64_t cols = shape.regression ? 1 : shape.classes;
  out.values = Matrix(want, cols);
  out.labels.reserve(static_cast<std::size_t>(want));
  out.row_ids.reserve(static_cast<std::size_t>(want));
  std::int64_t i = 0;
  for (const auto& [id, r] : by_id) {
    for (std::int64_t c = 0; c < cols; ++c)
      out.values(i, c) = static_cast<float>(r->values[static_cast<std::size_t>(c)]);
    out.labels.push_back(static_cast<float>(r->target));
    out.row_ids.push_back(id);
    ++i;
  }
  return out;
}

}  // namespace

Result<PredictionFile> read_prediction_csv(std::string_view text, const std::string& file,
                                           const PredictionShape& shape) {
  const std::size_t cols = shape.regression ? 1 : static_cast<std::size_t>(shape.classes);
  const std::size_t fields = 2 + cols;
  std::vector<RawRow> rows;
  std::int64_t line_no = 0;
  bool header = false;
  std::vector<std::string_view> parts;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    if (trim_field(line).empty()) continue;
    parts.clear();
    std::size_t start = 0;
    while (true) {
      auto comma = line.find(',', start);
      parts.push_back(trim_field(line.substr(start, comma - start)));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (!header) {
      header = true;
      if (parts.size() < 2 || parts[0] != "row_id" || parts[1] != "target")
        return bad(fmt::format("{}:{}:1: expected the header row_id,target,{}, got {}", file,
                               line_no, shape.regression ? "value" : "p0,p1,...",
                               quoted_value(line)));
      if (parts.size() != fields)
        return bad(fmt::format(
            "{}:{}: the header has {} columns, expected {} (row_id, target "
            "and {})",
            file, line_no, parts.size(), fields,
            shape.regression ? "the value" : fmt::format("{} class probabilities", cols)));
      continue;
    }
    Origin origin{file, true, line_no};
    if (parts.size() != fields)
      return bad(fmt::format("{}: {} columns, expected {} as in the header", origin.row(),
                             parts.size(), fields));
    RawRow r;
    r.origin = origin;
    double id = 0;
    if (!parse_double(parts[0], id) || id != std::floor(id) || std::abs(id) > 9.0e15)
      return bad(fmt::format("{}: expected an integer row id, got {}", origin.at(1),
                             quoted_value(parts[0])));
    r.id = static_cast<std::int64_t>(id);
    if (!parse_double(parts[1], r.target))
      return bad(fmt::format("{}: expected a number as the target, got {}", origin.at(2),
                             quoted_value(parts[1])));
    r.values.resize(cols);
    for (std::size_t c = 0; c < cols; ++c)
      if (!parse_double(parts[2 + c], r.values[c]))
        return bad(fmt::format("{}: expected a number, got {}", origin.at(static_cast<int>(c) + 3),
                               quoted_value(parts[2 + c])));
    rows.push_back(std::move(r));
    const auto limit =
        shape.row_ids.empty() ? shape.rows : static_cast<std::int64_t>(shape.row_ids.size());
    if (static_cast<std::int64_t>(rows.size()) > limit)
      return bad(
          fmt::format("{}: more rows than the {} expected", origin.row(), expected_rows(shape)));
  }
  if (!header) return bad(fmt::format("{}: the file is empty (expected a header line)", file));
  return finish(std::move(rows), file, file, shape);
}

Result<NpyArray> read_npy(std::string_view b, const std::string& file) {
  static constexpr char kMagic[] = "\x93NUMPY";
  if (b.size() < 10 || std::memcmp(b.data(), kMagic, 6) != 0)
    return bad(file + ": not a NumPy .npy file (bad magic)");
  const auto major = static_cast<unsigned char>(b[6]);
  std::size_t header_len = 0, off = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(b[8]) | (static_cast<unsigned char>(b[9]) << 8);
    off = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) return bad(file + ": truncated .npy header");
    std::uint32_t len = 0;
    std::memcpy(&len, b.data() + 8, 4);
    header_len = len;
    off = 12;
  } else {
    return bad(fmt::format("{}: .npy format version {} is not supported (1 to 3)", file, major));
  }
  if (b.size() < off + header_len) return bad(file + ": truncated .npy header");
  std::string_view h = b.substr(off, header_len);
  off += header_len;
  auto value_of = [&](std::string_view key) -> std::string_view {
    auto k = h.find(key);
    if (k == std::string_view::npos) return {};
    auto colon = h.find(':', k);
    if (colon == std::string_view::npos) return {};
    return trim_field(h.substr(colon + 1));
  };
  std::string_view descr = value_of("'descr'");
  std::string dtype;
  if (descr.size() >= 2 && (descr[0] == '\'' || descr[0] == '"')) {
    auto end = descr.find(descr[0], 1);
    if (end != std::string_view::npos) dtype = std::string(descr.substr(1, end - 1));
  }
  int size = 0;
  if (dtype == "<f4" || dtype == "<i4") size = 4;
  if (dtype == "<f8" || dtype == "<i8") size = 8;
  if (dtype == "|u1" || dtype == "|i1" || dtype == "|b1") size = 1;
  if (size == 0)
    return bad(
        fmt::format("{}: dtype {} is not supported (float32, float64, int8/32/64, uint8, "
                    "bool, little-endian)",
                    file, quoted_value(dtype)));
  if (!value_of("'fortran_order'").starts_with("False"))
    return bad(file + ": a Fortran-order array; save it in C order (np.ascontiguousarray)");
  std::string_view shape_text = value_of("'shape'");
  if (shape_text.empty() || shape_text[0] != '(')
    return bad(file + ": the .npy header has no shape");
  NpyArray out;
  std::size_t close = shape_text.find(')');
  if (close == std::string_view::npos) return bad(file + ": the .npy header's shape is malformed");
  std::string_view dims = shape_text.substr(1, close - 1);
  std::size_t count = 1;
  while (!trim_field(dims).empty()) {
    auto comma = dims.find(',');
    std::string_view d = trim_field(dims.substr(0, comma));
    if (!d.empty()) {
      double v = 0;
      if (!parse_double(d, v) || v < 0 || v != std::floor(v) || v > 1e12)
        return bad(fmt::format("{}: the .npy shape has a bad dimension {}", file, quoted_value(d)));
      out.shape.push_back(static_cast<std::int64_t>(v));
      count *= static_cast<std::size_t>(v);
      if (count > (std::size_t{1} << 32)) return bad(file + ": the .npy array is too large");
    }
    if (comma == std::string_view::npos) break;
    dims = dims.substr(comma + 1);
  }
  if (b.size() - off != count * static_cast<std::size_t>(size))
    return bad(fmt::format("{}: {} bytes of data, the header's shape and dtype need {}", file,
                           b.size() - off, count * static_cast<std::size_t>(size)));
  out.data.resize(count);
  const char* p = b.data() + off;
  for (std::size_t i = 0; i < count; ++i, p += size) {
    if (dtype == "<f4") {
      float v;
      std::memcpy(&v, p, 4);
      out.data[i] = v;
    } else if (dtype == "<f8") {
      std::memcpy(&out.data[i], p, 8);
    } else if (dtype == "<i4") {
      std::int32_t v;
      std::memcpy(&v, p, 4);
      out.data[i] = v;
    } else if (dtype == "<i8") {
      std::int64_t v;
      std::memcpy(&v, p, 8);
      out.data[i] = static_cast<double>(v);
    } else if (dtype == "|i1") {
      out.data[i] = static_cast<signed char>(*p);
    } else {
      out.data[i] = static_cast<unsigned char>(*p);
    }
  }
  return out;
}

Result<PredictionFile> read_prediction_npy(std::string_view values, const std::string& values_file,
                                           std::string_view targets,
                                           const std::string& targets_file,
                                           const PredictionShape& shape) {
  auto v = read_npy(values, values_file);
  if (!v) return v.error();
  auto t = read_npy(targets, targets_file);
  if (!t) return t.error();
  const std::int64_t cols = shape.regression ? 1 : shape.classes;
  const auto want =
      shape.row_ids.empty() ? shape.rows : static_cast<std::int64_t>(shape.row_ids.size());
  auto shape_text = [](const std::vector<std::int64_t>& s) {
    return s.size() == 1 ? fmt::format("({},)", s[0]) : fmt::format("({})", fmt::join(s, ", "));
  };
  bool ok_shape =
      (v->shape.size() == 2 && v->shape[1] == cols) || (shape.regression && v->shape.size() == 1);
  if (!ok_shape || v->shape[0] != want)
    return bad(fmt::format(
        "{}: shape {}, expected ({}, {}){}: {}", values_file, shape_text(v->shape), want, cols,
        shape.regression ? fmt::format(" or ({},)", want) : "", expected_rows(shape)));
  if (t->shape.size() != 1 || t->shape[0] != want)
    return bad(fmt::format("{}: shape {}, expected ({},): one target per row of {}", targets_file,
                           shape_text(t->shape), want, values_file));
  std::vector<RawRow> rows(static_cast<std::size_t>(want));
  for (std::int64_t i = 0; i < want; ++i) {
    auto& r = rows[static_cast<std::size_t>(i)];
    r.id = shape.row_ids.empty() ? i : shape.row_ids[static_cast<std::size_t>(i)];
    r.target = t->data[static_cast<std::size_t>(i)];
    r.values.assign(v->data.begin() + i * cols, v->data.begin() + (i + 1) * cols);
    r.origin = Origin{values_file, false, i};
  }
  return finish(std::move(rows), values_file, targets_file, shape);
}

}  // namespace hpo::ensemble
