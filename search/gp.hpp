// Gaussian-process regression with a Matérn-5/2 ARD kernel, for the Bayesian
// sampler.
//
// Inputs are points of the unit cube (columns of a D x n matrix); outputs are
// standardised here (mean 0, variance 1), and everything the GP returns is in
// those standard units. Kernel hyperparameters — one length scale per input
// dimension, the signal variance and a noise variance — are fitted by
// maximising the log marginal likelihood plus weak log-normal priors (a MAP
// estimate: the priors keep length scales sane on 5 points and keep the
// noise from collapsing onto an ill-conditioned matrix). The optimisation runs
// L-BFGS with analytic gradients on a sigmoid reparametrisation of the log
// hyperparameters (which enforces the bounds smoothly), from several starts:
// the prior mode, two fixed length-scale guesses and seeded random draws.
// Large data sets are fitted on a deterministic subset (the best half plus an
// even spread of the rest) and then polished on more points, which keeps one
// fit within milliseconds; conditioning always uses every point it is given.
//
// Numerical safety: duplicate inputs and constant outputs are fine (noise
// >= 1e-6 and a jitter ladder on Cholesky failure; a constant y standardises
// to zeros).
#pragma once

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <vector>

namespace hpo::search {

class Rng;

struct GpHyperparameters {
  Eigen::VectorXd log_lengthscales;  // D
  double log_signal_var = 0;
  double log_noise_var = std::log(1e-3);
};

struct GpFitOptions {
  int random_starts = 0;    // on top of 3 fixed starts
  int max_iterations = 25;  // per start, on the fitting subset
  int fit_subset = 32;      // points used by the multi-start search
  int polish_subset = 64;   // points used by the final polish (0: none)
  int polish_iterations = 8;
  double tolerance = 1e-6;      // relative improvement that ends an L-BFGS run
  double min_noise_var = 1e-6;  // in standard units
  // Length scales learnt elsewhere (a warm start's earlier sweeps): when set
  // (size D), each length scale's log-normal prior is centred on them with
  // spread kLearntLengthscaleSd instead of the generic one, and they are one
  // more start. A few points of a related task then fit its shape at once.
  Eigen::VectorXd learnt_log_lengthscales;
  static constexpr double kLearntLengthscaleSd = 0.5;
};

// A deterministic subset of at most m indices of y: the best half by value,
// then an even spread over the rest (in input order). All indices when n <= m.
std::vector<Eigen::Index> gp_subset(const Eigen::VectorXd& y, int m);

class GaussianProcess {
 public:
  // Fits the hyperparameters and conditions on (x, y). x: D x n, y: n raw values.
  void fit(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const GpFitOptions& options,
           std::uint64_t seed);

  // Conditions on (x, y) with the current hyperparameters and standardisation
  // (y in raw units), e.g. to add fantasised pending points. The last
  // `exact_tail` points are taken as noise-free (fantasies: the model should be
  // certain there, whatever noise it fitted to the real observations).
  void condition(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, Eigen::Index exact_tail = 0);

  // Posterior of the latent function at the columns of `xc`, standard units.
  void predict(const Eigen::MatrixXd& xc, Eigen::VectorXd& mean, Eigen::VectorXd& var) const;
  // The posterior mean alone, in raw units (no variance: O(n) per point).
  Eigen::VectorXd predict_raw_mean(const Eigen::MatrixXd& xc) const;

  double standardize(double y) const { return (y - y_mean_) / y_std_; }
  double unstandardize(double z) const { return z * y_std_ + y_mean_; }
  const GpHyperparameters& hyperparameters() const { return hyper_; }
  void set_hyperparameters(const GpHyperparameters& h) { hyper_ = h; }
  int dims() const { return static_cast<int>(hyper_.log_lengthscales.size()); }

  // Log marginal likelihood of standardised `ys` at hyperparameters `h`, with
  // the gradient with respect to (log lengthscales, log signal var, log noise
  // var) written into `grad` when it is non-null. -inf when K is not PD.
  static double log_marginal_likelihood(const Eigen::MatrixXd& x, const Eigen::VectorXd& ys,
                                        const GpHyperparameters& h, Eigen::VectorXd* grad);

  // Matérn-5/2 ARD covariance between the columns of a and b (no noise).
  static Eigen::MatrixXd kernel(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b,
                                const GpHyperparameters& h);

 private:
  GpHyperparameters hyper_;
  Eigen::MatrixXd x_;
  Eigen::ArrayXd inv_ls_;  // 1 / length scales at the last condition()
  Eigen::MatrixXd xs_t_;   // x_ divided by the length scales, transposed (n x D)
  Eigen::LLT<Eigen::MatrixXd> llt_;
  Eigen::MatrixXd l_inv_;  // inverse of the Cholesky factor
  Eigen::VectorXd alpha_;
  double y_mean_ = 0;
  double y_std_ = 1;
};

}  // namespace hpo::search
