#include "workers/checkpoint_dir.hpp"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>

#include "workers/trial_files.hpp"

namespace hpo::workers {
namespace {

namespace fs = std::filesystem;
constexpr std::string_view kMagic = "hpo-checkpoint-dir 1\n";
constexpr std::size_t kMaxHeaderLine = 1100;  // "<size> <path>\n" with a path of at most 1024

bool safe_path(std::string_view p) {
  if (p.empty() || p.size() > 1024 || p.front() == '/') return false;
  for (char c : p)
    if (c == '\n' || c == '\0') return false;
  std::size_t start = 0;
  while (start <= p.size()) {
    auto end = p.find('/', start);
    if (end == std::string_view::npos) end = p.size();
    auto part = p.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

}  // namespace

namespace {

// The folder's regular files, relative and sorted; what is left out goes to
// stats.skipped. `what` names the folder in errors; `max_bytes` (0: none)
// bounds their sizes together, and its error names `max_bytes_setting`.
Result<std::vector<std::string>> folder_files(const std::string& dir, PackStats& stats,
                                              const char* what, std::int64_t max_bytes = 0,
                                              const char* max_bytes_setting = nullptr) {
  std::error_code ec;
  std::vector<std::string> files;
  std::int64_t bytes = 0;
  auto it = fs::recursive_directory_iterator(dir, fs::directory_options::none, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const auto rel = it->path().lexically_relative(dir).generic_string();
    std::error_code entry;  // an entry that cannot be looked at is left out, said so
    if (it->is_symlink(entry)) {
      stats.skipped.push_back(rel + " (a symbolic link)");
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory(entry)) continue;
    if (!it->is_regular_file(entry)) {
      stats.skipped.push_back(rel + " (not a regular file)");
      continue;
    }
    if (!safe_path(rel)) {
      stats.skipped.push_back(rel + " (a name that cannot be kept)");
      continue;
    }
    files.push_back(rel);
    if (files.size() > kMaxCheckpointFiles)
      return Error::invalid(what, fmt::format("holds more than {} files; at most {} are kept",
                                              kMaxCheckpointFiles, kMaxCheckpointFiles));
    const auto size = it->file_size(entry);
    bytes += entry ? 0 : static_cast<std::int64_t>(size);
    if (max_bytes > 0 && bytes > max_bytes)
      return Error::invalid(
          what,
          fmt::format("holds more than {} bytes; at most {} are kept{}", max_bytes, max_bytes,
                      max_bytes_setting ? fmt::format(" ({})", max_bytes_setting) : std::string()));
  }
  // A folder that cannot be walked to its end is not packed in part.
  if (ec) return Error::invalid(what, "cannot be read: " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

// Each file opened the way trial_files.hpp reads what a trial wrote (the
// program may still run: what was a file a moment ago may be a link now),
// handed to `entry` with its size; a file that changes size while it is read
// is an error naming `what`.
template <class Entry>
Status for_each_file(const std::string& dir, const std::vector<std::string>& files,
                     PackStats& stats, const char* what, CountingSink& out, Entry entry) {
  for (const auto& rel : files) {
    auto file = open_beneath(dir, rel);
    if (!file) {
      stats.skipped.push_back(rel + " (" + file.error().message + ")");
      continue;
    }
    if (auto st = entry(rel, file->size()); !st) return st;
    auto copied = copy_fd(file->fd(), out, fs::path(dir).append(rel).string(), file->size());
    if (!copied) return copied.error();
    if (*copied != file->size())
      return Error::invalid(what, fmt::format("{} changed size while it was stored ({} bytes, "
                                              "then {}): write it completely first",
                                              rel, file->size(), *copied));
    ++stats.files;
  }
  return {};
}

// A ustar header for a regular file (POSIX.1-1988; a size past 8 GiB in GNU's
// base-256 form, which GNU tar and Python's tarfile read); false when the
// path fits no name/prefix split.
bool tar_header(const std::string& path, std::int64_t size, std::int64_t mtime, char* h) {
  std::fill(h, h + 512, '\0');
  std::string name = path, prefix;
  if (name.size() > 100) {
    auto cut = path.rfind('/', 155);
    while (cut != std::string::npos && path.size() - cut - 1 > 100) cut = std::string::npos;
    if (cut == std::string::npos || cut == 0) return false;
    prefix = path.substr(0, cut);
    name = path.substr(cut + 1);
  }
  auto octal = [](char* field, std::size_t width, std::uint64_t v) {
    fmt::format_to_n(field, width - 1, "{:0{}o}", v, width - 1);
  };
  std::copy(name.begin(), name.end(), h);
  octal(h + 100, 8, 0644);
  octal(h + 108, 8, 0);
  octal(h + 116, 8, 0);
  if (size < (std::int64_t{1} << 33)) {
    octal(h + 124, 12, static_cast<std::uint64_t>(size));
  } else {
    h[124] = static_cast<char>(0x80);
    for (int i = 0; i < 8; ++i) h[135 - i] = static_cast<char>((size >> (8 * i)) & 0xff);
  }
  octal(h + 136, 12, static_cast<std::uint64_t>(mtime));
  h[156] = '0';
  std::copy_n("ustar", 6, h + 257);
  h[263] = '0';
  h[264] = '0';
  std::copy(prefix.begin(), prefix.end(), h + 345);
  std::fill(h + 148, h + 156, ' ');
  unsigned sum = 0;
  for (int i = 0; i < 512; ++i) sum += static_cast<unsigned char>(h[i]);
  fmt::format_to_n(h + 148, 7, "{:06o}", sum);
  h[154] = '\0';
  return true;
}

}  // namespace

Result<PackStats> pack_dir(const std::string& dir, ByteSink& sink) {
  PackStats stats;
  CountingSink out(sink);
  auto files = folder_files(dir, stats, "HPO_CHECKPOINT_DIR");
  if (!files) return files.error();
  if (auto st = out.write(kMagic); !st) return st.error();
  auto st = for_each_file(dir, *files, stats, "HPO_CHECKPOINT_DIR", out,
                          [&](const std::string& rel, std::int64_t size) {
                            return out.write(fmt::format("{} {}\n", size, rel));
                          });
  if (!st) return st.error();
  stats.bytes = out.count();
  return stats;
}

Result<PackStats> tar_dir(const std::string& dir, ByteSink& sink, const char* what,
                          std::int64_t max_bytes, const char* max_bytes_setting) {
  PackStats stats;
  CountingSink out(sink);
  auto files = folder_files(dir, stats, what, max_bytes, max_bytes_setting);
  if (!files) return files.error();
  const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
  std::int64_t pad = 0;  // the last file's padding, written before the next header
  static const char kZeros[1024] = {};
  auto st = for_each_file(dir, *files, stats, what, out,
                          [&](const std::string& rel, std::int64_t size) -> Status {
                            if (auto p = out.write(std::string_view(kZeros, pad)); !p) return p;
                            char header[512];
                            if (!tar_header(rel, size, now, header))
                              return Error::invalid(what, rel + ": a path too long for tar");
                            pad = (512 - size % 512) % 512;
                            return out.write(std::string_view(header, 512));
                          });
  if (!st) return st.error();
  if (auto p = out.write(std::string_view(kZeros, pad)); !p) return p.error();
  if (auto p = out.write(std::string_view(kZeros, 1024)); !p) return p.error();
  stats.bytes = out.count();
  return stats;
}

Status DirUnpacker::header_line(std::string_view line) {
  const std::size_t entry = files_ + 1;
  const auto sp = line.find(' ');
  std::uint64_t size = 0;
  if (sp == std::string_view::npos ||
      std::from_chars(line.data(), line.data() + sp, size).ptr != line.data() + sp)
    return Error::invalid("checkpoint", fmt::format("entry {}: expected '<size> <path>'", entry));
  const std::string_view path = line.substr(sp + 1);
  if (!safe_path(path))
    return Error::invalid(
        "checkpoint",
        fmt::format("entry {}: the path is not a relative path inside the folder", entry));
  if (entry > kMaxCheckpointFiles) return Error::invalid("checkpoint", "too many files");
  const fs::path target = fs::path(dir_) / std::string(path);
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  file_.emplace(target, std::ios::binary | std::ios::trunc);
  if (!*file_) return Error::invalid("checkpoint", fmt::format("cannot write {}", target.string()));
  file_path_ = target.string();
  left_ = size;
  ++files_;
  return {};
}

Status DirUnpacker::write(std::string_view bytes) {
  bytes_ += static_cast<std::int64_t>(bytes.size());
  while (!bytes.empty()) {
    if (!magic_seen_ || !file_ || left_ == 0) {
      if (file_ && left_ == 0) {
        file_->close();
        if (!*file_) return Error::invalid("checkpoint", "cannot write " + file_path_);
        file_.reset();
      }
      const auto nl = bytes.find('\n');
      const std::size_t take = nl == std::string_view::npos ? bytes.size() : nl + 1;
      pending_.append(bytes.substr(0, take));
      bytes.remove_prefix(take);
      if (pending_.size() > kMaxHeaderLine)
        return Error::invalid("checkpoint",
                              magic_seen_
                                  ? fmt::format("entry {}: expected '<size> <path>'", files_ + 1)
                                  : std::string("not a packed checkpoint folder"));
      if (pending_.back() != '\n') continue;
      if (!magic_seen_) {
        if (pending_ != kMagic)
          return Error::invalid("checkpoint", "not a packed checkpoint folder");
        magic_seen_ = true;
      } else {
        pending_.pop_back();
        if (auto st = header_line(pending_); !st) return st;
      }
      pending_.clear();
      continue;
    }
    const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(left_, bytes.size()));
    file_->write(bytes.data(), static_cast<std::streamsize>(take));
    if (!*file_) return Error::invalid("checkpoint", "cannot write " + file_path_);
    left_ -= take;
    bytes.remove_prefix(take);
  }
  return {};
}

Result<std::size_t> DirUnpacker::finish() {
  if (!magic_seen_) return Error::invalid("checkpoint", "not a packed checkpoint folder");
  if (!pending_.empty())
    return Error::invalid("checkpoint",
                          fmt::format("entry {}: expected '<size> <path>'", files_ + 1));
  if (file_ && left_ > 0)
    return Error::invalid("checkpoint",
                          fmt::format("entry {} ({}): cut short", files_, file_path_));
  if (file_) {
    file_->close();
    if (!*file_) return Error::invalid("checkpoint", "cannot write " + file_path_);
    file_.reset();
  }
  return files_;
}

Result<std::string> pack_dir_bytes(const std::string& dir) {
  StringSink out(std::int64_t{1} << 40, "the checkpoint folder");
  if (auto st = pack_dir(dir, out); !st) return st.error();
  return std::move(out.bytes());
}

Result<std::size_t> unpack_dir(const std::string& bytes, const std::string& dir) {
  DirUnpacker unpacker(dir);
  if (auto st = unpacker.write(bytes); !st) return st.error();
  return unpacker.finish();
}

}  // namespace hpo::workers
