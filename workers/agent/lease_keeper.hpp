// LeaseKeeper: the heartbeat thread. Every lease/3 it renews every lease
// held in one heartbeat_batch, turns the answers (prune, cancel, release,
// lease lost) into the attempt's stop reason, renews the rank leases of the
// gang shares running here (asking their leader to release the gang when
// draining), and refreshes the worker registry entry; the first refresh the
// registry takes lets the claimer start, one it refuses (the name live on
// another host) stops the agent. It also flushes the reports a quiet trial
// still holds, and releases orphans: leases the store says we hold that no
// slot runs, older than orphan_after (a claim whose reply never arrived).
//
// Outages: an unreachable store only stops a trial after outage_grace; a
// heartbeat refused as stale (kLeaseLost) stops it at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "workers/agent/attempt.hpp"
#include "workers/gpu_inventory.hpp"

namespace hpo::workers::agent {

struct Shared;

class LeaseKeeper {
 public:
  // `torch`: the worker runs torch trials (for the registry).
  LeaseKeeper(Shared& shared, const GpuInventory* gpus, bool torch);

  void set_identity(std::string instance, std::int64_t started_ms);
  const std::string& instance() const { return instance_; }
  // The heartbeat thread: runs until the agent stops.
  void run();

 private:
  // One round; returns the registry update's status.
  Status beat(trials::TrialQueue& queue, trials::WorkerRegistry& workers, std::int64_t interval_ms);
  void renew_trials(trials::TrialQueue& queue);
  // One sample of each running attempt's GPU use (gpu_accounting.hpp), with
  // every beat and every kGpuSampleEvery between them.
  static constexpr std::chrono::milliseconds kGpuSampleEvery{1000};
  void sample_gpus(const std::vector<std::shared_ptr<RunningAttempt>>& running);
  bool samples_gpus() const;
  void renew_shares(trials::TrialQueue& queue);
  trials::WorkerInfo registry_entry() const;
  void release_orphans(trials::TrialQueue& queue);

  Shared& shared_;
  const GpuInventory* gpus_;
  bool torch_;
  std::string instance_;         // this start's id in the registry (WorkerInfo::instance)
  std::int64_t started_ms_ = 0;  // wall clock, for the registry
  // Leases held but not run, first seen when (and at which attempt).
  std::map<std::string, std::pair<Clock::time_point, int>> orphan_seen_;
};

}  // namespace hpo::workers::agent
