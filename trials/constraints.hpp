// Spec `constraints`: bounds on metrics a completed trial reports, and
// whether a trial keeps them. One definition for the stores (a sweep's best),
// the Pareto front, the ensemble stage and the controller (which hands the
// violations to the samplers: search/feasibility.hpp).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hpo::trials {

// A bound a completed trial's metric must keep for the trial to be feasible
// (spec `constraints`): metric <= max and/or metric >= min. Only feasible
// trials are a sweep's best or on its Pareto front.
struct MetricBound {
  std::string metric;
  std::optional<double> max;
  std::optional<double> min;
};

// How far `value` lies outside `bound`: > 0 broken, <= 0 kept (the margin);
// NaN for a NaN value.
double violation(const MetricBound& bound, double value);

// Whether `metrics` keeps every bound; a bound on a metric the trial did not
// report (or reported as NaN) is broken.
bool feasible(const std::vector<MetricBound>& bounds, const std::map<std::string, double>& metrics);

}  // namespace hpo::trials
