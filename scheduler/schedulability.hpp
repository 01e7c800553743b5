// SchedulabilityWatch: says which sweeps no registered worker can run.
//
// Every period it reads the live workers and the active sweeps; a sweep whose
// trials' request (trials/placement.hpp: slots, GPUs of a model and memory,
// torch/CUDA, cores, memory, labels) no live worker could meet even idle is
// marked unschedulable with each worker's reason (SweepStore::set_unschedulable), which parks
// its queued trials out of the shared queue so they never stand in front of
// other sweeps; once a big enough worker registers, the mark is cleared and
// the trials return to the head of the queue. With no live worker at all
// nothing is judged (a pool that is starting up is not a verdict).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "scheduler/periodic.hpp"
#include "trials/spec/spec_cache.hpp"
#include "trials/store.hpp"

namespace hpo::scheduler {

// The verdict for a sweep whose trials ask `request`, given the live workers:
// "" when one of them can run it (or there are none yet), else why each cannot.
std::string unschedulable_reason(const trials::ResourceRequest& request,
                                 const std::vector<trials::WorkerInfo>& workers);

class SchedulabilityWatch {
 public:
  // `specs`: the process's spec cache (one made here when null).
  SchedulabilityWatch(StoreFactory stores, std::chrono::milliseconds period,
                      std::shared_ptr<trials::SpecCache> specs = nullptr);
  ~SchedulabilityWatch();
  void start();
  void stop();
  // One round on the calling thread (tests).
  void run_once(trials::SweepStore& sweeps, trials::WorkerRegistry& workers);

 private:
  std::map<std::string, trials::ResourceRequest> requests_;  // per active sweep
  std::shared_ptr<trials::SpecCache> specs_;
  Periodic periodic_;
};

}  // namespace hpo::scheduler
