// read_beneath: openat2 with RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH from the
// folder (itself opened O_NOFOLLOW), so no component of the path may be a
// link, nor lead out of the folder; before Linux 5.6, one component at a time
// with O_NOFOLLOW. O_NONBLOCK and an fstat check keep a FIFO from blocking the
// reader; the size is checked on the open file, not the path.
#include "workers/trial_files.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/byte_stream.hpp"

namespace hpo::workers {

BeneathFile::~BeneathFile() {
  if (fd_ >= 0) ::close(fd_);
}

Result<BeneathFile> open_beneath(const std::string& dir, const std::string& relative) {
  // Plain messages: the callers name the file.
  auto refuse = [](std::string why) {
    return Error{ErrorCode::kInvalidArgument, std::move(why), {}};
  };
  auto fail = [&](int e) {
    return refuse(fmt::format("cannot read it ({}; links are not followed)", ::strerrordesc_np(e)));
  };
  const int base = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (base < 0) return fail(errno);
  open_how how{};
  how.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  int fd = static_cast<int>(::syscall(SYS_openat2, base, relative.c_str(), &how, sizeof how));
  if (fd < 0 && errno == ENOSYS) {
    // Before Linux 5.6: one component at a time, none of them a link.
    int at = ::dup(base);
    std::size_t start = 0;
    while (at >= 0) {
      const auto slash = relative.find('/', start);
      const bool last = slash == std::string::npos;
      const std::string part = relative.substr(start, last ? std::string::npos : slash - start);
      const int next = ::openat(
          at, part.c_str(), O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (last ? O_RDONLY : O_DIRECTORY));
      const int e = errno;
      ::close(at);
      at = next;
      errno = e;
      if (last || at < 0) break;
      start = slash + 1;
    }
    fd = at;
  }
  const int open_errno = errno;
  ::close(base);
  if (fd < 0) return fail(open_errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return refuse("not a regular file");
  }
  return BeneathFile(fd, st.st_size);
}

Result<std::string> read_beneath(const std::string& dir, const std::string& relative,
                                 std::int64_t limit) {
  auto file = open_beneath(dir, relative);
  if (!file) return file.error();
  if (file->size() > limit)
    return Error{ErrorCode::kPayloadTooLarge,
                 fmt::format("{} bytes, more than the {} MiB a trial may store per file",
                             file->size(), limit >> 20),
                 {}};
  StringSink bytes(file->size(), relative);
  bytes.bytes().reserve(static_cast<std::size_t>(file->size()));
  if (auto n = copy_fd(file->fd(), bytes, relative, file->size()); !n) return n.error();
  return std::move(bytes.bytes());
}

}  // namespace hpo::workers
