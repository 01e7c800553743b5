// Periodic: runs one job against the store every period on a thread of its
// own, opening the store connection itself. The reaper, the schedulability
// watch and retention are each one job, and each takes from the connection
// only the roles it uses. StopFlag, shared with the controller loop, lives
// here too.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "trials/store.hpp"

namespace hpo::scheduler {

using trials::StoreFactory;

// A loop's stop request: checked cheaply each round, and waited on instead of
// sleeping, so stop() ends a back-off or a pause at once.
class StopFlag {
 public:
  void reset() {
    std::lock_guard lock(mu_);
    stopped_ = false;
  }
  void set() {
    {
      std::lock_guard lock(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
  }
  bool is_set() {
    std::lock_guard lock(mu_);
    return stopped_;
  }
  // Waits up to `d`; true when stop was requested.
  bool wait_for(std::chrono::milliseconds d) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, d, [this] { return stopped_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
};

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
