#include "workers/control_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace hpo::workers {

std::string control_dir(const std::string& work_dir) {
  return (std::filesystem::path(work_dir) / "control").string();
}

const char* stop_word(StopReason reason) {
  switch (reason) {
    case StopReason::kNone:
      return "none";
    case StopReason::kPruned:
      return "prune";
    case StopReason::kCancelled:
      return "cancel";
    case StopReason::kTimeout:
      return "timeout";
    case StopReason::kLeaseLost:
      return "lost_lease";
    case StopReason::kShutdown:
      return "drain";
    case StopReason::kPreempted:
      return "preempt";
  }
  return "none";
}

ControlDir::ControlDir(const std::string& work_dir) {
  if (work_dir.empty()) return;
  const std::string dir = control_dir(work_dir);
  if (::mkdir(dir.c_str(), 0755) != 0) return;
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd_ < 0) return;
  // The folder opened must be the one made: the worker's, writable by no one else.
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
    ::close(fd_);
    fd_ = -1;
    return;
  }
  ::fchmod(fd_, 0755);  // the trial user reads it, whatever the worker's umask
}

ControlDir::~ControlDir() {
  if (fd_ >= 0) ::close(fd_);
}

void ControlDir::write(const char* name, const std::string& text) const {
  if (fd_ < 0) return;
  const std::string tmp = std::string(name) + ".tmp";
  const int fd =
      ::openat(fd_, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ::fchmod(fd, 0644);
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (written) ::renameat(fd_, tmp.c_str(), fd_, name);
}

}  // namespace hpo::workers
