// Reading IDX and CSV files into Tables. Errors name the file and, for CSV,
// the line and column: a user reading a failed trial's reason must be able
// to fix the file. hpo-predict reads through the same functions, so a file is
// read for prediction exactly as it was for training.
#include "workers/torch/dataset.hpp"

#include <zlib.h>

#include <sys/stat.h>

#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "core/text.hpp"
#include "workers/torch/dataset_error.hpp"

namespace hpo::workers::torch_trainer {
namespace {

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::uint32_t be32(const std::string& s, std::size_t off) {
  auto b = [&](std::size_t i) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(s[off + i]));
  };
  return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
}

}  // namespace

// Whole file, gunzipped when it is gzip (gzread passes plain files through).
Result<std::string> read_maybe_gz(const std::string& path) {
  if (!file_exists(path)) return data_error("data file '" + path + "' does not exist");
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return data_error("cannot open data file '" + path + "'");
  gzbuffer(f, 1 << 20);
  std::string out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  int err = 0;
  std::string msg = n < 0 ? gzerror(f, &err) : "";
  gzclose(f);
  if (n < 0) return data_error("cannot read '" + path + "': " + msg);
  return out;
}

// IDX header: magic 0x00 0x00 type ndims, then ndims big-endian sizes.
Result<std::vector<std::int64_t>> idx_dims(const std::string& s, const std::string& path,
                                           int want_dims) {
  if (s.size() < 4 || s[0] != 0 || s[1] != 0)
    return data_error("'" + path + "' is not an IDX file (bad magic number)");
  if (static_cast<unsigned char>(s[2]) != 0x08)
    return data_error("'" + path + "': only unsigned-byte IDX files are supported");
  int nd = static_cast<unsigned char>(s[3]);
  if (nd != want_dims)
    return data_error("'" + path + "' has " + std::to_string(nd) + " dimensions, expected " +
                      std::to_string(want_dims));
  if (s.size() < 4 + 4 * static_cast<std::size_t>(nd))
    return data_error("'" + path + "' is truncated (header)");
  std::vector<std::int64_t> dims;
  // The sizes come from the file: the product is checked against the bytes
  // present as it grows, so four sizes near 2^32 cannot overflow it.
  const std::size_t header = 4 + 4 * static_cast<std::size_t>(nd);
  const auto payload = static_cast<std::int64_t>(s.size() - header);
  std::int64_t total = 1;
  bool too_big = false;
  for (int i = 0; i < nd; ++i) {
    dims.push_back(be32(s, 4 + 4 * i));
    if (dims.back() == 0) {
      return data_error("'" + path + "' has a dimension of size 0");
    }
    too_big = too_big || total > payload / dims.back();
    if (!too_big) total *= dims.back();
  }
  if (too_big || s.size() != header + static_cast<std::size_t>(total))
    return data_error("'" + path + "' is truncated or has trailing bytes (expected " +
                      std::to_string(total) + " values)");
  return dims;
}

// Splits one CSV line (RFC 4180 quotes, no embedded newlines) into `out`.
void split_csv(std::string_view line, std::vector<std::string_view>& out, std::string& scratch) {
  out.clear();
  scratch.clear();
  if (line.find('"') == std::string_view::npos) {
    std::size_t start = 0;
    while (true) {
      std::size_t c = line.find(',', start);
      out.push_back(line.substr(start, c == std::string_view::npos ? line.npos : c - start));
      if (c == std::string_view::npos) break;
      start = c + 1;
    }
    return;
  }
  // Quoted fields are unescaped into `scratch` (reserved up front: views stay valid).
  scratch.reserve(line.size());
  std::size_t i = 0;
  while (true) {
    std::size_t begin = scratch.size();
    if (i < line.size() && line[i] == '"') {
      ++i;
      while (i < line.size()) {
        if (line[i] == '"' && i + 1 < line.size() && line[i + 1] == '"') {
          scratch += '"';
          i += 2;
        } else if (line[i] == '"') {
          ++i;
          break;
        } else {
          scratch += line[i++];
        }
      }
      while (i < line.size() && line[i] != ',') scratch += line[i++];
    } else {
      while (i < line.size() && line[i] != ',') scratch += line[i++];
    }
    out.push_back(std::string_view(scratch).substr(begin));
    if (i >= line.size()) break;
    ++i;  // the comma
  }
}

using hpo::trim_field;

bool parse_float(std::string_view s, float& out) {
  return hpo::parse_field(s, out) && std::isfinite(out);
}

namespace {

// The header row: the feature columns' names go to t.columns, the target's
// position among the fields to target_col.
Status read_csv_header(const std::vector<std::string_view>& fields, const std::string& path,
                       const std::string& target, Table& t, std::int64_t& target_col) {
  const std::size_t ncols = fields.size();
  for (std::size_t c = 0; c < fields.size(); ++c) {
    std::string name(trim_field(fields[c]));
    if (name == target && target_col >= 0)
      return data_error("'" + path + "' has the target column '" + target + "' twice");
    if (name == target)
      target_col = static_cast<std::int64_t>(c);
    else
      t.columns.push_back(std::move(name));
  }
  // File contents are never quoted in errors (which anyone reading the
  // sweep sees): a path that names some other file must not leak it. Column
  // names are quoted only once the header proved to be a dataset's.
  if (target_col < 0)
    return data_error("'" + path + "' has no column '" + target + "' (the target) among its " +
                      std::to_string(ncols) + " header fields");
  if (t.columns.empty()) return data_error("'" + path + "' has no feature columns");
  return {};
}

// Classification targets into t.y as class indices.
Status map_class_labels(Table& t, const std::vector<std::string>& target_text,
                        const std::vector<std::int64_t>& target_line, const std::string& path,
                        const std::vector<std::string>* classes) {
  // Class labels: integers as they are, unless text labels are in play.
  bool numeric = !classes || classes->empty();
  for (const auto& s : target_text) {
    if (!numeric) break;
    std::int64_t v = -1;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    numeric = ec == std::errc() && p == s.data() + s.size() && v >= 0 && v < (1 << 20);
  }
  t.y.reserve(target_text.size());
  if (numeric) {
    for (const auto& s : target_text) t.y.push_back(static_cast<float>(std::stoll(s)));
    return {};
  }
  if (classes && !classes->empty()) {
    t.classes = *classes;
  } else {
    std::set<std::string> distinct(target_text.begin(), target_text.end());
    t.classes.assign(distinct.begin(), distinct.end());
  }
  std::map<std::string, float> index;
  for (std::size_t i = 0; i < t.classes.size(); ++i) index[t.classes[i]] = static_cast<float>(i);
  for (std::size_t i = 0; i < target_text.size(); ++i) {
    auto it = index.find(target_text[i]);
    if (it == index.end())
      return data_error("'" + path + "' line " + std::to_string(target_line[i]) +
                        ": its class does not occur in the training file");
    t.y.push_back(it->second);
  }
  return {};
}

}  // namespace

std::int64_t Table::features() const {
  std::int64_t f = 1;
  for (auto d : sample_shape) f *= d;
  return f;
}

Result<Table> read_idx(const std::string& images_path, const std::string& labels_path) {
  auto images = read_maybe_gz(images_path);
  if (!images) return images.error();
  auto labels = read_maybe_gz(labels_path);
  if (!labels) return labels.error();
  return parse_idx(*images, *labels, images_path, labels_path);
}

Result<Table> parse_idx(const std::string& images, const std::string& labels,
                        const std::string& images_path, const std::string& labels_path) {
  auto idims = idx_dims(images, images_path, 3);
  if (!idims) return idims.error();
  auto ldims = idx_dims(labels, labels_path, 1);
  if (!ldims) return ldims.error();
  if ((*idims)[0] != (*ldims)[0])
    return data_error("'" + images_path + "' has " + std::to_string((*idims)[0]) + " images but '" +
                      labels_path + "' has " + std::to_string((*ldims)[0]) + " labels");
  Table t;
  t.rows = (*idims)[0];
  t.sample_shape = {1, (*idims)[1], (*idims)[2]};
  const auto* px = reinterpret_cast<const unsigned char*>(images.data()) + 16;
  t.x.resize(static_cast<std::size_t>(t.rows * t.features()));
  for (std::size_t i = 0; i < t.x.size(); ++i) t.x[i] = static_cast<float>(px[i]) / 255.0f;
  const auto* lb = reinterpret_cast<const unsigned char*>(labels.data()) + 8;
  t.y.assign(lb, lb + t.rows);
  return t;
}

Result<Table> read_csv(const std::string& path, const std::string& target, bool classification,
                       const std::vector<std::string>* classes) {
  auto text = read_maybe_gz(path);
  if (!text) return text.error();
  return parse_csv(*text, path, target, classification, classes);
}

Result<Table> parse_csv(std::string_view text, const std::string& path, const std::string& target,
                        bool classification, const std::vector<std::string>* classes) {
  std::string_view all(text);
  std::vector<std::string_view> fields;
  std::string scratch;
  Table t;
  std::int64_t target_col = -1;
  std::size_t ncols = 0;
  std::vector<std::string> target_text;  // classification labels, mapped at the end
  std::vector<std::int64_t> target_line;
  std::int64_t line_no = 0;
  bool header = true;
  while (!all.empty()) {
    std::size_t nl = all.find('\n');
    std::string_view line = all.substr(0, nl);
    all.remove_prefix(nl == std::string_view::npos ? all.size() : nl + 1);
    ++line_no;
    if (trim_field(line).empty()) continue;
    split_csv(line, fields, scratch);
    auto where = [&] { return "'" + path + "' line " + std::to_string(line_no); };
    if (header) {
      header = false;
      ncols = fields.size();
      if (auto st = read_csv_header(fields, path, target, t, target_col); !st) return st.error();
      continue;
    }
    if (fields.size() != ncols)
      return data_error(where() + ": " + std::to_string(fields.size()) +
                        " fields, the header has " + std::to_string(ncols));
    for (std::size_t c = 0; c < fields.size(); ++c) {
      if (static_cast<std::int64_t>(c) == target_col) continue;
      float v = 0;
      if (!parse_float(fields[c], v)) {
        std::size_t fi = c - (static_cast<std::int64_t>(c) > target_col ? 1 : 0);
        return data_error(where() + ": column '" + t.columns[fi] + "': the value is not a number");
      }
      t.x.push_back(v);
    }
    std::string_view tv = trim_field(fields[static_cast<std::size_t>(target_col)]);
    if (classification) {
      target_text.emplace_back(tv);
      target_line.push_back(line_no);
    } else {
      float v = 0;
      if (!parse_float(tv, v))
        return data_error(where() + ": target '" + target +
                          "': the value is not a number (task regression)");
      t.y.push_back(v);
    }
    ++t.rows;
  }
  if (header) return data_error("'" + path + "' is empty (expected a header row)");
  if (t.rows == 0) return data_error("'" + path + "' has a header but no rows");
  t.sample_shape = {static_cast<std::int64_t>(t.columns.size())};
  if (!classification) return t;
  if (auto st = map_class_labels(t, target_text, target_line, path, classes); !st)
    return st.error();
  return t;
}

}  // namespace hpo::workers::torch_trainer
