// Maximising an acquisition function over unit coordinates, shared by the GP
// samplers (bayesian_sampler.hpp, ehvi_sampler.hpp).
//
// Candidates: a scrambled Sobol set plus Gaussian perturbations (three
// scales) of the points the caller considers best, scored in one batch; the
// best few are refined by a pattern search in unit coordinates (+-step along
// every numeric coordinate, every other choice of each categorical, step
// halving; the starts run in lockstep, one batch per iteration, and a start
// that walks next to a better one stops). Everything is keyed by `key`, so
// the same inputs give the same point.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <vector>

#include "search/feature_map.hpp"

namespace hpo::search {

// Scores many unit-coordinate points at once; larger is better.
using BatchAcquisition = std::function<Eigen::VectorXd(const std::vector<Eigen::VectorXd>&)>;

// The unit point of highest acquisition found; `around`: the points to
// perturb, best first (at most `max_around` of them are used).
// `trust_radius` > 0 makes the search local (a trust region, as TuRBO and
// MORBO): no global candidates, and every candidate and every refining move
// stays within that L∞ distance of the `around` point it started from. Where
// the model cannot tell that some inputs matter (their effect is small beside
// the others'), its variance grows towards the faces of the cube and a global
// search of an optimistic acquisition lands there again and again.
Eigen::VectorXd maximize_acquisition(const FeatureMap& map, const BatchAcquisition& acq,
                                     const std::vector<Eigen::VectorXd>& around, std::uint64_t key,
                                     int max_around = 5, double trust_radius = 0);

}  // namespace hpo::search
