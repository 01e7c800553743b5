#include "scheduler/ownership.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include <fmt/format.h>

namespace hpo::scheduler {

Result<std::unique_ptr<OwnerLock>> OwnerLock::acquire(const std::string& dir,
                                                      const std::string& what) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string path = dir + "/owner.lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return Error::unavailable(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {};
    ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    std::string pid = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "?";
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    return Error::conflict(fmt::format(
        "another hpo-scheduler (pid {}) already owns {} {} (lock {}); stop it, or give this one "
        "its own directory",
        pid, what, dir, path));
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The lock holds without the pid; only the message of a refused second owner suffers.
  }
  return std::unique_ptr<OwnerLock>(new OwnerLock(fd));
}

OwnerLock::~OwnerLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

Result<bool> redis_persists_writes(const trials::redis::RedisUrl& url) {
  trials::redis::RedisClient client(url);
  auto r = client.command({"CONFIG", "GET", "appendonly"});
  if (!r) return r.error();
  if (!r->is_error() && r->elements.size() == 2) return r->elements[1].str == "yes";
  // CONFIG may be renamed away on managed servers: INFO says it too.
  auto info = client.command({"INFO", "persistence"});
  if (!info) return info.error();
  if (info->is_error()) return Error::unavailable("redis: INFO persistence: " + info->str);
  return info->str.find("aof_enabled:1") != std::string::npos;
}

}  // namespace hpo::scheduler
