#include "search/feasibility.hpp"

#include <cmath>
#include <limits>

#include "search/rng.hpp"

namespace hpo::search {

bool is_feasible(std::span<const double> violations) {
  for (double v : violations)
    if (!(v <= 0)) return false;
  return true;
}

double total_violation(std::span<const double> violations) {
  double sum = 0;
  for (double v : violations) {
    if (std::isnan(v)) return std::numeric_limits<double>::infinity();
    if (v > 0) sum += v;
  }
  return sum;
}

double log_normal_cdf(double z) {
  if (z > -30) return std::log(0.5 * std::erfc(-z / std::sqrt(2.0)));
  // Mills ratio asymptote: Phi(z) ~ phi(z) / |z| (1 - 1/z^2 + 3/z^4).
  const double z2 = z * z;
  return -0.5 * z2 - std::log(-z) - 0.5 * std::log(2 * M_PI) + std::log1p(-1 / z2 + 3 / (z2 * z2));
}

FeasibilityModel::FeasibilityModel(const FeatureMap& map, const std::vector<Eigen::VectorXd>& us,
                                   const std::vector<std::vector<double>>& violations,
                                   std::uint64_t key) {
  std::size_t k = 0;
  for (const auto& v : violations) k = std::max(k, v.size());
  for (std::size_t c = 0; c < k; ++c) {
    std::vector<Eigen::VectorXd> train;
    std::vector<double> ys;
    for (std::size_t i = 0; i < us.size(); ++i)
      if (c < violations[i].size() && std::isfinite(violations[i][c])) {
        train.push_back(us[i]);
        ys.push_back(violations[i][c]);
      }
    if (train.size() < 2) continue;  // nothing to learn from yet: no term
    Eigen::VectorXd y = Eigen::Map<const Eigen::VectorXd>(ys.data(), Eigen::Index(ys.size()));
    GaussianProcess gp;
    gp.fit(map.features(train), y, GpFitOptions{}, hash_key(key, 0x434f4e53, c));
    gps_.push_back(std::move(gp));
  }
}

Eigen::VectorXd FeasibilityModel::log_probability(const Eigen::MatrixXd& f) const {
  Eigen::VectorXd out = Eigen::VectorXd::Zero(f.cols());
  for (const GaussianProcess& gp : gps_) {
    Eigen::VectorXd mean, var;
    gp.predict(f, mean, var);
    const double zero = gp.standardize(0);
    for (Eigen::Index i = 0; i < out.size(); ++i)
      out[i] += log_normal_cdf((zero - mean[i]) / std::sqrt(std::max(var[i], 1e-12)));
  }
  return out;
}

}  // namespace hpo::search
