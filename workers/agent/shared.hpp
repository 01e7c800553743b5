// Shared: what the agent's threads share, and the few steps every room takes
// with it. See agent.hpp for the threads; each room is a file beside this one.
//
//  - slots says which slot is free. Only the claimer takes slots, and it
//    claims from the store with the free count it saw; meanwhile other
//    threads can only free slots, so a claimed trial's k slots are always
//    there to take. It hands the trial to the inbox of the first of them; the
//    threads whose slots it borrowed have nothing in theirs and wait.
//  - running holds every attempt from its claim until the store answered its
//    result (or it was released or dropped); the lease keeper renews the
//    leases of a copy of it every lease/3.
//  - Time for leases is the store's (Redis TIME); the steady clock here only
//    paces heartbeats and the trial's own timeout.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "trials/spec/spec_cache.hpp"
#include "workers/agent/agent.hpp"
#include "workers/agent/attempt.hpp"
#include "workers/agent/slot_book.hpp"

namespace hpo::workers::agent {

// What the claimer hands a slot thread: a claimed trial, or a gang
// follower's ranks (`share` set), with the slots reserved for it.
struct Assignment {
  trials::Claim claim;
  std::vector<int> slots;
  std::shared_ptr<GangShare> share;
};

struct Shared {
  Shared(const AgentOptions& options, ConnectionFactory connect);

  const AgentOptions& options;
  const ConnectionFactory connect;
  trials::SpecCache specs;  // each sweep's spec parsed once, the recent ones kept (thread-safe)

  std::atomic<bool> stopping{false};    // no more claims; executors are told to stop
  std::atomic<bool> draining{false};    // no more claims; running trials go on
  std::atomic<bool> registered{false};  // the registry took this worker: claims may start

  mutable std::mutex mu;             // guards everything below
  std::condition_variable cv;        // running emptied (drain), stopping (idle waits), new shares
  std::condition_variable claim_cv;  // the claimer's: a slot was freed, or stopping
  std::unique_ptr<std::condition_variable[]> slot_cv;  // per slot: work handed, or no more
  SlotBook slots;
  std::vector<std::optional<Assignment>> inbox;  // per slot
  bool claiming = false;       // a claim_batch is in flight (its trials are not handed out yet)
  bool heartbeat_now = false;  // the lease keeper runs a round at once
  std::map<std::string, std::shared_ptr<RunningAttempt>> running;  // by trial id
  // Gang follower shares running here, by GangShare::key().
  std::map<std::string, std::shared_ptr<GangShare>> shares;
  AgentStats stats;
  std::string fatal;  // see Agent::fatal_error()

  // Stop claiming and tell running trials to stop; wakes every thread.
  void request_stop();
  // The store refuses this worker for good (another live worker of its name,
  // its token revoked or another name's): logged, kept as `fatal`, stop.
  void refused(const Error& why);
  void notify_everyone();
  // The attempt leaves `running` (the last one wakes drain()).
  void forget(const trials::Trial& trial);
  // Frees an attempt's slots (wakes the claimer).
  void free_slots(const std::vector<int>& slots);
  // Sleeps up to `d` unless stopping; returns false when stopping.
  bool idle_wait(std::chrono::milliseconds d);
  // Calls `op` again while it fails with kUnavailable, up to outage_grace
  // (sooner when a hard stop is requested).
  Status retry_through_outage(const std::function<Status()>& op);
  // A store connection for one thread, retried until stopping (null then;
  // also when the store refuses the worker: refused()).
  std::unique_ptr<trials::Store> connect_until_stopped(const char* role);
  // What this worker has free now and what it is (a claim's offer). Under mu.
  trials::Offer offer_locked(bool torch) const;
  // The claimed trial's sweep spec, parsed once per sweep.
  Result<std::shared_ptr<const trials::SweepSpec>> spec_for(const trials::Claim& claim);
  // The box an attempt's processes run in (a null box without a sandbox);
  // `suffix` tells a gang share's box from a trial's own on one worker.
  Result<std::unique_ptr<TrialBox>> enter_box(const trials::Trial& trial,
                                              const trials::SweepSpec& spec,
                                              std::string_view suffix = "") const;
  // The GPU ordinals of `devices` (an attempt's), and how CUDA_VISIBLE_DEVICES
  // names each (empty: by ordinal).
  std::vector<int> gpus_of(const std::vector<int>& devices) const;
  std::vector<std::string> gpu_ids_of(const std::vector<int>& devices) const;
  // The device files of `devices` a confined trial sees (AgentOptions::gpu_files).
  std::vector<std::string> gpu_files_of(const std::vector<int>& devices) const;
  // The CPU threads an attempt on `slots` asking `cpus` cores may use.
  int threads_for(const std::vector<int>& slots, double cpus) const;
};

}  // namespace hpo::workers::agent
