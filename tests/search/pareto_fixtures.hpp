// Multi-objective runs shared by the Pareto sampler tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "search/pareto.hpp"
#include "search/rng.hpp"
#include "search/sampler.hpp"
#include "search/test_functions.hpp"
#include "search/warm_start.hpp"
#include "tests/search/space_fixtures.hpp"

namespace hpo::search::testing {

// n points of m objectives drawn uniformly from the unit cube.
inline std::vector<Point> random_points(Rng& rng, std::size_t m, int n) {
  std::vector<Point> pts;
  for (int i = 0; i < n; ++i) {
    Point p(m);
    for (double& v : p) v = rng.uniform();
    pts.push_back(std::move(p));
  }
  return pts;
}

// The hypervolume, at the function's reference point, of `trials` trials of
// the test function `fname` (zdt1, zdt2, zdt3, dtlz2) asked one at a time.
inline double pareto_run(Sampler& sampler, const std::string& fname, int trials) {
  const auto info = multi_objective_info(fname);
  EXPECT_TRUE(info.has_value()) << fname;
  if (!info) return 0;
  const SearchSpace space = box_space(info->dims);
  std::vector<Observation> history;
  std::vector<Point> points;
  for (int i = 0; i < trials; ++i) {
    auto params = sampler.ask(history, {}, i);
    EXPECT_TRUE(params && fit_to_space(*params, space));
    if (!params) return 0;
    Observation o;
    o.number = i;
    o.params = *params;
    o.values = evaluate_multi_objective(fname, *params).value_or(Point{});
    points.push_back(o.values);
    history.push_back(std::move(o));
  }
  return hypervolume(points, info->reference);
}

// `trials` asks over mixed_space() with two conflicting objectives (every
// `fail_every`-th trial fails and takes no part); each proposal must fit the
// space. Returns how many trials chose the "sgd" branch.
inline int mixed_space_run(Sampler& sampler, int trials, int fail_every) {
  const SearchSpace space = mixed_space();
  std::vector<Observation> history;
  int sgd = 0;
  for (int i = 0; i < trials; ++i) {
    auto params = sampler.ask(history, {}, i);
    EXPECT_TRUE(params && fit_to_space(*params, space)) << i;
    if (!params) return sgd;
    Observation o;
    o.number = i;
    o.params = *params;
    const double lr = std::get<double>(params->at("lr"));
    const bool is_sgd = std::get<std::string>(params->at("opt")) == "sgd";
    sgd += is_sgd;
    o.outcome = i % fail_every == 3 ? TrialOutcome::kFailed : TrialOutcome::kCompleted;
    if (o.outcome == TrialOutcome::kCompleted)
      o.values = {std::abs(std::log10(lr) + 2) + (is_sgd ? 0.0 : 0.5),
                  static_cast<double>(std::get<std::int64_t>(params->at("layers")))};
    history.push_back(std::move(o));
  }
  return sgd;
}

}  // namespace hpo::search::testing
