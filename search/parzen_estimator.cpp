#include "search/parzen_estimator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "search/normal.hpp"

namespace hpo::search {
namespace {

constexpr double kPriorWeight = 1.0;
constexpr double kUnitSpread = 0.2;  // the spread assumed with fewer than two observations

double log_sum_exp(const std::vector<double>& v) {
  double m = *std::max_element(v.begin(), v.end());
  if (!std::isfinite(m)) return m;
  double s = 0;
  for (double x : v) s += std::exp(x - m);
  return m + std::log(s);
}

}  // namespace

std::vector<double> tpe_default_weights(std::size_t n) {
  std::vector<double> w(n, 1.0);
  if (n < 25) return w;
  const std::size_t ramp = n - 25;
  for (std::size_t i = 0; i < ramp; ++i) {
    double lo = 1.0 / double(n);
    w[i] = ramp == 1 ? lo : lo + (1.0 - lo) * double(i) / double(ramp - 1);
  }
  return w;
}

ParzenEstimator::ParzenEstimator(std::vector<int> choices,
                                 const std::vector<std::vector<double>>& observations,
                                 const std::vector<double>& weights)
    : choices_(std::move(choices)) {
  const std::size_t d = choices_.size();
  const std::size_t n = observations.size();
  const std::size_t kernels = n + 1;  // the prior is the last kernel
  prior_kernel_ = n;
  const double shrink =
      std::pow(double(std::max<std::size_t>(n, 1)), -1.0 / double(std::max(d, std::size_t(1)) + 4));
  const double min_sigma = 1.0 / std::min(100.0, 1.0 + double(kernels));
  // Scott's rule per dimension: the observations' weighted spread there.
  sigma_.assign(d, kUnitSpread * shrink);
  double weight_sum = 0;
  for (std::size_t k = 0; k < n; ++k) weight_sum += weights[k];
  for (std::size_t i = 0; i < d && n >= 2 && weight_sum > 0; ++i) {
    if (choices_[i] != 0) continue;
    double mean = 0, var = 0;
    for (std::size_t k = 0; k < n; ++k) mean += weights[k] * observations[k][i];
    mean /= weight_sum;
    for (std::size_t k = 0; k < n; ++k)
      var += weights[k] * (observations[k][i] - mean) * (observations[k][i] - mean);
    sigma_[i] = std::sqrt(var / weight_sum) * shrink;
  }
  for (double& b : sigma_) b = std::clamp(b, min_sigma, 1.0);

  double total = kPriorWeight;
  for (double w : weights) total += w;
  for (std::size_t k = 0; k < kernels; ++k) {
    const bool prior = k == n;
    weights_.push_back((prior ? kPriorWeight : weights[k]) / total);
    log_weights_.push_back(std::log(weights_.back()));
    std::vector<double> mu(d), lnorm(d, 0.0);
    std::vector<std::vector<double>> lcat(d);
    for (std::size_t i = 0; i < d; ++i) {
      if (choices_[i] == 0) {
        mu[i] = prior ? 0.5 : observations[k][i];
        const double sigma = this->sigma(k, i);
        double mass = normal_cdf((1 - mu[i]) / sigma) - normal_cdf(-mu[i] / sigma);
        lnorm[i] = std::log(std::max(mass, 1e-300)) + std::log(sigma) + kHalfLogTwoPi;
      } else {
        const int c = choices_[i];
        std::vector<double> p(static_cast<std::size_t>(c),
                              prior ? 1.0 : kPriorWeight / double(kernels));
        if (!prior) p[static_cast<std::size_t>(observations[k][i])] += 1.0;
        double s = 0;
        for (double v : p) s += v;
        for (double& v : p) v = std::log(v / s);
        lcat[i] = std::move(p);
        mu[i] = prior ? -1 : observations[k][i];
      }
    }
    mus_.push_back(std::move(mu));
    log_norm_.push_back(std::move(lnorm));
    log_cat_.push_back(std::move(lcat));
  }
}

std::vector<double> ParzenEstimator::sample(Rng& rng) const {
  // Pick a kernel by weight, then draw every dimension from it.
  double r = rng.uniform();
  std::size_t k = 0;
  for (; k + 1 < weights_.size(); ++k) {
    if (r < weights_[k]) break;
    r -= weights_[k];
  }
  std::vector<double> x(choices_.size());
  for (std::size_t i = 0; i < choices_.size(); ++i) {
    if (choices_[i] == 0) {
      // Rejection from the untruncated normal: the kernel keeps >= 34% of its
      // mass inside [0, 1] (sigma <= 1, mu in [0, 1]), so this ends quickly.
      double v = mus_[k][i];
      for (int tries = 0; tries < 64; ++tries) {
        double c = mus_[k][i] + sigma(k, i) * rng.normal();
        if (c >= 0 && c <= 1) {
          v = c;
          break;
        }
      }
      x[i] = v;
    } else {
      double u = rng.uniform();
      const auto& lp = log_cat_[k][i];
      std::size_t c = 0;
      for (; c + 1 < lp.size(); ++c) {
        u -= std::exp(lp[c]);
        if (u < 0) break;
      }
      x[i] = double(c);
    }
  }
  return x;
}

double ParzenEstimator::log_pdf(const std::vector<double>& x) const {
  std::vector<double> terms(weights_.size());
  for (std::size_t k = 0; k < weights_.size(); ++k) {
    double t = log_weights_[k];
    for (std::size_t i = 0; i < choices_.size(); ++i) {
      if (choices_[i] == 0) {
        double z = (x[i] - mus_[k][i]) / sigma(k, i);
        t += -0.5 * z * z - log_norm_[k][i];
      } else {
        t += log_cat_[k][i][static_cast<std::size_t>(x[i])];
      }
    }
    terms[k] = t;
  }
  return log_sum_exp(terms);
}

}  // namespace hpo::search
