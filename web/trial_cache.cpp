#include "web/trial_cache.hpp"

namespace hpo::web {

Result<std::vector<TrialPtr>> TrialCache::load(trials::Store& store, const std::string& sweep_id,
                                               trials::TrialRole role) {
  auto sweep = store.sweeps().get_sweep(sweep_id);
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
  std::vector<TrialPtr> out(static_cast<std::size_t>(count));
  {
    std::lock_guard lock(mu_);
    if (auto it = entries_.find({sweep_id, role}); it != entries_.end())
      for (const auto& [number, t] : it->second.finished)
        if (number < count) out[static_cast<std::size_t>(number)] = t;
  }
  // Load the gaps (not finished last time) in contiguous ranges.
  std::vector<TrialPtr> newly_finished;
  constexpr std::int64_t kChunk = 1000;
  for (std::int64_t i = 0; i < count;) {
    if (out[static_cast<std::size_t>(i)]) {
      ++i;
      continue;
    }
    std::int64_t end = i;
    while (end < count && !out[static_cast<std::size_t>(end)] && end - i < kChunk) ++end;
    auto page = store.trials().list_trials(sweep_id, role, i, end - i);
    if (!page) return page.error();
    for (auto& t : page->trials) {
      if (t.number < 0 || t.number >= count) continue;
      auto ptr = std::make_shared<const trials::Trial>(std::move(t));
      if (trials::is_finished(ptr->state)) newly_finished.push_back(ptr);
      out[static_cast<std::size_t>(ptr->number)] = std::move(ptr);
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
