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

}  // namespace hpo::testing
