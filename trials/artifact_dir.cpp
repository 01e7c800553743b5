#include "trials/artifact_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include <fmt/format.h>
#include <openssl/evp.h>

#include <nlohmann/json.hpp>

namespace hpo::trials {

namespace {

constexpr std::string_view kFileMarker = "hpo-artifact-file/1\n";
constexpr std::string_view kInlineMarker = "hpo-artifact-inline/1\n";
constexpr std::string_view kReserved = "hpo-artifact-";

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

std::string os_error(const std::string& what, const std::string& path) {
  return fmt::format("{} {}: {}", what, path, std::strerror(errno));
}

// Writes all of `bytes` to `fd`; false with errno set on failure.
bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

bool fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

// A path component from an id or a name: ids are made by the store
// ([A-Za-z0-9-]), names by hpo and the user's files ("output.plot.png"); any
// other byte, and a leading dot, is replaced so that nothing can escape the
// artifact directory or hide in it.
std::string component(const std::string& id) {
  std::string out = id.empty() ? std::string("_") : id.substr(0, 120);
  for (char& c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  if (out[0] == '.') out[0] = '_';
  return out;
}

}  // namespace

Status check_artifact_root(const std::string& flag, const std::string& dir) {
  if (dir.empty() || dir.front() != '/')
    return Error::invalid(flag, fmt::format("\"{}\" is not an absolute folder", dir));
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Error::invalid(flag, fmt::format("{} is not a folder (make it, or mount it)", dir));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return Error::invalid(flag, fmt::format("{} is not writable by this user", dir));
  return {};
}

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr);
  std::string out;
  out.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

std::string encode_inline(std::string bytes) {
  if (!starts_with(bytes, kReserved)) return bytes;
  return std::string(kInlineMarker) + bytes;
}

std::string encode_file_reference(const std::string& path, std::int64_t size,
                                  const std::string& sha256) {
  nlohmann::json j = {{"path", path}, {"size", size}, {"sha256", sha256}};
  return std::string(kFileMarker) + j.dump();
}

Result<StoredArtifact> decode_stored(std::string value) {
  StoredArtifact out;
  if (starts_with(value, kInlineMarker)) {
    out.bytes = value.substr(kInlineMarker.size());
    return out;
  }
  if (!starts_with(value, kFileMarker)) {
    out.bytes = std::move(value);
    return out;
  }
  auto j = nlohmann::json::parse(value.substr(kFileMarker.size()), nullptr, false);
  if (!j.is_object() || !j.contains("path") || !j["path"].is_string() || !j.contains("size") ||
      !j["size"].is_number_integer() || !j.contains("sha256") || !j["sha256"].is_string())
    return Error::internal("an artifact reference in Redis does not parse: " +
                           value.substr(0, 200));
  out.is_file = true;
  out.path = j["path"].get<std::string>();
  out.size = j["size"].get<std::int64_t>();
  out.sha256 = j["sha256"].get<std::string>();
  if (out.path.find("..") != std::string::npos || (!out.path.empty() && out.path[0] == '/'))
    return Error::internal("an artifact reference names a path outside the directory: " + out.path);
  return out;
}

ArtifactDir::ArtifactDir(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

std::string ArtifactDir::sweep_of(const std::string& trial_id) {
  const auto dash = trial_id.rfind('-');
  return dash == std::string::npos ? trial_id : trial_id.substr(0, dash);
}

Result<std::string> ArtifactDir::write(const std::string& trial_id, const std::string& name,
                                       const std::string& bytes) {
  const std::string sha = sha256_hex(bytes);
  const std::string rel =
      component(sweep_of(trial_id)) + "/" + component(trial_id) + "/" + component(name) + "." + sha;
  const std::string folder = root_ + "/" + rel.substr(0, rel.rfind('/'));
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec)
    return Error::unavailable(
        fmt::format("cannot make the artifact folder {}: {}", folder, ec.message()));
  std::random_device rd;
  const std::string tmp =
      fmt::format("{}/.tmp-{}-{}-{:08x}", folder, sha.substr(0, 16), ::getpid(), rd());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
  if (fd < 0) return Error::unavailable(os_error("cannot create", tmp));
  bool ok = write_all(fd, bytes) && ::fsync(fd) == 0;
  const std::string why = ok ? "" : os_error("cannot write", tmp);
  ok = (::close(fd) == 0) && ok;
  const std::string final_path = root_ + "/" + rel;
  if (!ok || ::rename(tmp.c_str(), final_path.c_str()) != 0) {
    const std::string msg = why.empty() ? os_error("cannot publish", final_path) : why;
    ::unlink(tmp.c_str());
    return Error::unavailable(msg);
  }
  fsync_path(folder, O_RDONLY | O_DIRECTORY);  // the rename itself survives a crash
  return encode_file_reference(rel, static_cast<std::int64_t>(bytes.size()), sha);
}

Result<std::string> ArtifactDir::read(const StoredArtifact& ref, const std::string& what) {
  const std::string path = root_ + "/" + ref.path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Error::internal(
        fmt::format("{} is a file in the artifact directory that cannot be read: {}", what,
                    os_error("open", path)));
  std::string bytes;
  bytes.resize(static_cast<std::size_t>(std::max<std::int64_t>(0, ref.size)) + 1);
  std::size_t got = 0;
  for (;;) {
    const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
    if (got == bytes.size()) bytes.resize(bytes.size() * 2);
  }
  ::close(fd);
  bytes.resize(got);
  if (static_cast<std::int64_t>(got) != ref.size)
    return Error::internal(
        fmt::format("{}: the file {} is {} bytes, its reference says {} (a torn or replaced copy)",
                    what, path, got, ref.size));
  if (sha256_hex(bytes) != ref.sha256)
    return Error::internal(
        fmt::format("{}: the file {} does not have the SHA-256 its reference says (changed "
                    "after it was written)",
                    what, path));
  return bytes;
}

void ArtifactDir::remove(const StoredArtifact& ref) {
  if (!ref.is_file || ref.path.empty()) return;
  ::unlink((root_ + "/" + ref.path).c_str());
}

Status ArtifactDir::remove_sweep(const std::string& sweep_id) {
  std::error_code ec;
  const std::string folder = root_ + "/" + component(sweep_id);
  std::filesystem::remove_all(folder, ec);
  if (ec)
    return Error::unavailable(
        fmt::format("cannot remove the artifact folder {}: {}", folder, ec.message()));
  return {};
}

}  // namespace hpo::trials
