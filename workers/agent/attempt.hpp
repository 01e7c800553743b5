// What the agent's rooms share about one attempt in flight: a trial's
// attempt (RunningAttempt), a gang follower's ranks (GangShare), and the
// small helpers every room logs and stops with.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/log.hpp"
#include "trials/placement.hpp"
#include "trials/store.hpp"
#include "trials/trial.hpp"
#include "workers/agent/gpu_accounting.hpp"
#include "workers/executor.hpp"

namespace hpo::workers::agent {

using Clock = std::chrono::steady_clock;

class TrialReporter;

// The two roles an attempt uses of its slot thread's store connection: the
// queue (reports, leases, results, its own artifacts) and the artifacts it
// reads back, asked of the connection only when it reads one (a checkpoint).
struct AttemptRoles {
  trials::TrialQueue& queue;
  std::function<trials::ArtifactStore&()> artifacts;
};

// One attempt of a trial from its claim until the store answered its result
// (or it was released or dropped). Its stop reason only ever goes from kNone
// to one reason (first writer wins); the executor reads it between steps.
struct RunningAttempt {
  trials::Trial trial;  // as claimed: id, sweep, attempt
  std::vector<int> slots;
  std::vector<int> devices;            // the devices the claim placed it on (indices)
  std::atomic<long> program_group{0};  // its program's process group (Reporter::program_started)
  GpuUse gpu_use;                      // sampled by the lease keeper
  trials::ResourceRequest request;     // what it was claimed with (its cores and memory are taken)
  // Its executor (or, since it said so, its program) checkpoints on a checkpoint_stop().
  std::atomic<bool> checkpoints{false};
  std::atomic<StopReason> stop{StopReason::kNone};
  std::atomic<bool> delivering{false};             // its result is with the completer
  Clock::time_point last_lease_ok = Clock::now();  // lease keeper only
  // The attempt's reporter while its executor runs (the lease keeper flushes
  // held reports through it); guarded by reporter_mu.
  std::mutex reporter_mu;
  TrialReporter* reporter = nullptr;

  void set_stop(StopReason r) {
    StopReason none = StopReason::kNone;
    stop.compare_exchange_strong(none, r);
  }
};

// A gang follower's share running here: what the lease keeper renews.
struct GangShare {
  trials::RankShare share;
  trials::ResourceRequest request;  // all its ranks' (cores and memory are taken)
  std::atomic<bool> stale{false};   // the attempt is over (fence) or its rank lease is gone
  Clock::time_point last_ok = Clock::now();  // lease keeper only
  bool release_asked = false;                // draining: the leader was asked (lease keeper)
  std::string key() const;                   // "<trial>:<attempt>:<first rank>"
};

// What a control answer of the store asks of a running attempt.
StopReason stop_for(trials::Control c);

LogFields trial_fields(const trials::Trial& t, const std::string& worker, LogFields more = {});

// Logs a warning at most every 10 s (Redis down must not flood the log).
class ThrottledLog {
 public:
  void warn(std::string_view what, const LogFields& fields);

 private:
  std::optional<Clock::time_point> last_;
};

}  // namespace hpo::workers::agent
