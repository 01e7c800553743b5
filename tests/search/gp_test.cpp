#include "search/gp.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "search/acquisition.hpp"
#include "search/lbfgs.hpp"
#include "search/rng.hpp"

namespace hpo::search {
namespace {

double smooth(double a, double b) {
  return std::sin(5 * a) + std::cos(3 * b) + a * b;
}

Eigen::MatrixXd random_points(int d, int n, std::uint64_t seed) {
  Rng rng(seed);
  Eigen::MatrixXd x(d, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < d; ++i) x(i, j) = rng.uniform();
  return x;
}

TEST(GaussianProcess, InterpolatesNoiseFreePointsAndVarianceShrinksThere) {
  Eigen::MatrixXd x = random_points(2, 12, 1);
  Eigen::VectorXd y(12);
  for (int j = 0; j < 12; ++j) y[j] = smooth(x(0, j), x(1, j));
  GaussianProcess gp;
  gp.fit(x, y, GpFitOptions{}, 7);
  EXPECT_LT(std::exp(gp.hyperparameters().log_noise_var), 1e-3);
  Eigen::VectorXd mean, var;
  gp.predict(x, mean, var);
  for (int j = 0; j < 12; ++j) {
    EXPECT_NEAR(mean[j], gp.standardize(y[j]), 2e-2) << j;
    EXPECT_LT(var[j], 1e-2) << j;
  }
  // Far from the data (and between points) the variance is larger.
  Eigen::MatrixXd probe(2, 2);
  probe << 1.6, -0.6, 1.6, -0.6;
  Eigen::VectorXd pm, pv;
  gp.predict(probe, pm, pv);
  EXPECT_GT(pv.minCoeff(), 20 * var.maxCoeff());
  EXPECT_GT(pv.minCoeff(), 0.3 * std::exp(gp.hyperparameters().log_signal_var));
}

TEST(GaussianProcess, LogMarginalLikelihoodGradientMatchesFiniteDifferences) {
  Eigen::MatrixXd x = random_points(3, 15, 2);
  Eigen::VectorXd y(15);
  for (int j = 0; j < 15; ++j) y[j] = smooth(x(0, j), x(1, j)) + 0.3 * x(2, j);
  y = (y.array() - y.mean()) / 1.3;
  GpHyperparameters h;
  h.log_lengthscales = Eigen::Vector3d(std::log(0.3), std::log(0.7), std::log(1.5));
  h.log_signal_var = 0.2;
  h.log_noise_var = std::log(1e-2);
  Eigen::VectorXd grad;
  GaussianProcess::log_marginal_likelihood(x, y, h, &grad);
  ASSERT_EQ(grad.size(), 5);
  for (int k = 0; k < 5; ++k) {
    auto shifted = [&](double e) {
      GpHyperparameters g = h;
      if (k < 3) g.log_lengthscales[k] += e;
      if (k == 3) g.log_signal_var += e;
      if (k == 4) g.log_noise_var += e;
      return GaussianProcess::log_marginal_likelihood(x, y, g, nullptr);
    };
    double fd = (shifted(1e-5) - shifted(-1e-5)) / 2e-5;
    EXPECT_NEAR(grad[k], fd, 1e-4 * std::max(1.0, std::abs(fd))) << k;
  }
}

TEST(GaussianProcess, FitSurvivesDuplicatesAndConstantOutputs) {
  Eigen::MatrixXd x(2, 6);
  x << 0.5, 0.5, 0.5, 0.1, 0.1, 0.9, 0.5, 0.5, 0.5, 0.2, 0.2, 0.9;
  Eigen::VectorXd constant = Eigen::VectorXd::Constant(6, 3.0);
  Eigen::VectorXd dup(6);
  dup << 1, 1.1, 0.9, 2, 2, 5;
  for (const Eigen::VectorXd& y : {constant, dup}) {
    GaussianProcess gp;
    gp.fit(x, y, GpFitOptions{}, 3);
    Eigen::VectorXd mean, var;
    gp.predict(random_points(2, 10, 4), mean, var);
    EXPECT_TRUE(mean.allFinite());
    EXPECT_TRUE(var.allFinite());
    EXPECT_GT(var.minCoeff(), 0);
  }
}

TEST(GaussianProcess, SubsetKeepsTheBestAndSpreadsTheRest) {
  Eigen::VectorXd y(10);
  y << 5, 0, 9, 1, 8, 2, 7, 3, 6, 4;
  auto s = gp_subset(y, 4);
  ASSERT_EQ(s.size(), 4u);
  // y = 0 and y = 1 (indices 1, 3) are the best two; 0 and 6 spread over the rest.
  EXPECT_EQ(s, (std::vector<Eigen::Index>{0, 1, 3, 6}));
  EXPECT_EQ(gp_subset(y, 20).size(), 10u);
}

// h(z) = phi(z) + z Phi(z) in long double: exact enough for z >= -100 (the
// cancellation costs at most 4 of its 19 digits there).
long double h_reference(long double z) {
  const long double pi = 3.14159265358979323846264338327950288L;
  long double phi = std::exp(-z * z / 2) / std::sqrt(2 * pi);
  long double cdf = 0.5L * std::erfc(-z / std::sqrt(2.0L));
  return phi + z * cdf;
}

TEST(LogExpectedImprovement, MatchesTheClosedForm) {
  for (double z = -100; z <= 6; z += 0.37) {
    double ref = static_cast<double>(std::log(h_reference(z)));
    EXPECT_NEAR(log_h(z), ref, 1e-9 * std::max(1.0, std::abs(ref))) << "z=" << z;
  }
  // Branch boundaries are continuous.
  for (double z : {-1.0, -30.0}) EXPECT_NEAR(log_h(z - 1e-9), log_h(z + 1e-9), 1e-6) << z;
  // EI itself: sigma * h(z), e.g. mean 1, sigma 2, best 0.5 -> z = -0.25.
  const double z = -0.25;
  double ei =
      2 * (std::exp(-z * z / 2) / std::sqrt(2 * M_PI) + z * 0.5 * std::erfc(-z / std::sqrt(2)));
  EXPECT_NEAR(log_expected_improvement(1, 2, 0.5), std::log(ei), 1e-12);
  // Far below: finite and decreasing, where plain EI is 0.
  EXPECT_TRUE(std::isfinite(log_h(-1e4)));
  EXPECT_LT(log_h(-1e4), log_h(-1e3));
}

TEST(Lbfgs, MinimisesRosenbrock) {
  Objective f = [](const Eigen::VectorXd& x, Eigen::VectorXd& g) {
    double a = 1 - x[0], b = x[1] - x[0] * x[0];
    g[0] = -2 * a - 400 * x[0] * b;
    g[1] = 200 * b;
    return a * a + 100 * b * b;
  };
  LbfgsOptions o;
  o.max_iterations = 200;
  o.max_evaluations = 1000;
  o.relative_tolerance = 0;
  auto r = lbfgs_minimize(f, Eigen::Vector2d(-1.2, 1.0), o);
  EXPECT_NEAR(r.x[0], 1, 1e-4);
  EXPECT_NEAR(r.x[1], 1, 1e-4);
}

}  // namespace
}  // namespace hpo::search
