#include "search/gp.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>

#include "search/lbfgs.hpp"
#include "search/rng.hpp"

namespace hpo::search {
namespace {

const double kSqrt5 = std::sqrt(5.0);
constexpr double kLogTwoPi = 1.8378770664093453;

// Bounds of the log hyperparameters and the centre/width of their priors.
struct Box {
  double lo, hi, prior_mean, prior_sd;
};

struct HyperBoxes {
  Box lengthscale, signal, noise;
};

HyperBoxes boxes(int dims, double min_noise) {
  const double ls_mode = std::log(0.5 * std::sqrt(static_cast<double>(std::max(dims, 1))));
  return {{std::log(0.01), std::log(20.0), ls_mode, 1.2},
          {std::log(0.05), std::log(20.0), 0.0, 1.5},
          {std::log(min_noise), std::log(1.0), std::log(1e-4), 3.0}};
}

double sigmoid(double t) {
  return 1.0 / (1.0 + std::exp(-t));
}
double logit(double p) {
  return std::log(p / (1 - p));
}

// Packs hyperparameters into the unconstrained vector phi (sigmoid reparam).
Eigen::VectorXd to_phi(const GpHyperparameters& h, const HyperBoxes& b) {
  const Eigen::Index d = h.log_lengthscales.size();
  Eigen::VectorXd phi(d + 2);
  auto enc = [](double v, const Box& box) {
    double p = std::clamp((v - box.lo) / (box.hi - box.lo), 1e-6, 1 - 1e-6);
    return logit(p);
  };
  for (Eigen::Index i = 0; i < d; ++i) phi[i] = enc(h.log_lengthscales[i], b.lengthscale);
  phi[d] = enc(h.log_signal_var, b.signal);
  phi[d + 1] = enc(h.log_noise_var, b.noise);
  return phi;
}

GpHyperparameters from_phi(const Eigen::VectorXd& phi, const HyperBoxes& b,
                           Eigen::VectorXd* dtheta_dphi) {
  const Eigen::Index d = phi.size() - 2;
  GpHyperparameters h;
  h.log_lengthscales.resize(d);
  if (dtheta_dphi) dtheta_dphi->resize(d + 2);
  auto dec = [&](Eigen::Index i, const Box& box) {
    double s = sigmoid(phi[i]);
    if (dtheta_dphi) (*dtheta_dphi)[i] = (box.hi - box.lo) * s * (1 - s);
    return box.lo + (box.hi - box.lo) * s;
  };
  for (Eigen::Index i = 0; i < d; ++i) h.log_lengthscales[i] = dec(i, b.lengthscale);
  h.log_signal_var = dec(d, b.signal);
  h.log_noise_var = dec(d + 1, b.noise);
  return h;
}

// Log prior density (up to a constant) and its gradient in theta.
double log_prior(const GpHyperparameters& h, const HyperBoxes& b, const Eigen::VectorXd& learnt,
                 Eigen::VectorXd& grad) {
  const Eigen::Index d = h.log_lengthscales.size();
  grad.resize(d + 2);
  double lp = 0;
  auto add = [&](Eigen::Index i, double v, const Box& box) {
    double z = (v - box.prior_mean) / box.prior_sd;
    lp -= 0.5 * z * z;
    grad[i] = -z / box.prior_sd;
  };
  for (Eigen::Index i = 0; i < d; ++i) {
    Box box = b.lengthscale;
    if (learnt.size() == d) {
      box.prior_mean = learnt[i];
      box.prior_sd = GpFitOptions::kLearntLengthscaleSd;
    }
    add(i, h.log_lengthscales[i], box);
  }
  add(d, h.log_signal_var, b.signal);
  add(d + 1, h.log_noise_var, b.noise);
  return lp;
}

}  // namespace

std::vector<Eigen::Index> gp_subset(const Eigen::VectorXd& y, int m) {
  const Eigen::Index n = y.size();
  std::vector<Eigen::Index> idx(static_cast<std::size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  if (n <= m) return idx;
  std::vector<Eigen::Index> by_y = idx;
  std::stable_sort(by_y.begin(), by_y.end(), [&](auto a, auto b) { return y[a] < y[b]; });
  const auto best = static_cast<std::size_t>(m / 2);
  std::vector<char> taken(static_cast<std::size_t>(n), 0);
  std::vector<Eigen::Index> out(by_y.begin(), by_y.begin() + static_cast<std::ptrdiff_t>(best));
  for (auto i : out) taken[static_cast<std::size_t>(i)] = 1;
  std::vector<Eigen::Index> rest;
  for (auto i : idx)
    if (!taken[static_cast<std::size_t>(i)]) rest.push_back(i);
  const std::size_t want = static_cast<std::size_t>(m) - best;
  for (std::size_t k = 0; k < want; ++k) out.push_back(rest[k * rest.size() / want]);
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

Eigen::MatrixXd columns(const Eigen::MatrixXd& x, const std::vector<Eigen::Index>& idx) {
  Eigen::MatrixXd out(x.rows(), static_cast<Eigen::Index>(idx.size()));
  for (std::size_t k = 0; k < idx.size(); ++k)
    out.col(static_cast<Eigen::Index>(k)) = x.col(idx[k]);
  return out;
}

Eigen::VectorXd entries(const Eigen::VectorXd& y, const std::vector<Eigen::Index>& idx) {
  Eigen::VectorXd out(static_cast<Eigen::Index>(idx.size()));
  for (std::size_t k = 0; k < idx.size(); ++k) out[static_cast<Eigen::Index>(k)] = y[idx[k]];
  return out;
}

// Cholesky of K + noise I, adding jitter when K is numerically singular.
bool factor(Eigen::MatrixXd k, double noise, Eigen::LLT<Eigen::MatrixXd>& llt) {
  for (double jitter : {0.0, 1e-8, 1e-6, 1e-4}) {
    Eigen::MatrixXd kk = k;
    kk.diagonal().array() += noise + jitter;
    llt.compute(kk);
    if (llt.info() == Eigen::Success) return true;
  }
  return false;
}

}  // namespace

namespace {

// Matérn-5/2 between the rows of `at` (n x D) and the columns of `bs` (D x m),
// both already divided by the length scales. Squared distances are summed
// coordinate by coordinate (D is small): no cancellation, no GEMM packing.
Eigen::MatrixXd matern_scaled(const Eigen::MatrixXd& at, const Eigen::MatrixXd& bs, double sf2) {
  const Eigen::Index n = at.rows(), m = bs.cols(), d = at.cols();
  Eigen::ArrayXXd r2 = Eigen::ArrayXXd::Zero(n, m);
  for (Eigen::Index j = 0; j < m; ++j)
    for (Eigen::Index i = 0; i < d; ++i) r2.col(j) += (at.col(i).array() - bs(i, j)).square();
  // Array expressions vectorise exp (a scalar lambda does not).
  const Eigen::ArrayXXd r = r2.sqrt();
  return (sf2 * (1 + kSqrt5 * r + 5.0 / 3.0 * r2) * (-kSqrt5 * r).exp()).matrix();
}

}  // namespace

Eigen::MatrixXd GaussianProcess::kernel(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b,
                                        const GpHyperparameters& h) {
  const Eigen::ArrayXd inv_ls = (-h.log_lengthscales.array()).exp();
  const Eigen::MatrixXd at = (a.array().colwise() * inv_ls).matrix().transpose();
  const Eigen::MatrixXd bs = b.array().colwise() * inv_ls;
  return matern_scaled(at, bs, std::exp(h.log_signal_var));
}

namespace {

// Squared coordinate differences of every pair a > b (column-major pair
// order), precomputed once per fitting set: an evaluation of the likelihood
// then needs one matrix-vector product for all distances and one for the
// length-scale gradient.
struct PairTable {
  Eigen::Index n = 0;
  Eigen::MatrixXd diff2;  // pairs x D

  explicit PairTable(const Eigen::MatrixXd& x) : n(x.cols()) {
    diff2.resize(n * (n - 1) / 2, x.rows());
    Eigen::Index k = 0;
    for (Eigen::Index b = 0; b < n; ++b)
      for (Eigen::Index a = b + 1; a < n; ++a, ++k)
        diff2.row(k) = (x.col(a) - x.col(b)).array().square().transpose();
  }
};

// Inverse of the lower-triangular l (column-oriented forward substitution on
// the non-zero part of each unit column).
Eigen::MatrixXd lower_inverse(const Eigen::MatrixXd& l) {
  const Eigen::Index n = l.rows();
  Eigen::MatrixXd li = Eigen::MatrixXd::Zero(n, n);
  for (Eigen::Index j = 0; j < n; ++j) {
    auto x = li.col(j);
    x[j] = 1;
    for (Eigen::Index k = j; k < n; ++k) {
      x[k] /= l(k, k);
      x.tail(n - k - 1) -= x[k] * l.col(k).tail(n - k - 1);
    }
  }
  return li;
}

double lml_pairs(const PairTable& t, const Eigen::VectorXd& ys, const GpHyperparameters& h,
                 Eigen::VectorXd* grad) {
  const Eigen::Index n = t.n, d = t.diff2.cols();
  const Eigen::VectorXd inv_ls2 = (-2.0 * h.log_lengthscales.array()).exp().matrix();
  const double sf2 = std::exp(h.log_signal_var), sn2 = std::exp(h.log_noise_var);
  const Eigen::ArrayXd r = (t.diff2 * inv_ls2).array().max(0.0).sqrt();
  const Eigen::ArrayXd e = (-kSqrt5 * r).exp();
  const Eigen::ArrayXd kv = sf2 * (1 + kSqrt5 * r + 5.0 / 3.0 * r.square()) * e;
  Eigen::MatrixXd kf(n, n);
  Eigen::Index k = 0;
  for (Eigen::Index b = 0; b < n; ++b) {
    kf(b, b) = sf2;
    for (Eigen::Index a = b + 1; a < n; ++a, ++k) kf(a, b) = kf(b, a) = kv[k];
  }
  Eigen::LLT<Eigen::MatrixXd> llt;
  if (!factor(kf, sn2, llt)) return -std::numeric_limits<double>::infinity();
  Eigen::VectorXd alpha = llt.solve(ys);
  const Eigen::MatrixXd& l = llt.matrixLLT();
  double lml =
      -0.5 * ys.dot(alpha) - l.diagonal().array().log().sum() - 0.5 * double(n) * kLogTwoPi;
  if (!grad) return lml;

  // dL/dtheta_j = 1/2 tr(W dK/dtheta_j), W = alpha alpha^T - K^-1; W and dK are
  // symmetric, so the off-diagonal part is the sum over pairs a > b.
  // K^-1 = L^-T L^-1 from the triangular inverse, using the zeros of both
  // triangles: n^3/3 flops instead of the n^3 of a solve against I.
  const Eigen::MatrixXd li = lower_inverse(l);
  Eigen::VectorXd wp(t.diff2.rows());
  double trace_w = alpha.squaredNorm();
  k = 0;
  for (Eigen::Index b = 0; b < n; ++b) {
    trace_w -= li.col(b).tail(n - b).squaredNorm();
    for (Eigen::Index a = b + 1; a < n; ++a, ++k)
      wp[k] = alpha[a] * alpha[b] - li.col(a).tail(n - a).dot(li.col(b).tail(n - a));
  }
  grad->resize(d + 2);
  // dk/dlog(l_i) = 5/3 sf2 (1 + sqrt5 r) exp(-sqrt5 r) d_i^2 / l_i^2
  const Eigen::VectorXd c = (wp.array() * (5.0 / 3.0 * sf2) * (1 + kSqrt5 * r) * e).matrix();
  grad->head(d) = (t.diff2.transpose() * c).cwiseProduct(inv_ls2);
  (*grad)[d] = 0.5 * trace_w * sf2 + wp.dot(kv.matrix());
  (*grad)[d + 1] = 0.5 * sn2 * trace_w;
  return lml;
}

}  // namespace

double GaussianProcess::log_marginal_likelihood(const Eigen::MatrixXd& x, const Eigen::VectorXd& ys,
                                                const GpHyperparameters& h, Eigen::VectorXd* grad) {
  return lml_pairs(PairTable(x), ys, h, grad);
}

void GaussianProcess::fit(const Eigen::MatrixXd& x, const Eigen::VectorXd& y,
                          const GpFitOptions& options, std::uint64_t seed) {
  const int d = static_cast<int>(x.rows());
  y_mean_ = y.mean();
  double var = y.size() > 1 ? (y.array() - y_mean_).square().sum() / double(y.size() - 1) : 0.0;
  y_std_ = var > 1e-300 ? std::sqrt(var) : 1.0;
  const Eigen::VectorXd ys = (y.array() - y_mean_) / y_std_;
  const HyperBoxes b = boxes(d, options.min_noise_var);

  auto objective_on = [&](const Eigen::MatrixXd& xf, const Eigen::VectorXd& yf) {
    const double scale = 1.0 / std::max<double>(1.0, double(yf.size()));
    auto table = std::make_shared<const PairTable>(xf);
    return [&, table, yf, scale](const Eigen::VectorXd& phi, Eigen::VectorXd& g) {
      Eigen::VectorXd chain, g_lml, g_prior;
      GpHyperparameters h = from_phi(phi, b, &chain);
      double lml = lml_pairs(*table, yf, h, &g_lml);
      if (!std::isfinite(lml)) return std::numeric_limits<double>::infinity();
      double lp = log_prior(h, b, options.learnt_log_lengthscales, g_prior);
      g = -scale * ((g_lml + g_prior).array() * chain.array()).matrix();
      return -scale * (lml + lp);
    };
  };

  // Starts: the prior mode, short and long length scales, seeded prior draws.
  std::vector<GpHyperparameters> starts;
  auto start = [&](double log_ls) {
    GpHyperparameters h;
    h.log_lengthscales = Eigen::VectorXd::Constant(d, log_ls);
    h.log_signal_var = 0;
    h.log_noise_var = std::log(1e-3);
    return h;
  };
  starts.push_back(start(b.lengthscale.prior_mean));
  starts.push_back(start(std::log(0.15)));
  starts.push_back(start(std::log(2.0)));
  if (options.learnt_log_lengthscales.size() == d) {
    GpHyperparameters h = start(0);
    h.log_lengthscales = options.learnt_log_lengthscales;
    starts.push_back(h);
  }
  Rng rng(seed, 0, 0x47504649);  // "GPFI"
  for (int s = 0; s < options.random_starts; ++s) {
    GpHyperparameters h = start(0);
    for (int i = 0; i < d; ++i)
      h.log_lengthscales[i] = b.lengthscale.prior_mean + b.lengthscale.prior_sd * rng.normal();
    h.log_signal_var = 0.5 * rng.normal();
    h.log_noise_var = std::log(1e-3) + 2 * rng.normal();
    starts.push_back(h);
  }

  auto fit_idx = gp_subset(y, options.fit_subset);
  auto f_fit = objective_on(columns(x, fit_idx), entries(ys, fit_idx));
  LbfgsOptions lo;
  lo.max_iterations = options.max_iterations;
  lo.max_evaluations = 2 * options.max_iterations;
  lo.relative_tolerance = options.tolerance;
  double best_value = std::numeric_limits<double>::infinity();
  Eigen::VectorXd best_phi = to_phi(starts[0], b);
  for (const auto& h : starts) {
    auto r = lbfgs_minimize(f_fit, to_phi(h, b), lo);
    if (r.value < best_value) {
      best_value = r.value;
      best_phi = r.x;
    }
  }
  if (options.polish_subset > 0 && y.size() > options.fit_subset) {
    auto polish_idx = gp_subset(y, options.polish_subset);
    auto f_polish = objective_on(columns(x, polish_idx), entries(ys, polish_idx));
    LbfgsOptions po;
    po.max_iterations = options.polish_iterations;
    po.max_evaluations = 2 * options.polish_iterations;
    po.relative_tolerance = options.tolerance;
    best_phi = lbfgs_minimize(f_polish, best_phi, po).x;
  }
  hyper_ = from_phi(best_phi, b, nullptr);
  condition(x, y);
}

void GaussianProcess::condition(const Eigen::MatrixXd& x, const Eigen::VectorXd& y,
                                Eigen::Index exact_tail) {
  x_ = x;
  inv_ls_ = (-hyper_.log_lengthscales.array()).exp();
  xs_t_ = (x_.array().colwise() * inv_ls_).matrix().transpose();
  const Eigen::VectorXd ys = (y.array() - y_mean_) / y_std_;
  Eigen::MatrixXd k = kernel(x_, x_, hyper_);
  const double noise = std::exp(hyper_.log_noise_var);
  // factor() adds `noise` everywhere; take it back from the exact tail (it
  // keeps 1e-6 of it as jitter).
  const Eigen::Index tail = std::min(exact_tail, x.cols());
  k.diagonal().tail(tail).array() -= std::max(0.0, noise - 1e-6);
  if (!factor(k, noise, llt_)) {
    // Unreachable in practice (jitter 1e-4 on a unit-variance kernel); fall
    // back to a strongly regularised fit rather than failing the ask.
    factor(kernel(x_, x_, hyper_), 1e-2, llt_);
  }
  alpha_ = llt_.solve(ys);
  // L^-1 once, so that each batch of predictions is one triangular matrix
  // product instead of a triangular solve (faster for the small batches of
  // the local search).
  l_inv_ = llt_.matrixL().solve(Eigen::MatrixXd::Identity(x_.cols(), x_.cols()));
}

void GaussianProcess::predict(const Eigen::MatrixXd& xc, Eigen::VectorXd& mean,
                              Eigen::VectorXd& var) const {
  const double sf2 = std::exp(hyper_.log_signal_var);
  if (x_.cols() == 0) {
    mean = Eigen::VectorXd::Zero(xc.cols());
    var = Eigen::VectorXd::Constant(xc.cols(), sf2);
    return;
  }
  const Eigen::MatrixXd xcs = xc.array().colwise() * inv_ls_;
  const Eigen::MatrixXd ks = matern_scaled(xs_t_, xcs, sf2);  // n x m
  mean = ks.transpose() * alpha_;
  const Eigen::MatrixXd v = l_inv_.triangularView<Eigen::Lower>() * ks;
  var = (sf2 - v.colwise().squaredNorm().transpose().array()).max(1e-12 * sf2).matrix();
}

Eigen::VectorXd GaussianProcess::predict_raw_mean(const Eigen::MatrixXd& xc) const {
  if (x_.cols() == 0) return Eigen::VectorXd::Constant(xc.cols(), y_mean_);
  const Eigen::MatrixXd xcs = xc.array().colwise() * inv_ls_;
  const Eigen::VectorXd mean =
      matern_scaled(xs_t_, xcs, std::exp(hyper_.log_signal_var)).transpose() * alpha_;
  return (mean.array() * y_std_ + y_mean_).matrix();
}

}  // namespace hpo::search
