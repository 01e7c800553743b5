#include "web/pareto_cache.hpp"

#include <exception>

namespace hpo::web {

nlohmann::json ParetoCache::get(const std::string& sweep, std::int64_t version,
                                const std::function<nlohmann::json()>& make) {
  std::promise<nlohmann::json> promise;
  std::shared_future<nlohmann::json> doc;
  bool owner = false;  // this call computes; every other caller waits for it
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(sweep);
    if (it == entries_.end()) {
      lru_.push_front(sweep);
      Entry e;
      e.version = -1;
      e.lru = lru_.begin();
      it = entries_.emplace(sweep, std::move(e)).first;
      while (entries_.size() > max_sweeps_) {
        entries_.erase(lru_.back());
        lru_.pop_back();
      }
    } else {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
    }
    if (it->second.version == version && it->second.doc.valid()) {
      doc = it->second.doc;
    } else {
      owner = true;
      it->second.version = version;
      it->second.doc = doc = promise.get_future().share();
      ++computed_;
    }
  }
  if (owner) {
    try {
      promise.set_value(make());
    } catch (...) {
      promise.set_exception(std::current_exception());
      // Not kept: the next request computes again.
      std::lock_guard lock(mu_);
      auto it = entries_.find(sweep);
      if (it != entries_.end() && it->second.version == version) it->second.version = -1;
    }
  }
  return doc.get();
}

std::int64_t ParetoCache::computed() const {
  std::lock_guard lock(mu_);
  return computed_;
}

}  // namespace hpo::web
