#include "web/trial_cache.hpp"

#include <algorithm>

namespace hpo::web {

Result<std::vector<TrialPtr>> TrialCache::load(trials::SweepStore& sweeps,
                                               trials::TrialStore& trial_store,
                                               const std::string& sweep_id, trials::TrialRole role,
                                               std::int64_t offset, std::int64_t limit,
                                               std::int64_t* total) {
  auto sweep = sweeps.get_sweep(sweep_id);
  if (!sweep) {
    if (sweep.error().code == ErrorCode::kNotFound) {
      std::lock_guard lock(mu_);
      if (auto it = entries_.find({sweep_id, role}); it != entries_.end()) {
        lru_.erase(it->second.lru);
        entries_.erase(it);
      }
    }
    return sweep.error();
  }
  const std::int64_t count =
      role == trials::TrialRole::kMember ? sweep->next_member : sweep->next_number;
  if (total) *total = count;
  // Numbers [first, last) of the sweep; out[i] is number first + i.
  const std::int64_t first = std::clamp<std::int64_t>(offset, 0, count);
  const std::int64_t last = first + std::clamp<std::int64_t>(limit, 0, count - first);
  std::vector<TrialPtr> out(static_cast<std::size_t>(last - first));
  auto at = [&](std::int64_t number) -> TrialPtr& {
    return out[static_cast<std::size_t>(number - first)];
  };
  {
    std::lock_guard lock(mu_);
    if (auto it = entries_.find({sweep_id, role}); it != entries_.end())
      for (auto t = it->second.finished.lower_bound(first);
           t != it->second.finished.end() && t->first < last; ++t)
        at(t->first) = t->second;
  }
  // Load the gaps (not finished last time) in contiguous ranges.
  std::vector<TrialPtr> newly_finished;
  constexpr std::int64_t kChunk = 1000;
  for (std::int64_t i = first; i < last;) {
    if (at(i)) {
      ++i;
      continue;
    }
    std::int64_t end = i;
    while (end < last && !at(end) && end - i < kChunk) ++end;
    auto page = trial_store.list_trials(sweep_id, role, i, end - i);
    if (!page) return page.error();
    for (auto& t : page->trials) {
      if (t.number < first || t.number >= last) continue;
      auto ptr = std::make_shared<const trials::Trial>(std::move(t));
      if (trials::is_finished(ptr->state)) newly_finished.push_back(ptr);
      at(ptr->number) = std::move(ptr);
    }
    i = end;
  }
  std::erase_if(out, [](const TrialPtr& t) { return !t; });  // created since get_sweep: skip
  std::lock_guard lock(mu_);
  Key key{sweep_id, role};
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    lru_.push_front(key);
    it = entries_.emplace(key, Entry{{}, lru_.begin()}).first;
    while (entries_.size() > max_sweeps_) {
      entries_.erase(lru_.back());
      lru_.pop_back();
    }
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
  }
  for (auto& t : newly_finished) it->second.finished.emplace(t->number, t);
  return out;
}

std::size_t TrialCache::cached_trials(const std::string& sweep_id, trials::TrialRole role) {
  std::lock_guard lock(mu_);
  auto it = entries_.find({sweep_id, role});
  return it == entries_.end() ? 0 : it->second.finished.size();
}

}  // namespace hpo::web
