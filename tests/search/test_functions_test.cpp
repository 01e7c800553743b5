#include "search/test_functions.hpp"

#include <gtest/gtest.h>

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
