#include "search/test_functions.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "search/pareto.hpp"

namespace hpo::search {
namespace {

Params xs(std::vector<double> x) {
  Params p;
  for (std::size_t i = 0; i < x.size(); ++i) p["x" + std::to_string(i + 1)] = x[i];
  return p;
}

TEST(TestFunctions, KnownMinima) {
  EXPECT_NEAR(*evaluate_test_function("branin", xs({-3.14159265358979, 12.275})), 0.397887, 1e-5);
  EXPECT_NEAR(*evaluate_test_function("branin", xs({9.42478, 2.475})), 0.397887, 1e-5);
  EXPECT_NEAR(*evaluate_test_function(
                  "hartmann6", xs({0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573})),
              -3.32237, 1e-4);
  EXPECT_NEAR(*evaluate_test_function("rosenbrock", xs({1, 1, 1, 1})), 0, 1e-12);
  EXPECT_NEAR(*evaluate_test_function("ackley", xs({0, 0, 0, 0, 0})), 0, 1e-12);
  EXPECT_GT(*evaluate_test_function("ackley", xs({1, 0, 0, 0, 0})), 1);
  EXPECT_EQ(*evaluate_test_function("noop", {}), 0);
}

TEST(TestFunctions, DimsAndMissingInputs) {
  EXPECT_EQ(test_function_dims("branin"), 2);
  EXPECT_EQ(test_function_dims("hartmann6"), 6);
  EXPECT_EQ(test_function_dims("rosenbrock"), 4);
  EXPECT_EQ(test_function_dims("ackley"), 5);
  EXPECT_EQ(test_function_dims("noop"), 0);
  EXPECT_EQ(test_function_dims("nope"), -1);
  EXPECT_FALSE(evaluate_test_function("nope", xs({1, 2})));
  EXPECT_FALSE(evaluate_test_function("branin", xs({1})));
  Params ints{{"x1", std::int64_t{1}}, {"x2", std::int64_t{2}}};
  EXPECT_TRUE(evaluate_test_function("branin", ints));
  Params text{{"x1", std::string("a")}, {"x2", 2.0}};
  EXPECT_FALSE(evaluate_test_function("branin", text));
}

}  // namespace
}  // namespace hpo::search

namespace hpo::search {
namespace {

// On their Pareto fronts: ZDT1's f2 = 1 - sqrt(f1), ZDT2's 1 - f1^2, DTLZ2's
// objectives on the unit sphere; off the front every objective is larger.
TEST(MultiObjectiveFunctions, FrontsHaveTheirClosedForms) {
  const Params front{{"x1", 0.25}, {"x2", 0.5}};
  const std::vector<double> x{0.25, 0, 0, 0, 0, 0};
  EXPECT_DOUBLE_EQ(zdt1(x)[1], 1 - std::sqrt(0.25));
  EXPECT_DOUBLE_EQ(zdt2(x)[1], 1 - 0.25 * 0.25);
  std::vector<double> off = x;
  off[3] = 0.5;
  EXPECT_EQ(zdt1(off)[0], 0.25);
  EXPECT_GT(zdt1(off)[1], zdt1(x)[1]);
  const std::vector<double> y{0.3, 0.6, 0.5, 0.5, 0.5, 0.5, 0.5};
  auto f = dtlz2(y);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_NEAR(f[0] * f[0] + f[1] * f[1] + f[2] * f[2], 1, 1e-12);
  auto params = evaluate_multi_objective(
      "dtlz2",
      {{"x1", 0.3}, {"x2", 0.6}, {"x3", 0.5}, {"x4", 0.5}, {"x5", 0.5}, {"x6", 0.5}, {"x7", 0.5}});
  ASSERT_TRUE(params);
  EXPECT_EQ(*params, f);
  EXPECT_FALSE(evaluate_multi_objective("dtlz2", {{"x1", 0.3}}));
  EXPECT_FALSE(evaluate_multi_objective("branin", front));
  EXPECT_EQ(multi_objective_info("zdt2")->objectives, 2);
  EXPECT_EQ(multi_objective_info("dtlz2")->reference, (std::vector<double>{1.1, 1.1, 1.1}));
}

// ZDT3 with x2..x6 = 0 (its Pareto-optimal set, where g = 1) is f2 = 1 - sqrt(x1) -
// x1 sin(10 pi x1): values picked where the sine is 0 or 1, so they are known by hand,
// one of them on the front's lowest piece, below 0.
TEST(MultiObjectiveFunctions, Zdt3MatchesHandValues) {
  auto at = [](double x1, double rest) { return zdt3({x1, rest, rest, rest, rest, rest}); };
  // At x1 = 0, f2 = g: 1 on the optimal set, 1 + 9 * 0.5 = 5.5 with the rest at 0.5.
  EXPECT_DOUBLE_EQ(at(0, 0)[1], 1);
  EXPECT_DOUBLE_EQ(at(0, 0.5)[1], 5.5);
  EXPECT_EQ(at(0.1, 0)[0], 0.1);
  EXPECT_NEAR(at(0.1, 0)[1], 1 - std::sqrt(0.1), 1e-12);           // sin(pi) = 0
  EXPECT_NEAR(at(0.25, 0)[1], 1 - 0.5 - 0.25, 1e-12);              // sin(2.5 pi) = 1
  EXPECT_NEAR(at(0.85, 0)[1], 1 - std::sqrt(0.85) - 0.85, 1e-12);  // -0.771954...
  EXPECT_LT(at(0.85, 0)[1], 0);
  // Off the optimal set, g = 5.5: f2 = 5.5 (1 - sqrt(0.25 / 5.5) - 0.25 / 5.5).
  EXPECT_NEAR(at(0.25, 0.5)[1], 5.25 - std::sqrt(0.25 * 5.5), 1e-12);
  for (double x1 : {0.0, 0.1, 0.25, 0.6, 0.85, 1.0}) {
    const double h = 1 - std::sqrt(x1) - x1 * std::sin(10 * std::numbers::pi * x1);
    EXPECT_NEAR(at(x1, 0)[1], h, 1e-12) << x1;
  }
  const auto params = evaluate_multi_objective(
      "zdt3", {{"x1", 0.85}, {"x2", 0.0}, {"x3", 0.0}, {"x4", 0.0}, {"x5", 0.0}, {"x6", 0.0}});
  ASSERT_TRUE(params);
  EXPECT_EQ(*params, at(0.85, 0));
  EXPECT_FALSE(evaluate_multi_objective("zdt3", {{"x1", 0.85}}));
  const auto info = multi_objective_info("zdt3");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->dims, 6);
  EXPECT_EQ(info->objectives, 2);
  EXPECT_EQ(info->reference, (std::vector<double>{1.1, 1.1}));
}

// A negative f2 counts in full: the volume runs from the point up to the
// reference, with no floor at 0 (search_pareto_optuna.py's WFG does the same).
TEST(MultiObjectiveFunctions, Zdt3NegativeObjectiveCountsInHypervolume) {
  const std::vector<double> ref{1.1, 1.1};
  const Point low = zdt3({0.85, 0, 0, 0, 0, 0});
  EXPECT_NEAR(hypervolume({low}, ref), (1.1 - 0.85) * (1.1 - low[1]), 1e-12);
  const Point high = zdt3({0.25, 0, 0, 0, 0, 0});  // (0.25, 0.25)
  EXPECT_NEAR(hypervolume({low, high}, ref),
              (1.1 - 0.85) * (1.1 - low[1]) + (0.85 - 0.25) * (1.1 - 0.25), 1e-12);
}

}  // namespace
}  // namespace hpo::search
