// Constraints in the samplers: which trials are feasible, and a model of the
// probability that a point keeps every constraint.
//
// Observation::violations holds, per constraint, how far the trial's metric
// lies outside its bound (> 0 broken, <= 0 kept by that margin; NaN when the
// trial did not report it, which counts as broken). The model fits one GP
// (gp.hpp) per constraint to the finite violations of completed trials and
// scores log P(every violation <= 0) = sum over constraints of
// log Phi((0 - mean) / sd), the constrained-EI recipe of Gardner et al. 2014
// (independent constraints).
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <span>
#include <vector>

#include "search/feature_map.hpp"
#include "search/gp.hpp"
#include "search/sampler.hpp"

namespace hpo::search {

// No constraint broken (no violations at all: feasible).
bool is_feasible(std::span<const double> violations);
inline bool is_feasible(const Observation& o) {
  return is_feasible(o.violations);
}
// The sum of the broken constraints' violations; +inf when one is NaN.
double total_violation(std::span<const double> violations);

// log Phi(z), finite for every finite z.
double log_normal_cdf(double z);

class FeasibilityModel {
 public:
  // us[i] (unit coordinates) and violations[i] belong to one completed trial;
  // violations may be empty (no constraints: the model stays empty).
  FeasibilityModel(const FeatureMap& map, const std::vector<Eigen::VectorXd>& us,
                   const std::vector<std::vector<double>>& violations, std::uint64_t key);

  bool empty() const { return gps_.empty(); }

  // log P(every constraint kept) at the feature columns `f` (0 when empty).
  Eigen::VectorXd log_probability(const Eigen::MatrixXd& f) const;

 private:
  std::vector<GaussianProcess> gps_;
};

}  // namespace hpo::search
