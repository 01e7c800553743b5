// SyntheticExecutor: the built-in test functions as trials.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <future>
#include <thread>

#include <fmt/format.h>

#include "search/test_functions.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/workers/agent/test_util.hpp"
#include "trials/trial_plan.hpp"
#include "workers/synthetic_executor.hpp"

namespace hpo::workers {
namespace {

using hpo::testing::wait_for;
using testing::RecordingReporter;

trials::SweepSpec synthetic_spec(std::string function, std::int64_t steps = 0, double sleep_s = 0,
                                 double noise = 0) {
  trials::SweepSpec spec;
  spec.objective.metric = "value";
  spec.trial.kind = trials::TrialKind::kSynthetic;
  spec.trial.synthetic = {std::move(function), sleep_s, noise, steps};
  return spec;
}

TrialTask make_task(const trials::SweepSpec& spec, search::Params params, int attempt = 0) {
  TrialTask task;
  task.spec = &spec;
  task.trial.id = "syn-3";
  task.trial.sweep_id = "syn";
  task.trial.attempt = attempt;
  task.trial.params = std::move(params);
  return task;
}

TEST(SyntheticExecutor, BraninValueAtItsKnownMinimum) {
  auto spec = synthetic_spec("branin");
  RecordingReporter rep;
  auto r = SyntheticExecutor().run(make_task(spec, {{"x1", M_PI}, {"x2", 2.275}}), rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  ASSERT_TRUE(r.value.has_value());
  EXPECT_NEAR(*r.value, 0.397887, 1e-6);  // Branin's global minimum
  EXPECT_DOUBLE_EQ(r.metrics.at("value"), *r.value);
  EXPECT_TRUE(rep.reports.empty());
}

TEST(SyntheticExecutor, IntParametersAreAccepted) {
  auto spec = synthetic_spec("branin");
  RecordingReporter rep;
  search::Params p{{"x1", std::int64_t{1}}, {"x2", std::int64_t{4}}};
  auto r = SyntheticExecutor().run(make_task(spec, p), rep);
  ASSERT_TRUE(r.value.has_value()) << r.error;
  EXPECT_DOUBLE_EQ(*r.value, search::branin({1.0, 4.0}));
}

TEST(SyntheticExecutor, StepsReportALearningCurveFallingToTheValue) {
  auto spec = synthetic_spec("branin", /*steps=*/4);
  ASSERT_EQ(search::test_function_dims("branin"), 2);
  search::Params p{{"x1", 0.5}, {"x2", -0.25}};
  const double f = *search::evaluate_test_function("branin", p);
  RecordingReporter rep;
  auto r = SyntheticExecutor().run(make_task(spec, p), rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  ASSERT_EQ(rep.reports.size(), 4u);
  for (int s = 1; s <= 4; ++s) {
    EXPECT_EQ(rep.reports[s - 1].first, s);
    EXPECT_DOUBLE_EQ(rep.reports[s - 1].second.at("value"), f + (4.0 - s) / 4.0);
  }
  EXPECT_DOUBLE_EQ(*r.value, f);
}

// search.multi_fidelity over steps: a rung runs up to its budget on a curve
// whose length is the schedule's max, checkpoints the step it reached, and a
// promotion goes on from a checkpoint to its own budget, reporting only the
// steps it runs; both values are the crossing curve's at their budgets.
TEST(SyntheticExecutor, ARungRunsToItsBudgetAndAPromotionResumesItsCheckpoint) {
  auto spec = synthetic_spec("branin");
  spec.trial.synthetic.crossing = true;
  for (const char* x : {"x1", "x2"}) {
    search::ParamSpec p;
    p.name = x;
    p.min = -5;
    p.max = 15;
    spec.space.params.push_back(p);
  }
  search::FidelityConfig fid;
  fid.resource = "steps";
  fid.min_budget = 1;
  fid.max_budget = 9;
  spec.search.fidelity = fid;
  search::Params p{{"x1", 0.5}, {"x2", 3.0}};
  const double f = *search::evaluate_test_function("branin", p);
  const double u = (0.5 + 5) / 20;
  RecordingReporter rep;
  auto task = make_task(spec, p);
  task.trial.plan.lineage = search::Lineage{3, 0, 1, -1, -1, false, "steps"};
  auto r = SyntheticExecutor().run(task, rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  ASSERT_EQ(rep.reports.size(), 3u);
  EXPECT_DOUBLE_EQ(*r.value, search::learning_curve(f, u, 3, 9, true));
  EXPECT_DOUBLE_EQ(*r.value, f + std::exp(-(0.5 + 4.5 * u) * 3 / 9));
  EXPECT_EQ(rep.artifacts.at("checkpoint"), "step 3");

  // The promotion (the reporter hands it the rung below's checkpoint).
  rep.reports.clear();
  task.trial.plan.lineage = search::Lineage{9, 0, 2, -1, 1, false, "steps"};  // resumes syn-1
  r = SyntheticExecutor().run(task, rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  ASSERT_EQ(rep.reports.size(), 6u);
  EXPECT_EQ(rep.reports.front().first, 4);
  EXPECT_DOUBLE_EQ(*r.value, search::learning_curve(f, u, 9, 9, true));
  EXPECT_EQ(rep.puts["checkpoint"], 1);  // none at the full budget

  // A checkpoint past the budget is refused, not trusted.
  rep.artifacts["checkpoint"] = "step 12";
  r = SyntheticExecutor().run(task, rep);
  EXPECT_EQ(r.outcome, trials::TrialState::kFailed);
  EXPECT_NE(r.error.find("\"step 12\" is not a step up to 9"), std::string::npos) << r.error;
}

// noisy_quadratic under search.pbt: the expected loss steps on at the
// trial's rate from the state its checkpoint holds (a donor's, on an exploit).
TEST(SyntheticExecutor, TheNoisyQuadraticGoesOnFromTheStateInItsCheckpoint) {
  auto spec = synthetic_spec("noisy_quadratic");
  search::PbtConfig pbt;
  pbt.resource = "steps";
  pbt.interval = 4;
  pbt.max_budget = 8;
  spec.search.pbt = pbt;
  search::Lineage first{4, 0, 0, -1, -1, false, "steps"};
  first.member = 1;
  RecordingReporter rep;
  auto task = make_task(spec, {{"lr", 0.1}});
  task.trial.plan.lineage = first;
  auto r = SyntheticExecutor().run(task, rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  double v = 1;
  for (int s = 0; s < 4; ++s) v = search::noisy_quadratic_step(v, 0.1);
  EXPECT_DOUBLE_EQ(*r.value, v);
  EXPECT_EQ(rep.artifacts.at("checkpoint"), fmt::format("step 4 {:.17g}", v));
  // The next interval at another rate, from that state (exploited or not).
  search::Lineage second{8, 0, 1, -1, 0, false, "steps"};  // resumes syn-0
  second.member = 1;
  second.exploited = true;
  task = make_task(spec, {{"lr", 0.05}});
  task.trial.plan.lineage = second;
  rep.reports.clear();
  r = SyntheticExecutor().run(task, rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  EXPECT_EQ(rep.reports.size(), 4u);
  for (int s = 0; s < 4; ++s) v = search::noisy_quadratic_step(v, 0.05);
  EXPECT_DOUBLE_EQ(*r.value, v);
  EXPECT_EQ(rep.puts["checkpoint"], 1);  // none after the last interval
  // A checkpoint without the state is refused.
  rep.artifacts["checkpoint"] = "step 4";
  r = SyntheticExecutor().run(task, rep);
  EXPECT_EQ(r.outcome, trials::TrialState::kFailed);
  auto no_lr = synthetic_spec("noisy_quadratic");
  r = SyntheticExecutor().run(make_task(no_lr, {{"x1", 0.1}}), rep);
  EXPECT_NE(r.error.find("needs a numeric parameter lr"), std::string::npos) << r.error;
}

TEST(SyntheticExecutor, NoopIsZeroAtOnce) {
  auto spec = synthetic_spec("noop");
  RecordingReporter rep;
  auto r = SyntheticExecutor().run(make_task(spec, {}), rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted);
  EXPECT_EQ(*r.value, 0.0);
}

TEST(SyntheticExecutor, NoiseIsSeededByTrialAndAttempt) {
  auto spec = synthetic_spec("branin", 0, 0, /*noise=*/0.5);
  search::Params p{{"x1", 1.0}, {"x2", 2.0}};
  RecordingReporter rep;
  double a0 = *SyntheticExecutor().run(make_task(spec, p, 0), rep).value;
  double a0_again = *SyntheticExecutor().run(make_task(spec, p, 0), rep).value;
  double a1 = *SyntheticExecutor().run(make_task(spec, p, 1), rep).value;
  EXPECT_EQ(a0, a0_again);
  EXPECT_NE(a0, a1);
  EXPECT_NE(a0, search::branin({1.0, 2.0}));
}

TEST(SyntheticExecutor, StopsPromptlyWhenPruned) {
  auto spec = synthetic_spec("branin", /*steps=*/1000, /*sleep_s=*/60);
  RecordingReporter rep;
  trials::TrialResult r;
  auto runner = std::async(std::launch::async, [&] {
    r = SyntheticExecutor().run(make_task(spec, {{"x1", 1.0}, {"x2", 2.0}}), rep);
  });
  ASSERT_TRUE(wait_for([&] { return !rep.reports_copy().empty(); }));
  rep.stop = StopReason::kPruned;
  // The trial takes 60 s unless it stops: it must return well before that.
  ASSERT_EQ(runner.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(r.outcome, trials::TrialState::kPruned);
  EXPECT_TRUE(r.value.has_value());  // the last reading
}

TEST(SyntheticExecutor, UnknownFunctionOrMissingInputsFail) {
  RecordingReporter rep;
  auto unknown = synthetic_spec("nope");
  auto r1 = SyntheticExecutor().run(make_task(unknown, {}), rep);
  EXPECT_EQ(r1.outcome, trials::TrialState::kFailed);
  EXPECT_NE(r1.error.find("unknown synthetic function"), std::string::npos);
  auto branin = synthetic_spec("branin");
  auto r2 = SyntheticExecutor().run(make_task(branin, {{"x1", 1.0}}), rep);
  EXPECT_EQ(r2.outcome, trials::TrialState::kFailed);
  EXPECT_NE(r2.error.find("x1..x2"), std::string::npos) << r2.error;
  EXPECT_FALSE(r2.retryable);
}

}  // namespace
}  // namespace hpo::workers
