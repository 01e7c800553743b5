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

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr);
}
Sha256::~Sha256() {
  EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_));
}
void Sha256::update(std::string_view bytes) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), bytes.data(), bytes.size());
}
std::string Sha256::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), digest, &len);
  std::string out;
  out.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

Status HashingSink::write(std::string_view bytes) {
  sha_.update(bytes);
  size_ += static_cast<std::int64_t>(bytes.size());
  return out_.write(bytes);
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 sha;
  sha.update(bytes);
  return sha.hex();
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

std::size_t inline_escape_length(std::string_view head) {
  static_assert(kInlineMarker.size() <= kStoredPrefixBytes);
  return starts_with(head, kInlineMarker) ? kInlineMarker.size() : 0;
}

Status check_range(std::int64_t offset, std::int64_t size, std::int64_t total,
                   const std::string& what) {
  if (offset < 0 || size < 0 || offset + size > total)
    return Error::invalid(
        "range", fmt::format("bytes {}..{} of {} ({} bytes)", offset, offset + size, what, total));
  return {};
}

Status copy_range(std::string_view bytes, std::int64_t offset, std::int64_t size,
                  const std::string& what, char* out) {
  if (auto st = check_range(offset, size, static_cast<std::int64_t>(bytes.size()), what); !st)
    return st;
  std::memcpy(out, bytes.data() + offset, static_cast<std::size_t>(size));
  return {};
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

namespace {

Result<std::string> read_marker(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return Error::not_found(os_error("cannot read", path));
  char buf[128];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  std::string id(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  if (id.empty()) return Error::internal(path + " is empty");
  return id;
}

}  // namespace

Result<std::string> claim_marker(const std::string& dir) {
  const std::string path = dir + "/" + kArtifactMarker;
  if (auto id = read_marker(path); id || id.error().code != ErrorCode::kNotFound) return id;
  std::random_device rd;
  const std::string id = fmt::format("{:08x}{:08x}{:08x}{:08x}", rd(), rd(), rd(), rd());
  const std::string tmp = fmt::format("{}.tmp-{}", path, ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error::internal(os_error("cannot write", tmp));
  const bool ok = write_all(fd, id + "\n") && ::fsync(fd) == 0;
  ::close(fd);
  // link(): the first scheduler's marker wins; a second one reads it.
  const bool linked = ok && ::link(tmp.c_str(), path.c_str()) == 0;
  ::unlink(tmp.c_str());
  if (!linked && errno != EEXIST) return Error::internal(os_error("cannot write", path));
  fsync_path(dir, O_RDONLY | O_DIRECTORY);
  return read_marker(path);
}

Status check_marker(const std::string& dir, const std::string& id) {
  auto found = read_marker(dir + "/" + kArtifactMarker);
  if (!found)
    return Error::unavailable(fmt::format(
        "{} is not the pool's artifact folder here: it has no marker {} (an unmounted mount "
        "point, or another folder at that path; mount the scheduler's --artifacts there)",
        dir, kArtifactMarker));
  if (*found != id)
    return Error::unavailable(fmt::format(
        "{} is not the pool's artifact folder here: its marker {} says {}, the scheduler's {} "
        "(another folder at that path)",
        dir, kArtifactMarker, *found, id));
  return {};
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
  return write_stream(trial_id, name, [&bytes](ByteSink& out) { return out.write(bytes); });
}

Result<std::string> ArtifactDir::write_stream(const std::string& trial_id, const std::string& name,
                                              const ByteProducer& produce) {
  const std::string rel_folder = component(sweep_of(trial_id)) + "/" + component(trial_id);
  const std::string folder = root_ + "/" + rel_folder;
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec)
    return Error::internal(
        fmt::format("cannot make the artifact folder {}: {}", folder, ec.message()));
  std::random_device rd;
  const std::string tmp =
      fmt::format("{}/.tmp-{}-{}-{:08x}", folder, component(name).substr(0, 40), ::getpid(), rd());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
  if (fd < 0) return Error::internal(os_error("cannot create", tmp));
  FdSink file(fd, tmp);
  HashingSink sink(file);
  Status st = produce(sink);
  if (st && ::fsync(fd) != 0) st = Error::internal(os_error("cannot write", tmp));
  if (::close(fd) != 0 && st) st = Error::internal(os_error("cannot write", tmp));
  if (!st) {
    ::unlink(tmp.c_str());
    return st.error();
  }
  const std::string sha = sink.sha();
  const std::string rel = rel_folder + "/" + component(name) + "." + sha;
  const std::string final_path = root_ + "/" + rel;
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    const std::string msg = os_error("cannot publish", final_path);
    ::unlink(tmp.c_str());
    return Error::internal(msg);
  }
  fsync_path(folder, O_RDONLY | O_DIRECTORY);  // the rename itself survives a crash
  return encode_file_reference(rel, sink.size(), sha);
}

Result<std::string> ArtifactDir::read(const StoredArtifact& ref, const std::string& what) {
  // One byte over the size: a longer file is found torn by read_stream.
  StringSink bytes(std::max<std::int64_t>(0, ref.size) + 1, what);
  if (auto st = read_stream(ref, what, bytes); !st) return st.error();
  return std::move(bytes.bytes());
}

Status ArtifactDir::read_stream(const StoredArtifact& ref, const std::string& what, ByteSink& out) {
  const std::string path = path_of(ref);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Error::internal(
        fmt::format("{} is a file in the artifact directory that cannot be read: {}", what,
                    os_error("open", path)));
  HashingSink tee(out);
  // One byte more than the reference says: a longer file is found torn, not cut.
  auto got = copy_fd(fd, tee, path, std::max<std::int64_t>(0, ref.size) + 1);
  ::close(fd);
  if (!got) return got.error();
  if (tee.size() != ref.size)
    return Error::internal(fmt::format(
        "{}: the file {} is {} bytes, its reference says {} (a torn or replaced copy)", what, path,
        tee.size() > ref.size ? "more than " + std::to_string(ref.size)
                              : std::to_string(tee.size()),
        ref.size));
  if (tee.sha() != ref.sha256)
    return Error::internal(
        fmt::format("{}: the file {} does not have the SHA-256 its reference says (changed "
                    "after it was written)",
                    what, path));
  return {};
}

Status ArtifactDir::read_range(const StoredArtifact& ref, const std::string& what,
                               std::int64_t offset, std::int64_t size, char* out) {
  if (auto st = check_range(offset, size, ref.size, what); !st) return st;
  const std::string path = path_of(ref);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Error::internal(
        fmt::format("{} is a file in the artifact directory that cannot be read: {}", what,
                    os_error("cannot open", path)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size != ref.size) {
    ::close(fd);
    return Error::internal(fmt::format(
        "{}: the file {} is not the {} bytes its reference says (a torn or replaced copy)", what,
        path, ref.size));
  }
  std::int64_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, out + done, static_cast<std::size_t>(size - done),
                              static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int saved = errno;
      ::close(fd);
      errno = saved;
      return Error::internal(fmt::format(
          "{}: {}", what,
          n == 0 ? "the file " + path + " ended early" : os_error("cannot read", path)));
    }
    done += n;
  }
  ::close(fd);
  return {};
}

void ArtifactDir::remove(const StoredArtifact& ref) {
  if (!ref.is_file || ref.path.empty()) return;
  ::unlink(path_of(ref).c_str());
}

void ArtifactDir::remove_other_versions(const StoredArtifact& current, const std::string& name) {
  if (!current.is_file || current.path.empty()) return;
  const std::filesystem::path at = path_of(current);
  const std::string keep = at.filename().string();
  const std::string prefix = component(name) + ".";
  std::error_code ec;
  const auto written_at = std::filesystem::last_write_time(at, ec);
  if (ec) return;
  for (const auto& e : std::filesystem::directory_iterator(at.parent_path(), ec)) {
    const std::string file = e.path().filename().string();
    if (file == keep || file.size() != prefix.size() + 64 || file.rfind(prefix, 0) != 0) continue;
    if (file.find_first_not_of("0123456789abcdef", prefix.size()) != std::string::npos) continue;
    std::error_code stat_ec;
    const auto t = std::filesystem::last_write_time(e.path(), stat_ec);
    if (!stat_ec && t <= written_at) std::filesystem::remove(e.path(), stat_ec);
  }
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
