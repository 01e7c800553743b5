#include "cli/download.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "trials/artifact_dir.hpp"

namespace hpo::cli {
namespace {

constexpr int kTries = 5;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The SHA-256 of the file at `fd` (read from its start).
Result<std::string> file_sha(int fd, const std::string& path) {
  if (::lseek(fd, 0, SEEK_SET) != 0)
    return Error::internal(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  NullSink none;
  trials::HashingSink hashing(none);
  if (auto n = copy_fd(fd, hashing, path); !n) return n.error();
  return hashing.sha();
}

}  // namespace

Status download_file(HttpClient& http, const std::string& target,
                     const std::filesystem::path& path) {
  const std::string part = path.string() + ".part";
  // The ETag of the artifact the part belongs to: a resumed download asks
  // for the rest of that one only (If-Range), never splices two versions.
  const std::string tag_file = part + ".etag";
  const int fd = ::open(part.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return Error::internal(fmt::format("cannot write {}: {}", part, std::strerror(errno)));
  FdSink file(fd, part);
  auto start_over = [&] {
    std::error_code ec;
    std::filesystem::remove(tag_file, ec);
    return ::ftruncate(fd, 0) == 0;
  };
  std::string expected_sha;
  Status result = Error::unavailable("GET " + target + ": no answer");
  for (int attempt = 0; attempt < kTries; ++attempt) {
    const off_t offset = ::lseek(fd, 0, SEEK_END);
    const std::string tag = offset > 0 ? read_text(tag_file) : "";
    if (offset > 0 && tag.empty()) {  // a part of unknown version
      if (!start_over() || ::lseek(fd, 0, SEEK_SET) != 0) break;
      --attempt;
      continue;
    }
    std::map<std::string, std::string> headers;
    if (offset > 0) headers = {{"Range", fmt::format("bytes={}-", offset)}, {"If-Range", tag}};
    bool restart = false;
    auto r = http.download(target, file, headers, [&](const ClientResponse& h) {
      // The whole artifact (another version, or no ranges): not into the part.
      if (offset > 0 && h.status == 200) {
        restart = true;
        return false;
      }
      if (h.status == 200 || h.status == 206) {
        std::ofstream(tag_file, std::ios::trunc) << h.header("etag");
        expected_sha = h.header("x-content-sha256");
      }
      return true;
    });
    if (restart || (r && r->status == 416 && offset > 0)) {
      if (!start_over()) break;
      continue;
    }
    if (!r) {
      result = r.error();
      if (r.error().code == ErrorCode::kUnavailable) continue;  // broken: go on from here
      break;
    }
    if (r->status != 200 && r->status != 206) {
      result = Error::unavailable(fmt::format("GET {}: {}", target, answer_message(*r)));
      break;
    }
    result = Status{};
    break;
  }
  if (!result) {
    ::close(fd);
    return result;
  }
  auto got = file_sha(fd, part);
  ::close(fd);
  if (!got) return got.error();
  std::error_code ec;
  std::filesystem::remove(tag_file, ec);
  if (!expected_sha.empty() && *got != expected_sha) {
    std::filesystem::remove(part, ec);
    return Error::internal(
        fmt::format("GET {}: the download's SHA-256 is {}, the server's {} (the part is removed)",
                    target, *got, expected_sha));
  }
  std::filesystem::rename(part, path, ec);
  if (ec) return Error::internal(fmt::format("cannot rename {}: {}", part, ec.message()));
  return {};
}

}  // namespace hpo::cli
