// Agent: the worker's engine. It only wires the rooms beside it in
// workers/agent/, one concern each, every thread with its own store
// connection (the agent uses two roles: the queue and the worker registry):
//
//   slot_book     which slots are free; slots taken as the store's claim counted them
//   claimer       the claimer thread: claim_batch for the free slots, hand each
//                 trial (or gang share) to a slot thread, wait on the wake stream
//   slot_runner   one thread per slot: run what it is handed through the executor
//                 of its kind, in the attempt's box and directory
//   trial_reporter  the executor's Reporter: reports batched and thinned,
//                 artifacts and the rendezvous, retried through an outage
//   completer     results: sent in complete_batch, released when this worker
//                 stopped the trial, dropped when the lease was lost
//   lease_keeper  the heartbeat thread: leases, stop reasons, gang shares'
//                 rank leases, the registry entry, orphaned leases
//   gang_follower a gang follower's ranks (another worker leads)
//   work_root     attempt directories and the per-host lock on them
//   shared        what the threads share (one lock), outage retries, the offer
//
// A claim carries the sweep's spec, parsed once per sweep, so the worker
// never reads a sweep. A drain (SIGTERM) stops claiming, lets running trials
// finish for drain_grace, then stops the rest and releases their leases: the
// trials go back to the queue without a failed attempt.
//
// Outages: while the store is unreachable, running trials keep running for up
// to outage_grace; heartbeats resume when it is back, and results, artifacts
// and releases are retried until then (the reaper extends leases after an
// outage, so nothing expires for time nobody could renew). Only a heartbeat
// refused as stale (kLeaseLost) or a store away for longer than outage_grace
// stops a trial.
//
// The Agent holds no LibTorch: executors come from factories registered per
// trial kind (main registers the torch one when it is linked).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "trials/spec/spec.hpp"
#include "trials/store.hpp"
#include "workers/command_executor.hpp"
#include "workers/executor.hpp"
#include "workers/gpu_inventory.hpp"
#include "workers/trial_sandbox.hpp"

namespace hpo::workers {

namespace agent {
struct Shared;
class WorkRoot;
class Completer;
class LeaseKeeper;
class Claimer;
class SlotRunner;
}  // namespace agent

// Called once per agent thread (from that thread).
using ConnectionFactory = trials::StoreFactory;

struct AgentOptions {
  std::string name;  // the worker's name: lease owner, registry key
  std::string host;  // for the registry
  int slots = 1;
  int threads_per_slot = 1;  // CPU threads per occupied slot
  // What the worker offers beyond slots (trials/placement.hpp): its devices
  // (device i is CUDA ordinal i, or the MIG instance its id names), shared by
  // the attempts of its slots; torch trials when the executors have kind
  // torch, on GPUs when `cuda`; cores and memory its trials' resources.cpus /
  // memory_gb share (0: not counted); labels.
  std::vector<trials::GpuDevice> gpus;
  // Per device of `gpus`: the driver's files a confined trial on it needs
  // (GpuInventory::device_files; empty: none known).
  std::vector<std::vector<std::string>> gpu_files;
  bool cuda = false;
  double cpus = 0;
  double memory_gb = 0;
  std::map<std::string, std::string> labels;
  // The one project whose trials it claims ("": every project's; --project).
  std::string project;
  // This host's address the pool's other hosts reach (TrialTask::address);
  // empty: loopback.
  std::string address;
  std::int64_t lease_ms = 30000;
  // Attempt directories go under it (empty: none made). The agent holds a lock
  // file in it while it runs; at start it removes sibling directories whose
  // lock nobody holds (attempt directories of dead workers on this host).
  std::string work_root;
  // An idle claimer blocks on the store's wake stream up to this long before
  // it claims again (it wakes at once when work is queued); also how soon a
  // stop is noticed while idle.
  std::chrono::milliseconds idle_wait{250};
  // The most trials one claim_batch or complete_batch carries.
  int max_batch = 64;
  // How long running trials go on, and results are retried, while the store
  // cannot be reached (a Redis or scheduler outage).
  std::chrono::milliseconds outage_grace{std::chrono::minutes(10)};
  // drain(): how long running trials may still finish before they are stopped
  // and their leases released.
  std::chrono::milliseconds drain_grace{std::chrono::seconds(30)};
  // A lease the store says we hold, that no slot runs, older than this: a
  // claim whose reply was lost. Longer than a claim call can take.
  std::chrono::milliseconds orphan_after{std::chrono::seconds(15)};
  // Whom trials run as and how their processes are held (one box per
  // attempt, ended with it); null: as this process, uncontained (unit tests).
  std::shared_ptr<TrialSandbox> sandbox;
};

struct AgentStats {
  std::int64_t claimed = 0;
  std::int64_t completed = 0;  // results accepted by the store
  std::int64_t released = 0;   // attempts given back (drain, orphaned leases)
  std::int64_t dropped = 0;    // results not sent or refused (lease lost)
};

class Agent {
 public:
  Agent(AgentOptions options, ConnectionFactory connect, ExecutorRegistry executors,
        const GpuInventory* gpus = nullptr);
  ~Agent();  // stop()
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // kConflict when another live worker holds work_root (the same name twice
  // on one host): nothing is started then.
  Status start();
  // Stop claiming, tell running trials to stop (StopReason::kShutdown), and
  // return at once; their leases are released. Safe from any thread (not from
  // a signal handler).
  void request_stop();
  // request_stop() and join every thread: returns once every executor returned.
  void stop();
  // Graceful stop: no more claims; trials whose executor checkpoints stop at
  // once with a checkpoint and are released; the others get
  // options().drain_grace to finish (`until_stopped` ends the wait early, e.g.
  // a second signal), then stop(). Returns once every thread has ended.
  void drain(const std::function<bool()>& until_stopped = {});

  AgentStats stats() const;
  // Why the agent stopped on its own (another live worker of its name on
  // another host; the scheduler refusing its worker token: revoked, or made
  // for other names); "" when it did not.
  std::string fatal_error() const;
  // Something runs or is being claimed: a trial, a gang's ranks, a claim call.
  bool busy() const;
  const AgentOptions& options() const { return options_; }

 private:
  AgentOptions options_;
  const GpuInventory* gpus_;
  ExecutorRegistry executors_;
  std::atomic<bool> started_{false};
  // The rooms (workers/agent/): what they share, then each concern.
  std::unique_ptr<agent::Shared> shared_;
  std::unique_ptr<agent::WorkRoot> work_root_;
  std::unique_ptr<agent::Completer> completer_;
  std::unique_ptr<agent::LeaseKeeper> lease_keeper_;
  std::unique_ptr<agent::Claimer> claimer_;
  std::unique_ptr<agent::SlotRunner> slot_runner_;
  std::thread completer_thread_;
  std::vector<std::thread> threads_;
};

// The built-in executors: command (with these options) and synthetic.
ExecutorRegistry builtin_executors(const CommandOptions& command);
inline ExecutorRegistry builtin_executors(double kill_grace_s = 5.0) {
  CommandOptions o;
  o.kill_grace_s = kill_grace_s;
  return builtin_executors(o);
}

}  // namespace hpo::workers
