#include "cli/download.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "trials/artifact_dir.hpp"

namespace hpo::cli {
namespace {

constexpr int kTries = 5;

// Appends to the part file, hashing what it writes.
class PartSink final : public ByteSink {
 public:
  PartSink(int fd, std::string path, trials::Sha256& sha)
      : fd_(fd), path_(std::move(path)), sha_(sha) {}
  Status write(std::string_view bytes) override {
    if (!write_all(fd_, bytes))
      return Error::internal(fmt::format("cannot write {}: {}", path_, std::strerror(errno)));
    sha_.update(bytes);
    written_ += static_cast<std::int64_t>(bytes.size());
    return {};
  }
  std::int64_t written() const { return written_; }

 private:
  int fd_;
  std::string path_;
  trials::Sha256& sha_;
  std::int64_t written_ = 0;
};

// The message of an error answer: its JSON "message", else the status.
std::string answer_message(const web::ClientResponse& r) {
  const auto at = r.body.find("\"message\":\"");
  if (at == std::string::npos) return fmt::format("HTTP {}", r.status);
  const auto end = r.body.find('"', at + 11);
  return fmt::format("HTTP {}: {}", r.status, r.body.substr(at + 11, end - at - 11));
}

}  // namespace

Status download_file(web::HttpClient& http, const std::string& target,
                     const std::filesystem::path& path) {
  const std::string part = path.string() + ".part";
  const int fd = ::open(part.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return Error::internal(fmt::format("cannot write {}: {}", part, std::strerror(errno)));
  // What a part left before holds is hashed first: the checksum covers the whole file.
  trials::Sha256 sha;
  PartSink sink(fd, part, sha);
  std::int64_t have = 0;
  {
    class Hash final : public ByteSink {
     public:
      explicit Hash(trials::Sha256& s) : s_(s) {}
      Status write(std::string_view b) override {
        s_.update(b);
        return {};
      }

     private:
      trials::Sha256& s_;
    } hash(sha);
    auto n = copy_fd(fd, hash, part);
    if (!n) {
      ::close(fd);
      return n.error();
    }
    have = *n;
  }
  std::string expected_sha;
  Status result = Error::unavailable("GET " + target + ": no answer");
  for (int attempt = 0; attempt < kTries; ++attempt) {
    const std::int64_t offset = have + sink.written();
    std::map<std::string, std::string> headers;
    if (offset > 0) headers["Range"] = fmt::format("bytes={}-", offset);
    auto r = http.download(target, sink, headers);
    if (!r) {
      result = r.error();
      if (r.error().code == ErrorCode::kUnavailable) continue;  // broken: go on from here
      break;
    }
    if (r->status == 416 && offset > 0) {
      // The part is as long as the artifact, or longer (a different one): start over.
      if (::ftruncate(fd, 0) != 0 || ::lseek(fd, 0, SEEK_SET) != 0) break;
      ::close(fd);
      std::filesystem::remove(part);
      return download_file(http, target, path);
    }
    if (r->status != 200 && r->status != 206) {
      result = Error::unavailable(fmt::format("GET {}: {}", target, answer_message(*r)));
      break;
    }
    if (r->status == 200 && offset > 0) {
      // The server sent it whole: what was written before this answer is stale.
      ::close(fd);
      std::filesystem::remove(part);
      return download_file(http, target, path);
    }
    expected_sha = r->header("x-content-sha256");
    result = Status{};
    break;
  }
  ::close(fd);
  if (!result) return result;
  const std::string got = sha.hex();
  if (!expected_sha.empty() && got != expected_sha) {
    std::filesystem::remove(part);
    return Error::internal(
        fmt::format("GET {}: the download's SHA-256 is {}, the server's {} (the part is removed)",
                    target, got, expected_sha));
  }
  std::error_code ec;
  std::filesystem::rename(part, path, ec);
  if (ec) return Error::internal(fmt::format("cannot rename {}: {}", part, ec.message()));
  return {};
}

}  // namespace hpo::cli
