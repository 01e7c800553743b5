// The synthetic trial's timeline: sleep_s is spread evenly over the steps
// (or spent once when steps = 0), waited in kCheckMs slices so a prune,
// cancel or shutdown ends it within one slice. At step s of N it reports
// value_s = f(x) + (N - s) / N — a curve that falls towards f(x), so a pruner
// sees the same ranking at every step as at the end — and the final value is
// f(x); each reading gets its own noise draw when `noise` > 0 (`curve:
// crossing`: search::learning_curve's crossing curve instead, the final
// value its last point). The multi-objective functions (zdt1, zdt2, dtlz2)
// also report f1..fM. Under search.multi_fidelity (resource steps) N is the
// schedule's max budget and a trial runs up to its rung's budget, from the
// step its checkpoint ("step K", stored when it ends below N) says.
#include "workers/synthetic_executor.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "core/hash.hpp"
#include "search/rng.hpp"
#include "search/test_functions.hpp"
#include "trials/artifacts.hpp"
#include "trials/rung.hpp"
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
  // The noisy quadratic is a training run: its state (the expected loss) goes
  // on step by step from the checkpoint, at the trial's learning rate.
  const bool quadratic = recipe.function == "noisy_quadratic";
  double lr = 0, loss = 1;
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
  search::Rng rng(
      search::hash_key(fnv1a(task.trial.id), static_cast<std::uint64_t>(task.trial.attempt)));
  auto noisy = [&](double v) { return recipe.noise > 0 ? v + recipe.noise * rng.normal() : v; };

  // A multi-fidelity trial (resource steps): `budget` steps of a curve whose
  // last step is the schedule's max budget, the first ones skipped when it
  // resumes a checkpoint (the step it reached); sleep_s is a full budget's time.
  // So is a PBT interval (its checkpoint may be another member's).
  std::optional<trials::RungInfo> rung;
  std::optional<double> schedule_max;
  if (const auto& fid = task.spec->search.fidelity; fid && fid->resource == "steps")
    schedule_max = fid->max_budget;
  if (const auto& pbt = task.spec->search.pbt; pbt && pbt->resource == "steps")
    schedule_max = pbt->max_budget;
  if (schedule_max) {
    auto parsed = trials::rung_from_json(task.trial.extra);
    if (!parsed) return failed_result("schedule record: " + parsed.error().message, false);
    rung = *parsed;
  }
  const double u = search::learning_speed(task.spec->space, task.trial.params);
  std::int64_t n = std::max<std::int64_t>(0, recipe.steps);  // the curve's length
  std::int64_t first = 1, last_step = n;
  auto total = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::max(0.0, recipe.sleep_s)));
  if (rung) {
    n = static_cast<std::int64_t>(*schedule_max);
    last_step = std::min<std::int64_t>(n, static_cast<std::int64_t>(rung->budget));
    auto stored = reporter.get_artifact(trials::artifact::kCheckpoint);
    if (!stored)
      return failed_result("cannot read the checkpoint: " + stored.error().message, true);
    if (*stored) {
      const std::string& text = **stored;
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
    }
    total = total * (last_step - first + 1) / std::max<std::int64_t>(1, n);
  }
  const std::int64_t steps_now = std::max<std::int64_t>(0, last_step - first + 1);
  const auto start = Clock::now();
  std::optional<double> last;
  auto stopped = [&](StopReason r) {
    auto out = stopped_result(r, task.spec->trial.timeout_s);
    out.value = last;
    if (last) out.metrics[kMetric] = *last;
    return out;
  };

  for (std::int64_t s = first; s <= last_step; ++s) {
    if (auto r = wait_until(start + total * (s - first + 1) / std::max<std::int64_t>(1, steps_now),
                            reporter);
        r != StopReason::kNone)
      return stopped(r);
    if (quadratic) loss = search::noisy_quadratic_step(loss, lr);
    double v = noisy(quadratic ? loss : search::learning_curve(*f, u, s, n, recipe.crossing));
    last = v;
    reporter.report(s, {{kMetric, v}});
  }
  if (auto r = wait_until(start + total, reporter); r != StopReason::kNone) return stopped(r);
  if (rung) {
    // The value at the budget; the step reached is the checkpoint a promotion resumes.
    trials::TrialResult result;
    result.value = last ? *last
                   : quadratic
                       ? noisy(loss)
                       : noisy(search::learning_curve(*f, u, last_step, n, recipe.crossing));
    result.metrics[kMetric] = *result.value;
    result.metrics["budget"] = static_cast<double>(last_step);
    if (last_step < n)
      if (auto st =
              reporter.put_artifact(trials::artifact::kCheckpoint,
                                    quadratic ? fmt::format("step {} {:.17g}", last_step, loss)
                                              : "step " + std::to_string(last_step));
          !st)
        return failed_result("the checkpoint was not stored: " + st.error().message, true);
    return result;
  }

  trials::TrialResult result;
  // The curve's last point: f(x) for the linear curve.
  result.value = noisy(quadratic ? loss
                       : n > 0   ? search::learning_curve(*f, u, n, n, recipe.crossing)
                                 : *f);
  result.metrics[kMetric] = *result.value;
  for (const auto& [name, v] : objectives) result.metrics[name] = noisy(v);
  if (auto primary = result.metrics.find(task.spec->objective.metric);
      several && primary != result.metrics.end())
    result.value = primary->second;
  return result;
}

}  // namespace hpo::workers
