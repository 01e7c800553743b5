#pragma once
// The standard normal distribution's constants and CDF, shared by the
// acquisition functions and TPE's Parzen estimator.
#include <cmath>

namespace hpo::search {

inline constexpr double kHalfLogTwoPi = 0.91893853320467274;  // log(2 pi) / 2
inline constexpr double kSqrtHalf = 0.70710678118654752;      // 1 / sqrt(2)

inline double normal_cdf(double z) {
  return 0.5 * std::erfc(-z * kSqrtHalf);
}

}  // namespace hpo::search
