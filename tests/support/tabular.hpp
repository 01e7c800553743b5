// A small noisy tabular classification problem written as CSV, for tests that
// need real training data: three overlapping Gaussian classes in 10 dimensions,
// 4 informative features, plus 10% flipped labels (single small MLPs land well
// below 100%). Columns f0..f9 and the target y.
#pragma once

#include <cmath>
#include <cstdint>
#include <fstream>
#include <random>
#include <string>

namespace hpo::testing {

inline constexpr int kTabularFeatures = 10, kTabularClasses = 3;

inline void write_tabular_csv(const std::string& path, int rows, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::uniform_int_distribution<int> cls(0, kTabularClasses - 1);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::ofstream out(path);
  for (int f = 0; f < kTabularFeatures; ++f) out << "f" << f << ",";
  out << "y\n";
  for (int r = 0; r < rows; ++r) {
    int y = cls(rng);
    for (int f = 0; f < kTabularFeatures; ++f) {
      double center = f < 4 ? std::cos(2.1 * y + f) * 1.1 : 0.0;
      out << center + noise(rng) << ",";
    }
    out << (u(rng) < 0.1 ? cls(rng) : y) << "\n";
  }
}

// A small regression problem: 6 features, y = sin(2 x0) + x1 x2 / 2 + x3 + noise (sd 0.3);
// columns f0..f5 and the target y.
inline constexpr int kRegressionFeatures = 6;

inline void write_regression_csv(const std::string& path, int rows, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> x(0.0, 1.0), noise(0.0, 0.3);
  std::ofstream out(path);
  for (int f = 0; f < kRegressionFeatures; ++f) out << "f" << f << ",";
  out << "y\n";
  for (int r = 0; r < rows; ++r) {
    double v[kRegressionFeatures];
    for (double& f : v) f = x(rng);
    for (double f : v) out << f << ",";
    out << std::sin(2 * v[0]) + v[1] * v[2] / 2 + v[3] + noise(rng) << "\n";
  }
}

}  // namespace hpo::testing
