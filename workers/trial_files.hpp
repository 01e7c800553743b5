// Reading what a trial wrote. A worker (root, or with CAP_DAC_OVERRIDE)
// reads files in a folder the trial owns — its checkpoint folder, packed while
// the program still runs, and its outputs — so every such read must hold
// against a trial that swaps a file for a link between a check and the open.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "core/result.hpp"

namespace hpo::workers {

// The bytes of `relative` under the folder `dir`, read the way a worker must
// read what a trial wrote: no symbolic link anywhere in the path (`dir`'s last
// component included), a regular file only (a FIFO cannot block the reader),
// at most `limit` bytes (else kPayloadTooLarge). A trial that swaps a file for a link to the
// worker's secrets between a check and the read gets an error, not the secret.
Result<std::string> read_beneath(const std::string& dir, const std::string& relative,
                                 std::int64_t limit);

// A regular file opened the same way, for a read that streams it: owns the
// descriptor; `size` is the open file's at the time of the open.
class BeneathFile {
 public:
  BeneathFile(int fd, std::int64_t size) : fd_(fd), size_(size) {}
  BeneathFile(BeneathFile&& o) noexcept : fd_(std::exchange(o.fd_, -1)), size_(o.size_) {}
  BeneathFile& operator=(BeneathFile&&) = delete;
  ~BeneathFile();
  int fd() const { return fd_; }
  std::int64_t size() const { return size_; }

 private:
  int fd_;
  std::int64_t size_;
};
// kInvalidArgument (a plain message: callers name the file) when it cannot be opened so.
Result<BeneathFile> open_beneath(const std::string& dir, const std::string& relative);

}  // namespace hpo::workers
