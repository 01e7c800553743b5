// Backoff: the one rule of every retry loop in hpo (reconnecting to Redis,
// reopening a store connection, retrying a call through an outage, retrying a
// submit): wait `first` after the first failure, twice as long after each
// further one up to `max`, and start again from `first` after a success.
// It only computes the waits; the loop waits on its own stop condition (a
// StopFlag, a condition variable), so a stop ends a back-off at once.
#pragma once

#include <algorithm>
#include <chrono>

namespace hpo {

class Backoff {
 public:
  explicit Backoff(std::chrono::milliseconds first = std::chrono::milliseconds(100),
                   std::chrono::milliseconds max = std::chrono::milliseconds(2000))
      : first_(first), max_(std::max(first, max)), next_(first) {}

  // The wait before the next try; the one after it doubles (up to max).
  std::chrono::milliseconds next() {
    auto wait = next_;
    next_ = std::min(next_ * 2, max_);
    failed_ = true;
    return wait;
  }
  // A success: the next failure waits `first` again.
  void reset() {
    next_ = first_;
    failed_ = false;
  }
  // True when no failure was counted since the last reset.
  bool fresh() const { return !failed_; }

 private:
  std::chrono::milliseconds first_, max_, next_;
  bool failed_ = false;
};

}  // namespace hpo
