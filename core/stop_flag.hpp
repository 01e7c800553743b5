// StopFlag: a loop's stop request, checked cheaply each round and waited on
// instead of sleeping, so stop() ends a back-off or a pause at once. Every
// background loop of the scheduler (the controller loop, the reaper, the
// schedulability watch, retention, the event pump) stops through one.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace hpo {

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

}  // namespace hpo
