// TrialCache: the trials of a sweep for sorting and filtering in the handler.
//
// The store pages trials by number only, so ?sort= and ?state= need every
// trial of the sweep; a page by number needs its range only, and takes its
// finished trials from here too (the dashboard reads a whole sweep in pages). Loading 10,000 trials
// from Redis takes ~250 ms; but a finished trial never changes (a store invariant), so they are
// cached here, and a request only loads from the store the numbers that were not finished last time
// (few: at most the queued and running ones), in contiguous ranges. Up to `max_sweeps` sweeps are
// kept, least recently used dropped.
//
// Thread safety: every method may be called from any thread; trials are
// shared as immutable objects, so a request never copies the whole sweep.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "trials/store.hpp"

namespace hpo::web {

using TrialPtr = std::shared_ptr<const trials::Trial>;

class TrialCache {
 public:
  explicit TrialCache(std::size_t max_sweeps = 16) : max_sweeps_(max_sweeps ? max_sweeps : 1) {}

  // The trials of (sweep, role) numbered [offset, offset + limit) (all by
  // default), by ascending number; `total` (optional) gets how many the
  // sweep has. kNotFound when the sweep is unknown.
  Result<std::vector<TrialPtr>> load(trials::SweepStore& sweeps, trials::TrialStore& trial_store,
                                     const std::string& sweep_id, trials::TrialRole role,
                                     std::int64_t offset = 0, std::int64_t limit = trials::kAll,
                                     std::int64_t* total = nullptr);
  std::size_t cached_trials(const std::string& sweep_id, trials::TrialRole role);

 private:
  using Key = std::pair<std::string, trials::TrialRole>;  // sweep, role
  struct Entry {
    std::map<std::int64_t, TrialPtr> finished;  // by number
    std::list<Key>::iterator lru;
  };
  std::mutex mu_;
  std::size_t max_sweeps_;
  std::map<Key, Entry> entries_;
  std::list<Key> lru_;  // front: most recently used
};

}  // namespace hpo::web
