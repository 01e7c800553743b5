// NSGA-II (search/nsga2_sampler.hpp): on ZDT1 its front dominates a larger
// hypervolume than random search's with the same budget; it asks the same
// thing again given the same history; its children stay inside mixed and
// conditional spaces.
#include "search/nsga2_sampler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "search/pareto.hpp"
#include "search/random_sampler.hpp"
#include "search/test_functions.hpp"
#include "search/warm_start.hpp"
#include "tests/search/space_fixtures.hpp"

namespace hpo::search {
namespace {

Point zdt1(const Params& p, int d) {
  auto v = evaluate_multi_objective("zdt1", p);
  EXPECT_TRUE(v && d == 6);
  return v ? *v : Point{};
}

// The hypervolume (reference 1.1, 1.1) of `trials` ZDT1 trials asked one at a time.
double run_zdt1(Sampler& sampler, int d, int trials) {
  const SearchSpace space = testing::box_space(d);
  std::vector<Observation> history;
  std::vector<Point> points;
  for (int i = 0; i < trials; ++i) {
    auto params = sampler.ask(history, {}, i);
    EXPECT_TRUE(params && fit_to_space(*params, space));
    Observation o;
    o.number = i;
    o.params = *params;
    o.values = zdt1(*params, d);
    points.push_back(o.values);
    history.push_back(std::move(o));
  }
  return hypervolume(points, {1.1, 1.1});
}

TEST(Nsga2Sampler, BeatsRandomSearchOnZdt1) {
  constexpr int kDims = 6, kTrials = 400;  // ZDT1's six inputs
  int wins = 0;
  std::vector<double> nsga, random;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    Nsga2Sampler n(testing::box_space(kDims), seed);
    RandomSampler r(testing::box_space(kDims), seed);
    nsga.push_back(run_zdt1(n, kDims, kTrials));
    random.push_back(run_zdt1(r, kDims, kTrials));
    wins += nsga.back() > random.back();
    std::printf("zdt1 d=%d %d trials seed %llu: hypervolume nsga2 %.4f, random %.4f\n", kDims,
                kTrials, static_cast<unsigned long long>(seed), nsga.back(), random.back());
  }
  std::sort(nsga.begin(), nsga.end());
  std::sort(random.begin(), random.end());
  EXPECT_GE(wins, 4);
  EXPECT_GT(nsga[2], random[2]);
}

TEST(Nsga2Sampler, TheSameHistoryAndNumberAskTheSameParameters) {
  const SearchSpace space = testing::box_space(3);
  Nsga2Sampler a(space, 9, 8);
  std::vector<Observation> history;
  for (int i = 0; i < 30; ++i) {
    auto params = a.ask(history, {}, i);
    ASSERT_TRUE(params);
    Nsga2Sampler fresh(space, 9, 8);  // a restarted scheduler's
    EXPECT_EQ(fresh.ask(history, {}, i), params) << i;
    Observation o;
    o.number = i;
    o.params = *params;
    o.values = {std::get<double>(params->at("x1")),
                std::pow(std::get<double>(params->at("x2")) - 0.5, 2) +
                    std::get<double>(params->at("x3")) - std::get<double>(params->at("x1"))};
    history.push_back(std::move(o));
  }
  // Another seed asks other children of the same parents.
  Nsga2Sampler other(space, 10, 8);
  EXPECT_NE(other.ask(history, {}, 30), a.ask(history, {}, 30));
}

TEST(Nsga2Sampler, ChildrenOfMixedAndConditionalSpacesFitTheSpace) {
  const SearchSpace space = testing::mixed_space();
  Nsga2Sampler s(space, 3);
  std::vector<Observation> history;
  int sgd = 0;
  for (int i = 0; i < 120; ++i) {
    auto params = s.ask(history, {}, i);
    ASSERT_TRUE(params);
    ASSERT_TRUE(fit_to_space(*params, space)) << i;
    Observation o;
    o.number = i;
    o.params = *params;
    const double lr = std::get<double>(params->at("lr"));
    const bool is_sgd = std::get<std::string>(params->at("opt")) == "sgd";
    sgd += is_sgd;
    // Two conflicting objectives; a failed trial now and then takes no part.
    o.outcome = i % 7 == 3 ? TrialOutcome::kFailed : TrialOutcome::kCompleted;
    if (o.outcome == TrialOutcome::kCompleted)
      o.values = {std::abs(std::log10(lr) + 2) + (is_sgd ? 0.0 : 0.5),
                  static_cast<double>(std::get<std::int64_t>(params->at("layers")))};
    history.push_back(std::move(o));
  }
  EXPECT_GT(sgd, 0);
  EXPECT_LT(sgd, 120);
}

}  // namespace
}  // namespace hpo::search
