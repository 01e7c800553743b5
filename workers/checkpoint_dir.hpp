// A command trial's checkpoint: the files it keeps in $HPO_CHECKPOINT_DIR,
// packed into the one artifact "checkpoint" and unpacked there for the next
// attempt.
//
// Format: "hpo-checkpoint-dir 1\n", then per regular file "<size> <path>\n"
// and its bytes; paths are relative, '/'-separated, without "." or ".."
// parts, newlines or NULs. Symbolic links and other non-regular entries are
// skipped. At most kMaxCheckpointFiles files and kMaxCheckpointBytes bytes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace hpo::workers {

inline constexpr std::size_t kMaxCheckpointFiles = 1024;
inline constexpr std::size_t kMaxCheckpointBytes = std::size_t{64} << 20;

struct PackedDir {
  std::string bytes;
  std::size_t files = 0;
  std::vector<std::string> skipped;  // entries left out, with why
};

// kInvalidArgument naming the file when the folder holds more than the limits.
Result<PackedDir> pack_dir(const std::string& dir);
// Writes the files into `dir` (which must exist); kInvalidArgument for bytes
// that are not a pack (nothing is written past the first bad entry).
Result<std::size_t> unpack_dir(const std::string& bytes, const std::string& dir);

}  // namespace hpo::workers
