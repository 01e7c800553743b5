// Agent: the worker's engine — slots, claims, heartbeats, control, results.
//
// Threads, each with its own store connection (the agent uses two roles: the
// queue and the worker registry):
//  - the claimer takes trials for every free slot in one claim_batch and
//    hands each to the slot thread that will run it (a trial needing k slots
//    occupies k: its thread's and k-1 other free ones). When the store had
//    less than it asked for, it blocks on the store's wake stream
//    (wait_for_work) and claims again as soon as work is queued: no polling.
//  - one thread per slot runs what it is handed (reports and artifacts go
//    through its connection) and passes the result to
//  - the completer, which sends every result waiting in one complete_batch,
//    the attempt's log with it. A result waits for its reply under its
//    lease: the attempt stays among the running ones (heartbeats keep its
//    lease) until the store has answered, while its slots already take the
//    next trial.
//  - the heartbeat thread renews every lease held in one heartbeat_batch each
//    lease/3, turns the answers (prune, cancel, lease lost) into the trial's
//    stop reason, and refreshes the worker registry entry.
// A claim carries the sweep's spec, parsed once per sweep (specs_), so the
// worker never reads a sweep.
//
// Results are sent unless the attempt's lease was lost (a stale attempt must
// not report). A drain (SIGTERM) stops claiming, lets running trials finish
// for drain_grace, then stops the rest and releases their leases: the trials
// go back to the queue without a failed attempt.
//
// Outages: while the store is unreachable, running trials keep running for up
// to outage_grace; heartbeats resume when it is back, and results, artifacts
// and releases are retried until then (the reaper extends leases after an
// outage, so nothing expires for time nobody could renew). Only a heartbeat
// refused as stale (kLeaseLost) or a store away for longer than outage_grace
// stops a trial.
//
// Lost replies: every lease/3 the heartbeat thread also asks the store which
// leases it holds; one that no slot runs and that is older than
// orphan_after (a claim whose reply never arrived) is released.
// The Agent holds no LibTorch: executors come from factories registered per
// trial kind (main registers the torch one when it is linked).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "trials/spec.hpp"
#include "trials/spec_cache.hpp"
#include "trials/store.hpp"
#include "workers/executor.hpp"
#include "workers/gpu_inventory.hpp"
#include "workers/trial_sandbox.hpp"

namespace hpo::workers {

// Called once per agent thread (from that thread).
using ConnectionFactory = trials::StoreFactory;
using ExecutorFactory = std::function<std::unique_ptr<Executor>()>;
using ExecutorRegistry = std::map<trials::TrialKind, ExecutorFactory>;

struct AgentOptions {
  std::string name;  // the worker's name: lease owner, registry key
  std::string host;  // for the registry
  int slots = 1;
  std::vector<int> slot_gpus;  // GPU ordinal of slot i; shorter than `slots`: CPU slots
  int threads_per_slot = 1;    // CPU threads per occupied slot
  // What the worker offers beyond slots (trials/placement.hpp): slot i owns
  // the GPU gpu_slots[i] (as slot_gpus[i]); torch trials when the executors
  // have kind torch, on GPUs when `cuda`; cores and memory its trials'
  // resources.cpus / memory_gb share (0: not counted); labels.
  std::vector<trials::GpuSlot> gpu_slots;
  bool cuda = false;
  double cpus = 0;
  double memory_gb = 0;
  std::map<std::string, std::string> labels;
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
  // another host); "" when it did not.
  std::string fatal_error() const;
  // Something runs or is being claimed: a trial, a gang's ranks, a claim call.
  bool busy() const;
  const AgentOptions& options() const { return options_; }

 private:
  struct Running;
  struct ShareRun;
  class TrialReporter;

  void claim_loop();
  // Runs a gang follower's ranks (handed out like a trial) until they end.
  void run_share(const std::shared_ptr<ShareRun>& share, const std::vector<int>& slots,
                 trials::Store& conn);
  void slot_loop(int slot);
  void complete_loop();
  void heartbeat_loop();
  std::unique_ptr<trials::Store> connect_until_stopped(const char* role);
  // Takes free slots for a claimed request as the store's claim counted
  // them: GPU requests the lowest free matching GPU slots; others CPU slots
  // first, then the highest free GPU slots. False when they are not free.
  bool reserve(const trials::ResourceRequest& request, std::vector<int>& out);
  // What this worker has free now and what it is (the claim's offer).
  trials::Offer offer_locked() const;
  void release(const std::vector<int>& slots);
  // The attempt leaves running_ (the last one wakes drain()).
  void forget(const trials::Trial& trial);
  void notify_everyone();  // stopping or draining
  // Runs a trial the claimer handed out (and registered in running_).
  void run_trial(const trials::Claim& claim, trials::Store& conn);
  // Spec, task, executor: the attempt's result (and its log tail).
  trials::TrialResult execute(Running& run, const trials::SweepSpec& spec, trials::Store& conn,
                              std::string& log_tail);
  // A fresh directory for the attempt under work_root ("" when none).
  std::string make_work_dir(const trials::Trial& trial);
  // The box an attempt's processes run in (a null box without a sandbox);
  // `suffix` tells a gang share's box from a trial's own on one worker.
  Result<std::unique_ptr<TrialBox>> enter_box(const trials::Trial& trial,
                                              const trials::SweepSpec& spec,
                                              std::string_view suffix = "");
  // Locks work_root and removes the attempt directories of dead workers beside it.
  Status claim_work_root();
  // Hands the result to the completer, releases the lease (stopped by a
  // drain), or drops it (lease lost). True when the completer now owns it.
  bool deliver(const std::shared_ptr<Running>& run, const trials::TrialResult& result,
               const std::string& log_tail, trials::Store& conn);
  // The completer's replies: stats, logs, and the attempt leaves running_.
  void delivered(const std::shared_ptr<Running>& run, const trials::TrialResult& result,
                 const Status& st);
  // Calls `op` again while it fails with kUnavailable, up to outage_grace
  // (sooner when a hard stop is requested).
  Status retry_through_outage(const std::function<Status()>& op);
  // Releases leases the store says we hold but no slot runs.
  void release_orphans(trials::Store& conn);
  // The claimed trial's sweep spec, parsed once per sweep.
  Result<std::shared_ptr<const trials::SweepSpec>> spec_for(const trials::Claim& claim);
  // Heartbeats every running trial; returns the registry update's status.
  Status heartbeat_once(trials::Store& conn, std::int64_t interval_ms);
  // Sleeps up to `d` unless stopping; returns false when stopping.
  bool idle_wait(std::chrono::milliseconds d);

  AgentOptions options_;
  ConnectionFactory connect_;
  ExecutorRegistry executors_;
  const GpuInventory* gpus_;

  std::atomic<bool> stopping_{false};  // no more claims; executors are told to stop
  std::atomic<bool> draining_{false};  // no more claims; running trials go on
  bool heartbeat_now_ = false;         // under mu_: the heartbeat thread runs a round at once
  std::atomic<bool> started_{false};
  std::int64_t started_ms_ = 0;          // wall clock, for the registry
  std::string instance_;                 // this start's id in the registry (WorkerInfo::instance)
  std::atomic<bool> registered_{false};  // the registry took this worker: claims may start
  std::string fatal_;                    // under mu_: see fatal_error()
  mutable std::mutex mu_;                // guards everything below
  std::condition_variable cv_;           // running_ emptied (drain), stopping (idle waits)
  std::condition_variable claim_cv_;     // the claimer's: a slot was freed, or stopping
  std::unique_ptr<std::condition_variable[]> slot_cv_;  // per slot: work handed, or no more
  std::vector<int> slot_owner_;  // per slot: the slot index of the thread using it, -1 free
  // Per slot: what the claimer handed its thread to run (the trial's first
  // slot's thread runs it), with the slots reserved for it.
  struct Assignment {
    trials::Claim claim;
    std::vector<int> slots;
    std::shared_ptr<ShareRun> share;  // set: a gang follower's ranks, not a claim
  };
  // Gang follower shares running here, by "<trial>:<attempt>:<first>": the
  // heartbeat renews their rank leases and marks the stale ones.
  std::map<std::string, std::shared_ptr<ShareRun>> shares_;
  std::vector<std::optional<Assignment>> inbox_;
  bool claiming_ = false;  // a claim_batch is in flight (its trials are not handed out yet)
  std::map<std::string, std::shared_ptr<Running>> running_;  // by trial id
  // Results waiting for the completer, with their attempts.
  struct Outgoing {
    std::shared_ptr<Running> run;
    trials::Completion completion;
  };
  std::vector<Outgoing> outbox_;
  bool completer_stop_ = false;  // the other threads have ended: send what is left, then end
  std::condition_variable outbox_cv_;
  trials::SpecCache specs_;  // each sweep's spec parsed once, the recent ones kept
  AgentStats stats_;
  int work_lock_fd_ = -1;  // flock on work_root/.hpo-worker.lock while started
  // Heartbeat thread only: leases held but not run, first seen when (and at which attempt).
  std::map<std::string, std::pair<std::chrono::steady_clock::time_point, int>> orphan_seen_;
  std::thread completer_;
  std::vector<std::thread> threads_;
};

// The built-in executors: command and synthetic.
ExecutorRegistry builtin_executors(double kill_grace_s = 5.0);

}  // namespace hpo::workers
