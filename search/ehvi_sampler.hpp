// Multi-objective Bayesian optimisation: one Gaussian process per objective
// and expected hypervolume improvement (EHVI), for several objectives
// (Observation::values, all minimised).
//
// Each ask rebuilds everything from (seed, number, history, pending), so a
// restarted scheduler continues the same sweep:
//  1. Trials 0 .. n_initial-1 (default max(5, d + 1)), or while fewer than two
//     trials have completed, take scrambled Sobol point `number`.
//  2. Otherwise fit an independent GP (gp.hpp) to each objective of the
//     completed trials, in feature space (feature_map.hpp).
//  3. Pending trials are fantasised a standard deviation above the posterior
//     means (a pessimistic kriging believer: exact points of every GP and
//     members of the front, so no two asks propose the same point, without
//     the optimism that draws concurrent asks to the edges); failed trials at
//     the worst observed value of each objective.
//  4. The front is the non-dominated set of the observed (and fantasised)
//     points. The reference point is the worst observed value of each
//     objective pushed out by a tenth of its range (the sweep's own
//     reference when none is declared: trials/pareto_front.hpp), or the
//     declared reference once an observed point lies strictly inside it (so
//     that a sweep far from the declared box still sees improvement).
//  5. EHVI(x) = E[HVI(y)], y ~ the GPs' posterior at x, exactly: the region
//     the front leaves below the reference is cut into boxes once per ask
//     (improvement_boxes.hpp) and each box's expected share is a product of
//     closed-form normal expectations. (Monte Carlo over fixed antithetic
//     draws, exact HVI per draw, only where the boxes would be too many: four
//     or more objectives with a large front.) Where the improvement is zero
//     (every outcome dominated), the score is minus the distance by which the
//     posterior mean would have to improve in every objective to leave the
//     front's shadow, so the optimiser still climbs towards the front.
//  Constraints (Observation::violations, feasibility.hpp): a GP per
//     constraint; the front and the reference hold feasible trials only, and
//     EHVI is weighted by P(feasible) (log P(feasible) alone while no trial
//     is feasible).
//  6. Maximise it with acquisition_optimizer.hpp in trust regions (L∞
//     radius 0.1 of the unit cube) around evenly spread front members, and
//     globally; return the local winner, rounded to valid values, unless
//     the global one's posterior means alone (not their variance) add three
//     times the local one's hypervolume. Local by default: with inputs whose
//     small effect the GPs have not resolved, the variance grows towards the
//     faces of the cube and a global search kept landing there (on DTLZ2,
//     55-88 % of the trials); the escape follows a model that predicts
//     improvement further away (ZDT1's front lies on a face).
// All randomness comes from Rng / Sobol keyed by (seed, number).
#pragma once

#include <vector>

#include "search/feature_map.hpp"
#include "search/pareto.hpp"
#include "search/sampler.hpp"

namespace hpo::search {

// The volume that point y adds to the hypervolume of `front` up to
// `reference` (all minimised; 0 when y is weakly dominated by a front member
// or does not strictly dominate the reference). `front`: mutually
// non-dominated points, for two objectives sorted by the first ascending.
double hypervolume_improvement(const std::vector<Point>& front, const Point& y,
                               const Point& reference);

class EhviSampler final : public Sampler {
 public:
  // reference: the declared reference point (minimise sense; empty: none).
  EhviSampler(SearchSpace space, std::uint64_t seed, int n_initial = 0,
              std::vector<double> reference = {});

  std::optional<Params> ask(std::span<const Observation> history, std::span<const Params> pending,
                            std::int64_t number) override;

  int initial_design() const override { return n_initial_; }

 private:
  FeatureMap map_;
  std::uint64_t seed_;
  int n_initial_;
  std::vector<double> reference_;
};

}  // namespace hpo::search
