// Reading IDX and CSV files, and the per-trial preparation (subset, split,
// standardisation). Errors name the file and, for CSV, the line and column:
// a user reading a failed trial's reason must be able to fix the file.
#include "workers/torch/dataset.hpp"

#include <zlib.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "core/hash.hpp"
#include "core/log.hpp"
#include "core/text.hpp"
#include "ensemble/rng.hpp"
#include "trials/data_roots.hpp"

namespace hpo::workers::torch_trainer {
namespace {

Error data_error(std::string message) {
  return Error{ErrorCode::kInvalidArgument, std::move(message), {}};
}

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
    return t;
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
  return t;
}

namespace {

// Rows of row-major features x (f per row) and targets y; row_ids[r] names
// row r in the source file (null: r itself). Appends, so no byte is written
// twice (a zero-filled resize first would double the time for image data).
Split gather_rows(const float* x, const float* y, const std::int64_t* row_ids, std::int64_t f,
                  const std::vector<std::int64_t>& rows) {
  Split out;
  out.rows = static_cast<std::int64_t>(rows.size());
  out.x.reserve(rows.size() * static_cast<std::size_t>(f));
  out.y.reserve(rows.size());
  out.row_ids.reserve(rows.size());
  for (std::int64_t r : rows) {
    out.x.insert(out.x.end(), x + r * f, x + (r + 1) * f);
    out.y.push_back(y[r]);
    out.row_ids.push_back(row_ids ? row_ids[r] : r);
  }
  return out;
}

}  // namespace

Split gather(const Split& s, const std::vector<std::int64_t>& rows) {
  const std::int64_t f = s.rows ? static_cast<std::int64_t>(s.x.size()) / s.rows : 0;
  return gather_rows(s.x.data(), s.y.data(), s.row_ids.data(), f, rows);
}

void select_features(PreparedData& data, const std::vector<std::int64_t>& columns) {
  const std::int64_t f = data.sample_shape.empty() ? 0 : data.sample_shape[0];
  const std::int64_t k = static_cast<std::int64_t>(columns.size());
  for (Split* s : {&data.train, &data.validation, &data.test, &data.oob}) {
    std::vector<float> x(static_cast<std::size_t>(s->rows * k));
    for (std::int64_t r = 0; r < s->rows; ++r)
      for (std::int64_t c = 0; c < k; ++c) x[r * k + c] = s->x[r * f + columns[c]];
    s->x = std::move(x);
  }
  if (data.mean.size() == static_cast<std::size_t>(f)) {
    std::vector<float> mean, inv_std;
    for (auto c : columns) {
      mean.push_back(data.mean[c]);
      inv_std.push_back(data.inv_std[c]);
    }
    data.mean = std::move(mean);
    data.inv_std = std::move(inv_std);
  }
  data.sample_shape = {k};
}

std::shared_ptr<const Table> DatasetCache::find(const std::string& key) {
  std::lock_guard lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->first == key) {
      entries_.splice(entries_.begin(), entries_, it);
      return entries_.front().second;
    }
  return nullptr;
}

std::shared_ptr<const Table> DatasetCache::insert(const std::string& key, Table table,
                                                  bool from_disk) {
  std::lock_guard lock(mu_);
  ++(from_disk ? disk_reads_ : loads_);
  for (const auto& [k, v] : entries_)
    if (k == key) return v;
  entries_.emplace_front(key, std::make_shared<const Table>(std::move(table)));
  while (entries_.size() > max_entries_) entries_.pop_back();
  return entries_.front().second;
}

std::size_t DatasetCache::loads() const {
  std::lock_guard lock(mu_);
  return loads_;
}

std::size_t DatasetCache::disk_reads() const {
  std::lock_guard lock(mu_);
  return disk_reads_;
}

namespace {

constexpr std::string_view kTableMagic = "HPO-TABLE\n";
constexpr std::uint32_t kTableVersion = 1;

// The little-endian, fixed-width pieces of the table format.
class Writer {
 public:
  void u64(std::uint64_t v) { raw(&v, sizeof v); }
  void str(const std::string& s) {
    u64(s.size());
    out_ += s;
  }
  void raw(const void* p, std::size_t n) {
    if (n) out_.append(static_cast<const char*>(p), n);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool u64(std::uint64_t& v) { return raw(&v, sizeof v); }
  bool str(std::string& s) {
    std::uint64_t n = 0;
    if (!u64(n) || n > in_.size()) return false;
    s.assign(in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  bool raw(void* p, std::size_t n) {
    if (n > in_.size()) return false;
    if (n == 0) return true;  // p may be an empty vector's null data()
    std::memcpy(p, in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  std::size_t left() const { return in_.size(); }

 private:
  std::string_view in_;
};

// Whether every value is a whole number of 255ths, as read_idx writes pixels.
bool bytes_suffice(const std::vector<float>& x) {
  for (float v : x) {
    const long q = std::lround(v * 255.0f);
    // Bit for bit (a -0.0 would come back as +0.0).
    if (q < 0 || q > 255 ||
        std::bit_cast<std::uint32_t>(static_cast<float>(q) / 255.0f) !=
            std::bit_cast<std::uint32_t>(v))
      return false;
  }
  return true;
}

}  // namespace

std::string encode_table(const Table& t) {
  static_assert(std::endian::native == std::endian::little, "the table format is little-endian");
  Writer w;
  w.raw(kTableMagic.data(), kTableMagic.size());
  w.u64(kTableVersion);
  w.u64(static_cast<std::uint64_t>(t.rows));
  w.u64(t.sample_shape.size());
  for (auto d : t.sample_shape) w.u64(static_cast<std::uint64_t>(d));
  w.u64(t.columns.size());
  for (const auto& c : t.columns) w.str(c);
  w.u64(t.classes.size());
  for (const auto& c : t.classes) w.str(c);
  w.u64(t.y.size());
  w.raw(t.y.data(), t.y.size() * sizeof(float));
  const bool bytes = bytes_suffice(t.x);
  w.u64(bytes ? 1 : 0);
  w.u64(t.x.size());
  if (bytes) {
    std::string px(t.x.size(), '\0');
    for (std::size_t i = 0; i < t.x.size(); ++i)
      px[i] = static_cast<char>(static_cast<unsigned char>(std::lround(t.x[i] * 255.0f)));
    w.raw(px.data(), px.size());
  } else {
    w.raw(t.x.data(), t.x.size() * sizeof(float));
  }
  return w.take();
}

Result<Table> decode_table(std::string_view bytes) {
  auto bad = [](const std::string& why) { return Error::invalid("dataset cache", why); };
  if (bytes.substr(0, kTableMagic.size()) != kTableMagic) return bad("not a table file");
  Reader r(bytes.substr(kTableMagic.size()));
  std::uint64_t version = 0, rows = 0, dims = 0, n = 0;
  if (!r.u64(version) || version != kTableVersion) return bad("another version of the format");
  Table t;
  if (!r.u64(rows) || !r.u64(dims) || dims > 8) return bad("truncated header");
  t.rows = static_cast<std::int64_t>(rows);
  std::uint64_t features = 1;
  for (std::uint64_t i = 0; i < dims; ++i) {
    std::uint64_t d = 0;
    if (!r.u64(d) || d == 0 || __builtin_mul_overflow(features, d, &features) ||
        features > (std::uint64_t{1} << 40))
      return bad("bad sample shape");
    t.sample_shape.push_back(static_cast<std::int64_t>(d));
  }
  std::uint64_t values = 0;
  if (rows > (std::uint64_t{1} << 40) || __builtin_mul_overflow(rows, features, &values))
    return bad("bad row count");
  for (auto* names : {&t.columns, &t.classes}) {
    if (!r.u64(n) || n > r.left()) return bad("truncated names");
    names->resize(n);
    for (auto& s : *names)
      if (!r.str(s)) return bad("truncated names");
  }
  if (!r.u64(n) || n != rows || n > r.left() / sizeof(float)) return bad("truncated targets");
  t.y.resize(n);
  r.raw(t.y.data(), n * sizeof(float));
  std::uint64_t as_bytes = 0;
  if (!r.u64(as_bytes) || as_bytes > 1 || !r.u64(n) || n != values)
    return bad("bad feature header");
  const std::size_t width = as_bytes ? 1 : sizeof(float);
  if (n > r.left() / width || r.left() != n * width) return bad("truncated features");
  t.x.resize(n);
  if (as_bytes) {
    std::string px(n, '\0');
    r.raw(px.data(), n);
    for (std::size_t i = 0; i < n; ++i)
      t.x[i] = static_cast<float>(static_cast<unsigned char>(px[i])) / 255.0f;
  } else {
    r.raw(t.x.data(), n * sizeof(float));
  }
  return t;
}

std::string DatasetCache::disk_path(const std::string& key,
                                    const std::vector<std::string>& sources) const {
  if (disk_dir_.empty()) return {};
  std::uint64_t h = fnv1a(key);
  for (const auto& src : sources) {
    struct stat st {};
    if (::stat(src.c_str(), &st) != 0) return {};  // the loader reports the missing file
    h = fnv1a(fmt::format("|{}|{}|{}.{}|{}", src, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                          st.st_ino),
              h);
  }
  return fmt::format("{}/{:016x}.table", disk_dir_, h);
}

std::optional<Table> DatasetCache::read_disk(const std::string& path) const {
  // One read of the whole file (tens of MB: a stream iterator would take 10x longer).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::string bytes;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    bytes.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < bytes.size()) {
      const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    bytes.resize(got);
  }
  ::close(fd);
  auto t = decode_table(bytes);
  if (!t) {
    log_warn("dataset cache: ignoring a file that does not decode",
             {{"path", path}, {"error", t.error().message}});
    return std::nullopt;
  }
  return std::move(t).value();
}

void DatasetCache::write_disk(const std::string& path, const Table& table) const {
  // Best effort: a cache that cannot be written only costs the next reader a decode.
  std::error_code ec;
  std::filesystem::create_directories(disk_dir_, ec);
  const std::string tmp = fmt::format("{}.{}.{}.tmp", path, ::getpid(),
                                      std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    const std::string bytes = encode_table(table);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      out.close();
      std::filesystem::remove(tmp, ec);
      log_warn("dataset cache: cannot write", {{"path", tmp}});
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);  // atomic: readers see the old file, none, or this one
  if (ec) std::filesystem::remove(tmp, ec);
}

namespace {

Split whole(const Table& t, std::int64_t limit) {
  Split s;
  s.rows = limit > 0 ? std::min(limit, t.rows) : t.rows;
  const std::int64_t f = t.features();
  s.x.assign(t.x.begin(), t.x.begin() + s.rows * f);
  s.y.assign(t.y.begin(), t.y.begin() + s.rows);
  s.row_ids.resize(static_cast<std::size_t>(s.rows));
  std::iota(s.row_ids.begin(), s.row_ids.end(), 0);
  return s;
}

// Per-feature (csv) or one global (idx images) mean and std of the training part,
// applied to every part.
void standardize(PreparedData& d, bool per_feature) {
  const std::int64_t f =
      static_cast<std::int64_t>(d.train.x.size()) / std::max<std::int64_t>(1, d.train.rows);
  const std::int64_t groups = per_feature ? f : 1;
  std::vector<double> sum(groups), sq(groups);
  for (std::int64_t r = 0; r < d.train.rows; ++r)
    for (std::int64_t c = 0; c < f; ++c) {
      double v = d.train.x[r * f + c];
      sum[per_feature ? c : 0] += v;
      sq[per_feature ? c : 0] += v * v;
    }
  const double n = static_cast<double>(d.train.rows) * (per_feature ? 1 : f);
  std::vector<float> mean(groups), inv_std(groups);
  for (std::int64_t g = 0; g < groups; ++g) {
    double m = sum[g] / n;
    double var = std::max(0.0, sq[g] / n - m * m);
    mean[g] = static_cast<float>(m);
    inv_std[g] = var > 1e-12 ? static_cast<float>(1.0 / std::sqrt(var)) : 1.0f;
  }
  d.mean = mean;
  d.inv_std = inv_std;
  for (Split* s : {&d.train, &d.validation, &d.test})
    for (std::size_t i = 0; i < s->x.size(); ++i) {
      std::size_t g = per_feature ? i % static_cast<std::size_t>(f) : 0;
      s->x[i] = (s->x[i] - mean[g]) * inv_std[g];
    }
}

}  // namespace

Status confine_data_paths(trials::ResolvedData& data, const std::vector<std::string>& roots) {
  if (roots.empty()) return {};
  namespace fs = std::filesystem;
  std::vector<fs::path> real_roots;
  for (const auto& r : roots) {
    std::error_code ec;
    fs::path real = fs::canonical(r, ec);
    if (!ec) real_roots.push_back(real);  // a root that does not exist holds nothing
  }
  auto inside = [&](const fs::path& real) {
    return std::any_of(real_roots.begin(), real_roots.end(), [&](const fs::path& root) {
      return trials::lexically_under(real.string(), root.string());
    });
  };
  for (auto& [where, path] : trials::data_paths(data)) {
    std::string& target = *path;
    const std::string given = target;
    const fs::path p(target);
    std::vector<fs::path> candidates;
    if (p.is_absolute()) {
      candidates.push_back(p);
    } else {
      for (const auto& r : roots) candidates.push_back(fs::path(r) / p);
    }
    bool found = false, outside = false;
    for (const auto& c : candidates) {
      // Outside lexically: refused without touching the file, so that the
      // answer says nothing about whether it exists.
      const bool lexically_inside = std::any_of(roots.begin(), roots.end(), [&](const auto& r) {
        return trials::lexically_under(c.string(), r);
      });
      if (!lexically_inside) {
        outside = true;
        continue;
      }
      std::error_code ec;
      fs::path real = fs::canonical(c, ec);
      if (ec) continue;  // not there
      if (!inside(real)) {
        outside = true;
        continue;
      }
      target = real.string();
      found = true;
      break;
    }
    if (found) continue;
    if (outside)
      return Error::invalid(where, "'" + given + "' is outside the data roots (" +
                                       trials::describe_roots(roots) +
                                       "); the worker's --data-root adds one");
    return Error::invalid(where, "data file '" + given + "' does not exist" +
                                     (p.is_absolute() ? std::string()
                                                      : " under the data roots (" +
                                                            trials::describe_roots(roots) + ")"));
  }
  return {};
}

Result<PreparedData> prepare_data(const trials::ResolvedData& data, trials::TorchTask task,
                                  DatasetCache& cache) {
  const bool classification = task == trials::TorchTask::kClassification;
  const bool idx = data.format == "idx";
  auto load_idx = [&](const std::string& images, const std::string& labels) {
    return cache.get("idx|" + images + "|" + labels, {images, labels},
                     [&] { return read_idx(images, labels); });
  };
  std::vector<std::string> no_classes;
  auto load_csv = [&](const std::string& path, const std::vector<std::string>& classes) {
    std::string key = "csv|" + path + "|" + data.target + "|" + (classification ? "c" : "r");
    for (const auto& c : classes) key += "|" + c;
    return cache.get(key, {path},
                     [&] { return read_csv(path, data.target, classification, &classes); });
  };

  auto train =
      idx ? load_idx(data.train_images, data.train_labels) : load_csv(data.train, no_classes);
  if (!train) return train.error();
  const Table& tt = **train;
  PreparedData out;
  out.sample_shape = tt.sample_shape;
  // The rows a trial may use: the first `subset` of the file, or all.
  const std::int64_t usable = data.subset > 0 ? std::min(data.subset, tt.rows) : tt.rows;

  auto check_shape = [&](const Table& t, const std::string& what) -> Status {
    if (t.sample_shape != tt.sample_shape)
      return data_error(what + " has " + std::to_string(t.features()) +
                        " features per row, the training data " + std::to_string(tt.features()));
    return {};
  };
  const bool has_validation_file = idx ? !data.validation_images.empty() : !data.validation.empty();
  if (has_validation_file) {
    auto v = idx ? load_idx(data.validation_images, data.validation_labels)
                 : load_csv(data.validation, tt.classes);
    if (!v) return v.error();
    if (auto st = check_shape(**v, "the validation file"); !st) return st.error();
    out.train = whole(tt, data.subset);
    out.validation = whole(**v, 0);
  } else {
    if (usable < 2) return data_error("the training data has fewer than 2 rows: nothing to split");
    // Seeded by data.seed only: every trial and member gets the same validation rows.
    std::vector<std::int64_t> order(static_cast<std::size_t>(usable));
    std::iota(order.begin(), order.end(), 0);
    // Fisher-Yates with ensemble::Rng's spelled-out draws (std::shuffle's output is
    // implementation-defined): every worker, whatever its standard library, picks the same
    // rows, so members trained on different hosts predict the same validation rows.
    ensemble::Rng rng(ensemble::derive_seed(static_cast<std::uint64_t>(data.seed), 0x5EED));
    for (std::size_t i = order.size() - 1; i > 0; --i)
      std::swap(order[i], order[static_cast<std::size_t>(rng.below(i + 1))]);
    auto nval = static_cast<std::int64_t>(std::llround(data.validation_fraction * usable));
    nval = std::clamp<std::int64_t>(nval, 1, usable - 1);
    std::vector<std::int64_t> val(order.begin(), order.begin() + nval);
    std::vector<std::int64_t> tr(order.begin() + nval, order.end());
    std::sort(val.begin(), val.end());
    std::sort(tr.begin(), tr.end());
    // Straight from the table (no copy of the whole file's rows first).
    out.validation = gather_rows(tt.x.data(), tt.y.data(), nullptr, tt.features(), val);
    out.train = gather_rows(tt.x.data(), tt.y.data(), nullptr, tt.features(), tr);
  }
  const bool has_test = idx ? !data.test_images.empty() : !data.test.empty();
  if (has_test) {
    auto t = idx ? load_idx(data.test_images, data.test_labels) : load_csv(data.test, tt.classes);
    if (!t) return t.error();
    if (auto st = check_shape(**t, "the test file"); !st) return st.error();
    out.test = whole(**t, data.test_subset);
    out.has_test = true;
  }
  if (classification) {
    float max_label = 0;
    for (const Split* s : {&out.train, &out.validation, &out.test})
      for (float y : s->y) max_label = std::max(max_label, y);
    out.num_classes = std::max<std::int64_t>(2, static_cast<std::int64_t>(max_label) + 1);
    if (!tt.classes.empty())
      out.num_classes =
          std::max<std::int64_t>(out.num_classes, static_cast<std::int64_t>(tt.classes.size()));
  }
  if (data.standardize) standardize(out, !idx);
  return out;
}

}  // namespace hpo::workers::torch_trainer
