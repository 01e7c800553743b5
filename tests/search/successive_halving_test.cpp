#include "search/successive_halving.hpp"

#include <map>
#include <vector>

#include <gtest/gtest.h>

namespace hpo::search {
namespace {

FidelityConfig asha(double lo, double hi, double eta = 3) {
  FidelityConfig c;
  c.min_budget = lo;
  c.max_budget = hi;
  c.reduction_factor = eta;
  return c;
}

RungRun done(std::int64_t number, int rung, double value, std::int64_t from = -1, int bracket = 0) {
  return {number, bracket, rung, from, true, value};
}

TEST(SuccessiveHalving, RungsClimbByTheReductionFactorToTheMaximum) {
  EXPECT_EQ(SuccessiveHalving(asha(1, 27)).budgets(0), (std::vector<double>{1, 3, 9, 27}));
  // Not a power of the factor: the last rung is max itself.
  EXPECT_EQ(SuccessiveHalving(asha(1, 20)).budgets(0), (std::vector<double>{1, 3, 9, 20}));
  EXPECT_EQ(SuccessiveHalving(asha(2, 10, 2)).budgets(0), (std::vector<double>{2, 4, 8, 10}));
  FidelityConfig real = asha(0.1, 1);
  real.integer = false;
  auto b = SuccessiveHalving(real).budgets(0);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_NEAR(b[1], 0.3, 1e-12);
  EXPECT_EQ(b.back(), 1.0);
  EXPECT_EQ(SuccessiveHalving(asha(1, 27)).brackets(), 1);
}

TEST(SuccessiveHalving, HyperbandBracketsStartHigherAndTakeFewerConfigurations) {
  FidelityConfig c = asha(1, 27);
  c.schedule = Schedule::kHyperband;
  SuccessiveHalving sh(c);
  ASSERT_EQ(sh.brackets(), 4);
  EXPECT_EQ(sh.budgets(1), (std::vector<double>{3, 9, 27}));
  EXPECT_EQ(sh.budgets(3), (std::vector<double>{27}));
  // New configurations per cycle, as Hyperband's brackets: 27, 12, 6, 4.
  std::vector<RungRun> runs;
  std::map<int, int> per_bracket;
  for (int i = 0; i < 49; ++i) {
    RungJob job = sh.next(runs);
    ASSERT_EQ(job.promote, -1);
    ASSERT_EQ(job.rung, 0);
    EXPECT_EQ(job.budget, sh.budgets(job.bracket)[0]);
    ++per_bracket[job.bracket];
    runs.push_back({i, job.bracket, 0, -1, false, std::nullopt});  // all still running
  }
  EXPECT_EQ(per_bracket, (std::map<int, int>{{0, 27}, {1, 12}, {2, 6}, {3, 4}}));
}

TEST(SuccessiveHalving, PromotesTheBestThirdOnceEnoughFinishedAtARung) {
  SuccessiveHalving sh(asha(1, 9));
  std::vector<RungRun> runs = {done(0, 0, 5.0), done(1, 0, 1.0)};
  // Two at rung 0: floor(2/3) = 0 may go on, so a new configuration.
  RungJob job = sh.next(runs);
  EXPECT_EQ(job.promote, -1);
  EXPECT_EQ(job.budget, 1);
  runs.push_back(done(2, 0, 3.0));
  job = sh.next(runs);
  EXPECT_EQ(job.promote, 1);  // the best of three
  EXPECT_EQ(job.rung, 1);
  EXPECT_EQ(job.budget, 3);
  // Once promoted (queued, running or finished) it is never promoted again.
  runs.push_back({3, 0, 1, 1, false, std::nullopt});
  EXPECT_EQ(sh.next(runs).promote, -1);
  // Three more at rung 0, one better than every earlier: with six, two go on.
  runs.push_back(done(4, 0, 0.5));
  runs.push_back(done(5, 0, 7.0));
  runs.push_back(done(6, 0, 8.0));
  EXPECT_EQ(sh.next(runs).promote, 4);
  runs.push_back({7, 0, 1, 4, false, std::nullopt});
  EXPECT_EQ(sh.next(runs).promote, -1);  // 1 and 4 are the top two; 2 (third) stays
}

TEST(SuccessiveHalving, TheHighestRungPromotesFirstAndTheTopRungNever) {
  SuccessiveHalving sh(asha(1, 9));
  std::vector<RungRun> runs;
  for (int i = 0; i < 9; ++i) runs.push_back(done(i, 0, i));
  // rung 1 (budget 3): 0, 1, 2 promoted and finished.
  runs.push_back(done(9, 1, 2.0, 0));
  runs.push_back(done(10, 1, 1.0, 1));
  runs.push_back(done(11, 1, 3.0, 2));
  RungJob job = sh.next(runs);
  EXPECT_EQ(job.rung, 2);
  EXPECT_EQ(job.promote, 10);
  EXPECT_EQ(job.budget, 9);
  runs.push_back(done(12, 2, 0.1, 10));
  // Nothing is promoted from the top rung; rung 0's top three are taken: a new one.
  job = sh.next(runs);
  EXPECT_EQ(job.promote, -1);
  EXPECT_EQ(job.rung, 0);
}

TEST(SuccessiveHalving, FailedTrialsAreNotRankedAndAFailedPromotionIsNotRetried) {
  SuccessiveHalving sh(asha(1, 9));
  std::vector<RungRun> runs = {done(0, 0, 2.0), done(1, 0, 1.0)};
  runs.push_back({2, 0, 0, -1, true, std::nullopt});  // failed: no value
  EXPECT_EQ(sh.next(runs).promote, -1);
  runs.push_back(done(3, 0, 4.0));
  EXPECT_EQ(sh.next(runs).promote, 1);
  runs.push_back({4, 0, 1, 1, true, std::nullopt});  // the promotion failed for good
  EXPECT_EQ(sh.next(runs).promote, -1);
}

TEST(SuccessiveHalving, TheModelLearnsFromTheLargestBudgetWithEnoughResults) {
  SuccessiveHalving sh(asha(1, 9));
  std::vector<RungRun> runs;
  EXPECT_FALSE(sh.model_budget(runs, 3));
  for (int i = 0; i < 4; ++i) runs.push_back(done(i, 0, i));
  runs.push_back(done(4, 1, 0.0, 0));
  runs.push_back(done(5, 1, 1.0, 1));
  EXPECT_EQ(sh.model_budget(runs, 3), 1.0);  // two at budget 3 are not enough
  runs.push_back(done(6, 1, 2.0, 2));
  EXPECT_EQ(sh.model_budget(runs, 3), 3.0);
  // Too few anywhere: the smallest budget.
  EXPECT_EQ(sh.model_budget(runs, 10), 1.0);
}

// TPE's view under the schedule: each configuration once, at its deepest
// finished rung; below the max budget as a pruned trial at that budget.
TEST(SuccessiveHalving, TpeSeesEachConfigurationAtItsDeepestRung) {
  SuccessiveHalving sh(asha(1, 9));
  std::vector<RungRun> runs = {done(0, 0, 5.0), done(1, 0, 1.0), done(2, 0, 3.0),
                               done(3, 1, 0.8, 1), done(4, 2, 0.5, 3)};
  runs.push_back({5, 0, 1, 2, true, std::nullopt});    // 2's promotion failed
  runs.push_back({6, 0, 0, -1, false, std::nullopt});  // still running: not in the history
  std::vector<Observation> history;
  for (const RungRun& r : runs) {
    if (!r.finished) continue;
    Observation o;
    o.number = r.number;
    o.params = {{"x", static_cast<double>(r.number)}};
    o.value = r.value;
    o.outcome = r.value ? TrialOutcome::kCompleted : TrialOutcome::kFailed;
    history.push_back(o);
  }
  auto seen = sh.by_configuration(runs, history);
  ASSERT_EQ(seen.size(), 3u);  // configurations 0, 1 (via 3 and 4) and 2
  EXPECT_EQ(seen[0].number, 0);
  EXPECT_EQ(seen[0].outcome, TrialOutcome::kPruned);
  ASSERT_EQ(seen[0].curve.size(), 1u);
  EXPECT_EQ(seen[1].number, 2);  // its failed promotion does not hide it
  EXPECT_EQ(seen[1].outcome, TrialOutcome::kPruned);
  EXPECT_EQ(seen[2].number, 4);  // the full budget: completed, as it is
  EXPECT_EQ(seen[2].outcome, TrialOutcome::kCompleted);
  EXPECT_EQ(seen[2].value, 0.5);
  EXPECT_TRUE(seen[2].curve.empty());
}

}  // namespace
}  // namespace hpo::search
