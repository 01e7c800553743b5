// Asynchronous successive halving (Li et al., "A System for Massively Parallel
// Hyperparameter Tuning", MLSys 2020), in its stopping form (as Ray Tune's and
// Optuna's): rungs sit at grace_period * reduction_factor^k steps (below
// max_steps when it is set). When a trial's report is the first at or past a
// rung, it is compared by its value there (the first reported value at or past
// the rung step) with every non-failed trial that reached that rung; it goes on
// only if it ranks in the top max(1, floor(n / reduction_factor)) of those n
// (itself included), i.e. while few trials are in, only the best goes on.
// Between rungs nothing is decided, so a trial once promoted is never stopped
// retroactively by trials that arrive at its rung later — as in ASHA.
#pragma once

#include "search/pruner.hpp"

namespace hpo::search {

class AshaPruner final : public Pruner {
 public:
  AshaPruner(std::int64_t grace_period, double reduction_factor, std::int64_t max_steps);

  bool should_prune(std::span<const StepValue> trial,
                    std::span<const Observation> others) const override;

  // The rung steps, ascending (up to 2^62 when max_steps is 0).
  const std::vector<std::int64_t>& rungs() const { return rungs_; }

 private:
  double reduction_factor_;
  std::vector<std::int64_t> rungs_;
};

}  // namespace hpo::search
