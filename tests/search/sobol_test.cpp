#include "search/sobol.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "tests/search/space_fixtures.hpp"

namespace hpo::search {
namespace {

// Cell index of u at resolution 2^bits.
int cell(double u, int bits) {
  return static_cast<int>(std::floor(u * (1 << bits)));
}

TEST(Sobol, UnscrambledStartsLikeTheClassicSequence) {
  SobolSequence s(3, 0, /*scramble=*/false);
  EXPECT_EQ(s.point(1)[0], 0.5 + 0.5 * 0x1.0p-32);
  EXPECT_EQ(cell(s.point(2)[0], 2), 1);  // 0.25
  EXPECT_EQ(cell(s.point(3)[0], 2), 3);  // 0.75
  EXPECT_EQ(cell(s.point(3)[1], 2), 1);  // dim 2: 0.5, 0.75, 0.25, ...
}

// Every 1-d projection of the first 2^m points hits each 1/2^m cell once, and
// dimensions 1-2 form a (0, m, 2)-net, with or without scrambling.
void expect_stratified(const SobolSequence& s, int m) {
  const int n = 1 << m;
  std::vector<std::vector<double>> pts;
  for (int i = 0; i < n; ++i) pts.push_back(s.point(static_cast<std::uint64_t>(i)));
  for (int d = 0; d < s.dims(); ++d) {
    std::set<int> cells;
    for (auto& p : pts) {
      ASSERT_GT(p[std::size_t(d)], 0);
      ASSERT_LT(p[std::size_t(d)], 1);
      cells.insert(cell(p[std::size_t(d)], m));
    }
    EXPECT_EQ(cells.size(), std::size_t(n)) << "dimension " << d;
  }
  for (int a = 0; a <= m; ++a) {
    std::set<std::pair<int, int>> boxes;
    for (auto& p : pts) boxes.insert({cell(p[0], a), cell(p[1], m - a)});
    EXPECT_EQ(boxes.size(), std::size_t(n)) << "elementary boxes 2^-" << a << " x 2^-" << m - a;
  }
}

TEST(Sobol, StratifiedIn21Dimensions) {
  expect_stratified(SobolSequence(21, 0, false), 7);
  expect_stratified(SobolSequence(21, 7, true), 7);
  expect_stratified(SobolSequence(40, 123, true), 6);
}

TEST(Sobol, ScrambledIsSeededAndReproducible) {
  SobolSequence a(5, 1), b(5, 1), c(5, 2);
  for (std::uint64_t i = 0; i < 20; ++i) {
    EXPECT_EQ(a.point(i), b.point(i));
    EXPECT_NE(a.point(i), c.point(i));
  }
  EXPECT_NE(a.point(0)[0], 0.5 * 0x1.0p-32);  // the corner point is scrambled away
}

TEST(Sobol, BeyondTheTableFallsBackToRandomCoordinates) {
  SobolSequence s(300, 3);
  auto p = s.point(5);
  ASSERT_EQ(p.size(), 300u);
  for (double x : p) {
    EXPECT_GE(x, 0);
    EXPECT_LT(x, 1);
  }
  EXPECT_EQ(p, SobolSequence(300, 3).point(5));
}

TEST(SobolSampler, SamplerIsReproducibleAndCoversTheSpace) {
  auto space = testing::mixed_space();
  auto s = make_sampler({Algorithm::kSobol, 9, 0}, space);
  auto t = make_sampler({Algorithm::kSobol, 9, 0}, space);
  std::set<std::int64_t> layers;
  int sgd = 0;
  for (std::int64_t i = 0; i < 64; ++i) {
    auto p = *s->ask({}, {}, i);
    EXPECT_EQ(p, *t->ask({}, {}, i));
    layers.insert(std::get<std::int64_t>(p.at("layers")));
    bool is_sgd = std::get<std::string>(p.at("opt")) == "sgd";
    sgd += is_sgd;
    EXPECT_EQ(p.count("momentum"), is_sgd ? 1u : 0u);
  }
  EXPECT_EQ(layers.size(), 4u);
  EXPECT_EQ(sgd, 32);  // exactly balanced: 64 points stratify the categorical
}

}  // namespace
}  // namespace hpo::search
