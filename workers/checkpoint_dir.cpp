#include "workers/checkpoint_dir.hpp"

#include <algorithm>
#include <charconv>
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

Result<PackStats> pack_dir(const std::string& dir, ByteSink& sink) {
  PackStats stats;
  CountingSink out(sink);
  std::error_code ec;
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::none, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const auto rel = it->path().lexically_relative(dir).generic_string();
    if (it->is_symlink(ec)) {
      stats.skipped.push_back(rel + " (a symbolic link)");
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory(ec)) continue;
    if (!it->is_regular_file(ec)) {
      stats.skipped.push_back(rel + " (not a regular file)");
      continue;
    }
    if (!safe_path(rel)) {
      stats.skipped.push_back(rel + " (a name that cannot be kept)");
      continue;
    }
    files.push_back(it->path());
    if (files.size() > kMaxCheckpointFiles)
      return Error::invalid("HPO_CHECKPOINT_DIR",
                            fmt::format("holds more than {} files; at most {} are kept",
                                        kMaxCheckpointFiles, kMaxCheckpointFiles));
  }
  std::sort(files.begin(), files.end());
  if (auto st = out.write(kMagic); !st) return st.error();
  for (const auto& f : files) {
    // The program still runs: what was a file a moment ago may be a link now.
    const std::string rel = f.lexically_relative(dir).generic_string();
    auto file = open_beneath(dir, rel);
    if (!file) {
      stats.skipped.push_back(rel + " (" + file.error().message + ")");
      continue;
    }
    if (auto st = out.write(fmt::format("{} {}\n", file->size(), rel)); !st) return st.error();
    auto copied = copy_fd(file->fd(), out, fs::path(dir).append(rel).string(), file->size());
    if (!copied) return copied.error();
    if (*copied != file->size())
      return Error::invalid("HPO_CHECKPOINT_DIR",
                            fmt::format("{} changed size while it was stored ({} bytes, then {}): "
                                        "print hpo-checkpoint once the folder is complete",
                                        rel, file->size(), *copied));
    ++stats.files;
  }
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
