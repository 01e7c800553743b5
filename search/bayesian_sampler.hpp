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
// Warm start (learn_from; search/warm_start.hpp), a transfer in the manner of
// Vizier's stacked GPs: a GP is fitted to each earlier sweep (kMinEarlierTrials
// or more usable trials), and this sweep's values are warped as theirs were.
// The design is the earlier best configurations plus one Sobol point. Then,
// on each ask, the earlier GPs' posterior means are fitted to this sweep's
// values (transfer_coefficients: an intercept and non-negative slopes). When
// they explain at least kMinTransferR2 of its variance (adjusted R², so at
// least one point more than the intercept and slopes), the transfer is on: each used earlier
// mean is moved by a fitted input shift (fit_input_shift) and refitted, the
// result is the prior mean and this sweep's GP models what it leaves, the
// GP's length-scale prior is centred on the earlier ones
// (GpFitOptions::learnt_log_lengthscales), and the acquisition is searched in
// a trust region around the best trials (trust_region_radius) instead of the
// whole space: a related task's optimum is near, only its precise place is
// new. Otherwise the GP models this sweep alone, over the whole space, as a
// cold one (what is lost is the design the earlier configurations took).
// Measured (tests/bench/warm_start_bench.sh, median of 10): evaluations to the
// cold sweep's best after 100 on shifted, scaled Branin 101 -> 27, Hartmann6
// 51.5 -> 28; README.md has the ablation and the cost of a wrong earlier sweep.
// All randomness comes from Rng / Sobol keyed by (seed, number).
#pragma once

#include <optional>

#include "search/feature_map.hpp"
#include "search/gp.hpp"
#include "search/sampler.hpp"

namespace hpo::search {

// The outputs the GP models. Heavy right tails (a few huge values, as on
// Rosenbrock) flatten the standardised landscape where the good points are:
// when the sample skewness exceeds 1 this returns log(y - min + c), c the
// median's distance from the minimum (monotone, so the argmin is unchanged;
// close to linear below the median, logarithmic in the tail); else y itself.
// `log`: whether to take the log (default: heavy_right_tail(ys)).
Eigen::VectorXd warp_outputs(const std::vector<double>& ys, std::optional<bool> log = std::nullopt);
// The sample skewness of ys exceeds 1 (at least 3 values).
bool heavy_right_tail(const std::vector<double>& ys);

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
  void learn_from(const WarmStart& earlier) override;

  // Warm start's trust region (TuRBO's rule, Eriksson et al. 2019): the
  // radius starts at kTrustStart, doubles after kTrustSuccesses improvements
  // in a row (up to kTrustMax), halves after kTrustFailures trials in a row
  // that do not improve the best; below kTrustMin the region has collapsed:
  // that trial searches the whole space and the radius starts over.
  static constexpr double kTrustStart = 0.1, kTrustMax = 0.4, kTrustMin = 1e-3;
  static constexpr int kTrustSuccesses = 3, kTrustFailures = 2;
  // An earlier sweep with fewer usable trials is not modelled.
  static constexpr std::size_t kMinEarlierTrials = 5;
  // The share of this sweep's variance the prior mean must explain for the
  // transfer (prior mean, learnt length scales, trust region) to be used.
  static constexpr double kMinTransferR2 = 0.5;
  // The input shift of an earlier sweep (fit_input_shift): its prior's
  // spread and its bound, in feature units (a numeric parameter's range is 1).
  static constexpr double kShiftSd = 0.2, kMaxShift = 0.5;

 private:
  FeatureMap map_;
  std::uint64_t seed_;
  int n_initial_;
  int max_gp_points_;
  // Warm start (see the header comment): one GP per earlier sweep, fitted on
  // its warped values; the design length.
  std::vector<GaussianProcess> earlier_;
  int warm_design_ = 0;
  // Whether the earlier sweeps' values were log-warped (most of them): this
  // sweep's are warped the same way, whatever its own sample's skewness, so
  // that the two stay related by a scale and an offset.
  bool earlier_warped_ = false;

  // The prior mean fitted to this sweep: intercept and one slope per earlier
  // sweep (transfer_coefficients), each sweep's input shift, and the length
  // scales of the sweeps it uses (weighted by their slopes).
  struct Transfer {
    Eigen::VectorXd coef;
    std::vector<Eigen::VectorXd> shifts;
    Eigen::VectorXd log_lengthscales;
    // The prior mean at unit points `us` (features `f`), raw (warped) units.
    Eigen::VectorXd at(const BayesianSampler& sampler, const std::vector<Eigen::VectorXd>& us,
                       const Eigen::MatrixXd& f) const;
  };
  // The transfer for values y at `us` (features f), or nullopt when the
  // unshifted earlier means explain less than kMinTransferR2 of y (adjusted R²).
  std::optional<Transfer> fit_transfer(const std::vector<Eigen::VectorXd>& us,
                                       const Eigen::MatrixXd& f, const Eigen::VectorXd& y) const;
  // The earlier GPs' posterior means at the columns of `f`, each shifted by
  // its `shifts` on the numeric features where `active`
  // (FeatureMap::numeric_activity) says so (points x sources, raw units).
  Eigen::MatrixXd earlier_means(const Eigen::MatrixXd& f, const Eigen::MatrixXd& active,
                                const std::vector<Eigen::VectorXd>& shifts) const;
};

// The shift (one entry per `rows`, the numeric feature rows) that best aligns
// `earlier`'s posterior mean at f + shift, scaled and offset, with `y`:
// Levenberg-Marquardt on the squared misfit plus a Gaussian prior on the
// shift (sd kShiftSd); zero while there are fewer than rows + 3 points or the
// unshifted mean does not rise with y. A related task whose optimum moved
// is the same surface displaced.
// `active` (rows x points, 1 or 0): where each row's parameter is active (an
// inactive one reads a constant and is not shifted).
Eigen::VectorXd fit_input_shift(const GaussianProcess& earlier, const Eigen::MatrixXd& f,
                                const Eigen::MatrixXd& active, const Eigen::VectorXd& y,
                                const std::vector<int>& rows);

// The warm start's trust-region radius (L∞, unit coordinates) for the next
// trial, replaying the rule above over the completed trials numbered
// `first` or later; 0 when the region has just collapsed (search globally).
double trust_region_radius(std::span<const Observation> history, std::int64_t first);

// The prior mean's coefficients for values `y` whose earlier GPs' means are
// `means` (n x k): intercept first, then one non-negative slope per source,
// least squares (a source that would take a negative slope is dropped and
// the rest refitted: an earlier sweep that ranks this one's points the
// other way teaches nothing). Public for its unit test.
Eigen::VectorXd transfer_coefficients(const Eigen::MatrixXd& means, const Eigen::VectorXd& y);

}  // namespace hpo::search
