// DatasetCache: the tables a worker process has loaded, in memory (a few,
// least recently used evicted) and on disk for the rank processes and later
// workers on the host, in a format of its own (encode_table / decode_table).
// The disk file is trusted no further than its sizes check out: anything that
// does not decode is read from the sources again.
#include "workers/torch/dataset.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <fmt/format.h>

#include "core/hash.hpp"
#include "core/log.hpp"

namespace hpo::workers::torch_trainer {

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

}  // namespace hpo::workers::torch_trainer
