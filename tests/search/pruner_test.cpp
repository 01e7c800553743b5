#include <gtest/gtest.h>

#include <cmath>

#include "search/asha_pruner.hpp"
#include "search/median_pruner.hpp"

namespace hpo::search {
namespace {

// A curve with `value(step)` at steps first, first+every, ..., up to last.
template <class F>
std::vector<StepValue> curve(std::int64_t last, F value, std::int64_t every = 1) {
  std::vector<StepValue> c;
  for (std::int64_t s = every; s <= last; s += every) c.push_back({s, value(s)});
  return c;
}

std::vector<StepValue> flat(double v, std::int64_t last) {
  return curve(last, [v](std::int64_t) { return v; });
}

Observation obs(std::vector<StepValue> c, TrialOutcome outcome = TrialOutcome::kCompleted) {
  Observation o;
  o.curve = std::move(c);
  o.outcome = outcome;
  if (!o.curve.empty()) o.value = o.curve.back().value;
  return o;
}

// Feeds the trial's curve one report at a time; returns the step at which it
// was stopped, or 0 when it ran to the end.
std::int64_t stopped_at(const Pruner& p, const std::vector<StepValue>& c,
                        const std::vector<Observation>& others) {
  for (std::size_t i = 1; i <= c.size(); ++i)
    if (p.should_prune(std::span(c.data(), i), others)) return c[i - 1].step;
  return 0;
}

// The constructed sweep: rungs 1, 3, 9 (grace 1, rf 3, max 27).
//   A=1 and B=2 ran to 27; C=3, D=4, F=6 were stopped at rung 1; E=5 at rung 3;
//   G failed with the best value (must not count).
std::vector<Observation> sweep() {
  return {obs(flat(1, 27)),
          obs(flat(2, 27)),
          obs(flat(3, 1), TrialOutcome::kPruned),
          obs(flat(4, 1), TrialOutcome::kPruned),
          obs(flat(5, 3), TrialOutcome::kPruned),
          obs(flat(6, 1), TrialOutcome::kPruned),
          obs(flat(-100, 27), TrialOutcome::kFailed)};
}

TEST(AshaPruner, RungsAreGeometric) {
  EXPECT_EQ(AshaPruner(1, 3, 27).rungs(), (std::vector<std::int64_t>{1, 3, 9}));
  EXPECT_EQ(AshaPruner(2, 2, 20).rungs(), (std::vector<std::int64_t>{2, 4, 8, 16}));
  EXPECT_EQ(AshaPruner(5, 4, 0).rungs().front(), 5);
  EXPECT_GT(AshaPruner(5, 4, 0).rungs().size(), 20u);
}

TEST(AshaPruner, PrunesAtTheRightRungs) {
  AshaPruner asha(1, 3, 27);
  auto others = sweep();
  // Rung 1 holds {1,2,3,4,5,6} + the trial: n = 7, keep floor(7/3) = 2.
  EXPECT_EQ(stopped_at(asha, flat(2.5, 27), others), 1);
  // 1.5 is 2nd at rung 1 (kept); rung 3 holds {1,2,5} + it: n = 4, keep 1 -> stopped at 3.
  EXPECT_EQ(stopped_at(asha, flat(1.5, 27), others), 3);
  // The best everywhere runs to the end (rung 9: {1,2} + it, keep 1).
  EXPECT_EQ(stopped_at(asha, flat(0.5, 27), others), 0);
  // Compared by the value at the rung step, not the latest: bad at rung 1 means stopped at 1 ...
  EXPECT_EQ(stopped_at(asha, curve(27, [](std::int64_t s) { return s == 1 ? 9.0 : 0.0; }), others),
            1);
  // ... and a curve that is poor between rungs but good at them survives.
  EXPECT_EQ(
      stopped_at(asha, curve(27, [](std::int64_t s) { return s % 3 == 0 || s == 1 ? 0.0 : 9.0; }),
                 others),
      0);
}

TEST(AshaPruner, JudgesOnlyWhenARungIsReached) {
  AshaPruner asha(1, 3, 27);
  auto others = sweep();
  // Decided at the report that first reaches the rung; reports between rungs
  // never stop a trial, however bad their value.
  std::vector<StepValue> c = {{1, 0.5}, {2, 50.0}};
  EXPECT_FALSE(asha.should_prune(c, others));
  // Reports every 4 steps: step 4 is the first past rung 3 and is judged there.
  std::vector<StepValue> sparse = {{4, 1.5}};
  EXPECT_TRUE(asha.should_prune(sparse, others));
  sparse = {{4, 0.5}};
  EXPECT_FALSE(asha.should_prune(sparse, others));
}

TEST(AshaPruner, FirstTrialsOnlyTheBestGoesOn) {
  AshaPruner asha(1, 3, 0);
  std::vector<Observation> one = {obs(flat(1, 1), TrialOutcome::kRunning)};
  EXPECT_FALSE(asha.should_prune(flat(0.5, 1), one));
  EXPECT_TRUE(asha.should_prune(flat(1.5, 1), one));
  EXPECT_FALSE(asha.should_prune(flat(7, 1), {}));  // alone at the rung
}

// Runs 27 trials one after the other (trial i has quality quality(i), lower is
// better, curve quality + 10/step) and counts how many reached each rung.
template <class Q>
std::vector<int> simulate(const Pruner& p, Q quality) {
  std::vector<Observation> done;
  std::vector<int> reached(4, 0);  // trials that reached step 1, 3, 9, 27
  for (int i = 0; i < 27; ++i) {
    double q = quality(i);
    auto c = curve(27, [q](std::int64_t s) { return q + 10.0 / static_cast<double>(s); });
    std::int64_t stop = stopped_at(p, c, done);
    std::size_t len = stop == 0 ? c.size() : static_cast<std::size_t>(stop);
    done.push_back(obs({c.begin(), c.begin() + static_cast<std::ptrdiff_t>(len)},
                       stop == 0 ? TrialOutcome::kCompleted : TrialOutcome::kPruned));
    for (int r = 0; r < 4; ++r) reached[std::size_t(r)] += len >= std::size_t(std::pow(3, r));
  }
  return reached;
}

TEST(AshaPruner, SequentialSweeps) {
  AshaPruner asha(1, 3, 27);
  // Best first: every later trial ranks last at rung 1 and is stopped there.
  EXPECT_EQ(simulate(asha, [](int i) { return double(i); }), (std::vector<int>{27, 1, 1, 1}));
  // Worst first: every trial is the best so far and runs to the end.
  EXPECT_EQ(simulate(asha, [](int i) { return double(-i); }), (std::vector<int>{27, 27, 27, 27}));
  // Alternating good/bad: the bad ones (odd) are never in the top third.
  auto reached = simulate(asha, [](int i) { return i % 2 ? 100.0 + i : -double(i); });
  EXPECT_EQ(reached[1], 14);  // the 14 even trials improve each time
}

TEST(MedianPruner, StopsBelowMedianAfterWarmup) {
  MedianPruner median(/*warmup=*/2, /*min_trials=*/3);
  std::vector<Observation> others = {obs(flat(1, 10)), obs(flat(2, 10)), obs(flat(3, 10)),
                                     obs(flat(4, 10), TrialOutcome::kRunning)};
  // median of {1,2,3,4} = 2.5
  EXPECT_FALSE(median.should_prune(flat(9, 1), others));  // warmup
  EXPECT_TRUE(median.should_prune(flat(2.6, 2), others));
  EXPECT_FALSE(median.should_prune(flat(2.4, 2), others));
  // best so far counts: a bad latest value after a good one is not stopped
  std::vector<StepValue> c = {{1, 1.0}, {2, 9.0}};
  EXPECT_FALSE(median.should_prune(c, others));
  // NaN is the worst value
  EXPECT_TRUE(median.should_prune(flat(std::nan(""), 3), others));
}

TEST(MedianPruner, NeedsMinTrialsThatReachedTheStep) {
  MedianPruner median(0, 3);
  std::vector<Observation> others = {obs(flat(1, 10)), obs(flat(1, 10)), obs(flat(1, 2)),
                                     obs(flat(1, 10), TrialOutcome::kFailed)};
  EXPECT_TRUE(median.should_prune(flat(5, 2), others));   // 3 reached step 2
  EXPECT_FALSE(median.should_prune(flat(5, 5), others));  // only 2 reached step 5
}

TEST(Pruners, MakePrunerPicksTheType) {
  PrunerConfig cfg;
  cfg.type = PrunerType::kAsha;
  cfg.grace_period = 1;
  cfg.reduction_factor = 3;
  auto asha = make_pruner(cfg);
  EXPECT_TRUE(asha->should_prune(flat(3, 1), sweep()));
  cfg.type = PrunerType::kMedian;
  cfg.min_trials = 100;
  EXPECT_FALSE(make_pruner(cfg)->should_prune(flat(3, 1), sweep()));
}

}  // namespace
}  // namespace hpo::search
