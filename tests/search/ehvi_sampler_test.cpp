// GP + expected hypervolume improvement (search/ehvi_sampler.hpp): the
// improvement of one point is the hypervolume it adds (checked against the
// hypervolume of the front with and without it, two and three objectives);
// on ZDT1 and DTLZ2 its front dominates more than random search's and
// NSGA-II's with the same small budget; it asks the same thing again given
// the same history; a pending trial moves the next proposal elsewhere; failed
// trials and mixed, conditional spaces are handled.
#include "search/ehvi_sampler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "search/nsga2_sampler.hpp"
#include "search/random_sampler.hpp"
#include "search/rng.hpp"
#include "tests/search/pareto_fixtures.hpp"
#include "tests/search/space_fixtures.hpp"

namespace hpo::search {
namespace {

// A random mutually non-dominated front of m objectives, sorted.
std::vector<Point> random_front(Rng& rng, std::size_t m, int n) {
  const std::vector<Point> pts = testing::random_points(rng, m, n);
  std::vector<Point> front;
  for (std::size_t i : first_front(pts)) front.push_back(pts[i]);
  std::sort(front.begin(), front.end());
  return front;
}

TEST(EhviSampler, ImprovementIsTheHypervolumeAPointAdds) {
  Rng rng(7);
  int positive = 0;
  for (std::size_t m : {2u, 3u}) {
    const Point ref(m, 1.1);
    for (int rep = 0; rep < 200; ++rep) {
      std::vector<Point> front = random_front(rng, m, 2 + int(rng.below(30)));
      Point y(m);
      for (double& v : y) v = 1.2 * rng.uniform() - 0.05;
      std::vector<Point> with = front;
      with.push_back(y);
      const double expected = hypervolume(with, ref) - hypervolume(front, ref);
      const double got = hypervolume_improvement(front, y, ref);
      ASSERT_NEAR(got, expected, 1e-12) << "m=" << m << " rep=" << rep;
      positive += got > 0;
    }
  }
  EXPECT_GT(positive, 50);  // the check saw real improvements, not only zeros
  // Weakly dominated, or outside the reference box: nothing.
  const std::vector<Point> front = {{0.2, 0.6}, {0.5, 0.3}};
  EXPECT_EQ(hypervolume_improvement(front, {0.5, 0.3}, {1, 1}), 0);
  EXPECT_EQ(hypervolume_improvement(front, {0.6, 0.7}, {1, 1}), 0);
  EXPECT_EQ(hypervolume_improvement(front, {0.1, 1.0}, {1, 1}), 0);
  EXPECT_NEAR(hypervolume_improvement(front, {0.1, 0.1}, {1, 1}), 0.81 - (0.8 * 0.4 + 0.5 * 0.3),
              1e-12);
}

// Median over three seeds of the hypervolume after `trials` trials.
template <class Make>
double median_run(Make make, const std::string& fname, int trials) {
  std::vector<double> hv;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    auto s = make(seed);
    hv.push_back(testing::pareto_run(*s, fname, trials));
  }
  std::sort(hv.begin(), hv.end());
  return hv[1];
}

TEST(EhviSampler, BeatsRandomSearchAndNsga2OnASmallBudget) {
  constexpr int kTrials = 40;
  for (const std::string fname : {"zdt1", "dtlz2"}) {
    const auto info = multi_objective_info(fname);
    const SearchSpace space = testing::box_space(info->dims);
    const double ehvi = median_run(  // the reference declared, as in a spec's objectives
        [&](std::uint64_t seed) {
          return std::make_unique<EhviSampler>(space, seed, 0, info->reference);
        },
        fname, kTrials);
    const double random =
        median_run([&](std::uint64_t seed) { return std::make_unique<RandomSampler>(space, seed); },
                   fname, kTrials);
    const double nsga2 =
        median_run([&](std::uint64_t seed) { return std::make_unique<Nsga2Sampler>(space, seed); },
                   fname, kTrials);
    std::printf("%s %d trials: median hypervolume ehvi %.4f, nsga2 %.4f, random %.4f\n",
                fname.c_str(), kTrials, ehvi, nsga2, random);
    EXPECT_GT(ehvi, random) << fname;
    EXPECT_GT(ehvi, nsga2) << fname;
  }
}

// DTLZ2's last five inputs set the distance g from the front (best at 0.5),
// an effect small beside the first two's: a search that follows the GPs'
// variance to the faces of the cube puts most trials there, far from the
// front. The trust regions keep the search near the front members.
TEST(EhviSampler, StaysOffTheFacesWhereOnlyTheVarianceIsLarge) {
  constexpr int kTrials = 40;
  const auto info = multi_objective_info("dtlz2");
  const SearchSpace space = testing::box_space(info->dims);
  int on_face = 0, asked = 0;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    EhviSampler s(space, seed, 0, info->reference);
    std::vector<Observation> history;
    for (int i = 0; i < kTrials; ++i) {
      auto params = s.ask(history, {}, i);
      ASSERT_TRUE(params);
      if (i >= s.initial_design()) {
        bool face = false;
        for (int d = 3; d <= info->dims; ++d) {
          const double x = std::get<double>(params->at("x" + std::to_string(d)));
          face = face || x < 0.02 || x > 0.98;
        }
        on_face += face;
        ++asked;
      }
      Observation o;
      o.number = i;
      o.params = *params;
      o.values = *evaluate_multi_objective("dtlz2", *params);
      history.push_back(std::move(o));
    }
  }
  std::printf("dtlz2: %d of %d model-based trials on a face of the cube\n", on_face, asked);
  EXPECT_LT(on_face, asked / 4);
}

Observation observe(std::int64_t number, const Params& params) {
  Observation o;
  o.number = number;
  o.params = params;
  const double x1 = std::get<double>(params.at("x1")), x2 = std::get<double>(params.at("x2"));
  o.values = {x1 + 0.3 * x2, (1 - x1) * (1 - x1) + std::pow(x2 - 0.4, 2)};
  return o;
}

TEST(EhviSampler, TheSameHistoryAndNumberAskTheSameParameters) {
  const SearchSpace space = testing::box_space(2);
  EhviSampler a(space, 9);
  std::vector<Observation> history;
  for (int i = 0; i < 14; ++i) {
    auto params = a.ask(history, {}, i);
    ASSERT_TRUE(params);
    EhviSampler fresh(space, 9);  // a restarted scheduler's
    EXPECT_EQ(fresh.ask(history, {}, i), params) << i;
    history.push_back(observe(i, *params));
  }
  EhviSampler other(space, 10);
  EXPECT_NE(other.ask(history, {}, 14), a.ask(history, {}, 14));
}

TEST(EhviSampler, APendingTrialMovesTheNextProposal) {
  const SearchSpace space = testing::box_space(2);
  EhviSampler s(space, 4);
  std::vector<Observation> history;
  for (int i = 0; i < 12; ++i) history.push_back(observe(i, *s.ask(history, {}, i)));
  auto first = s.ask(history, {}, 12);
  ASSERT_TRUE(first);
  const std::vector<Params> pending = {*first};
  auto second = s.ask(history, pending, 12);
  ASSERT_TRUE(second);
  const double dx = std::get<double>(first->at("x1")) - std::get<double>(second->at("x1"));
  const double dy = std::get<double>(first->at("x2")) - std::get<double>(second->at("x2"));
  EXPECT_GT(std::hypot(dx, dy), 1e-3);  // not the same point again
}

TEST(EhviSampler, FailedTrialsAndMixedConditionalSpaces) {
  const SearchSpace space = testing::mixed_space();
  EhviSampler s(space, 3);
  EXPECT_GT(testing::mixed_space_run(s, 30, 5), 0);
  // Every trial failed: the initial design goes on.
  std::vector<Observation> failed(8);
  for (int i = 0; i < 8; ++i) {
    failed[std::size_t(i)].number = i;
    failed[std::size_t(i)].params = *s.ask({}, {}, i);
    failed[std::size_t(i)].outcome = TrialOutcome::kFailed;
  }
  auto next = s.ask(failed, {}, 8);
  ASSERT_TRUE(next);
  EXPECT_TRUE(fit_to_space(*next, space));
}

}  // namespace
}  // namespace hpo::search
