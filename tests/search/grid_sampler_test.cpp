#include "search/grid_sampler.hpp"

#include <gtest/gtest.h>

#include <set>

#include "tests/search/space_fixtures.hpp"

namespace hpo::search {
namespace {

using testing::cat_param;
using testing::float_param;
using testing::int_param;
using testing::when;

std::vector<Params> walk(Sampler& s, std::int64_t limit = 100000) {
  std::vector<Params> out;
  for (std::int64_t i = 0; i < limit; ++i) {
    auto p = s.ask({}, {}, i);
    if (!p) break;
    out.push_back(*p);
  }
  return out;
}

TEST(GridSampler, EnumeratesExactProductFirstParameterSlowest) {
  SearchSpace space;
  space.params.push_back(int_param("a", 1, 3));
  space.params.push_back(cat_param("b", {std::string("x"), std::string("y")}));
  ParamSpec c = float_param("c", 0, 0.3);
  c.step = 0.1;
  space.params.push_back(c);
  ASSERT_EQ(grid_size(space), 3u * 2u * 4u);

  GridSampler grid(space);
  auto points = walk(grid);
  ASSERT_EQ(points.size(), 24u);
  std::size_t i = 0;
  for (std::int64_t a = 1; a <= 3; ++a)
    for (std::string b : {"x", "y"})
      for (int k = 0; k < 4; ++k, ++i) {
        EXPECT_EQ(std::get<std::int64_t>(points[i].at("a")), a) << i;
        EXPECT_EQ(std::get<std::string>(points[i].at("b")), b) << i;
        EXPECT_NEAR(std::get<double>(points[i].at("c")), 0.1 * k, 1e-12) << i;
      }
  EXPECT_FALSE(grid.ask({}, {}, 24));
}

TEST(GridSampler, PointDependsOnlyOnNumber) {
  SearchSpace space;
  space.params.push_back(int_param("a", 0, 9));
  space.params.push_back(int_param("b", 0, 9));
  GridSampler g(space);
  std::vector<Observation> history(5);
  std::vector<Params> pending(3);
  auto p = g.ask(history, pending, 57);
  ASSERT_TRUE(p);
  EXPECT_EQ(std::get<std::int64_t>(p->at("a")), 5);
  EXPECT_EQ(std::get<std::int64_t>(p->at("b")), 7);
  EXPECT_EQ(*p, *g.ask({}, {}, 57));
  EXPECT_EQ(*GridSampler(space).ask({}, {}, 57), *p);  // a fresh sampler agrees (restart)
}

TEST(GridSampler, ConditionalParamsOnlyWhereActive) {
  SearchSpace space;
  space.params.push_back(cat_param("opt", {std::string("sgd"), std::string("adam")}));
  ParamSpec m = when(float_param("momentum", 0, 0.9), "opt", {std::string("sgd")});
  m.step = 0.45;  // 0, 0.45, 0.9
  space.params.push_back(m);
  space.params.push_back(int_param("layers", 1, 2));
  ASSERT_EQ(grid_size(space), 3u * 2u + 1u * 2u);

  GridSampler grid(space);
  auto points = walk(grid);
  ASSERT_EQ(points.size(), 8u);
  std::set<Params> unique(points.begin(), points.end());
  EXPECT_EQ(unique.size(), 8u);
  for (std::size_t i = 0; i < points.size(); ++i) {
    bool sgd = std::get<std::string>(points[i].at("opt")) == "sgd";
    EXPECT_EQ(points[i].count("momentum"), sgd ? 1u : 0u) << i;
    EXPECT_EQ(sgd, i < 6) << "first parameter varies slowest";
  }
  EXPECT_NEAR(std::get<double>(points[2].at("momentum")), 0.45, 1e-12);
  EXPECT_EQ(std::get<std::int64_t>(points[3].at("layers")), 2);
}

TEST(GridSampler, NestedConditionsAndNumericParent) {
  SearchSpace space;
  space.params.push_back(int_param("depth", 1, 3));
  space.params.push_back(when(cat_param("act", {std::string("relu"), std::string("tanh")}), "depth",
                              {std::int64_t{2}, std::int64_t{3}}));
  space.params.push_back(when(int_param("slope", 1, 2), "act", {std::string("relu")}));
  // depth=1: 1 point; depth=2,3: relu x 2 slopes + tanh = 3 each.
  ASSERT_EQ(grid_size(space), 7u);
  auto points = walk(*std::make_unique<GridSampler>(space));
  ASSERT_EQ(points.size(), 7u);
  EXPECT_EQ(points[0].size(), 1u);
  EXPECT_EQ(points[1].size(), 3u);
  EXPECT_EQ(points[3].size(), 2u);
}

TEST(GridSampler, ContinuousSpaceHasNoGrid) {
  EXPECT_FALSE(grid_size(testing::box_space(2)));
  GridSampler grid(testing::box_space(2));
  EXPECT_FALSE(grid.ask({}, {}, 0));
}

TEST(GridSampler, HugeGridSaturatesAndStillIndexes) {
  SearchSpace space;
  for (int i = 0; i < 5; ++i) space.params.push_back(int_param("p" + std::to_string(i), 0, 999));
  EXPECT_EQ(grid_size(space), 1000ull * 1000 * 1000 * 1000 * 1000);
  GridSampler grid(space);
  auto p = grid.ask({}, {}, 1'000'000'000'123);
  ASSERT_TRUE(p);
  EXPECT_EQ(std::get<std::int64_t>(p->at("p0")), 1);
  EXPECT_EQ(std::get<std::int64_t>(p->at("p4")), 123);
}

// A parent with 10^12 values and a child named by two of them: counted and
// indexed without walking the parent's values (the old enumeration never
// returned). The points agree with a brute-force walk of a small copy.
TEST(GridSampler, AHugeConditionalParentIsCountedWithoutEnumeration) {
  SearchSpace space;
  space.params.push_back(int_param("p", 0, 999'999'999'999));
  space.params.push_back(when(cat_param("c", {std::string("a"), std::string("b")}), "p",
                              {std::int64_t{3}, std::int64_t{7}, std::int64_t{-5}}));
  space.params.push_back(int_param("q", 0, 1));
  // (10^12 - 2) plain values x 2 q, plus 2 named values x 2 c x 2 q.
  ASSERT_EQ(grid_size(space), (1'000'000'000'000ull - 2) * 2 + 8);
  GridSampler grid(space);
  auto at = [&](std::uint64_t i) { return *grid.point(i); };
  EXPECT_EQ(std::get<std::int64_t>(at(0).at("p")), 0);
  EXPECT_EQ(std::get<std::int64_t>(at(5).at("p")), 2);
  auto p3 = at(6);  // after p = 0, 1, 2 (2 points each)
  EXPECT_EQ(std::get<std::int64_t>(p3.at("p")), 3);
  EXPECT_EQ(std::get<std::string>(p3.at("c")), "a");
  EXPECT_EQ(std::get<std::string>(at(8).at("c")), "b");
  EXPECT_EQ(std::get<std::int64_t>(at(10).at("p")), 4);
  EXPECT_EQ(at(10).count("c"), 0u);
  auto last = at(*grid_size(space) - 1);
  EXPECT_EQ(std::get<std::int64_t>(last.at("p")), 999'999'999'999);
  EXPECT_EQ(std::get<std::int64_t>(last.at("q")), 1);
  EXPECT_FALSE(grid.point(*grid_size(space)));

  // The same shape, small enough to walk, against nested loops written out.
  SearchSpace small;
  small.params.push_back(int_param("p", 0, 9));
  small.params.push_back(when(cat_param("c", {std::string("a"), std::string("b")}), "p",
                              {std::int64_t{3}, std::int64_t{7}}));
  small.params.push_back(int_param("q", 0, 1));
  std::vector<Params> expected;
  for (std::int64_t p = 0; p <= 9; ++p) {
    std::vector<std::string> cs =
        (p == 3 || p == 7) ? std::vector<std::string>{"a", "b"} : std::vector<std::string>{""};
    for (const auto& c : cs)
      for (std::int64_t q = 0; q <= 1; ++q) {
        Params pt{{"p", p}, {"q", q}};
        if (!c.empty()) pt["c"] = c;
        expected.push_back(pt);
      }
  }
  EXPECT_EQ(walk(*std::make_unique<GridSampler>(small)), expected);
}

TEST(GridSampler, MakeSamplerBuildsGrid) {
  SearchSpace space;
  space.params.push_back(int_param("a", 1, 2));
  auto s = make_sampler({Algorithm::kGrid, 0, 0}, space);
  EXPECT_EQ(walk(*s).size(), 2u);
}

}  // namespace
}  // namespace hpo::search
