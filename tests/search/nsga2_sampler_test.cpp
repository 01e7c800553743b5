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
#include "tests/search/pareto_fixtures.hpp"
#include "tests/search/space_fixtures.hpp"

namespace hpo::search {
namespace {

TEST(Nsga2Sampler, BeatsRandomSearchOnZdt1) {
  constexpr int kDims = 6, kTrials = 400;  // ZDT1's six inputs
  int wins = 0;
  std::vector<double> nsga, random;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    Nsga2Sampler n(testing::box_space(kDims), seed);
    RandomSampler r(testing::box_space(kDims), seed);
    nsga.push_back(testing::pareto_run(n, "zdt1", kTrials));
    random.push_back(testing::pareto_run(r, "zdt1", kTrials));
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
  Nsga2Sampler s(testing::mixed_space(), 3);
  const int sgd = testing::mixed_space_run(s, 120, 7);
  EXPECT_GT(sgd, 0);
  EXPECT_LT(sgd, 120);
}

}  // namespace
}  // namespace hpo::search
