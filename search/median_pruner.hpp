// The median stopping rule (Golovin et al., Google Vizier 2017).
//
// At each report after `warmup_steps`, a trial is stopped when its best value so
// far is worse than the median of the other trials' best values up to the same
// step. Others count when they reached that step (their curve has a point at
// or after it) and did not fail; running and pruned trials are included, so a
// sweep of long trials starts pruning before the first one finishes. Fewer than
// `min_trials` such trials: no decision. NaN counts as the worst value.
#pragma once

#include "search/pruner.hpp"

namespace hpo::search {

class MedianPruner final : public Pruner {
 public:
  MedianPruner(std::int64_t warmup_steps, std::int64_t min_trials)
      : warmup_steps_(warmup_steps), min_trials_(min_trials) {}

  bool should_prune(std::span<const StepValue> trial,
                    std::span<const Observation> others) const override;

 private:
  std::int64_t warmup_steps_;
  std::int64_t min_trials_;
};

}  // namespace hpo::search
