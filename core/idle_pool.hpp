// IdlePool: connections (store handles) not in use, for the next caller to
// take instead of opening another; thread-safe. One that failed is not given
// back: the caller drops it. At most `max_idle` are kept.
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace hpo {

template <class T>
class IdlePool {
 public:
  explicit IdlePool(std::size_t max_idle = std::numeric_limits<std::size_t>::max())
      : max_idle_(max_idle) {}

  // An idle one, or null: the caller makes a new one.
  std::unique_ptr<T> take() {
    std::lock_guard lock(mu_);
    if (idle_.empty()) return nullptr;
    auto one = std::move(idle_.back());
    idle_.pop_back();
    return one;
  }
  void give_back(std::unique_ptr<T> one) {
    std::lock_guard lock(mu_);
    if (idle_.size() < max_idle_) idle_.push_back(std::move(one));
  }

 private:
  std::size_t max_idle_;
  std::mutex mu_;
  std::vector<std::unique_ptr<T>> idle_;
};

}  // namespace hpo
