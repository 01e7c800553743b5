// Artifacts on a shared file system (`--artifacts DIR`: NFS, Lustre, a mounted
// bucket): the bytes of a trial's artifacts live in files, Redis keeps only a
// small reference to each, so large models and prediction sets never pass
// through Redis memory or its AOF.
//
// Layout: DIR/<sweep id>/<trial id>/<name>.<sha256 of the bytes> (a retry
// of the same write lands on the same file; two names never share one). A write goes to a
// temporary name in the same folder, is fsync'ed and renamed into place (and
// the folder fsync'ed), so a reader sees a whole file or none. The file is
// published only when the store's fenced put_artifact accepts its reference:
// a stale attempt's file is never referenced (and is removed again). The
// sweep's folder goes with the sweep (delete_sweep).
//
// Reads serve only what was stored. A reference in Redis is not trusted to
// say where a file is (a worker credential writes it, and a trial could
// shape it): the path is made again from (sweep, trial, name, SHA-256) and
// must be the reference's. Each folder beneath the root and the file itself
// are opened with no symbolic link followed (openat, O_NOFOLLOW; O_NONBLOCK,
// so a planted FIFO cannot hang a reader), the file must be a regular one of
// the reference's size, and its bytes must have the reference's SHA-256
// before any of them is served (hashed on the descriptor that then serves
// them; a version already hashed, by inode and change time, is not hashed
// again once that change time is 100 ms old: no process can set a file's
// change time back). A link to the
// scheduler's token file, a hard link to it, another trial's file named in a
// forged reference or a file changed after it was written are all refused
// with a message that names the artifact and neither a path nor a size (the
// log has those).
//
// What Redis holds under an artifact's key is encoded so that the three cases
// cannot be confused: a reference ("hpo-artifact-file/1\n" + JSON), bytes kept
// in Redis that happen to start with "hpo-artifact-" (escaped with
// "hpo-artifact-inline/1\n"), or any other bytes as they are.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "core/byte_stream.hpp"
#include "core/result.hpp"
#include "core/unique_fd.hpp"

namespace hpo::trials {

// An --artifacts folder: absolute, a directory, writable by this user;
// kInvalidArgument naming `flag` otherwise.
Status check_artifact_root(const std::string& flag, const std::string& dir);

// The SHA-256 of `bytes`, as 64 lower-case hex digits.
std::string sha256_hex(std::string_view bytes);

// The same computed on the way, over bytes that come in pieces.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(std::string_view bytes);
  std::string hex();  // once, at the end

 private:
  void* ctx_;  // EVP_MD_CTX
};

// What a Redis value is.
struct StoredArtifact {
  bool is_file = false;
  std::string bytes;  // !is_file: the artifact itself
  std::string path;   // is_file: relative to the artifact directory
  std::int64_t size = 0;
  std::string sha256;
};
// The Redis value for bytes kept in Redis (escaped when they could pass for a reference).
std::string encode_inline(std::string bytes);
// The Redis value for a file under the artifact directory.
std::string encode_file_reference(const std::string& path, std::int64_t size,
                                  const std::string& sha256);
// Decodes a value written by either; a reference that does not parse is kInternal.
Result<StoredArtifact> decode_stored(std::string value);
// How many bytes of an inline value come before the artifact's own (the
// escape encode_inline adds), from the value's first kStoredPrefixBytes bytes.
inline constexpr std::size_t kStoredPrefixBytes = 32;
std::size_t inline_escape_length(std::string_view head);
// A range of an artifact of `total` bytes: kInvalidArgument naming it and the
// size when it passes either end.
Status check_range(std::int64_t offset, std::int64_t size, std::int64_t total,
                   const std::string& what);
// The range of `bytes` into `out`, checked as check_range checks it.
Status copy_range(std::string_view bytes, std::int64_t offset, std::int64_t size,
                  const std::string& what, char* out);

// Passes the bytes on to `out`, hashing (SHA-256) and counting them.
class HashingSink final : public ByteSink {
 public:
  explicit HashingSink(ByteSink& out) : out_(out) {}
  Status write(std::string_view bytes) override;
  std::string sha() { return sha_.hex(); }  // once, at the end
  std::int64_t size() const { return size_; }

 private:
  ByteSink& out_;
  Sha256 sha_;
  std::int64_t size_ = 0;
};

// The folder's marker, DIR/.hpo-artifacts: a random id the scheduler writes
// once (kept across restarts) and announces, so that a worker can tell the
// pool's folder from an empty mount point or another folder at the same path.
inline constexpr char kArtifactMarker[] = ".hpo-artifacts";
// The id in `dir`'s marker, written first when there is none. kInternal
// naming the file when it cannot be read or written.
Result<std::string> claim_marker(const std::string& dir);
// kUnavailable (the mount may come) naming `dir` and what is wrong when its
// marker is missing or holds another id than `id`.
Status check_marker(const std::string& dir, const std::string& id);

class ArtifactDir {
 public:
  explicit ArtifactDir(std::string root);
  const std::string& root() const { return root_; }

  // Writes `bytes` for the trial (atomically, see above); the Redis value
  // that refers to the file. kInternal when the file system refuses (full,
  // read-only, gone), naming the path (not kUnavailable: no retry through a
  // Redis outage copies gigabytes again).
  Result<std::string> write(const std::string& trial_id, const std::string& name,
                            const std::string& bytes);
  // The same for bytes that `produce` writes in pieces (kStreamChunk at a
  // time through memory; the SHA-256 is computed on the way and the file
  // renamed to it at the end). Nothing is left behind on an error, whether
  // the producer's or the disk's (full: kInternal naming the file in its folder).
  Result<std::string> write_stream(const std::string& trial_id, const std::string& name,
                                   const ByteProducer& produce);
  // The file of trial `trial_id`'s artifact `name` that `ref` names, opened
  // as described above and checked: its size and its SHA-256. kInternal
  // "... does not match what was stored" otherwise, naming neither the path
  // nor a size; the details are logged.
  Result<UniqueFd> open_stored(const std::string& trial_id, const std::string& name,
                               const StoredArtifact& ref);
  // The bytes a reference names, checked.
  Result<std::string> read(const std::string& trial_id, const std::string& name,
                           const StoredArtifact& ref);
  // The same, streamed into `out` in pieces: checked whole first (open_stored),
  // then hashed again on the way, so a change while it is read is an error at
  // the end (`out` then holds part of the bytes; its owner discards them).
  Status read_stream(const std::string& trial_id, const std::string& name,
                     const StoredArtifact& ref, ByteSink& out);
  // `size` bytes from `offset` of the file a reference names, into `out`,
  // from a file checked whole first (open_stored).
  Status read_range(const std::string& trial_id, const std::string& name, const StoredArtifact& ref,
                    std::int64_t offset, std::int64_t size, char* out);
  // The absolute path a trial's artifact of these bytes has (made from the
  // ids and the hash, never from a reference): for logs and tests.
  std::string path_for(const std::string& trial_id, const std::string& name,
                       const std::string& sha256) const;
  // Removes the file a reference names (a replaced checkpoint, a refused
  // write) when it is where the artifact's file belongs; missing files are fine.
  void remove(const std::string& trial_id, const std::string& name, const StoredArtifact& ref);
  // Removes the other versions of the artifact whose file `current` is (a
  // checkpoint replaced while its successor was not yet durable: kept then,
  // removed now that one is), those written before it only.
  void remove_other_versions(const std::string& trial_id, const std::string& name,
                             const StoredArtifact& current);
  // Removes the sweep's folder and everything in it.
  Status remove_sweep(const std::string& sweep_id);

  // The sweep a trial id belongs to ("<sweep>-<n>", "<sweep>-m<n>").
  static std::string sweep_of(const std::string& trial_id);

 private:
  // "<sweep>/<trial>", as components: where a trial's files are beneath the root.
  static std::string trial_folder(const std::string& trial_id);
  // The trial's folder beneath the root, each step opened with no link
  // followed (and made first where missing, with `create`); the error names the step.
  Result<UniqueFd> open_trial_folder(const std::string& trial_id, bool create = false) const;
  // A refusal: logged with `why` (paths, sizes), returned without them.
  Error refuse(const std::string& trial_id, const std::string& name, const std::string& why) const;

  // Versions of files whose bytes were hashed and found as stored, by inode
  // and change time (shared by the copies of one ArtifactDir; bounded).
  struct Verified {
    std::mutex mu;
    std::map<std::string, std::string> sha_by_version;
  };
  std::string root_;
  std::shared_ptr<Verified> verified_ = std::make_shared<Verified>();
};

}  // namespace hpo::trials
