// make_pruner and the shared curve helpers of the median and ASHA pruners.
#include "search/pruner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "search/asha_pruner.hpp"
#include "search/median_pruner.hpp"

namespace hpo::search {
namespace {

double worst_if_nan(double v) {
  return std::isnan(v) ? std::numeric_limits<double>::infinity() : v;
}

// Best (lowest) value among points with step <= `step`; nullopt when the curve
// has not reached `step` yet.
std::optional<double> best_up_to(std::span<const StepValue> curve, std::int64_t step) {
  if (curve.empty() || curve.back().step < step) return std::nullopt;
  std::optional<double> best;
  for (const StepValue& p : curve) {
    if (p.step > step) break;
    double v = worst_if_nan(p.value);
    if (!best || v < *best) best = v;
  }
  return best;
}

// The first value reported at or after `step`.
std::optional<double> value_at_rung(std::span<const StepValue> curve, std::int64_t step) {
  for (const StepValue& p : curve)
    if (p.step >= step) return worst_if_nan(p.value);
  return std::nullopt;
}

}  // namespace

bool MedianPruner::should_prune(std::span<const StepValue> trial,
                                std::span<const Observation> others) const {
  if (trial.empty()) return false;
  const std::int64_t step = trial.back().step;
  if (step < warmup_steps_) return false;
  std::vector<double> bests;
  for (const Observation& o : others) {
    if (o.outcome == TrialOutcome::kFailed) continue;
    if (auto b = best_up_to(o.curve, step)) bests.push_back(*b);
  }
  if (bests.empty() || static_cast<std::int64_t>(bests.size()) < min_trials_) return false;
  auto mid = bests.begin() + static_cast<std::ptrdiff_t>(bests.size() / 2);
  std::nth_element(bests.begin(), mid, bests.end());
  double median = *mid;
  if (bests.size() % 2 == 0) median = (median + *std::max_element(bests.begin(), mid)) / 2;
  return *best_up_to(trial, step) > median;
}

AshaPruner::AshaPruner(std::int64_t grace_period, double reduction_factor, std::int64_t max_steps)
    : reduction_factor_(std::max(reduction_factor, 1.0 + 1e-9)) {
  double r = static_cast<double>(std::max<std::int64_t>(grace_period, 1));
  std::int64_t last = 0;
  while (r < 0x1.0p62 && (max_steps <= 0 || r < static_cast<double>(max_steps))) {
    auto rung = static_cast<std::int64_t>(std::llround(r));
    if (rung > last) rungs_.push_back(rung);  // rf close to 1 may round to the same step
    last = std::max(last, rung);
    r *= reduction_factor_;
  }
}

bool AshaPruner::should_prune(std::span<const StepValue> trial,
                              std::span<const Observation> others) const {
  if (trial.empty()) return false;
  const std::int64_t step = trial.back().step;
  const std::int64_t previous =
      trial.size() >= 2 ? trial[trial.size() - 2].step : std::numeric_limits<std::int64_t>::min();
  // The highest rung this report is the first to reach, if any.
  auto it = std::upper_bound(rungs_.begin(), rungs_.end(), step);
  if (it == rungs_.begin()) return false;
  const std::int64_t rung = *std::prev(it);
  if (previous >= rung) return false;  // already judged at this rung

  const double mine = *value_at_rung(trial, rung);
  std::size_t n = 1, better = 0;
  for (const Observation& o : others) {
    if (o.outcome == TrialOutcome::kFailed) continue;
    auto v = value_at_rung(o.curve, rung);
    if (!v) continue;
    ++n;
    better += *v < mine;
  }
  const auto keep = std::max<std::size_t>(
      1, static_cast<std::size_t>(std::floor(static_cast<double>(n) / reduction_factor_ + 1e-9)));
  return better >= keep;
}

std::unique_ptr<Pruner> make_pruner(const PrunerConfig& config) {
  switch (config.type) {
    case PrunerType::kMedian:
      return std::make_unique<MedianPruner>(config.warmup_steps, config.min_trials);
    case PrunerType::kAsha:
      break;
  }
  return std::make_unique<AshaPruner>(config.grace_period, config.reduction_factor,
                                      config.max_steps);
}

}  // namespace hpo::search
