#include "search/tpe_sampler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "search/parzen_estimator.hpp"
#include "search/random_sampler.hpp"
#include "search/warm_start.hpp"
#include "tests/search/pareto_fixtures.hpp"
#include "tests/search/space_fixtures.hpp"

namespace hpo::search {
namespace {

using testing::float_param;

double x_of(const Params& p, const char* name = "x1") {
  return std::get<double>(p.at(name));
}

Observation observed(std::int64_t number, Params p, double value,
                     TrialOutcome outcome = TrialOutcome::kCompleted) {
  Observation o;
  o.number = number;
  o.params = std::move(p);
  o.value = value;
  o.outcome = outcome;
  if (outcome == TrialOutcome::kPruned) o.curve = {{1, value}};
  return o;
}

template <class F>
double run(Sampler& s, F f, int n, std::vector<Observation>* out = nullptr) {
  std::vector<Observation> history;
  double best = 1e300;
  for (int i = 0; i < n; ++i) {
    auto p = *s.ask(history, {}, i);
    double v = f(p);
    best = std::min(best, v);
    history.push_back(observed(i, p, v));
  }
  if (out) *out = history;
  return best;
}

TEST(TpeSampler, StartsWithSobolAndIsReproducible) {
  auto space = testing::box_space(3);
  TpeSampler a(space, 8, 0), b(space, 8, 0);
  auto sobol = make_sampler({Algorithm::kSobol, 8, 0}, space);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(*a.ask({}, {}, i), *sobol->ask({}, {}, i));
  std::vector<Observation> history;
  auto f = [](const Params& p) { return std::pow(x_of(p) - 0.2, 2); };
  run(a, f, 30, &history);
  EXPECT_EQ(*a.ask(history, {}, 30), *b.ask(history, {}, 30));  // fresh sampler, same answer
  EXPECT_NE(*a.ask(history, {}, 30), *a.ask(history, {}, 31));
}

TEST(TpeSampler, ConvergesOnASmoothFunction) {
  auto space = testing::box_space(2);
  auto f = [](const Params& p) {
    return std::pow(x_of(p) - 0.3, 2) + std::pow(x_of(p, "x2") - 0.7, 2);
  };
  int tpe_wins = 0;
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    TpeSampler tpe(space, seed, 0);
    auto rnd = make_sampler({Algorithm::kRandom, seed, 0}, space);
    double bt = run(tpe, f, 80), br = run(*rnd, f, 80);
    EXPECT_LT(bt, 2e-3) << seed;
    tpe_wins += bt < br;
  }
  EXPECT_GE(tpe_wins, 4);
}

TEST(TpeSampler, ConditionalGroupLearnsFromTrialsWhereItWasActive) {
  auto space = testing::mixed_space();
  // Good trials: sgd with momentum near 0.9; adam trials are poor.
  std::vector<Observation> history;
  for (int i = 0; i < 40; ++i) {
    Params p{{"lr", 0.01}, {"layers", std::int64_t{2}}};
    double v;
    if (i % 2 == 0) {
      double m = 0.99 * (i % 10) / 10.0;
      p["opt"] = std::string("sgd");
      p["momentum"] = m;
      v = std::abs(m - 0.9);
    } else {
      p["opt"] = std::string("adam");
      v = 5;
    }
    history.push_back(observed(i, p, v));
  }
  TpeSampler tpe(space, 1, 0);
  int sgd = 0, near = 0;
  for (int k = 0; k < 40; ++k) {
    auto p = *tpe.ask(history, {}, 40 + k);
    bool is_sgd = std::get<std::string>(p.at("opt")) == "sgd";
    ASSERT_EQ(p.count("momentum"), is_sgd ? 1u : 0u);
    sgd += is_sgd;
    if (is_sgd) near += std::abs(x_of(p, "momentum") - 0.85) < 0.15;
  }
  EXPECT_GE(sgd, 32);
  EXPECT_GE(near, sgd * 2 / 3);
}

TEST(TpeSampler, PrunedTrialsRankBelowCompletedOnes) {
  SearchSpace space;
  space.params.push_back(float_param("x1", 0, 1));
  std::vector<Observation> history;
  // Completed trials near 0.8 are best among completed; pruned ones near 0.2
  // report low intermediate values, which must not attract the sampler.
  for (int i = 0; i < 30; ++i) {
    double x = i % 2 ? 0.8 + 0.005 * (i % 7) : 0.2 + 0.005 * (i % 7);
    bool pruned = i % 2 == 0;
    history.push_back(observed(i, {{"x1", x}}, pruned ? -100.0 : std::abs(x - 0.8),
                               pruned ? TrialOutcome::kPruned : TrialOutcome::kCompleted));
  }
  TpeSampler tpe(space, 2, 0);
  int high = 0;
  for (int k = 0; k < 20; ++k) high += x_of(*tpe.ask(history, {}, 30 + k)) > 0.5;
  EXPECT_GE(high, 16);
}

TEST(TpeSampler, PendingTrialsAreConstantLiars) {
  SearchSpace space;
  space.params.push_back(float_param("x1", 0, 1));
  std::vector<Observation> history;
  for (int i = 0; i < 30; ++i) {
    double x = (i + 0.5) / 30;
    history.push_back(observed(i, {{"x1", x}}, std::abs(x - 0.3)));
  }
  std::vector<Params> pending(30, Params{{"x1", 0.3}});
  TpeSampler tpe(space, 3, 0);
  double spread_free = 0, spread_pending = 0;
  for (int k = 0; k < 30; ++k) {
    spread_free += std::abs(x_of(*tpe.ask(history, {}, 30 + k)) - 0.3);
    spread_pending += std::abs(x_of(*tpe.ask(history, pending, 30 + k)) - 0.3);
  }
  EXPECT_GT(spread_pending, 1.5 * spread_free);
}

TEST(ParzenEstimator, DensityIntegratesToOneAndFollowsTheData) {
  std::vector<std::vector<double>> obs = {{0.2, 0}, {0.25, 0}, {0.3, 1}};
  ParzenEstimator pe({0, 2}, obs, {1, 1, 1});
  double mass = 0;
  const int steps = 2000;
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < steps; ++i)
      mass += std::exp(pe.log_pdf({(i + 0.5) / steps, double(c)})) / steps;
  EXPECT_NEAR(mass, 1.0, 1e-3);
  EXPECT_GT(pe.log_pdf({0.25, 0}), pe.log_pdf({0.8, 0}));
  EXPECT_GT(pe.log_pdf({0.25, 0}), pe.log_pdf({0.25, 1}));
  Rng rng(1);
  int near = 0;
  for (int i = 0; i < 1000; ++i) near += std::abs(pe.sample(rng)[0] - 0.25) < 0.2;
  EXPECT_GT(near, 600);
}

// Scott's rule per dimension: where the observations agree (x0, all 0.5) the
// kernels are narrow, where they spread (x1, 0.1 or 0.9) wide. One bandwidth
// for both dimensions (Optuna's 0.2 n^(-1/(d+4))) gives a step of 0.15 off an
// observation the same density in either direction.
TEST(ParzenEstimator, EachDimensionGetsTheBandwidthOfItsOwnSpread) {
  std::vector<std::vector<double>> obs;
  for (int i = 0; i < 10; ++i) obs.push_back({0.5, i % 2 ? 0.9 : 0.1});
  ParzenEstimator pe({0, 0}, obs, std::vector<double>(10, 1.0));
  const double across_agreement = pe.log_pdf({0.65, 0.1});
  const double across_spread = pe.log_pdf({0.5, 0.25});
  std::printf("log density 0.15 off an observation: along x0 %.3f, along x1 %.3f\n",
              across_agreement, across_spread);
  EXPECT_GT(across_spread - across_agreement, 1.0);
}

TEST(ParzenEstimator, DefaultWeightsRampOlderObservations) {
  EXPECT_EQ(tpe_default_weights(10), std::vector<double>(10, 1.0));
  auto w = tpe_default_weights(50);
  EXPECT_NEAR(w[0], 1.0 / 50, 1e-12);
  EXPECT_LT(w[10], w[20]);
  EXPECT_EQ(w[25], 1.0);
  EXPECT_EQ(w[49], 1.0);
}

// Several objectives (MOTPE): ranked by front and hypervolume contribution,
// TPE's front after 100 trials dominates more than random search's on ZDT1
// and DTLZ2 (median of three seeds).
// A warm start's earlier trials join the densities (learn_from): with its own
// history spread evenly and uninformative, the sampler asks near where the
// earlier sweep was good; without them, anywhere. Their scale (here a
// thousand times this sweep's) does not matter: each source counts by ranks.
TEST(TpeSampler, LearnsFromEarlierSweeps) {
  SearchSpace space;
  space.params.push_back(float_param("x1", 0, 1));
  std::vector<PriorTrial> earlier;
  for (int i = 0; i < 60; ++i) {
    const double x = (i + 0.5) / 60;
    earlier.push_back({{{"x1", x}}, 1000 * (x - 0.8) * (x - 0.8)});
  }
  std::vector<Observation> own;  // flat: no information of its own
  for (int i = 0; i < 10; ++i) own.push_back(observed(i, {{"x1", (i + 0.5) / 10}}, 1.0 + 1e-6 * i));
  auto mean_distance = [&](bool warm) {
    TpeSampler s(space, 5, 10);
    if (warm) s.learn_from(WarmStart(space, {earlier}, 10));
    double sum = 0;
    for (int n = 10; n < 40; ++n) sum += std::abs(x_of(*s.ask(own, {}, n)) - 0.8);
    return sum / 30;
  };
  const double cold = mean_distance(false), warm = mean_distance(true);
  std::printf("mean distance from the earlier optimum: cold %.3f, warm %.3f\n", cold, warm);
  EXPECT_LT(warm, 0.1);
  EXPECT_LT(warm, 0.5 * cold);
}

TEST(TpeSampler, SeveralObjectivesBeatRandomSearch) {
  for (const std::string fname : {"zdt1", "dtlz2"}) {
    const SearchSpace space = testing::box_space(multi_objective_info(fname)->dims);
    std::vector<double> tpe, random;
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      TpeSampler t(space, seed, 0);
      RandomSampler r(space, seed);
      tpe.push_back(testing::pareto_run(t, fname, 100));
      random.push_back(testing::pareto_run(r, fname, 100));
    }
    std::sort(tpe.begin(), tpe.end());
    std::sort(random.begin(), random.end());
    std::printf("%s 100 trials: median hypervolume tpe %.4f, random %.4f\n", fname.c_str(), tpe[1],
                random[1]);
    EXPECT_GT(tpe[1], random[1]) << fname;
    EXPECT_GT(tpe[0], 0) << fname;
  }
}

}  // namespace
}  // namespace hpo::search
