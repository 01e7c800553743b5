#include "workers/checkpoint_dir.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "workers/trial_files.hpp"

namespace hpo::workers {
namespace {

namespace fs = std::filesystem;
constexpr std::string_view kMagic = "hpo-checkpoint-dir 1\n";

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

Result<PackedDir> pack_dir(const std::string& dir) {
  PackedDir out;
  out.bytes = kMagic;
  std::error_code ec;
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::none, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const auto rel = it->path().lexically_relative(dir).generic_string();
    if (it->is_symlink(ec)) {
      out.skipped.push_back(rel + " (a symbolic link)");
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory(ec)) continue;
    if (!it->is_regular_file(ec)) {
      out.skipped.push_back(rel + " (not a regular file)");
      continue;
    }
    if (!safe_path(rel)) {
      out.skipped.push_back(rel + " (a name that cannot be kept)");
      continue;
    }
    files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  if (files.size() > kMaxCheckpointFiles)
    return Error::invalid("HPO_CHECKPOINT_DIR", fmt::format("holds {} files; at most {} are kept",
                                                            files.size(), kMaxCheckpointFiles));
  for (const auto& f : files) {
    // The program still runs: what was a file a moment ago may be a link now.
    const std::string rel = f.lexically_relative(dir).generic_string();
    auto read = read_beneath(dir, rel, static_cast<std::int64_t>(kMaxCheckpointBytes));
    if (!read && read.error().code == ErrorCode::kPayloadTooLarge)
      return Error::invalid("HPO_CHECKPOINT_DIR", fmt::format("is larger than {} MiB (at {})",
                                                              kMaxCheckpointBytes >> 20, rel));
    if (!read) {
      out.skipped.push_back(f.lexically_relative(dir).generic_string() + " (" +
                            read.error().message + ")");
      continue;
    }
    const std::string bytes = std::move(*read);
    if (out.bytes.size() + bytes.size() > kMaxCheckpointBytes)
      return Error::invalid("HPO_CHECKPOINT_DIR",
                            fmt::format("is larger than {} MiB (at {})", kMaxCheckpointBytes >> 20,
                                        f.lexically_relative(dir).generic_string()));
    out.bytes += fmt::format("{} {}\n", bytes.size(), f.lexically_relative(dir).generic_string());
    out.bytes += bytes;
    ++out.files;
  }
  return out;
}

Result<std::size_t> unpack_dir(const std::string& bytes, const std::string& dir) {
  std::string_view rest(bytes);
  if (!rest.starts_with(kMagic))
    return Error::invalid("checkpoint", "not a packed checkpoint folder");
  rest.remove_prefix(kMagic.size());
  std::size_t n = 0;
  while (!rest.empty()) {
    const auto nl = rest.find('\n');
    const auto sp = rest.find(' ');
    std::size_t size = 0;
    if (nl == std::string_view::npos || sp == std::string_view::npos || sp > nl ||
        std::from_chars(rest.data(), rest.data() + sp, size).ptr != rest.data() + sp)
      return Error::invalid("checkpoint", fmt::format("entry {}: expected '<size> <path>'", n + 1));
    const std::string_view path = rest.substr(sp + 1, nl - sp - 1);
    if (!safe_path(path))
      return Error::invalid("checkpoint", fmt::format("entry {}: the path is not a relative "
                                                      "path inside the folder",
                                                      n + 1));
    rest.remove_prefix(nl + 1);
    if (size > rest.size())
      return Error::invalid("checkpoint", fmt::format("entry {} ({}): cut short", n + 1, path));
    if (++n > kMaxCheckpointFiles) return Error::invalid("checkpoint", "too many files");
    const fs::path target = fs::path(dir) / std::string(path);
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    std::ofstream out(target, std::ios::binary | std::ios::trunc);
    out.write(rest.data(), static_cast<std::streamsize>(size));
    if (!out) return Error::invalid("checkpoint", fmt::format("cannot write {}", target.string()));
    rest.remove_prefix(size);
  }
  return n;
}

}  // namespace hpo::workers
