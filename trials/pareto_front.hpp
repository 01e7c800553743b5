// A sweep's result under several objectives: the Pareto front of its
// completed trials (GET /api/sweeps/{id}/pareto, `hpo pareto ID`) and the
// hypervolume it dominates.
//
// Counted: completed trials of role trial with every objective's metric
// finite that keep every one of the spec's `constraints` (infeasible trials
// are never on the front). Each objective's reference is the spec's `reference` or else the
// worst value among the counted trials; the hypervolume is in the objectives'
// own units (a product of their ranges), computed in minimise sense: exact
// where that is cheap (2 and 3 objectives, small fronts), else estimated in
// bounded time with its standard error.
#pragma once

#include <string>
#include <vector>

#include "trials/spec/spec.hpp"
#include "trials/trial.hpp"

namespace hpo::trials {

struct ParetoMember {
  std::string trial_id;
  std::int64_t number = 0;
  search::Params params;
  std::vector<double> values;  // per objective, the user's sense (not negated)
};

struct ParetoFront {
  std::vector<Objective> objectives;
  std::vector<ParetoMember> front;  // ascending trial number
  std::vector<double> reference;    // per objective, the user's sense
  double hypervolume = 0;
  // Exact, or (many objectives over a large front: search/pareto.hpp,
  // hypervolume_bounded) a Monte Carlo estimate with this standard error.
  bool hypervolume_exact = true;
  double hypervolume_std_error = 0;
  std::int64_t counted = 0;  // trials that took part
};

// `trials` in any order; those of other roles or states are skipped.
ParetoFront pareto_front(const SweepSpec& spec, const std::vector<const Trial*>& trials);

}  // namespace hpo::trials
