// ExpiringMap: answers kept a short while to spare the store a read (who a
// token is, a user's or a worker's): an entry is found for `ttl` after it was
// put, then no more; past `max` entries the map starts again empty, so a
// flood of unknown keys cannot grow it. Not thread-safe: its owner locks.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <unordered_map>
#include <utility>

namespace hpo {

template <class V>
class ExpiringMap {
 public:
  using Clock = std::chrono::steady_clock;

  ExpiringMap(std::chrono::milliseconds ttl, std::size_t max) : ttl_(ttl), max_(max) {}

  // The value put under `key` less than ttl before `now`, else null.
  const V* find(const std::string& key, Clock::time_point now) const {
    auto it = map_.find(key);
    return it != map_.end() && now - it->second.at < ttl_ ? &it->second.value : nullptr;
  }
  void put(const std::string& key, V value, Clock::time_point now) {
    if (map_.size() >= max_) map_.clear();
    map_[key] = Entry{std::move(value), now};
  }

 private:
  struct Entry {
    V value;
    Clock::time_point at;
  };
  std::chrono::milliseconds ttl_;
  std::size_t max_;
  std::unordered_map<std::string, Entry> map_;
};

}  // namespace hpo
