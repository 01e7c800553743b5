// Multi-fidelity schedules with promotion: asynchronous successive halving
// (ASHA, Li et al., MLSys 2020, Algorithm 2 with promotions) and asynchronous
// Hyperband (several ASHA brackets, each starting at a larger budget).
//
// A configuration is trained at the budgets of its bracket's rungs, one trial
// per rung: a trial ends when its rung's budget is spent (its checkpoint
// kept), and when it ranks in the top 1/reduction_factor of the completed
// trials of its rung it is promoted: a new trial of the same configuration at
// the next rung's budget, resumed from that checkpoint. Whenever a slot is
// free, the schedule hands out the promotion of the highest rung that has one
// and otherwise a new configuration (BOHB: asked of a model fitted on the
// largest budget with enough results; see `model_budget`).
//
// Like samplers, the schedule is a function of the sweep's trials alone (no
// state between calls): a restarted scheduler hands out the same jobs, and
// a promotion is never handed out twice because the promoted trial (queued,
// running or finished, failed included) is among the runs it is given.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "search/sampler.hpp"

namespace hpo::search {

enum class Schedule { kAsha, kHyperband };

struct FidelityConfig {
  Schedule schedule = Schedule::kAsha;
  std::string resource = "epochs";  // epochs, steps, subset or the user's own name
  double min_budget = 1;
  double max_budget = 27;
  double reduction_factor = 3;
  bool integer = true;  // budgets are whole numbers (epochs, steps)
};

// One trial of a multi-fidelity sweep, as the schedule sees it.
struct RungRun {
  std::int64_t number = 0;  // the trial's number
  int bracket = 0;
  int rung = 0;
  std::int64_t resumed_from = -1;  // the number of the trial one rung down; -1: a new configuration
  bool finished = false;           // completed, failed, pruned or cancelled
  std::optional<double> value;  // completed trials: the value at the rung's budget, minimise sense
};

// What the next trial is.
struct RungJob {
  int bracket = 0;
  int rung = 0;
  double budget = 0;
  std::int64_t promote = -1;  // the number of the trial it resumes; -1: a new configuration
};

class SuccessiveHalving {
 public:
  explicit SuccessiveHalving(FidelityConfig config);

  const FidelityConfig& config() const { return config_; }
  int brackets() const { return static_cast<int>(budgets_.size()); }
  // Bracket b's rung budgets, ascending, the last one max_budget. Bracket 0
  // starts at min_budget; bracket b at min_budget * reduction_factor^b.
  const std::vector<double>& budgets(int bracket) const { return budgets_.at(bracket); }

  // The next job given every trial of the sweep so far (any order).
  RungJob next(std::span<const RungRun> runs) const;

  // The trials a model should learn from (BOHB): the largest budget with at
  // least `min_points` completed trials, or the smallest when none has;
  // nullopt when nothing completed yet.
  std::optional<double> model_budget(std::span<const RungRun> runs, std::size_t min_points) const;
  double budget_of(const RungRun& run) const;

  // What TPE learns from under the schedule (as Optuna's TPE beside a
  // pruner): each configuration once, as its deepest finished rung; below
  // the max budget it is a pruned trial whose curve ends at that budget, so
  // TPE ranks it after every full-budget trial, deeper rungs first.
  // `history`: finished trials, ascending number.
  std::vector<Observation> by_configuration(std::span<const RungRun> runs,
                                            std::span<const Observation> history) const;

 private:
  // Which bracket the `index`-th new configuration starts in: Hyperband's
  // proportions (bracket b gets ceil(B/(B-b) * eta^(B-1-b)) of every
  // cycle's configurations, B brackets) in a fixed order.
  int bracket_for(std::int64_t index) const;

  FidelityConfig config_;
  std::vector<std::vector<double>> budgets_;
  std::vector<int> cycle_;  // bracket of each configuration in one cycle
};

}  // namespace hpo::search
