// Periodic: runs one job against the store every period on a thread of its
// own, opening (and after a failure reopening) the store connection itself.
// The reaper, the schedulability watch and retention are each one job.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "scheduler/controller_loop.hpp"
#include "trials/store.hpp"

namespace hpo::scheduler {

class Periodic {
 public:
  // `job` returns true to run again at once (more work is waiting).
  using Job = std::function<bool(trials::TrialStore&)>;
  Periodic(StoreFactory stores, std::chrono::milliseconds period, Job job)
      : stores_(std::move(stores)), period_(period), job_(std::move(job)) {}
  ~Periodic() { stop(); }
  Periodic(const Periodic&) = delete;
  Periodic& operator=(const Periodic&) = delete;

  void start() {
    stop_.reset();
    thread_ = std::thread([this] {
      std::unique_ptr<trials::TrialStore> store;
      while (!stop_.is_set()) {
        if (!store) {
          auto s = stores_();
          if (s) store = std::move(*s);
        }
        if (store && job_(*store)) continue;
        stop_.wait_for(period_);
      }
    });
  }
  void stop() {
    stop_.set();
    if (thread_.joinable()) thread_.join();
  }

 private:
  StoreFactory stores_;
  std::chrono::milliseconds period_;
  Job job_;
  StopFlag stop_;
  std::thread thread_;
};

}  // namespace hpo::scheduler
