// A trial's folders packed. A command trial's checkpoint: the files it
// keeps in $HPO_CHECKPOINT_DIR, packed into the one artifact "checkpoint"
// and unpacked there for the next attempt, streamed both ways (kStreamChunk
// through memory at a time, any size: the artifact folder's disk is the
// limit, or the store's inline_artifact_limit() without one). And a
// subfolder of its outputs, as a tar archive (tar_dir).
//
// Format: "hpo-checkpoint-dir 1\n", then per regular file "<size> <path>\n"
// and its bytes; paths are relative, '/'-separated, without "." or ".."
// parts, newlines or NULs. Symbolic links and other non-regular entries are
// skipped. At most kMaxCheckpointFiles files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "core/byte_stream.hpp"
#include "core/result.hpp"

namespace hpo::workers {

inline constexpr std::size_t kMaxCheckpointFiles = 10000;

struct PackStats {
  std::size_t files = 0;
  std::int64_t bytes = 0;            // the pack's, headers included
  std::vector<std::string> skipped;  // entries left out, with why
};

// Streams the folder's files into `out` (read the way trial_files.hpp reads
// what a trial wrote: no link is followed). kInvalidArgument naming
// HPO_CHECKPOINT_DIR for too many files or a file that changes size while it
// is packed; the sink's own errors as they are.
Result<PackStats> pack_dir(const std::string& dir, ByteSink& out);

// A sink that writes a pack's files into `dir` (which must exist) as the
// bytes arrive. write() is kInvalidArgument for bytes that are not a pack
// (nothing is written past the first bad entry); finish() checks that the
// pack ended on a whole entry and returns the files written.
class DirUnpacker final : public ByteSink {
 public:
  explicit DirUnpacker(std::string dir) : dir_(std::move(dir)) {}
  Status write(std::string_view bytes) override;
  Result<std::size_t> finish();
  std::int64_t bytes() const { return bytes_; }  // of the pack, so far

 private:
  Status header_line(std::string_view line);

  std::string dir_;
  bool magic_seen_ = false;
  std::string pending_;  // a header line not yet whole
  std::optional<std::ofstream> file_;
  std::string file_path_;
  std::uint64_t left_ = 0;  // bytes of the open file still to come
  std::size_t files_ = 0;
  std::int64_t bytes_ = 0;
};

// The folder's regular files as a POSIX tar archive (ustar; what `tar xf`
// and Python's tarfile read), streamed the same way and within the same
// bounds: a subfolder of HPO_OUTPUT_DIR (a TensorBoard run) kept whole. A
// path too long for tar's fields, or files of more than `max_bytes`
// together (0: no bound), is an error naming `what` (and, for the bytes, the
// setting `max_bytes_setting` that raises the bound).
Result<PackStats> tar_dir(const std::string& dir, ByteSink& out, const char* what,
                          std::int64_t max_bytes = 0, const char* max_bytes_setting = nullptr);

// The same on bytes in memory (tests, small packs).
Result<std::string> pack_dir_bytes(const std::string& dir);
Result<std::size_t> unpack_dir(const std::string& bytes, const std::string& dir);

}  // namespace hpo::workers
