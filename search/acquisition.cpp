#include "search/acquisition.hpp"

#include <cmath>

#include "search/normal.hpp"

namespace hpo::search {
namespace {

constexpr double kSqrtHalfPi = 1.2533141373155003;  // sqrt(pi / 2)

}  // namespace

double log_h(double z) {
  if (z > -1) {
    double phi = std::exp(-0.5 * z * z - kHalfLogTwoPi);
    double cdf = normal_cdf(z);
    return std::log(phi + z * cdf);
  }
  const double a = -z;  // > 1
  const double log_phi = -0.5 * z * z - kHalfLogTwoPi;
  if (a < 30) {
    double x = a * kSqrtHalf;
    double erfcx = std::erfc(x) * std::exp(x * x);
    return log_phi + std::log1p(-a * kSqrtHalfPi * erfcx);
  }
  const double t = 1.0 / (a * a);
  // 1 - a R(a) = t (1 - 3t + 15t^2 - 105t^3 + 945t^4 - 10395t^5 + ...)
  double series = 1 + t * (-3 + t * (15 + t * (-105 + t * (945 + t * -10395))));
  return log_phi + std::log(t) + std::log(series);
}

double log_expected_improvement(double mean, double sigma, double best) {
  return std::log(sigma) + log_h((best - mean) / sigma);
}

}  // namespace hpo::search
