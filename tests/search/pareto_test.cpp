// Pareto fronts (search/pareto.hpp): dominance, the fronts of a non-dominated
// sort, crowding distance, and hypervolume against closed forms and against
// counting the dominated unit cells of integer points one by one.
#include "search/pareto.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace hpo::search {
namespace {

TEST(Pareto, DominanceNeedsNoWorseEverywhereAndBetterSomewhere) {
  EXPECT_TRUE(dominates({1, 2}, {2, 2}));
  EXPECT_TRUE(dominates({1, 1}, {2, 3}));
  EXPECT_FALSE(dominates({1, 2}, {1, 2}));  // equal: neither
  EXPECT_FALSE(dominates({1, 3}, {2, 2}));  // a trade-off
  EXPECT_FALSE(dominates({2, 2}, {1, 2}));
}

TEST(Pareto, FrontsPeelOffTheNonDominatedInTurn) {
  const std::vector<Point> pts{
      {1, 5},   {2, 2}, {5, 1},  // front 0
      {3, 3},   {6, 2},          // front 1
      {4, 4},                    // front 2
      {2, 2},                    // a duplicate of a front-0 point: front 0 too
      {NAN, 0},                  // not finite: in no front
  };
  auto fronts = non_dominated_fronts(pts);
  ASSERT_EQ(fronts.size(), 3u);
  EXPECT_EQ(fronts[0], (std::vector<std::size_t>{0, 1, 2, 6}));
  EXPECT_EQ(fronts[1], (std::vector<std::size_t>{3, 4}));
  EXPECT_EQ(fronts[2], (std::vector<std::size_t>{5}));
  EXPECT_EQ(first_front(pts), fronts[0]);
  EXPECT_TRUE(non_dominated_fronts({}).empty());
}

TEST(Pareto, FrontsAgreeWithTheDefinitionOnRandomPoints) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> coord(0, 9);
  std::vector<Point> pts(200);
  for (auto& p : pts) p = {double(coord(rng)), double(coord(rng)), double(coord(rng))};
  auto fronts = non_dominated_fronts(pts);
  std::vector<int> rank(pts.size(), -1);
  for (std::size_t f = 0; f < fronts.size(); ++f)
    for (std::size_t i : fronts[f]) rank[i] = static_cast<int>(f);
  EXPECT_EQ(first_front(pts), fronts[0]);
  for (std::size_t i = 0; i < pts.size(); ++i) {
    ASSERT_GE(rank[i], 0) << i;
    // Nobody of its front or a later one dominates it; someone of the front before does.
    bool by_previous = rank[i] == 0;
    for (std::size_t j = 0; j < pts.size(); ++j) {
      if (!dominates(pts[j], pts[i])) continue;
      EXPECT_LT(rank[j], rank[i]) << j << " dominates " << i;
      by_previous |= rank[j] == rank[i] - 1;
    }
    EXPECT_TRUE(by_previous) << i;
  }
}

TEST(Pareto, CrowdingDistanceFavoursTheExtremesAndTheIsolated) {
  const std::vector<Point> pts{{0, 10}, {1, 9}, {2, 8}, {8, 2}, {10, 0}};
  auto d = crowding_distance(pts, {0, 1, 2, 3, 4});
  ASSERT_EQ(d.size(), 5u);
  EXPECT_TRUE(std::isinf(d[0]));
  EXPECT_TRUE(std::isinf(d[4]));
  EXPECT_DOUBLE_EQ(d[1], 2 * (2.0 / 10));  // neighbours 0 and 2 in both objectives
  EXPECT_DOUBLE_EQ(d[2], 2 * (7.0 / 10));
  EXPECT_DOUBLE_EQ(d[3], 2 * (8.0 / 10));
  EXPECT_GT(d[3], d[1]);  // the isolated point is kept before the crowded one
  EXPECT_EQ(crowding_distance(pts, {2}).size(), 1u);
}

TEST(Pareto, HypervolumeMatchesClosedForms) {
  EXPECT_DOUBLE_EQ(hypervolume({{1, 3}, {2, 2}, {3, 1}}, {4, 4}), 3 + 2 + 1);
  EXPECT_DOUBLE_EQ(hypervolume({{0, 0, 0}}, {1, 2, 3}), 6);
  // Two boxes of 2*1*2 and 1*2*2, less their overlap 1*1*2.
  EXPECT_DOUBLE_EQ(hypervolume({{0, 1, 0}, {1, 0, 0}}, {2, 2, 2}), 4 + 4 - 2);
  // Dominated, duplicate, outside and non-finite points add nothing.
  EXPECT_DOUBLE_EQ(
      hypervolume({{1, 3}, {2, 2}, {3, 1}, {3, 3}, {2, 2}, {5, 0}, {0, 4}, {NAN, 0}}, {4, 4}), 6);
  EXPECT_DOUBLE_EQ(hypervolume({}, {1, 1}), 0);
  EXPECT_DOUBLE_EQ(hypervolume({{0.5}}, {2}), 1.5);
}

// Integer points in [0, 6)^d, reference 6: the volume is the number of unit
// cells [c, c+1)^d with some point <= c in every objective.
double counted_volume(const std::vector<Point>& pts, std::size_t d) {
  std::size_t cells = 1;
  for (std::size_t k = 0; k < d; ++k) cells *= 6;
  double v = 0;
  for (std::size_t c = 0; c < cells; ++c) {
    Point cell(d);
    for (std::size_t k = 0, rest = c; k < d; ++k, rest /= 6) cell[k] = double(rest % 6);
    for (const auto& p : pts) {
      bool below = true;
      for (std::size_t k = 0; k < d; ++k) below &= p[k] <= cell[k];
      if (below) {
        ++v;
        break;
      }
    }
  }
  return v;
}

TEST(Pareto, HypervolumeEqualsTheCountedCellsInThreeAndFourObjectives) {
  std::mt19937_64 rng(17);
  std::uniform_int_distribution<int> coord(0, 5);
  for (std::size_t d : {2u, 3u, 4u}) {
    for (int round = 0; round < 20; ++round) {
      std::vector<Point> pts(1 + round % 12);
      for (auto& p : pts) {
        p.resize(d);
        for (auto& x : p) x = coord(rng);
      }
      SCOPED_TRACE(testing::Message() << "d=" << d << " round " << round);
      EXPECT_DOUBLE_EQ(hypervolume(pts, Point(d, 6.0)), counted_volume(pts, d));
    }
  }
}

// Points on the unit simplex's positive orthant sphere (DTLZ2's front): a
// front in which no point dominates another.
std::vector<Point> sphere_front(std::size_t n, std::size_t d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0, 1);
  std::vector<Point> pts(n, Point(d));
  for (auto& p : pts) {
    double norm = 0;
    for (auto& x : p) x = std::abs(g(rng)), norm += x * x;
    for (auto& x : p) x /= std::sqrt(norm);
  }
  return pts;
}

// Bounded: exact where the slicing fits the budget (and always for 2 and 3
// objectives), equal to the exact volume there; past it, an estimate within
// a few standard errors of the exact one, the same on every call.
TEST(Pareto, BoundedHypervolumeIsExactWhereCheapAndEstimatesBeyond) {
  for (std::size_t d : {2u, 3u}) {
    const auto pts = sphere_front(300, d, d);
    const auto hv = hypervolume_bounded(pts, Point(d, 1.1), /*budget=*/1);
    EXPECT_TRUE(hv.exact) << d;
    EXPECT_DOUBLE_EQ(hv.value, hypervolume(pts, Point(d, 1.1)));
  }
  const auto small = sphere_front(12, 5, 5);
  const auto cheap = hypervolume_bounded(small, Point(5, 1.1));
  EXPECT_TRUE(cheap.exact);
  EXPECT_DOUBLE_EQ(cheap.value, hypervolume(small, Point(5, 1.1)));
  // 40 points of 5 objectives: exact is affordable here, so the estimate
  // forced by a tiny budget can be checked against it.
  const auto pts = sphere_front(40, 5, 7);
  const double exact = hypervolume(pts, Point(5, 1.1));
  const auto est = hypervolume_bounded(pts, Point(5, 1.1), /*budget=*/1000, 200'000);
  EXPECT_FALSE(est.exact);
  EXPECT_GT(est.std_error, 0);
  EXPECT_NEAR(est.value, exact, 4 * est.std_error) << "exact " << exact;
  const auto again = hypervolume_bounded(pts, Point(5, 1.1), 1000, 200'000);
  EXPECT_EQ(again.value, est.value);
}

// 300 points of 6 objectives (the front that stalled the API): answered by
// the estimate, with a relative standard error under 1%.
TEST(Pareto, ALargeSixObjectiveFrontIsMeasuredInBoundedWork) {
  const auto pts = sphere_front(300, 6, 11);
  const auto hv = hypervolume_bounded(pts, Point(6, 1.1));
  EXPECT_FALSE(hv.exact);
  EXPECT_GT(hv.value, 0);
  EXPECT_LT(hv.std_error, 0.01 * hv.value);
}

// The greedy subset: exact gains for 2 objectives (the extreme corners of a
// convex front first, then what fills the largest gap); sampled gains for 6
// take distinct points, k of them, each adding volume.
TEST(Pareto, GreedySubsetTakesTheLargestGainsFirst) {
  std::vector<Point> two = {{0, 1}, {0.5, 0.5}, {1, 0}, {0.9, 0.1}, {0.1, 0.9}};
  auto order = greedy_hypervolume_subset(two, {1.1, 1.1}, 2);
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0], 1u);  // the knee adds the most alone
  const auto pts = sphere_front(200, 6, 3);
  order = greedy_hypervolume_subset(pts, Point(6, 1.1), 10);
  ASSERT_EQ(order.size(), 10u);
  std::vector<Point> chosen;
  double before = 0;
  for (std::size_t i : order) {
    chosen.push_back(pts[i]);
    const auto now = hypervolume_bounded(chosen, Point(6, 1.1));
    EXPECT_GT(now.value, before);
    before = now.value;
  }
  std::sort(order.begin(), order.end());
  EXPECT_EQ(std::unique(order.begin(), order.end()), order.end());
}

}  // namespace
}  // namespace hpo::search
