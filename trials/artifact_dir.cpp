#include "trials/artifact_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <openssl/evp.h>

#include <nlohmann/json.hpp>

#include "core/log.hpp"

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
  const std::string folder = root_ + "/" + trial_folder(trial_id);
  // Made and opened beneath the root with no link followed: a link planted
  // for the trial's folder sends no write elsewhere.
  auto dir = open_trial_folder(trial_id, /*create=*/true);
  if (!dir)
    return Error::internal("cannot make the artifact folder " + folder + ": " +
                           dir.error().message);
  std::random_device rd;
  const std::string tmp =
      fmt::format(".tmp-{}-{}-{:08x}", component(name).substr(0, 40), ::getpid(), rd());
  const int fd =
      ::openat(dir->get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
  if (fd < 0) return Error::internal(os_error("cannot create", folder + "/" + tmp));
  FdSink file(fd, folder + "/" + tmp);
  HashingSink sink(file);
  Status st = produce(sink);
  if (st && ::fsync(fd) != 0) st = Error::internal(os_error("cannot write", folder + "/" + tmp));
  if (::close(fd) != 0 && st) st = Error::internal(os_error("cannot write", folder + "/" + tmp));
  if (!st) {
    ::unlinkat(dir->get(), tmp.c_str(), 0);
    return st.error();
  }
  const std::string sha = sink.sha();
  const std::string file_name = component(name) + "." + sha;
  if (::renameat(dir->get(), tmp.c_str(), dir->get(), file_name.c_str()) != 0) {
    const std::string msg = os_error("cannot publish", folder + "/" + file_name);
    ::unlinkat(dir->get(), tmp.c_str(), 0);
    return Error::internal(msg);
  }
  ::fsync(dir->get());  // the rename itself survives a crash
  return encode_file_reference(trial_folder(trial_id) + "/" + file_name, sink.size(), sha);
}

std::string ArtifactDir::trial_folder(const std::string& trial_id) {
  return component(sweep_of(trial_id)) + "/" + component(trial_id);
}

std::string ArtifactDir::path_for(const std::string& trial_id, const std::string& name,
                                  const std::string& sha256) const {
  return root_ + "/" + trial_folder(trial_id) + "/" + component(name) + "." + sha256;
}

Error ArtifactDir::refuse(const std::string& trial_id, const std::string& name,
                          const std::string& why) const {
  log_error("an artifact file was refused: it is not what was stored",
            {{"trial", trial_id}, {"artifact", name}, {"why", why}});
  return Error::internal(fmt::format(
      "artifact {} of trial {} does not match what was stored (the log says why)", name, trial_id));
}

Result<UniqueFd> ArtifactDir::open_trial_folder(const std::string& trial_id, bool create) const {
  // The root is the operator's (it may be a link); nothing beneath it is followed.
  UniqueFd dir(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return Error::internal(os_error("cannot open the artifact folder", root_));
  for (const std::string& step : {component(sweep_of(trial_id)), component(trial_id)}) {
    if (create && ::mkdirat(dir.get(), step.c_str(), 0755) != 0 && errno != EEXIST)
      return Error::internal(os_error("cannot make the folder", step));
    UniqueFd next(
        ::openat(dir.get(), step.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next)
      return Error::not_found(os_error("cannot open the folder (a link, or no folder)", step));
    dir = std::move(next);
  }
  return dir;
}

namespace {

// Whether `sha` is how hpo names bytes: 64 lower-case hex digits.
bool is_sha256_hex(const std::string& sha) {
  return sha.size() == 64 && sha.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// What identifies one version of a file's bytes: no process can set a
// file's change time, so a write or a rename over it makes a new version.
std::string version_of(const struct stat& st) {
  return fmt::format("{}:{}:{}:{}.{}:{}.{}", st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec,
                     st.st_mtim.tv_nsec, st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
}

constexpr std::size_t kVerifiedVersions = 4096;

}  // namespace

Result<UniqueFd> ArtifactDir::open_stored(const std::string& trial_id, const std::string& name,
                                          const StoredArtifact& ref) {
  if (!ref.is_file || !is_sha256_hex(ref.sha256) || ref.size < 0)
    return refuse(trial_id, name, "the reference is not one hpo writes: " + ref.path);
  const std::string file = component(name) + "." + ref.sha256;
  const std::string expected = trial_folder(trial_id) + "/" + file;
  if (ref.path != expected)
    return refuse(
        trial_id, name,
        fmt::format("the reference names {}, the artifact's file is {}", ref.path, expected));
  auto dir = open_trial_folder(trial_id);
  if (!dir) return refuse(trial_id, name, dir.error().message);
  UniqueFd fd(::openat(dir->get(), file.c_str(),
                       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd) return refuse(trial_id, name, os_error("cannot open (a link, or gone)", expected));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return refuse(trial_id, name, expected + " is not a regular file");
  if (st.st_size != ref.size)
    return refuse(trial_id, name,
                  fmt::format("{} is {} bytes, its reference says {} (a torn or replaced copy)",
                              expected, static_cast<std::int64_t>(st.st_size), ref.size));
  const std::string version = version_of(st);
  {
    std::lock_guard lock(verified_->mu);
    auto it = verified_->sha_by_version.find(version);
    if (it != verified_->sha_by_version.end() && it->second == ref.sha256) return fd;
  }
  NullSink none;
  HashingSink hashed(none);
  auto read = copy_fd(fd.get(), hashed, expected, ref.size);
  if (!read) return refuse(trial_id, name, read.error().message);
  if (::lseek(fd.get(), 0, SEEK_SET) != 0)  // served from its start (read_stream, a download)
    return refuse(trial_id, name, os_error("cannot rewind", expected));
  if (*read != ref.size || hashed.sha() != ref.sha256)
    return refuse(trial_id, name, expected + " does not have its reference's SHA-256");
  // Remembered only once its change time is kSettled old: a change within the
  // same clock tick as the one it shows (file times come from the kernel's
  // coarse clock, ticks of 10 ms at most) would keep it; one later cannot.
  // (The ensemble stage reads a prediction file block by block: each block
  // must not hash the whole file again.)
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const auto ns = [](const struct timespec& t) {
    return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
  };
  constexpr std::int64_t kSettledNs = 100'000'000;
  if (ns(now) - ns(st.st_ctim) < kSettledNs) return fd;
  std::lock_guard lock(verified_->mu);
  if (verified_->sha_by_version.size() >= kVerifiedVersions) verified_->sha_by_version.clear();
  verified_->sha_by_version[version] = ref.sha256;
  return fd;
}

Result<std::string> ArtifactDir::read(const std::string& trial_id, const std::string& name,
                                      const StoredArtifact& ref) {
  // One byte over the size: a longer file is found torn by read_stream.
  StringSink bytes(std::max<std::int64_t>(0, ref.size) + 1,
                   "artifact " + name + " of trial " + trial_id);
  if (auto st = read_stream(trial_id, name, ref, bytes); !st) return st.error();
  return std::move(bytes.bytes());
}

Status ArtifactDir::read_stream(const std::string& trial_id, const std::string& name,
                                const StoredArtifact& ref, ByteSink& out) {
  // Checked whole before the first byte goes out (a version hashed before
  // is known), then hashed again on the way: a change while it is read is
  // found at the end (its owner discards the part it has).
  auto fd = open_stored(trial_id, name, ref);
  if (!fd) return fd.error();
  HashingSink tee(out);
  // One byte more than the reference says: a longer file is found torn, not cut.
  auto got = copy_fd(fd->get(), tee, "artifact " + name + " of trial " + trial_id,
                     std::max<std::int64_t>(0, ref.size) + 1);
  if (!got) return got.error();
  if (tee.size() != ref.size)
    return refuse(trial_id, name,
                  fmt::format("the file is {} bytes, its reference says {} (changed while read)",
                              tee.size(), ref.size));
  if (tee.sha() != ref.sha256)
    return refuse(trial_id, name, "the file does not have its reference's SHA-256");
  return {};
}

Status ArtifactDir::read_range(const std::string& trial_id, const std::string& name,
                               const StoredArtifact& ref, std::int64_t offset, std::int64_t size,
                               char* out) {
  const std::string what = "artifact " + name + " of trial " + trial_id;
  if (auto st = check_range(offset, size, ref.size, what); !st) return st;
  auto fd = open_stored(trial_id, name, ref);
  if (!fd) return fd.error();
  std::int64_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd->get(), out + done, static_cast<std::size_t>(size - done),
                              static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return refuse(trial_id, name, n == 0 ? "the file ended early" : os_error("cannot read", ""));
    done += n;
  }
  return {};
}

void ArtifactDir::remove(const std::string& trial_id, const std::string& name,
                         const StoredArtifact& ref) {
  if (!ref.is_file || !is_sha256_hex(ref.sha256)) return;
  auto dir = open_trial_folder(trial_id);
  if (!dir) return;
  // unlinkat never follows the name it removes; the folders were opened without links.
  ::unlinkat(dir->get(), (component(name) + "." + ref.sha256).c_str(), 0);
}

void ArtifactDir::remove_other_versions(const std::string& trial_id, const std::string& name,
                                        const StoredArtifact& current) {
  if (!current.is_file || !is_sha256_hex(current.sha256)) return;
  auto dir = open_trial_folder(trial_id);
  if (!dir) return;
  const std::string prefix = component(name) + ".";
  const std::string keep = prefix + current.sha256;
  struct stat kept {};
  if (::fstatat(dir->get(), keep.c_str(), &kept, AT_SYMLINK_NOFOLLOW) != 0) return;
  // The listing reads a duplicate of the folder's descriptor (closedir closes it).
  DIR* listing = ::fdopendir(::dup(dir->get()));
  if (listing == nullptr) return;
  std::vector<std::string> older;
  while (const dirent* e = ::readdir(listing)) {
    const std::string file = e->d_name;
    if (file == keep || file.size() != prefix.size() + 64 || file.rfind(prefix, 0) != 0) continue;
    if (!is_sha256_hex(file.substr(prefix.size()))) continue;
    struct stat st {};
    if (::fstatat(dir->get(), file.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    const auto mtime = std::pair{st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
    if (mtime <= std::pair{kept.st_mtim.tv_sec, kept.st_mtim.tv_nsec}) older.push_back(file);
  }
  ::closedir(listing);
  for (const auto& file : older) ::unlinkat(dir->get(), file.c_str(), 0);
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
