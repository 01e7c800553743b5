#include "search/bayesian_sampler.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "search/feature_map.hpp"
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
