// What a scheduler must own, or be sure of, before it serves.
//
// OwnerLock: one scheduler per HPO_HOME and per embedded-Redis data
// directory. An exclusive flock on a lock file inside the directory, held for
// the life of the process (released by the kernel when it dies, even by
// SIGKILL); the file holds the owner's pid for the refusal message. Opened
// O_CLOEXEC, so the embedded redis-server child does not inherit the lock.
//
// check_durability: an external Redis must persist every write (appendonly
// yes), or an acknowledged submit can vanish in a Redis crash.
#pragma once

#include <memory>
#include <string>

#include "core/result.hpp"
#include "trials/redis/redis_client.hpp"

namespace hpo::scheduler {

class OwnerLock {
 public:
  // kConflict naming the directory and the other owner's pid when taken.
  static Result<std::unique_ptr<OwnerLock>> acquire(const std::string& dir,
                                                    const std::string& what);
  ~OwnerLock();
  OwnerLock(const OwnerLock&) = delete;
  OwnerLock& operator=(const OwnerLock&) = delete;

 private:
  explicit OwnerLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Whether the server appends every write to its AOF. Errors: unreachable, or
// neither CONFIG GET nor INFO persistence answers.
Result<bool> redis_persists_writes(const trials::redis::RedisUrl& url);

}  // namespace hpo::scheduler
