#include "trials/spec/spec_cache.hpp"

#include <algorithm>

namespace hpo::trials {

SpecCache::SpecCache(std::size_t capacity) : capacity_(std::max<std::size_t>(capacity, 1)) {}

std::shared_ptr<const SweepSpec> SpecCache::find(const std::string& sweep_id) {
  std::lock_guard lock(mu_);
  auto it = index_.find(sweep_id);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

Result<std::shared_ptr<const SweepSpec>> SpecCache::get(const std::string& sweep_id,
                                                        const std::string& spec_json) {
  if (auto hit = find(sweep_id)) return hit;
  // Parsed outside the lock: two threads asking at once may both parse; the
  // first insert wins and both get an equal spec.
  auto spec = parse_spec(spec_json);
  std::lock_guard lock(mu_);
  ++parses_;
  if (!spec) return spec.error();
  if (auto it = index_.find(sweep_id); it != index_.end()) return it->second->second;
  auto ptr = std::make_shared<const SweepSpec>(std::move(spec).value());
  insert_locked(sweep_id, ptr);
  return ptr;
}

void SpecCache::put(const std::string& sweep_id, std::shared_ptr<const SweepSpec> spec) {
  std::lock_guard lock(mu_);
  if (auto it = index_.find(sweep_id); it != index_.end()) {
    lru_.erase(it->second);
    index_.erase(it);
  }
  insert_locked(sweep_id, std::move(spec));
}

std::int64_t SpecCache::parses() const {
  std::lock_guard lock(mu_);
  return parses_;
}

void SpecCache::insert_locked(const std::string& sweep_id, std::shared_ptr<const SweepSpec> spec) {
  lru_.emplace_front(sweep_id, std::move(spec));
  index_[sweep_id] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

}  // namespace hpo::trials
