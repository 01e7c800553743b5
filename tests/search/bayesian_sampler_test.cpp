#include "search/bayesian_sampler.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "search/feature_map.hpp"
#include "search/gp.hpp"
#include "search/sobol.hpp"
#include "search/test_functions.hpp"
#include "tests/search/space_fixtures.hpp"

namespace hpo::search {
namespace {

SearchSpace branin_space() {
  SearchSpace s;
  s.params.push_back(testing::float_param("x1", -5, 10));
  s.params.push_back(testing::float_param("x2", 0, 15));
  return s;
}

std::vector<Observation> sobol_history(const SearchSpace& space, int n,
                                       double (*f)(const Params&)) {
  auto sobol = make_sampler({Algorithm::kSobol, 3, 0}, space);
  std::vector<Observation> h;
  for (int i = 0; i < n; ++i) {
    Observation o;
    o.number = i;
    o.params = *sobol->ask({}, {}, i);
    o.value = f(o.params);
    h.push_back(o);
  }
  return h;
}

double branin_of(const Params& p) {
  return *evaluate_test_function("branin", p);
}

TEST(BayesianSampler, InitialDesignIsTheSeededSobolSequence) {
  auto space = branin_space();
  BayesianSampler bo(space, 4, 0);
  EXPECT_EQ(bo.n_initial(), 5);  // max(5, d + 1)
  EXPECT_EQ(BayesianSampler(testing::box_space(7), 4, 0).n_initial(), 8);
  auto sobol = make_sampler({Algorithm::kSobol, 4, 0}, space);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(*bo.ask({}, {}, i), *sobol->ask({}, {}, i));
}

TEST(BayesianSampler, DeterministicFromSeedNumberAndHistory) {
  auto space = branin_space();
  auto history = sobol_history(space, 8, branin_of);
  auto a = *BayesianSampler(space, 1, 0).ask(history, {}, 8);
  auto b = *BayesianSampler(space, 1, 0).ask(history, {}, 8);  // a restarted scheduler
  EXPECT_EQ(a, b);
  history.pop_back();
  EXPECT_NE(a, *BayesianSampler(space, 1, 0).ask(history, {}, 8));  // the history matters
}

TEST(BayesianSampler, FindsTheMinimumOfASmoothFunctionQuickly) {
  auto space = testing::box_space(2);
  auto f = [](const Params& p) {
    double a = std::get<double>(p.at("x1")) - 0.3, b = std::get<double>(p.at("x2")) - 0.7;
    return a * a + 2 * b * b;
  };
  BayesianSampler bo(space, 2, 0);
  std::vector<Observation> history;
  double best = 1e9;
  for (int i = 0; i < 20; ++i) {
    Observation o;
    o.number = i;
    o.params = *bo.ask(history, {}, i);
    o.value = f(o.params);
    best = std::min(best, *o.value);
    history.push_back(o);
  }
  EXPECT_LT(best, 1e-4);
}

TEST(BayesianSampler, EightPendingTrialsGetDistinctWellSeparatedSuggestions) {
  auto space = branin_space();
  auto history = sobol_history(space, 10, branin_of);
  BayesianSampler bo(space, 5, 0);
  FeatureMap map(space);
  std::vector<Params> pending;
  for (int k = 0; k < 8; ++k) pending.push_back(*bo.ask(history, pending, 10 + k));
  double min_dist = 1e9;
  for (std::size_t i = 0; i < pending.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      min_dist = std::min(min_dist, (map.unit_of(pending[i]) - map.unit_of(pending[j])).norm());
  EXPECT_GT(min_dist, 0.03) << "suggestions for concurrent workers must not coincide";
  // And none repeats a finished trial.
  for (const auto& p : pending)
    for (const auto& o : history) EXPECT_GT((map.unit_of(p) - map.unit_of(o.params)).norm(), 0.01);
}

TEST(BayesianSampler, ConditionalAndDiscreteParametersStayValid) {
  auto space = testing::mixed_space();
  auto f = [](const Params& p) {
    double v = std::log10(std::get<double>(p.at("lr"))) + 2.5;
    v = v * v + 0.1 * double(std::get<std::int64_t>(p.at("layers")));
    if (std::get<std::string>(p.at("opt")) == "sgd") v += std::get<double>(p.at("momentum"));
    return v;
  };
  BayesianSampler bo(space, 3, 0);
  std::vector<Observation> history;
  for (int i = 0; i < 14; ++i) {
    Observation o;
    o.number = i;
    o.params = *bo.ask(history, {}, i);
    bool sgd = std::get<std::string>(o.params.at("opt")) == "sgd";
    ASSERT_EQ(o.params.count("momentum"), sgd ? 1u : 0u);
    auto layers = std::get<std::int64_t>(o.params.at("layers"));
    ASSERT_GE(layers, 1);
    ASSERT_LE(layers, 4);
    o.value = f(o.params);
    history.push_back(o);
  }
}

TEST(BayesianSampler, SurvivesFailuresAndConstantValues) {
  auto space = branin_space();
  auto history = sobol_history(space, 7, [](const Params&) { return 1.0; });
  history[2].outcome = TrialOutcome::kFailed;
  history[2].value.reset();
  history[4].value = std::numeric_limits<double>::infinity();
  BayesianSampler bo(space, 5, 0);
  auto p = bo.ask(history, {}, 7);
  ASSERT_TRUE(p);
  double x1 = std::get<double>(p->at("x1"));
  EXPECT_GE(x1, -5);
  EXPECT_LE(x1, 10);
}

}  // namespace
}  // namespace hpo::search

namespace hpo::search {
namespace {

TEST(BayesianSampler, TransferCoefficientsFitAnAffineRelationAndDropAnOpposedSource) {
  Eigen::MatrixXd means(8, 2);
  means.col(0) << 0.1, 0.5, 0.9, 1.3, 2.0, 2.2, 3.1, 4.0;
  means.col(1) << 3, -1, 2, 0.5, -2, 1, 0, 4;
  Eigen::VectorXd y = (2 + 3 * means.col(0).array() + 0.5 * means.col(1).array()).matrix();
  Eigen::VectorXd c = transfer_coefficients(means, y);
  ASSERT_EQ(c.size(), 3);
  EXPECT_NEAR(c[0], 2, 1e-6);
  EXPECT_NEAR(c[1], 3, 1e-6);
  EXPECT_NEAR(c[2], 0.5, 1e-6);
  // The second source ranks the points the other way: dropped, the first refitted alone.
  y = (1 + 2 * means.col(0).array() - 0.8 * means.col(1).array()).matrix();
  c = transfer_coefficients(means, y);
  EXPECT_EQ(c[2], 0);
  EXPECT_GT(c[1], 0);
  const Eigen::VectorXd fitted = (c[0] + c[1] * means.col(0).array()).matrix();
  EXPECT_NEAR((y - fitted).sum(), 0, 1e-6);  // least squares with an intercept
  // Both opposed: the prior mean is the mean value.
  c = transfer_coefficients(means, -means.col(0) - means.col(1));
  EXPECT_EQ(c[1], 0);
  EXPECT_EQ(c[2], 0);
  EXPECT_NEAR(c[0], (-means.col(0) - means.col(1)).mean(), 1e-9);
}

TEST(BayesianSampler, FitInputShiftFindsHowFarARelatedSurfaceMoved) {
  // The earlier sweep's surface, learnt by a GP from 60 Sobol points.
  auto bowl = [](double a, double b) { return (a - 0.4) * (a - 0.4) + 2 * (b - 0.6) * (b - 0.6); };
  SobolSequence sobol(2, 5);
  Eigen::MatrixXd x(2, 60);
  Eigen::VectorXd y(60);
  for (int i = 0; i < 60; ++i) {
    const auto pt = sobol.point(std::uint64_t(i));
    x.col(i) << pt[0], pt[1];
    y[i] = bowl(pt[0], pt[1]);
  }
  GaussianProcess earlier;
  earlier.fit(x, y, GpFitOptions{}, 1);
  // This task: the same surface moved by (0.07, -0.05), scaled by 3 and offset by 1.
  const double dx = 0.07, dy = -0.05;
  Eigen::MatrixXd f(2, 12);
  Eigen::VectorXd v(12);
  for (int i = 0; i < 12; ++i) {
    f.col(i) << 0.2 + 0.15 * (i % 4), 0.3 + 0.2 * (i / 4);
    v[i] = 3 * bowl(f(0, i) + dx, f(1, i) + dy) + 1;
  }
  const Eigen::VectorXd shift =
      fit_input_shift(earlier, f, Eigen::MatrixXd::Ones(2, 12), v, {0, 1});
  ASSERT_EQ(shift.size(), 2);
  EXPECT_NEAR(shift[0], dx, 0.01);
  EXPECT_NEAR(shift[1], dy, 0.01);
  // Too few points to fit two shifts and a scale: none.
  EXPECT_EQ(fit_input_shift(earlier, f.leftCols(4), Eigen::MatrixXd::Ones(2, 4), v.head(4), {0, 1}),
            Eigen::VectorXd::Zero(2));
  // Values that fall where the earlier surface rises: nothing to align.
  EXPECT_EQ(fit_input_shift(earlier, f, Eigen::MatrixXd::Ones(2, 12), -v, {0, 1}),
            Eigen::VectorXd::Zero(2));
}

TEST(BayesianSampler, TrustRegionGrowsOnSuccessesShrinksOnFailuresAndCollapsesToGlobal) {
  std::vector<Observation> h;
  auto add = [&](double v) {
    Observation o;
    o.number = static_cast<std::int64_t>(h.size());
    o.value = v;
    h.push_back(o);
  };
  add(10);  // the design (first = 2): not counted
  add(20);
  EXPECT_EQ(trust_region_radius(h, 2), BayesianSampler::kTrustStart);
  for (double v : {9, 8, 7}) add(v);  // three improvements in a row
  EXPECT_DOUBLE_EQ(trust_region_radius(h, 2), 2 * BayesianSampler::kTrustStart);
  add(50);
  add(std::nan(""));  // failed: not a trial that counts
  h.back().outcome = TrialOutcome::kFailed;
  add(60);  // two without improvement
  EXPECT_DOUBLE_EQ(trust_region_radius(h, 2), BayesianSampler::kTrustStart);
  int halvings = 0;
  while (trust_region_radius(h, 2) > 0) {
    add(100);
    add(100);
    ++halvings;
    ASSERT_LT(halvings, 20);
  }
  // 0.1 / 2^7 < kTrustMin: the seventh halving collapses the region, and the next trial starts
  // over.
  EXPECT_EQ(halvings, 7);
  add(100);
  EXPECT_EQ(trust_region_radius(h, 2), BayesianSampler::kTrustStart);
}

TEST(BayesianSampler, WarpsOnlyHeavyRightTailsAndKeepsTheOrder) {
  std::vector<double> symmetric = {1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(warp_outputs(symmetric), Eigen::Map<Eigen::VectorXd>(symmetric.data(), 7));
  std::vector<double> heavy = {3, 1, 2, 1e5, 4, 2.5, 7, 1.5};
  Eigen::VectorXd w = warp_outputs(heavy);
  EXPECT_LT(w.maxCoeff() - w.minCoeff(), 20);  // the tail is compressed
  for (std::size_t i = 0; i < heavy.size(); ++i)
    for (std::size_t j = 0; j < heavy.size(); ++j)
      EXPECT_EQ(heavy[i] < heavy[j], w[Eigen::Index(i)] < w[Eigen::Index(j)]);
}

}  // namespace
}  // namespace hpo::search
