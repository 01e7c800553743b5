// SyntheticExecutor: the built-in test functions as trials.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <future>
#include <thread>

#include "search/test_functions.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/workers/agent/test_util.hpp"
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
