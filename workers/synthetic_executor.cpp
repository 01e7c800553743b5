// The synthetic trial's timeline: sleep_s is spread evenly over the steps
// (or spent once when steps = 0), waited in kCheckMs slices so a prune,
// cancel or shutdown ends it within one slice. At step s of N it reports
// value_s = f(x) + (N - s) / N — a curve that falls towards f(x), so a pruner
// sees the same ranking at every step as at the end — and the final value is
// f(x); each reading gets its own noise draw when `noise` > 0. The
// multi-objective functions (zdt1, zdt2, dtlz2) also report f1..fM.
#include "workers/synthetic_executor.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "core/hash.hpp"
#include "search/rng.hpp"
#include "search/test_functions.hpp"
#include "workers/outcome.hpp"

namespace hpo::workers {
namespace {

using Clock = std::chrono::steady_clock;

// Waits until `until` or a stop; returns the stop reason (kNone: time is up).
StopReason wait_until(Clock::time_point until, const Reporter& reporter) {
  for (;;) {
    StopReason r = reporter.stop_reason();
    if (r != StopReason::kNone) return r;
    auto now = Clock::now();
    if (now >= until) return StopReason::kNone;
    std::this_thread::sleep_for(std::min<Clock::duration>(
        until - now, std::chrono::milliseconds(SyntheticExecutor::kCheckMs)));
  }
}

}  // namespace

trials::TrialResult SyntheticExecutor::run(const TrialTask& task, Reporter& reporter) {
  if (!task.spec) return failed_result("no sweep spec", false);
  const auto& recipe = task.spec->trial.synthetic;
  // A multi-objective function reports f1..fM; the value (and the curve) is
  // the sweep's first objective when it names one of them, else f1.
  const auto several = search::multi_objective_info(recipe.function);
  trials::Metrics objectives;
  std::optional<double> f;
  if (several) {
    if (auto fs = search::evaluate_multi_objective(recipe.function, task.trial.params)) {
      for (std::size_t i = 0; i < fs->size(); ++i)
        objectives["f" + std::to_string(i + 1)] = (*fs)[i];
      auto primary = objectives.find(task.spec->objective.metric);
      f = primary != objectives.end() ? primary->second : fs->front();
    }
  } else {
    f = search::evaluate_test_function(recipe.function, task.trial.params);
  }
  if (!f) {
    int dims = several ? several->dims : search::test_function_dims(recipe.function);
    return failed_result(
        dims < 0 ? fmt::format("unknown synthetic function '{}'", recipe.function)
                 : fmt::format("synthetic function '{}' needs numeric parameters x1..x{}",
                               recipe.function, dims),
        false);
  }
  search::Rng rng(
      search::hash_key(fnv1a(task.trial.id), static_cast<std::uint64_t>(task.trial.attempt)));
  auto noisy = [&](double v) { return recipe.noise > 0 ? v + recipe.noise * rng.normal() : v; };

  const auto start = Clock::now();
  const auto total = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::max(0.0, recipe.sleep_s)));
  const std::int64_t n = std::max<std::int64_t>(0, recipe.steps);
  std::optional<double> last;
  auto stopped = [&](StopReason r) {
    auto out = stopped_result(r, task.spec->trial.timeout_s);
    out.value = last;
    if (last) out.metrics[kMetric] = *last;
    return out;
  };

  for (std::int64_t s = 1; s <= n; ++s) {
    if (auto r = wait_until(start + total * s / n, reporter); r != StopReason::kNone)
      return stopped(r);
    double v = noisy(*f + static_cast<double>(n - s) / static_cast<double>(n));
    last = v;
    reporter.report(s, {{kMetric, v}});
  }
  if (auto r = wait_until(start + total, reporter); r != StopReason::kNone) return stopped(r);

  trials::TrialResult result;
  result.value = noisy(*f);
  result.metrics[kMetric] = *result.value;
  for (const auto& [name, v] : objectives) result.metrics[name] = noisy(v);
  if (auto primary = result.metrics.find(task.spec->objective.metric);
      several && primary != result.metrics.end())
    result.value = primary->second;
  return result;
}

}  // namespace hpo::workers
