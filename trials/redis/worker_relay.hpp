// WorkerRelay: the scheduler's side of the worker endpoint
// (POST /api/worker/redis). A worker host that holds a worker token instead
// of a Redis credential sends its store calls here as RESP
// (worker_channel.hpp); the relay runs a call only when it is one of a
// worker's, for the worker the token names, on the scheduler's own
// connection, and answers the replies in RESP.
//
// Why a relay and not a Redis user per host: Redis 7 checks every command a
// Function runs against the caller's ACL, so a user that may call the
// Functions that claim, renew and complete may also run those commands by
// hand (HSET a project's usage, GET any spec). No key pattern separates the
// two. Here the worker holds no Redis credential at all, and what it can do
// is the list in `admit`:
//   - the worker Functions (claim, heartbeat, report, complete, release,
//     artifacts, rank leases, rendezvous, its registry entry), each only with
//     the token's host as the worker argument: the Functions' own fencing
//     then refuses any trial leased to another worker;
//   - with a project-bound token, offers and registry entries of that project
//     only (claims take no other project's trials);
//   - reads of a trial's artifacts only where worker_may_read says it holds
//     that trial or one of its sweep (a resumed trial's checkpoint);
//   - the wake stream (a blocking read, at most `max_block`), TIME, PING, the
//     Functions' version, the pool's artifact folder, the active sweeps' ids;
//   - the report cap is the scheduler's, whatever the worker sends.
// Everything else (HSET, GET of a spec, cancel, update_project, ...) gets an
// UNAUTHORIZED error reply naming the command, and runs nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expiring_map.hpp"
#include "core/idle_pool.hpp"
#include "core/result.hpp"
#include "trials/access.hpp"
#include "trials/redis/redis_store.hpp"

namespace hpo::trials::redis {

struct RelayOptions {
  // The store's (WorkerRelay takes them from its RedisStoreConfig).
  std::string prefix = "hpo:";
  std::int64_t max_reports_per_trial = kMaxReportsPerTrial;
  std::chrono::milliseconds max_block{5000};  // longest wait of a blocking read
  std::size_t max_commands = 256;             // per request
  std::chrono::milliseconds remember{1000};   // a revoked token is refused within this
};

// What `admit` lets run for one command.
struct Admitted {
  std::vector<std::string> argv;  // the worker's, with the scheduler's limits in place of its own
  std::string read_trial;         // non-empty: only if worker_may_read(host, read_trial)
  bool writes = false;            // waits for the replicas the scheduler's URL asks for
  std::chrono::milliseconds block{0};  // a blocking read's wait
};

// Whether `argv` is a worker's call for `who` (pure: every rule is tested on
// its own). kUnauthorized naming the command and why, else what runs.
Result<Admitted> admit(const WorkerTokenRecord& who, std::vector<std::string> argv,
                       const RelayOptions& options);

class WorkerRelay {
 public:
  WorkerRelay(RedisStoreConfig store, RelayOptions options);
  ~WorkerRelay();

  // The credential behind a worker token; nullopt for none (unknown,
  // revoked). Remembered for options.remember.
  Result<std::optional<WorkerTokenRecord>> authenticate(const std::string& token);
  // Runs the RESP commands of `body` for `who`, in order; the RESP replies,
  // one per command (a refused one's is an error reply). An error when the
  // body is not RESP (kInvalidArgument) or Redis cannot be reached
  // (kUnavailable: nothing after the failed command ran).
  Result<std::string> relay(const WorkerTokenRecord& who, std::string_view body);

 private:
  std::unique_ptr<RedisStore> borrow();  // an idle connection, else a new one
  Result<Reply> run(RedisStore& store, const WorkerTokenRecord& who, const Admitted& call);

  RedisStoreConfig store_config_;
  RelayOptions options_;
  IdlePool<RedisStore> pool_{64};
  std::mutex mu_;                                        // known_
  ExpiringMap<std::optional<WorkerTokenRecord>> known_;  // by token digest
};

}  // namespace hpo::trials::redis
