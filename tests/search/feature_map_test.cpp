#include "search/feature_map.hpp"

#include <gtest/gtest.h>

#include "search/encoding.hpp"
#include "tests/search/space_fixtures.hpp"

namespace hpo::search {
namespace {

TEST(FeatureMap, OneHotCategoricalsRoundedIntsAndInactiveConstants) {
  FeatureMap map(testing::mixed_space());  // lr, layers, opt{sgd,adam}, momentum|sgd
  EXPECT_EQ(map.unit_dims(), 4);
  EXPECT_EQ(map.feature_dims(), 5);  // lr, layers, 2 one-hot, momentum
  Params sgd{
      {"lr", 0.001}, {"layers", std::int64_t{3}}, {"opt", std::string("sgd")}, {"momentum", 0.495}};
  Eigen::VectorXd f(5);
  map.features(map.unit_of(sgd), f);
  EXPECT_NEAR(f[0], 1.0 / 3.0, 1e-12);  // log scale: 1e-3 is one decade of three above 1e-4
  EXPECT_NEAR(f[1], 2.5 / 4, 1e-12);    // layers 3 = cell 2 of 4
  EXPECT_EQ(f[2], 1);
  EXPECT_EQ(f[3], 0);
  EXPECT_NEAR(f[4], 0.5, 1e-12);
  EXPECT_EQ(map.params_of(map.unit_of(sgd)).size(), 4u);

  Params adam{{"lr", 0.001}, {"layers", std::int64_t{3}}, {"opt", std::string("adam")}};
  Eigen::VectorXd u = map.unit_of(adam);
  u[3] = 0.9;  // the inactive coordinate does not matter
  map.features(u, f);
  EXPECT_EQ(f[2], 0);
  EXPECT_EQ(f[3], 1);
  EXPECT_EQ(f[4], 0.5);
  Params back = map.params_of(u);
  EXPECT_EQ(back.size(), 3u);
  EXPECT_EQ(back.at("opt"), adam.at("opt"));
  EXPECT_EQ(back.at("layers"), adam.at("layers"));
  EXPECT_NEAR(std::get<double>(back.at("lr")), 0.001, 1e-15);

  // Rounding: every u inside layers' cell gives the same feature.
  Eigen::VectorXd a = map.unit_of(sgd), b = a;
  a[1] = 0.51;
  b[1] = 0.74;
  Eigen::VectorXd fa(5), fb(5);
  map.features(a, fa);
  map.features(b, fb);
  EXPECT_EQ(fa, fb);
}

TEST(FeatureMap, NumericParentsActivateThroughTheirValues) {
  SearchSpace s;
  s.params.push_back(testing::int_param("depth", 1, 3));
  s.params.push_back(testing::when(testing::float_param("w", 0, 1), "depth", {std::int64_t{3}}));
  FeatureMap map(s);
  Eigen::VectorXd u(2);
  u << 0.9, 0.2;
  EXPECT_EQ(map.active_at(u), (std::vector<char>{1, 1}));
  u[0] = 0.1;
  EXPECT_EQ(map.active_at(u), (std::vector<char>{1, 0}));
  // Both are numeric: one row each, a column per point.
  Eigen::VectorXd deep(2);
  deep << 0.9, 0.2;
  const Eigen::MatrixXd active = map.numeric_activity({u, deep});
  ASSERT_EQ(active.rows(), 2);
  ASSERT_EQ(active.cols(), 2);
  EXPECT_EQ(active(0, 0), 1);
  EXPECT_EQ(active(1, 0), 0);
  EXPECT_EQ(active(0, 1), 1);
  EXPECT_EQ(active(1, 1), 1);
}

}  // namespace
}  // namespace hpo::search
