#include "trials/constraints.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hpo::trials {

double violation(const MetricBound& bound, double value) {
  if (std::isnan(value)) return value;
  double v = -std::numeric_limits<double>::infinity();
  if (bound.max) v = std::max(v, value - *bound.max);
  if (bound.min) v = std::max(v, *bound.min - value);
  return v;
}

bool feasible(const std::vector<MetricBound>& bounds,
              const std::map<std::string, double>& metrics) {
  for (const MetricBound& b : bounds) {
    auto m = metrics.find(b.metric);
    if (m == metrics.end() || !(violation(b, m->second) <= 0)) return false;
  }
  return true;
}

}  // namespace hpo::trials
