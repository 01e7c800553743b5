// Bayesian optimisation with a Gaussian process and log expected improvement.
//
// Each ask rebuilds everything from (seed, number, history, pending), so a
// restarted scheduler continues the same sweep:
//  1. Trials 0 .. n_initial-1 (default max(5, d + 1)), or while fewer than two
//     trials have completed, take scrambled Sobol point `number`.
//  2. Otherwise fit a GP (gp.hpp) to the completed trials in feature space
//     (feature_map.hpp), on warp_outputs(values). Above kMaxGpPoints observations the GP conditions
//     on a deterministic subset (best half + even spread) to bound the cost.
//  3. Pending trials are fantasised with the kriging believer (their value is
//     the posterior mean); failed trials, which have no value, are fantasised
//     at the worst observed value so that a crashing region is not proposed
//     again. The fantasies collapse the variance there, so the EI of K
//     concurrent asks peaks at K different places.
//  Constraints (Observation::violations, feasibility.hpp): a GP per
//     constraint, the incumbent is the best feasible trial and the
//     acquisition adds log P(feasible); while no trial is feasible it is
//     log P(feasible) alone.
//  4. Maximise log EI: score a scrambled Sobol set plus Gaussian
//     perturbations of the best trials, then refine the best few candidates
//     by a pattern search in unit coordinates (step halving; the starts run
//     in lockstep, and one that walks next to a better one stops) and return
//     the best point, rounded to valid values.
// All randomness comes from Rng / Sobol keyed by (seed, number).
#pragma once

#include "search/feature_map.hpp"
#include "search/sampler.hpp"

namespace hpo::search {

// The outputs the GP models. Heavy right tails (a few huge values, as on
// Rosenbrock) flatten the standardised landscape where the good points are:
// when the sample skewness exceeds 1 this returns log(y - min + c), c the
// median's distance from the minimum (monotone, so the argmin is unchanged;
// close to linear below the median, logarithmic in the tail); else y itself.
Eigen::VectorXd warp_outputs(const std::vector<double>& ys);

class BayesianSampler final : public Sampler {
 public:
  static constexpr int kMaxGpPoints = 300;

  // max_gp_points: the subset size of step 2 (search_bench compares it with
  // an unbounded GP to measure what the subset costs in quality).
  BayesianSampler(SearchSpace space, std::uint64_t seed, int n_initial,
                  int max_gp_points = kMaxGpPoints);

  std::optional<Params> ask(std::span<const Observation> history, std::span<const Params> pending,
                            std::int64_t number) override;

  int n_initial() const { return n_initial_; }
  int initial_design() const override { return n_initial_; }

 private:
  FeatureMap map_;
  std::uint64_t seed_;
  int n_initial_;
  int max_gp_points_;
};

}  // namespace hpo::search
