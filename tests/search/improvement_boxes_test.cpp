// Exact expected hypervolume improvement (search/improvement_boxes.hpp): the
// boxes give every point's improvement exactly (against the hypervolume of the
// front with and without it, two to four objectives); with a vanishing spread
// the expectation is the improvement of the mean; with spread it matches a Monte
// Carlo average of many draws; an empty front is the box below the reference;
// a decomposition over its size limit says so.
#include "search/improvement_boxes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "search/rng.hpp"
#include "tests/search/pareto_fixtures.hpp"

namespace hpo::search {
namespace {

using testing::random_points;

TEST(ImprovementBoxes, ImprovementIsTheHypervolumeAPointAdds) {
  Rng rng(11);
  int positive = 0;
  for (std::size_t m : {2u, 3u, 4u}) {
    const Point ref(m, 1.1);
    for (int rep = 0; rep < 100; ++rep) {
      // Dominated points too: they must add no box.
      const std::vector<Point> front = random_points(rng, m, 1 + int(rng.below(25)));
      const ImprovementBoxes boxes(front, ref);
      ASSERT_TRUE(boxes.complete());
      for (int k = 0; k < 5; ++k) {
        Point y(m);
        for (double& v : y) v = 1.3 * rng.uniform() - 0.1;
        std::vector<Point> with = front;
        with.push_back(y);
        const double expected = hypervolume(with, ref) - hypervolume(front, ref);
        ASSERT_NEAR(boxes.improvement(y), expected, 1e-12) << "m=" << m << " rep=" << rep;
        positive += expected > 0;
      }
    }
  }
  EXPECT_GT(positive, 200);  // real improvements were checked, not only zeros
}

// improvement() is the expectation with no spread; the closed form with a
// vanishing spread (its Φ and φ, not the no-spread branch) must agree with it.
TEST(ImprovementBoxes, AVanishingSpreadIsTheImprovementOfTheMean) {
  Rng rng(12);
  for (std::size_t m : {2u, 3u}) {
    const ImprovementBoxes boxes(random_points(rng, m, 12), Point(m, 1.0));
    for (int k = 0; k < 50; ++k) {
      Point y(m);
      for (double& v : y) v = rng.uniform();
      EXPECT_NEAR(boxes.expected_improvement(y, Point(m, 1e-9)), boxes.improvement(y), 1e-8);
    }
  }
}

TEST(ImprovementBoxes, ExpectationMatchesMonteCarlo) {
  Rng rng(13);
  for (std::size_t m : {2u, 3u}) {
    const ImprovementBoxes boxes(random_points(rng, m, 15), Point(m, 1.1));
    for (int k = 0; k < 4; ++k) {
      Point mean(m), sd(m);
      for (std::size_t j = 0; j < m; ++j)
        mean[j] = 0.2 + 0.6 * rng.uniform(), sd[j] = 0.3 * rng.uniform();
      constexpr int kDraws = 200000;
      double sum = 0, sum2 = 0;
      Point y(m);
      for (int d = 0; d < kDraws; ++d) {
        for (std::size_t j = 0; j < m; ++j) y[j] = mean[j] + sd[j] * rng.normal();
        const double v = boxes.improvement(y);
        sum += v, sum2 += v * v;
      }
      const double mc = sum / kDraws;
      const double se = std::sqrt(std::max(0.0, sum2 / kDraws - mc * mc) / kDraws);
      const double exact = boxes.expected_improvement(mean, sd);
      EXPECT_GT(exact, 0);
      EXPECT_NEAR(exact, mc, 5 * se + 1e-9) << "m=" << m << " k=" << k;
    }
  }
}

TEST(ImprovementBoxes, AnEmptyFrontIsTheBoxBelowTheReference) {
  const ImprovementBoxes boxes({}, {1.0, 2.0, 3.0});
  EXPECT_EQ(boxes.size(), 1u);
  EXPECT_NEAR(boxes.improvement({0.5, 1.0, 2.0}), 0.5 * 1.0 * 1.0, 1e-15);
  EXPECT_EQ(boxes.improvement({1.5, 1.0, 2.0}), 0);
  // E[(1 - y)+] for y ~ N(1, 1) is φ(0) = 0.3989...; the other two factors
  // are far inside (their means well below the reference, no spread).
  EXPECT_NEAR(boxes.expected_improvement({1.0, 0.0, 0.0}, {1.0, 0.0, 0.0}),
              (1 / std::sqrt(2 * M_PI)) * 2.0 * 3.0, 1e-12);
}

TEST(ImprovementBoxes, TooManyBoxesIsSaid) {
  Rng rng(14);
  std::vector<Point> front;  // a front on a plane: every point non-dominated
  for (int i = 0; i < 40; ++i) {
    const double a = rng.uniform(), b = rng.uniform() * (1 - a);
    front.push_back({a, b, 1 - a - b});
  }
  EXPECT_FALSE(ImprovementBoxes(front, Point(3, 1.1), 50).complete());
  const ImprovementBoxes all(front, Point(3, 1.1));
  EXPECT_TRUE(all.complete());
  EXPECT_GT(all.size(), 50u);
}

}  // namespace
}  // namespace hpo::search
