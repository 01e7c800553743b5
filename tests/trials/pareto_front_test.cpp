// A sweep's Pareto front (trials/pareto_front.hpp): the completed trials no
// other beats in every objective, each objective in its own direction, with
// the hypervolume up to the spec's reference or the worst counted value.
#include "trials/pareto_front.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace hpo::trials {
namespace {

Trial trial(std::int64_t number, Metrics metrics, TrialState state = TrialState::kCompleted) {
  Trial t;
  t.id = "sw-" + std::to_string(number);
  t.number = number;
  t.state = state;
  t.params = {{"x", static_cast<double>(number)}};
  t.metrics = std::move(metrics);
  return t;
}

SweepSpec two_objectives() {
  SweepSpec spec;
  spec.objectives = {{"loss", false, std::nullopt}, {"acc", true, std::nullopt}};
  spec.objective = spec.objectives[0];
  return spec;
}

std::vector<std::int64_t> numbers(const ParetoFront& f) {
  std::vector<std::int64_t> out;
  for (const auto& m : f.front) out.push_back(m.number);
  return out;
}

TEST(ParetoFront, KeepsTheTrialsNoOtherBeatsInEveryObjective) {
  std::vector<Trial> trials{
      trial(0, {{"loss", 1.0}, {"acc", 0.9}}),   // front
      trial(1, {{"loss", 2.0}, {"acc", 0.8}}),   // beaten by 0 in both
      trial(2, {{"loss", 0.5}, {"acc", 0.6}}),   // front: lowest loss
      trial(3, {{"loss", 3.0}, {"acc", 0.95}}),  // front: highest accuracy
      trial(4, {{"loss", 0.1}}),                 // no accuracy: not counted
      trial(5, {{"loss", 0.1}, {"acc", 0.99}}, TrialState::kFailed),
      trial(6, {{"loss", 1.0}, {"acc", 0.9}}),  // equal to 0: both on the front
  };
  Trial member = trial(7, {{"loss", 0.0}, {"acc", 1.0}});
  member.role = TrialRole::kMember;
  trials.push_back(member);
  std::vector<const Trial*> view;
  for (auto it = trials.rbegin(); it != trials.rend(); ++it) view.push_back(&*it);  // any order

  ParetoFront f = pareto_front(two_objectives(), view);
  EXPECT_EQ(f.counted, 5);
  EXPECT_EQ(numbers(f), (std::vector<std::int64_t>{0, 2, 3, 6}));
  EXPECT_EQ(f.front[1].values, (std::vector<double>{0.5, 0.6}));  // the user's sense
  EXPECT_EQ(f.front[1].trial_id, "sw-2");
  // The worst counted values: loss 3, accuracy 0.6.
  EXPECT_EQ(f.reference, (std::vector<double>{3.0, 0.6}));
  // In minimise sense (loss, -acc) up to (3, -0.6): trial 0 spans (3-1) x (0.9-0.6),
  // trial 3 adds nothing (it is on the reference's loss), trial 2 adds nothing either.
  EXPECT_DOUBLE_EQ(f.hypervolume, 2.0 * 0.3);

  SweepSpec with_reference = two_objectives();
  with_reference.objectives[0].reference = 4.0;
  with_reference.objectives[1].reference = 0.5;
  f = pareto_front(with_reference, view);
  EXPECT_EQ(f.reference, (std::vector<double>{4.0, 0.5}));
  // Union of [1,4]x[0.5,0.9], [0.5,4]x[0.5,0.6], [3,4]x[0.5,0.95] in (loss, acc).
  EXPECT_NEAR(f.hypervolume, 3 * 0.4 + 0.5 * 0.1 + 1 * 0.05, 1e-12);
}

TEST(ParetoFront, OneObjectiveIsItsBestTrialsAndNoTrialsAnEmptyFront) {
  SweepSpec spec;
  spec.objective = {"loss", false, std::nullopt};  // objectives left empty: the one objective
  std::vector<Trial> trials{trial(0, {{"loss", 2.0}}), trial(1, {{"loss", 1.0}}),
                            trial(2, {{"loss", 1.0}})};
  std::vector<const Trial*> view{&trials[0], &trials[1], &trials[2]};
  ParetoFront f = pareto_front(spec, view);
  EXPECT_EQ(numbers(f), (std::vector<std::int64_t>{1, 2}));
  EXPECT_DOUBLE_EQ(f.hypervolume, 1.0);
  f = pareto_front(two_objectives(), {});
  EXPECT_TRUE(f.front.empty());
  EXPECT_EQ(f.counted, 0);
  EXPECT_EQ(f.hypervolume, 0);
}

// constraints: a trial that breaks one (or lacks its metric) is not counted,
// so it neither sits on the front nor pushes feasible trials off it.
TEST(ParetoFront, HoldsOnlyTrialsThatKeepTheConstraints) {
  std::vector<Trial> trials{
      trial(0, {{"loss", 1.0}, {"acc", 0.9}, {"ms", 10}}),
      trial(1, {{"loss", 0.5}, {"acc", 0.95}, {"ms", 30}}),  // beats 0, but too slow
      trial(2, {{"loss", 2.0}, {"acc", 0.95}, {"ms", 20}}),  // at the bound: kept
      trial(3, {{"loss", 0.1}, {"acc", 0.99}}),              // no "ms": broken
  };
  std::vector<const Trial*> view{&trials[0], &trials[1], &trials[2], &trials[3]};
  SweepSpec spec = two_objectives();
  EXPECT_EQ(numbers(pareto_front(spec, view)), (std::vector<std::int64_t>{3}));
  spec.constraints = {{"ms", 20.0, std::nullopt}};
  ParetoFront f = pareto_front(spec, view);
  EXPECT_EQ(f.counted, 2);
  EXPECT_EQ(numbers(f), (std::vector<std::int64_t>{0, 2}));
}

TEST(Constraints, ViolationIsTheDistanceOutsideTheBound) {
  const MetricBound at_most{"ms", 20.0, std::nullopt}, at_least{"acc", std::nullopt, 0.5},
      between{"x", 1.0, -1.0};
  EXPECT_EQ(violation(at_most, 25), 5);
  EXPECT_EQ(violation(at_most, 15), -5);
  EXPECT_EQ(violation(at_least, 0.25), 0.25);
  EXPECT_EQ(violation(at_least, 0.75), -0.25);
  EXPECT_EQ(violation(between, 0), -1);
  EXPECT_EQ(violation(between, 3), 2);
  EXPECT_EQ(violation(between, -1.5), 0.5);
  EXPECT_TRUE(std::isnan(violation(at_most, std::nan(""))));
  EXPECT_TRUE(feasible({at_most, at_least}, {{"ms", 20}, {"acc", 0.5}}));
  EXPECT_FALSE(feasible({at_most, at_least}, {{"ms", 20}}));
  EXPECT_FALSE(feasible({at_most}, {{"ms", std::nan("")}}));
  EXPECT_TRUE(feasible({}, {}));
}

}  // namespace
}  // namespace hpo::trials
