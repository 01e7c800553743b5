// The synthetic trial's timeline: sleep_s is spread evenly over the steps
// (or spent once when steps = 0), waited in kCheckMs slices so a prune,
// cancel or shutdown ends it within one slice. At step s of N it reports
// value_s = f(x) + (N - s) / N — a curve that falls towards f(x), so a pruner
// sees the same ranking at every step as at the end — and the final value is
// f(x); each reading gets its own noise draw when `noise` > 0 (`curve:
// crossing`: search::learning_curve's crossing curve instead, the final
// value its last point). The multi-objective functions (zdt1, zdt2, zdt3, dtlz2)
// also report f1..fM. Under search.multi_fidelity (resource steps) N is the
// schedule's max budget and a trial runs up to its rung's budget, from the
// step its checkpoint ("step K", stored when it ends below N) says.
#include "workers/synthetic_executor.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "core/hash.hpp"
#include "search/rng.hpp"
#include "search/test_functions.hpp"
#include "trials/artifacts.hpp"
#include "trials/trial_plan.hpp"
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

// One attempt: the function's value at the trial's parameters, the steps of
// its curve this attempt runs, and the last value it reported.
struct SyntheticAttempt {
  SyntheticAttempt(const TrialTask& task, Reporter& reporter)
      : task(task),
        reporter(reporter),
        recipe(task.spec->trial.synthetic),
        rng(search::hash_key(fnv1a(task.trial.id),
                             static_cast<std::uint64_t>(task.trial.attempt))) {}

  // Each: nullopt to go on, else the attempt's result.
  std::optional<trials::TrialResult> evaluate();
  std::optional<trials::TrialResult> schedule();
  std::optional<trials::TrialResult> resume(const std::string& text);
  std::optional<trials::TrialResult> run_steps();

  double noisy(double v) { return recipe.noise > 0 ? v + recipe.noise * rng.normal() : v; }
  trials::TrialResult stopped(StopReason r) const;
  trials::TrialResult rung_result();
  trials::TrialResult final_result();

  const TrialTask& task;
  Reporter& reporter;
  const trials::SyntheticRecipe& recipe;
  search::Rng rng;
  // A multi-objective function reports f1..fM; the value (and the curve) is
  // the sweep's first objective when it names one of them, else f1.
  std::optional<search::MultiObjectiveInfo> several;
  trials::Metrics objectives;
  std::optional<double> f;
  // The noisy quadratic is a training run: its state (the expected loss) goes
  // on step by step from the checkpoint, at the trial's learning rate.
  bool quadratic = false;
  double lr = 0, loss = 1;
  std::optional<search::Lineage> rung;
  std::optional<double> schedule_max;
  double u = 0;
  std::int64_t n = 0;  // the curve's length
  std::int64_t first = 1, last_step = 0;
  Clock::duration total{};
  std::optional<double> last;
};

std::optional<trials::TrialResult> SyntheticAttempt::evaluate() {
  several = search::multi_objective_info(recipe.function);
  quadratic = recipe.function == "noisy_quadratic";
  if (quadratic) {
    auto it = task.trial.params.find("lr");
    auto x = it == task.trial.params.end() ? std::nullopt : search::as_double(it->second);
    if (!x)
      return failed_result("synthetic function 'noisy_quadratic' needs a numeric parameter lr",
                           false);
    lr = *x;
    f = 0;
  } else if (several) {
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
  return std::nullopt;
}

// A multi-fidelity trial (resource steps): `budget` steps of a curve whose
// last step is the schedule's max budget, the first ones skipped when it
// resumes a checkpoint (the step it reached); sleep_s is a full budget's time.
// So is a PBT interval (its checkpoint may be another member's).
std::optional<trials::TrialResult> SyntheticAttempt::schedule() {
  if (const auto& fid = task.spec->search.fidelity; fid && fid->resource == "steps")
    schedule_max = fid->max_budget;
  if (const auto& pbt = task.spec->search.pbt; pbt && pbt->resource == "steps")
    schedule_max = pbt->max_budget;
  if (schedule_max) {
    const auto& plan = task.trial.plan;
    if (!plan.error.empty()) return failed_result("schedule record: " + plan.error, false);
    rung = plan.lineage;
  }
  u = search::learning_speed(task.spec->space, task.trial.params);
  n = std::max<std::int64_t>(0, recipe.steps);
  last_step = n;
  total = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::max(0.0, recipe.sleep_s)));
  if (rung) {
    n = static_cast<std::int64_t>(*schedule_max);
    last_step = std::min<std::int64_t>(n, static_cast<std::int64_t>(rung->budget));
    auto stored = reporter.get_artifact(trials::artifact::kCheckpoint);
    if (!stored)
      return failed_result("cannot read the checkpoint: " + stored.error().message, true);
    if (*stored) {
      if (auto failed = resume(**stored)) return failed;
    }
    total = total * (last_step - first + 1) / std::max<std::int64_t>(1, n);
  }
  return std::nullopt;
}

// `text`: the stored checkpoint, "step K" ("step K LOSS" for the quadratic).
std::optional<trials::TrialResult> SyntheticAttempt::resume(const std::string& text) {
  std::int64_t done = 0;
  char* rest = nullptr;
  if (text.rfind("step ", 0) == 0) done = std::strtoll(text.c_str() + 5, &rest, 10);
  if (quadratic && done >= 1) {
    loss = rest ? std::strtod(rest, nullptr) : 0;
    if (!(loss > 0) || !std::isfinite(loss)) done = -1;  // no state: refused below
  }
  if (done < 1 || done > last_step)
    return failed_result("the checkpoint \"" + text.substr(0, 40) + "\" is not a step up to " +
                             std::to_string(last_step),
                         false);
  first = done + 1;
  reporter.log(fmt::format("[hpo] resuming at step {} of {}", first, last_step));
  return std::nullopt;
}

// nullopt: every step ran and the time is up; else the attempt was stopped.
std::optional<trials::TrialResult> SyntheticAttempt::run_steps() {
  const std::int64_t steps_now = std::max<std::int64_t>(0, last_step - first + 1);
  const auto start = Clock::now();
  for (std::int64_t s = first; s <= last_step; ++s) {
    if (auto r = wait_until(start + total * (s - first + 1) / std::max<std::int64_t>(1, steps_now),
                            reporter);
        r != StopReason::kNone)
      return stopped(r);
    if (quadratic) loss = search::noisy_quadratic_step(loss, lr);
    double v = noisy(quadratic ? loss : search::learning_curve(*f, u, s, n, recipe.crossing));
    last = v;
    reporter.report(s, {{SyntheticExecutor::kMetric, v}});
  }
  if (auto r = wait_until(start + total, reporter); r != StopReason::kNone) return stopped(r);
  return std::nullopt;
}

trials::TrialResult SyntheticAttempt::stopped(StopReason r) const {
  auto out = stopped_result(r, task.spec->trial.timeout_s);
  out.value = last;
  if (last) out.metrics[SyntheticExecutor::kMetric] = *last;
  return out;
}

trials::TrialResult SyntheticAttempt::rung_result() {
  // The value at the budget; the step reached is the checkpoint a promotion resumes.
  trials::TrialResult result;
  result.value = last        ? *last
                 : quadratic ? noisy(loss)
                             : noisy(search::learning_curve(*f, u, last_step, n, recipe.crossing));
  result.metrics[SyntheticExecutor::kMetric] = *result.value;
  result.metrics["budget"] = static_cast<double>(last_step);
  if (last_step < n)
    if (auto st = reporter.put_artifact(trials::artifact::kCheckpoint,
                                        quadratic ? fmt::format("step {} {:.17g}", last_step, loss)
                                                  : "step " + std::to_string(last_step));
        !st)
      return failed_result("the checkpoint was not stored: " + st.error().message, true);
  return result;
}

trials::TrialResult SyntheticAttempt::final_result() {
  trials::TrialResult result;
  // The curve's last point: f(x) for the linear curve.
  result.value = noisy(quadratic ? loss
                       : n > 0   ? search::learning_curve(*f, u, n, n, recipe.crossing)
                                 : *f);
  result.metrics[SyntheticExecutor::kMetric] = *result.value;
  for (const auto& [name, v] : objectives) result.metrics[name] = noisy(v);
  if (auto primary = result.metrics.find(task.spec->objective.metric);
      several && primary != result.metrics.end())
    result.value = primary->second;
  return result;
}

}  // namespace

trials::TrialResult SyntheticExecutor::run(const TrialTask& task, Reporter& reporter) {
  if (!task.spec) return failed_result("no sweep spec", false);
  SyntheticAttempt attempt(task, reporter);
  if (auto failed = attempt.evaluate()) return std::move(*failed);
  if (auto failed = attempt.schedule()) return std::move(*failed);
  if (auto stopped = attempt.run_steps()) return std::move(*stopped);
  return attempt.rung ? attempt.rung_result() : attempt.final_result();
}

}  // namespace hpo::workers
