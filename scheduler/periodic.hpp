// Periodic: runs one job against the store every period on a thread of its
// own, opening the store connection itself. The reaper, the schedulability
// watch and retention are each one job, and each takes from the connection
// only the roles it uses.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "core/stop_flag.hpp"
#include "trials/store.hpp"

namespace hpo::scheduler {

using trials::StoreFactory;

class Periodic {
 public:
  // `job` returns true to run again at once (more work is waiting).
  using Job = std::function<bool(trials::Store&)>;
  Periodic(StoreFactory stores, std::chrono::milliseconds period, Job job)
      : stores_(std::move(stores)), period_(period), job_(std::move(job)) {}
  ~Periodic() { stop(); }
  Periodic(const Periodic&) = delete;
  Periodic& operator=(const Periodic&) = delete;

  void start() {
    stop_.reset();
    thread_ = std::thread([this] {
      std::unique_ptr<trials::Store> store;
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
