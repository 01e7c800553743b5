#include "search/test_functions.hpp"

#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace
}  // namespace hpo::search
