// The planners (search/planner.hpp): what each hands out next over a source of
// new configurations, that a planner tracking the same trials plans the same
// (a restarted scheduler), and what it says when the trials contradict it.
#include "search/planner.hpp"

#include <vector>

#include <gtest/gtest.h>

namespace hpo::search {
namespace {

// A source that hands out {"x": index} and remembers what it was asked.
struct CountingSource {
  std::vector<std::int64_t> asked;
  std::vector<std::size_t> seen;  // how many observations each ask learned from
  std::int64_t limit = 1'000'000;
  ConfigSource source() {
    return [this](std::span<const Observation> s, std::span<const Params>,
                  std::int64_t index) -> std::optional<Params> {
      asked.push_back(index);
      seen.push_back(s.size());
      if (index >= limit) return std::nullopt;
      return Params{{"x", static_cast<double>(index)}};
    };
  }
};

Observation finished(std::int64_t number, double value, double x) {
  Observation o;
  o.number = number;
  o.value = value;
  o.params = {{"x", x}};
  return o;
}

TEST(Planner, PlainAsksTheSourceByTrialNumberUntilItRunsOut) {
  CountingSource src;
  src.limit = 2;
  auto p = plain_planner(src.source());
  PlanInputs in;
  auto a = p->next(0, in);
  ASSERT_TRUE(a.params);
  EXPECT_FALSE(a.lineage);
  EXPECT_EQ(a.params->at("x"), Value(0.0));
  EXPECT_TRUE(p->next(1, in).params);
  EXPECT_FALSE(p->done());
  EXPECT_FALSE(p->next(2, in).params);
  EXPECT_TRUE(p->done());
  EXPECT_EQ(src.asked, (std::vector<std::int64_t>{0, 1, 2}));
}

FidelityConfig asha() {
  FidelityConfig c;
  c.min_budget = 1;
  c.max_budget = 9;
  c.reduction_factor = 3;
  return c;
}

TEST(Planner, HalvingPromotesTheBestOfARungAndCountsConfigurations) {
  CountingSource src;
  auto p = halving_planner(asha(), src.source(), FidelityModel::kHistory, 3);
  std::vector<Observation> history;
  // Three configurations at the bottom rung (budget 1), by configuration index.
  for (std::int64_t n = 0; n < 3; ++n) {
    auto plan = p->next(n, PlanInputs{history, {}, {}});
    ASSERT_TRUE(plan.params && plan.lineage) << plan.error;
    EXPECT_EQ(plan.lineage->rung, 0);
    EXPECT_EQ(plan.lineage->budget, 1);
    EXPECT_EQ(plan.lineage->resume, -1);
    p->track({n, plan.lineage, false, std::nullopt, *plan.params});
  }
  EXPECT_EQ(src.asked, (std::vector<std::int64_t>{0, 1, 2}));
  // Trial 1 is the best of the three: promoted to budget 3, with its parameters.
  const std::vector<double> values{0.5, 0.1, 0.9};
  for (std::int64_t n = 0; n < 3; ++n) {
    history.push_back(finished(n, values[static_cast<std::size_t>(n)], static_cast<double>(n)));
    p->track({n, Lineage{1, 0, 0, -1, -1, false}, true, values[static_cast<std::size_t>(n)],
              history.back().params});
  }
  auto up = p->next(3, PlanInputs{history, {}, {}});
  ASSERT_TRUE(up.params && up.lineage) << up.error;
  EXPECT_EQ(up.lineage->rung, 1);
  EXPECT_EQ(up.lineage->budget, 3);
  EXPECT_EQ(up.lineage->resume, 1);
  EXPECT_EQ(up.params->at("x"), Value(1.0));
  EXPECT_EQ(src.asked.size(), 3u) << "a promotion asks the source nothing";
  p->track({3, up.lineage, false, std::nullopt, *up.params});
  // Promoted once: the next is a new configuration, the fourth.
  auto fresh = p->next(4, PlanInputs{history, {}, {}});
  ASSERT_TRUE(fresh.params && fresh.lineage);
  EXPECT_EQ(fresh.lineage->resume, -1);
  EXPECT_EQ(src.asked.back(), 3);

  // A planner that tracks the same trials (a restarted scheduler) plans the same.
  CountingSource again;
  auto q = halving_planner(asha(), again.source(), FidelityModel::kHistory, 3);
  for (std::int64_t n = 0; n < 3; ++n)
    q->track({n, Lineage{1, 0, 0, -1, -1, false}, true, values[static_cast<std::size_t>(n)],
              history[static_cast<std::size_t>(n)].params});
  auto same = q->next(3, PlanInputs{history, {}, {}});
  ASSERT_TRUE(same.lineage);
  EXPECT_EQ(same.lineage->resume, 1);
}

TEST(Planner, HalvingSaysSoWhenTheTrialToPromoteIsNotAmongTheFinished) {
  CountingSource src;
  auto p = halving_planner(asha(), src.source(), FidelityModel::kHistory, 3);
  for (std::int64_t n = 0; n < 3; ++n)
    p->track({n, Lineage{1, 0, 0, -1, -1, false}, true, 0.1 * static_cast<double>(n), {}});
  auto plan = p->next(3, PlanInputs{});  // the history lacks them
  EXPECT_FALSE(plan.params);
  EXPECT_NE(plan.error.find("to promote is not among the finished ones"), std::string::npos)
      << plan.error;
}

TEST(Planner, HalvingsModelLearnsFromTheLargestBudgetWithEnoughResults) {
  CountingSource src;
  auto p = halving_planner(asha(), src.source(), FidelityModel::kLargestBudget, 2);
  std::vector<Observation> history;
  // Two configurations finished at budget 1 and one at budget 3 (promoted from 0).
  p->track({0, Lineage{1, 0, 0, -1, -1, false}, true, 0.2, {}});
  p->track({1, Lineage{1, 0, 0, -1, -1, false}, true, 0.5, {}});
  p->track({2, Lineage{3, 0, 1, -1, 0, false}, true, 0.1, {}});
  for (std::int64_t n = 0; n < 3; ++n) history.push_back(finished(n, 0.1, 0));
  auto plan = p->next(3, PlanInputs{history, {}, {}});
  ASSERT_TRUE(plan.params);
  ASSERT_EQ(src.seen.size(), 1u);
  EXPECT_EQ(src.seen[0], 2u) << "budget 1 has two results, budget 3 one: the model sees budget 1";
}

PbtConfig pbt() {
  PbtConfig c;
  c.population = 4;
  c.interval = 2;
  c.max_budget = 6;
  c.quantile = 0.25;
  c.seed = 3;
  return c;
}

SearchSpace lr_space() {
  SearchSpace s;
  ParamSpec lr;
  lr.name = "x";
  lr.type = ParamType::kFloat;
  lr.min = 0;
  lr.max = 10;
  s.params.push_back(lr);
  return s;
}

TEST(Planner, PbtExploitsATopMemberOnlyWhenItStoredACheckpoint) {
  CountingSource src;
  auto p = pbt_planner(pbt(), lr_space(), src.source());
  std::vector<Observation> history;
  for (std::int64_t m = 0; m < 4; ++m) {
    auto plan = p->next(m, PlanInputs{history, {}, {}});
    ASSERT_TRUE(plan.params && plan.lineage) << plan.error;
    EXPECT_EQ(plan.lineage->member, m);
    p->track({m, plan.lineage, false, std::nullopt, *plan.params});
  }
  EXPECT_EQ(src.asked, (std::vector<std::int64_t>{0, 1, 2, 3})) << "first members, by member";
  EXPECT_FALSE(p->next(4, PlanInputs{history, {}, {}}).params) << "every member trains";
  EXPECT_FALSE(p->done());
  // Members 0, 1, 2 end their first interval (0 best, 2 worst); 0 and 1 went
  // on (trials 4 and 5). Member 2, in the bottom quantile, exploits member 0.
  const std::vector<double> values{0.1, 0.5, 0.7};
  auto track_all = [&](Planner& q) {
    for (std::int64_t m = 0; m < 4; ++m)
      q.track({m,
               Lineage{2, 0, 0, static_cast<int>(m), -1, false},
               m < 3,
               m < 3 ? std::optional<double>(values[static_cast<std::size_t>(m)]) : std::nullopt,
               {{"x", static_cast<double>(m)}}});
    q.track({4, Lineage{4, 0, 1, 0, 0, false}, false, std::nullopt, {{"x", 0.0}}});
    q.track({5, Lineage{4, 0, 1, 1, 1, false}, false, std::nullopt, {{"x", 1.0}}});
  };
  for (std::int64_t m = 0; m < 3; ++m)
    history.push_back(finished(m, values[static_cast<std::size_t>(m)], static_cast<double>(m)));
  track_all(*p);
  auto exploit = p->next(6, PlanInputs{history, {}, [](std::int64_t) { return true; }});
  ASSERT_TRUE(exploit.params && exploit.lineage) << exploit.error;
  EXPECT_EQ(exploit.lineage->member, 2);
  EXPECT_EQ(exploit.lineage->rung, 1);
  EXPECT_EQ(exploit.lineage->budget, 4);
  EXPECT_TRUE(exploit.lineage->exploited);
  EXPECT_EQ(exploit.lineage->resume, 0) << "the worst member takes the best one's checkpoint";
  EXPECT_EQ(src.asked.size(), 4u) << "an interval asks the source nothing";
  // Had member 0 stored no checkpoint, member 2 would go on from its own.
  CountingSource other;
  auto q = pbt_planner(pbt(), lr_space(), other.source());
  track_all(*q);
  auto own = q->next(6, PlanInputs{history, {}, [](std::int64_t) { return false; }});
  ASSERT_TRUE(own.params && own.lineage) << own.error;
  EXPECT_EQ(own.lineage->member, 2);
  EXPECT_FALSE(own.lineage->exploited);
  EXPECT_EQ(own.lineage->resume, 2);
  EXPECT_EQ(own.params->at("x"), Value(2.0));
}

}  // namespace
}  // namespace hpo::search
