// EmbeddedRedis: the private redis-server child that `hpo-scheduler` starts
// when it is given no --redis URL, so that one command runs everything.
//
// Durability: AOF on with appendfsync always, data under the data dir — a 2xx
// on submit means the sweep is on disk. The port is remembered in
// <data dir>/redis.port and reused, so workers that already know the URL
// reconnect after a scheduler restart. The child gets PR_SET_PDEATHSIG, so a
// scheduler killed with -9 takes its Redis down cleanly (SIGTERM: Redis
// flushes and exits) instead of leaving an orphan holding the port.
//
// Authority: the server requires a random password (requirepass), made once
// and kept in <data dir>/redis.conf (mode 0600, so it is not in `ps` either);
// the URL carries it, and the scheduler writes that URL to its 0600
// scheduler.json. Another local user cannot reach the data behind the API.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "core/result.hpp"

namespace hpo::scheduler {

class EmbeddedRedis {
 public:
  // Starts redis-server and waits (bounded) until it answers PING.
  static Result<std::unique_ptr<EmbeddedRedis>> start(const std::string& data_dir, int port = 0);
  ~EmbeddedRedis();
  EmbeddedRedis(const EmbeddedRedis&) = delete;
  EmbeddedRedis& operator=(const EmbeddedRedis&) = delete;

  std::string url() const;
  int port() const { return port_; }

  // If the child died, starts it again on the same port and data (AOF replay).
  // Returns false when it was alive. Called by the scheduler's main loop.
  Result<bool> restart_if_dead();

  // SIGTERM (Redis fsyncs and exits), bounded wait, then SIGKILL.
  void stop();

 private:
  EmbeddedRedis(std::string data_dir, int port, std::string password)
      : data_dir_(std::move(data_dir)), port_(port), password_(std::move(password)) {}
  Status spawn();

  std::string data_dir_;
  int port_ = 0;
  std::string password_;
  pid_t pid_ = -1;
};

// A TCP port on 127.0.0.1 that was free a moment ago.
int pick_free_port();
bool port_is_free(int port);

}  // namespace hpo::scheduler
