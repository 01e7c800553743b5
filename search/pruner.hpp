// Pruner: decides whether a running trial should be stopped early.
//
// Called by the sweep controller each time a running trial reports an
// intermediate value. Like samplers, pruners see values in minimise sense and
// are stateless between calls (they decide from the curves alone), so a
// restarted scheduler makes the same decisions.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "search/sampler.hpp"

namespace hpo::search {

enum class PrunerType { kMedian, kAsha };

struct PrunerConfig {
  PrunerType type = PrunerType::kMedian;
  // median: do not prune before `warmup_steps` steps, nor before `min_trials`
  // other trials reported at that step.
  std::int64_t warmup_steps = 1;
  std::int64_t min_trials = 5;
  // asha: rungs at grace_period * reduction_factor^k steps; at each rung a trial
  // continues only if it is in the top 1/reduction_factor of the trials that
  // reached that rung.
  std::int64_t grace_period = 1;
  double reduction_factor = 3;
  std::int64_t max_steps = 0;  // 0 = no limit on rungs
};

class Pruner {
 public:
  virtual ~Pruner() = default;

  // `trial`: the running trial's curve so far (ascending steps, at least one).
  // `others`: every other trial of the sweep with its curve (finished or running).
  // Returns true to stop the trial now.
  virtual bool should_prune(std::span<const StepValue> trial,
                            std::span<const Observation> others) const = 0;
};

std::unique_ptr<Pruner> make_pruner(const PrunerConfig& config);

}  // namespace hpo::search
