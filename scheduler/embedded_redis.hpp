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
// Authority: two Redis users with random passwords (trials/redis/acl.hpp),
// made once and kept in <data dir>/redis.conf (mode 0600, so they are not in
// `ps` either); the default user is off. The scheduler connects as
// hpo-scheduler (url()); its 0600 scheduler.json gives local workers the
// hpo-worker URL (worker_url()), whose user can run only what workers run.
// Another local user cannot reach the data behind the API.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/child_process.hpp"
#include "core/result.hpp"

namespace hpo::scheduler {

class EmbeddedRedis {
 public:
  // Starts redis-server and waits (bounded) until it answers PING.
  // `prefix`: the keys the worker user may touch.
  static Result<std::unique_ptr<EmbeddedRedis>> start(const std::string& data_dir,
                                                      const std::string& prefix, int port = 0);
  ~EmbeddedRedis();
  EmbeddedRedis(const EmbeddedRedis&) = delete;
  EmbeddedRedis& operator=(const EmbeddedRedis&) = delete;

  std::string url() const;         // as the scheduler's user
  std::string worker_url() const;  // as the worker's user
  int port() const { return port_; }

  // If the child died, starts it again on the same port and data (AOF replay).
  // Returns false when it was alive. Called by the scheduler's main loop.
  Result<bool> restart_if_dead();

  // SIGTERM (Redis fsyncs and exits), bounded wait, then SIGKILL.
  void stop();

 private:
  struct Users {
    std::string scheduler, worker;  // passwords
  };
  EmbeddedRedis(std::string data_dir, int port, Users users)
      : data_dir_(std::move(data_dir)), port_(port), users_(std::move(users)) {}
  static Result<Users> users_for(const std::string& data_dir, const std::string& prefix);
  Status spawn();

  std::string data_dir_;
  int port_ = 0;
  Users users_;
  std::optional<ChildProcess> child_;  // the running redis-server (core/child_process.hpp)
};

// A TCP port on 127.0.0.1 that was free a moment ago.
int pick_free_port();
bool port_is_free(int port);

}  // namespace hpo::scheduler
