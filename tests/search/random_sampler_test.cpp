#include "search/random_sampler.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "search/encoding.hpp"
#include "tests/search/space_fixtures.hpp"

namespace hpo::search {
namespace {

using testing::cat_param;
using testing::float_param;
using testing::int_param;
using testing::when;

TEST(RandomSampler, ReproducibleBySeedAndIndependentOfHistory) {
  auto space = testing::mixed_space();
  RandomSampler a(space, 42), b(space, 42), c(space, 43);
  std::vector<Observation> history(7);
  for (auto& o : history) o.value = 1.0;
  std::vector<Params> pending(2);
  int differs = 0;
  for (std::int64_t i = 0; i < 50; ++i) {
    auto pa = a.ask({}, {}, i);
    auto pb = b.ask(history, pending, i);
    ASSERT_TRUE(pa && pb);
    EXPECT_EQ(*pa, *pb) << i;
    differs += *pa != *c.ask({}, {}, i);
  }
  EXPECT_GT(differs, 45);
  // Asking out of order changes nothing: trial i is a function of (seed, i).
  EXPECT_EQ(*a.ask({}, {}, 17), *RandomSampler(space, 42).ask({}, {}, 17));
  EXPECT_NE(*a.ask({}, {}, 17), *a.ask({}, {}, 18));
}

TEST(RandomSampler, ConditionalParamsAppearExactlyWhenActive) {
  auto space = testing::mixed_space();
  RandomSampler s(space, 1);
  int sgd = 0;
  for (std::int64_t i = 0; i < 400; ++i) {
    auto p = *s.ask({}, {}, i);
    bool is_sgd = std::get<std::string>(p.at("opt")) == "sgd";
    sgd += is_sgd;
    EXPECT_EQ(p.count("momentum"), is_sgd ? 1u : 0u);
    EXPECT_EQ(p.size(), is_sgd ? 4u : 3u);
  }
  EXPECT_GT(sgd, 150);
  EXPECT_LT(sgd, 250);
}

TEST(RandomSampler, RespectsIntsStepsAndLogScale) {
  SearchSpace space;
  space.params.push_back(float_param("lr", 1e-4, 1e-1, true));
  space.params.push_back(int_param("layers", 1, 4));
  ParamSpec st = float_param("drop", 0.1, 0.5);
  st.step = 0.1;
  space.params.push_back(st);
  ParamSpec big = int_param("units", 16, 256);
  big.step = 16;
  space.params.push_back(big);
  space.params.push_back(int_param("batch", 8, 1024, true));
  RandomSampler s(space, 7);
  std::map<std::int64_t, int> layers;
  int lr_below_1e3 = 0;
  const int n = 2000;
  for (std::int64_t i = 0; i < n; ++i) {
    auto p = *s.ask({}, {}, i);
    double lr = std::get<double>(p.at("lr"));
    ASSERT_GE(lr, 1e-4);
    ASSERT_LE(lr, 1e-1);
    lr_below_1e3 += lr < 1e-3;
    auto l = std::get<std::int64_t>(p.at("layers"));
    ASSERT_GE(l, 1);
    ASSERT_LE(l, 4);
    ++layers[l];
    double d = std::get<double>(p.at("drop"));
    EXPECT_NEAR(std::remainder(d - 0.1, 0.1), 0, 1e-9);
    ASSERT_GE(d, 0.1 - 1e-12);
    ASSERT_LE(d, 0.5 + 1e-12);
    auto u = std::get<std::int64_t>(p.at("units"));
    EXPECT_EQ(u % 16, 0);
    auto b = std::get<std::int64_t>(p.at("batch"));
    ASSERT_GE(b, 8);
    ASSERT_LE(b, 1024);
  }
  // Log scale: a third of the log range lies below 1e-3.
  EXPECT_NEAR(lr_below_1e3 / double(n), 1.0 / 3, 0.05);
  ASSERT_EQ(layers.size(), 4u);  // every int equally likely, endpoints included
  for (auto [v, c] : layers) EXPECT_NEAR(c / double(n), 0.25, 0.04) << v;
}

TEST(Encoding, UnitRoundTripIsExactForDiscreteValues) {
  ParamSpec p = int_param("k", 1, 100, true);
  for (std::int64_t v = 1; v <= 100; ++v) {
    double u = to_unit(p, Value{v});
    EXPECT_GE(u, 0);
    EXPECT_LE(u, 1);
    EXPECT_EQ(std::get<std::int64_t>(from_unit(p, u)), v);
  }
  ParamSpec q = float_param("q", 0, 1);
  q.step = 0.25;
  EXPECT_EQ(discrete_count(q), 5);
  for (int k = 0; k < 5; ++k)
    EXPECT_EQ(from_unit(q, to_unit(q, discrete_value(q, k))), discrete_value(q, k));
  ParamSpec c = cat_param("c", {std::string("a"), std::int64_t{3}, true});
  for (int k = 0; k < 3; ++k)
    EXPECT_EQ(from_unit(c, to_unit(c, c.choices[std::size_t(k)])), c.choices[std::size_t(k)]);
  ParamSpec f = float_param("f", 1e-3, 10, true);
  EXPECT_NEAR(to_unit(f, Value{0.1}), 0.5, 1e-12);
  EXPECT_NEAR(std::get<double>(from_unit(f, 0.25)), 1e-2, 1e-12);
}

}  // namespace
}  // namespace hpo::search

namespace hpo::search {
namespace {

TEST(Encoding, LogScaleWithoutPositiveMinFallsBackToLinear) {
  ParamSpec p = testing::float_param("x", 0, 1, /*log=*/true);
  for (double u : {0.0, 0.3, 1.0}) {
    double x = std::get<double>(from_unit(p, u));
    EXPECT_NEAR(x, u, 1e-12);
    EXPECT_NEAR(to_unit(p, Value{x}), u, 1e-12);
  }
}

}  // namespace
}  // namespace hpo::search
