// Warm start (search/warm_start.hpp): which earlier trials fit a space, the
// normal scores that make sources on other scales comparable, the history a
// sampler gets, and that a warm-started sampler finds a shifted optimum sooner.
#include "search/warm_start.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>

#include "search/test_functions.hpp"
#include "tests/search/space_fixtures.hpp"

namespace hpo::search {
namespace {

using testing::float_param;

TEST(WarmStart, FitToSpaceKeepsWhatFitsAndDropsTheRest) {
  const SearchSpace s = testing::mixed_space();
  Params adam{{"lr", 0.01},
              {"layers", std::int64_t{2}},
              {"opt", std::string("adam")},
              {"dropout", 0.5}};  // a parameter this space does not have
  auto fitted = fit_to_space(adam, s);
  ASSERT_TRUE(fitted);
  EXPECT_EQ(fitted->size(), 3u);
  EXPECT_FALSE(fitted->count("dropout"));
  // An int written as a float (a CSV, another sweep's float) is taken as an int.
  Params sgd{{"lr", 0.01}, {"layers", 3.0}, {"opt", std::string("sgd")}, {"momentum", 0.9}};
  fitted = fit_to_space(sgd, s);
  ASSERT_TRUE(fitted);
  EXPECT_EQ(std::get<std::int64_t>(fitted->at("layers")), 3);
  EXPECT_EQ(std::get<double>(fitted->at("momentum")), 0.9);

  auto with = [](Params p, const std::string& k, Value v) {
    p[k] = std::move(v);
    return p;
  };
  EXPECT_FALSE(fit_to_space(with(adam, "lr", 0.5), s));                      // above max
  EXPECT_FALSE(fit_to_space(with(adam, "layers", 2.5), s));                  // not an int
  EXPECT_FALSE(fit_to_space(with(adam, "opt", std::string("rmsprop")), s));  // not a choice
  EXPECT_FALSE(fit_to_space(with(adam, "lr", std::string("fast")), s));      // not a number
  Params no_momentum = sgd;
  no_momentum.erase("momentum");  // active under sgd, missing
  EXPECT_FALSE(fit_to_space(no_momentum, s));
  SearchSpace stepped;
  auto p = float_param("x", 0, 1);
  p.step = 0.25;
  stepped.params.push_back(p);
  EXPECT_TRUE(fit_to_space({{"x", 0.75}}, stepped));
  EXPECT_FALSE(fit_to_space({{"x", 0.7}}, stepped));
}

TEST(WarmStart, NormalScoresDependOnTheOrderAlone) {
  const std::vector<double> v{3.0, -1.0, 10.0, 3.0, 0.5};
  auto z = normal_scores(v);
  ASSERT_EQ(z.size(), v.size());
  EXPECT_LT(z[1], z[4]);
  EXPECT_LT(z[4], z[0]);
  EXPECT_DOUBLE_EQ(z[0], z[3]);  // ties share a score
  EXPECT_LT(z[3], z[2]);
  EXPECT_NEAR(z[0], 0.2533471031, 1e-6);   // ranks 2 and 3 tied: Φ⁻¹((2.5 + ½) / 5)
  EXPECT_NEAR(z[1], -z[2], 1e-9);          // symmetric
  EXPECT_NEAR(z[1], -1.2815515655, 1e-6);  // Φ⁻¹(0.1)
  std::vector<double> scaled;
  for (double x : v) scaled.push_back(1000 * x - 7);
  EXPECT_EQ(normal_scores(scaled), z);
  EXPECT_TRUE(normal_scores(std::vector<double>{}).empty());
  EXPECT_NEAR(normal_scores(std::vector<double>{42.0})[0], 0.0, 1e-12);
}

TEST(WarmStart, TheBestEarlierConfigurationsReplaceTheInitialDesign) {
  SearchSpace s;
  s.params.push_back(float_param("x", 0, 1));
  // Two sources on very different scales, one trial that does not fit, and
  // one configuration next to a better one.
  std::vector<std::vector<PriorTrial>> sources = {
      {{{{"x", 0.1}}, 1.0}, {{{"x", 0.2}}, 2.0}, {{{"x", 5.0}}, 0.0}, {{{"x", 0.11}}, 1.5}},
      {{{{"x", 0.7}}, 1000.0}, {{{"x", 0.6}}, 3000.0}}};
  WarmStart warm(s, sources, 7);  // a design of 7: ceil(0.4 × 7) = 3 from earlier sweeps
  EXPECT_EQ(warm.usable(), 5u);
  ASSERT_EQ(warm.design().size(), 3u);
  // Each source's best first (its normal score is the lowest), then the
  // next ranks; 0.11 sits within 0.05 of 0.1 and is skipped.
  EXPECT_EQ(std::get<double>(warm.design()[0].at("x")), 0.1);
  EXPECT_EQ(std::get<double>(warm.design()[1].at("x")), 0.7);
  EXPECT_EQ(std::get<double>(warm.design()[2].at("x")), 0.6);
  EXPECT_EQ(warm.initial(1), warm.design()[1]);
  EXPECT_FALSE(warm.initial(3));  // past the share: the sampler's own design
  EXPECT_FALSE(warm.initial(-1));
  // A design longer than what fits: only what there is.
  WarmStart small(s, {{{{{"x", 0.5}}, 1.0}}}, 10);
  EXPECT_EQ(small.design().size(), 1u);
  EXPECT_FALSE(small.initial(1));
}

// The objective of the benchmark family: Branin with its inputs shifted and its
// value scaled, as a related earlier task would be.
double shifted_branin(const Params& p, double dx, double dy, double scale) {
  const double x1 = std::get<double>(p.at("x1")) + dx, x2 = std::get<double>(p.at("x2")) + dy;
  return scale * branin({std::clamp(x1, -5.0, 10.0), std::clamp(x2, 0.0, 15.0)}) + 3;
}

SearchSpace branin_box() {
  const auto info = *test_function_info("branin");
  SearchSpace s;
  s.params.push_back(float_param("x1", info.lower[0], info.upper[0]));
  s.params.push_back(float_param("x2", info.lower[1], info.upper[1]));
  return s;
}

// n trials asked of `sampler` (the warm start's design first, as the sweep
// controller does) and measured by f; fewer when the sampler runs out.
std::vector<Observation> run_sweep(Sampler& sampler, const WarmStart* warm, int n,
                                   const std::function<double(const Params&)>& f) {
  std::vector<Observation> own;
  for (int i = 0; i < n; ++i) {
    auto p = warm ? warm->initial(i) : std::nullopt;
    if (!p) p = sampler.ask(own, {}, i);
    if (!p) break;
    Observation o;
    o.number = i;
    o.params = *p;
    o.value = f(*p);
    own.push_back(std::move(o));
  }
  return own;
}

double best_after(Sampler& sampler, const WarmStart* warm, int n,
                  const std::function<double(const Params&)>& f) {
  double best = INFINITY;
  for (const auto& o : run_sweep(sampler, warm, n, f)) best = std::min(best, *o.value);
  return best;
}

// The earlier sweep of a related task: `n` trials of `algo` (seed 7) on
// `earlier`, as the warm start reads them.
std::vector<PriorTrial> earlier_sweep(const SearchSpace& s, Algorithm algo, int n,
                                      const std::function<double(const Params&)>& earlier) {
  auto sampler = make_sampler({algo, 7, 0}, s);
  std::vector<Observation> past;
  std::vector<PriorTrial> source;
  for (int i = 0; i < n; ++i) {
    auto p = sampler->ask(past, {}, i);
    if (!p) break;
    Observation o;
    o.number = i;
    o.params = *p;
    o.value = earlier(*p);
    past.push_back(o);
    source.push_back({*p, *o.value});
  }
  return source;
}

TEST(WarmStart, AWarmStartedSamplerFindsARelatedOptimumSooner) {
  const SearchSpace s = branin_box();
  for (Algorithm algo : {Algorithm::kBayesian, Algorithm::kTpe}) {
    // The earlier sweep: 40 trials of the same sampler on a shifted, scaled task.
    const auto source = earlier_sweep(
        s, algo, 40, [](const Params& p) { return shifted_branin(p, 0.3, -0.4, 25); });
    ASSERT_EQ(source.size(), 40u);
    auto warm_sampler = make_sampler({algo, 11, 0}, s);
    WarmStart warm(s, {source}, warm_sampler->initial_design());
    warm_sampler->learn_from(warm);  // as the sweep controller does
    auto task = [](const Params& p) { return shifted_branin(p, 0, 0, 1); };
    auto cold_sampler = make_sampler({algo, 11, 0}, s);
    const double cold = best_after(*cold_sampler, nullptr, 10, task);
    const double warmed = best_after(*warm_sampler, &warm, 10, task);
    std::printf("warm start, %s, 10 evaluations: cold %.4f, warm %.4f (minimum 3.3979)\n",
                algo == Algorithm::kBayesian ? "bayesian" : "tpe", cold, warmed);
    EXPECT_LT(warmed, cold);
  }
}

// The Bayesian sampler's transfer (bayesian_sampler.hpp): the earlier
// sweep's GP as the prior mean, its length scales, a trust region. Regret
// after 25 evaluations on this task: cold 0.09; warm with the shorter design
// alone (the transfer switched off) 4.5e-3; with the transfer 2e-6.
TEST(WarmStart, TheBayesianSamplerRefinesARelatedOptimumFarSooner) {
  const SearchSpace s = branin_box();
  const auto source = earlier_sweep(s, Algorithm::kBayesian, 60, [](const Params& p) {
    return shifted_branin(p, 0.3, -0.4, 25);
  });
  auto task = [](const Params& p) { return shifted_branin(p, 0, 0, 1); };
  const double floor = test_function_info("branin")->minimum + 3;
  auto cold_sampler = make_sampler({Algorithm::kBayesian, 11, 0}, s);
  auto warm_sampler = make_sampler({Algorithm::kBayesian, 11, 0}, s);
  WarmStart warm(s, {source}, warm_sampler->initial_design());
  warm_sampler->learn_from(warm);
  const double cold = best_after(*cold_sampler, nullptr, 25, task) - floor;
  const double warmed = best_after(*warm_sampler, &warm, 25, task) - floor;
  std::printf("bayesian, regret after 25 evaluations: cold %.3g, warm %.3g\n", cold, warmed);
  EXPECT_LT(warmed, 1e-4);
  EXPECT_LT(warmed, cold / 100);
}

// An earlier sweep that ranks this task's points the other way explains
// none of it: no transfer, and the search recovers from the design it
// spoiled (with the transfer forced on, the GP keeps searching around the
// earlier best, this task's worst: regret 2.05 after 80 here, 5e-5 without).
TEST(WarmStart, AnOpposedEarlierSweepDoesNotTrapTheBayesianSampler) {
  const auto info = *test_function_info("hartmann6");
  SearchSpace s;
  for (int d = 0; d < info.dims; ++d)
    s.params.push_back(float_param("x" + std::to_string(d + 1), 0, 1));
  auto h6 = [](const Params& p) {
    std::vector<double> x;
    for (int d = 0; d < 6; ++d) x.push_back(std::get<double>(p.at("x" + std::to_string(d + 1))));
    return hartmann6(x);
  };
  auto source = earlier_sweep(s, Algorithm::kBayesian, 60, h6);
  for (auto& t : source) t.value = -t.value;
  auto warm_sampler = make_sampler({Algorithm::kBayesian, 11, 0}, s);
  WarmStart warm(s, {source}, warm_sampler->initial_design());
  warm_sampler->learn_from(warm);
  const double regret = best_after(*warm_sampler, &warm, 80, h6) - info.minimum;
  std::printf("bayesian warm-started from an opposed sweep, regret after 80: %.3g\n", regret);
  EXPECT_LT(regret, 0.05);
}

// A warm-started ask depends only on (seed, number, history, pending) and the
// earlier sweeps, as a restarted scheduler needs; a pending trial is not
// proposed again; a conditional, categorical space and a space without a
// numeric parameter stay valid.
TEST(WarmStart, TheBayesianTransferIsDeterministicKeepsPendingApartAndFitsAnySpace) {
  const SearchSpace s = branin_box();
  const auto source = earlier_sweep(s, Algorithm::kBayesian, 40, [](const Params& p) {
    return shifted_branin(p, 0.3, -0.4, 25);
  });
  const WarmStart warm(s, {source},
                       make_sampler({Algorithm::kBayesian, 11, 0}, s)->initial_design());
  auto fresh = [&] {
    auto sampler = make_sampler({Algorithm::kBayesian, 11, 0}, s);
    sampler->learn_from(warm);
    return sampler;
  };
  auto a = fresh();
  const auto own =
      run_sweep(*a, &warm, 12, [](const Params& p) { return shifted_branin(p, 0, 0, 1); });
  const Params next = *a->ask(own, {}, 12);
  EXPECT_EQ(*fresh()->ask(own, {}, 12), next);  // a restart asks the same
  const std::vector<Params> pending{next};
  const Params after = *a->ask(own, pending, 12);  // the same key: only the pending trial differs
  const double dx = std::get<double>(after.at("x1")) - std::get<double>(next.at("x1"));
  const double dy = std::get<double>(after.at("x2")) - std::get<double>(next.at("x2"));
  // Not the pending point again (1e-4: the acquisition search's smallest step).
  EXPECT_GT(std::hypot(dx / 15, dy / 15), 1e-4) << "the pending trial was proposed again";

  for (const SearchSpace& space :
       {testing::mixed_space(), [] {
          SearchSpace c;
          c.params.push_back(testing::cat_param("opt", {std::string("sgd"), std::string("adam")}));
          c.params.push_back(testing::cat_param("act", {std::string("relu"), std::string("tanh")}));
          return c;
        }()}) {
    // An objective over whatever the space holds: the lr's log distance from
    // 1e-2, the layers, a penalty per choice.
    auto objective = [](const Params& p) {
      double v = 0;
      for (const auto& [name, value] : p) {
        if (const auto* d = std::get_if<double>(&value))
          v += name == "lr" ? std::pow(std::log10(*d) + 2, 2) : 0.1 * *d;
        else if (const auto* i = std::get_if<std::int64_t>(&value))
          v += 0.3 * double(*i);
        else
          v += std::get<std::string>(value) == "sgd" || std::get<std::string>(value) == "relu";
      }
      return v;
    };
    const auto earlier = earlier_sweep(space, Algorithm::kBayesian, 30, objective);
    auto sampler = make_sampler({Algorithm::kBayesian, 3, 0}, space);
    WarmStart warm(space, {earlier}, sampler->initial_design());
    sampler->learn_from(warm);
    const auto history = run_sweep(*sampler, &warm, 20, objective);
    ASSERT_EQ(history.size(), 20u);
    for (const auto& o : history)
      EXPECT_TRUE(fit_to_space(o.params, space))
          << "trial " << o.number << " is not a point of the space";
  }
}

}  // namespace
}  // namespace hpo::search
