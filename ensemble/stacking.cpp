// The two meta-models of stacking.hpp. Sizes are small (models ≤ a few dozen,
// classes ≤ hundreds), so plain loops over precomputed features suffice.
#include "ensemble/stacking.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ensemble/metrics.hpp"

namespace hpo::ensemble {
namespace {

constexpr int kMaxIterations = 200;
constexpr double kLambdasClassification[] = {1e-4, 1e-3, 1e-2, 1e-1};
constexpr double kLambdasRegression[] = {1e-4, 1e-3, 1e-2, 1e-1, 1};

// Classification: the log-linear pool's objective and gradient on precomputed
// log-probabilities lp[j][i*K + k].
struct LogPool {
  const std::vector<std::vector<double>>& lp;
  const std::vector<int>& labels;
  std::int64_t n, k;
  std::size_t m;
  double lambda;

  // Mean NLL + penalty; the gradient into gw / gb when given.
  double eval(const std::vector<double>& w, const std::vector<double>& b, std::vector<double>* gw,
              std::vector<double>* gb) const {
    if (gw) gw->assign(m, 0.0);
    if (gb) gb->assign(static_cast<std::size_t>(k), 0.0);
    std::vector<double> z(static_cast<std::size_t>(k));
    double total = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t c = 0; c < k; ++c) {
        double v = b[static_cast<std::size_t>(c)];
        for (std::size_t j = 0; j < m; ++j) v += w[j] * lp[j][static_cast<std::size_t>(i * k + c)];
        z[static_cast<std::size_t>(c)] = v;
      }
      double mx = *std::max_element(z.begin(), z.end()), sum = 0;
      for (double& v : z) sum += (v = std::exp(v - mx));
      const int y = labels[static_cast<std::size_t>(i)];
      total += -std::log(std::max(z[static_cast<std::size_t>(y)] / sum, 1e-300));
      if (!gw) continue;
      for (std::int64_t c = 0; c < k; ++c) {
        double d = z[static_cast<std::size_t>(c)] / sum - (c == y ? 1.0 : 0.0);
        (*gb)[static_cast<std::size_t>(c)] += d;
        for (std::size_t j = 0; j < m; ++j)
          (*gw)[j] += d * lp[j][static_cast<std::size_t>(i * k + c)];
      }
    }
    const double inv = 1.0 / static_cast<double>(n);
    double penalty = 0;
    for (std::size_t j = 0; j < m; ++j) penalty += 0.5 * lambda * w[j] * w[j];
    if (gw) {
      for (std::size_t j = 0; j < m; ++j) (*gw)[j] = (*gw)[j] * inv + lambda * w[j];
      for (double& g : *gb) g *= inv;
    }
    return total * inv + penalty;
  }
};

StackingModel fit_classification(const std::vector<Matrix>& p, const Targets& t, double lambda) {
  const std::size_t m = p.size();
  const std::int64_t n = p[0].rows, k = p[0].cols;
  std::vector<std::vector<double>> lp(m);
  for (std::size_t j = 0; j < m; ++j) {
    lp[j].resize(p[j].data.size());
    for (std::size_t x = 0; x < p[j].data.size(); ++x)
      lp[j][x] = std::log(std::max(static_cast<double>(p[j].data[x]), kStackingLogFloor));
  }
  LogPool f{lp, t.labels, n, k, m, lambda};
  std::vector<double> w(m, 1.0 / static_cast<double>(m)), b(static_cast<std::size_t>(k), 0.0);
  std::vector<double> gw, gb, w2(m), b2(b.size());
  double fx = f.eval(w, b, &gw, &gb), step = 1.0;
  for (int it = 0; it < kMaxIterations; ++it) {
    double g2 = 0;
    for (double g : gw) g2 += g * g;
    for (double g : gb) g2 += g * g;
    if (g2 < 1e-14) break;
    bool moved = false;
    for (int halve = 0; halve < 40; ++halve) {
      for (std::size_t j = 0; j < m; ++j) w2[j] = w[j] - step * gw[j];
      for (std::size_t c = 0; c < b.size(); ++c) b2[c] = b[c] - step * gb[c];
      double f2 = f.eval(w2, b2, nullptr, nullptr);
      if (f2 <= fx - 0.5 * step * g2) {
        moved = fx - f2 > 1e-12 * std::max(1.0, std::abs(fx));
        w.swap(w2);
        b.swap(b2);
        fx = f.eval(w, b, &gw, &gb);
        step = std::min(step * 2, 1e4);
        break;
      }
      step *= 0.5;
    }
    if (!moved) break;
  }
  return {false, std::move(w), std::move(b), lambda};
}

// Solves A x = r for a symmetric positive definite A (n × n, row-major) by Cholesky.
std::vector<double> solve_spd(std::vector<double> a, std::vector<double> r, std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (std::size_t q = 0; q < j; ++q) d -= a[j * n + q] * a[j * n + q];
    d = std::sqrt(std::max(d, 1e-300));
    a[j * n + j] = d;
    for (std::size_t i = j + 1; i < n; ++i) {
      double v = a[i * n + j];
      for (std::size_t q = 0; q < j; ++q) v -= a[i * n + q] * a[j * n + q];
      a[i * n + j] = v / d;
    }
  }
  for (std::size_t i = 0; i < n; ++i) {  // L y = r
    for (std::size_t q = 0; q < i; ++q) r[i] -= a[i * n + q] * r[q];
    r[i] /= a[i * n + i];
  }
  for (std::size_t i = n; i-- > 0;) {  // Lᵀ x = y
    for (std::size_t q = i + 1; q < n; ++q) r[i] -= a[q * n + i] * r[q];
    r[i] /= a[i * n + i];
  }
  return r;
}

StackingModel fit_regression(const std::vector<Matrix>& p, const Targets& t, double lambda) {
  const std::size_t m = p.size();
  const std::int64_t n = p[0].rows, outs = p[0].cols;
  // Centre each output's column, so the intercepts drop out of the solve.
  std::vector<double> mean_y(static_cast<std::size_t>(outs), 0.0),
      mean_x(m * static_cast<std::size_t>(outs), 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t c = 0; c < outs; ++c) {
      mean_y[static_cast<std::size_t>(c)] += t.values(i, c);
      for (std::size_t j = 0; j < m; ++j) mean_x[j * outs + c] += p[j](i, c);
    }
  for (double& v : mean_y) v /= static_cast<double>(n);
  for (double& v : mean_x) v /= static_cast<double>(n);
  std::vector<double> a(m * m, 0.0), r(m, 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t c = 0; c < outs; ++c) {
      const double y = t.values(i, c) - mean_y[static_cast<std::size_t>(c)];
      for (std::size_t j = 0; j < m; ++j) {
        const double xj = p[j](i, c) - mean_x[j * outs + c];
        r[j] += xj * y;
        for (std::size_t q = 0; q <= j; ++q)
          a[j * m + q] += xj * (p[q](i, c) - mean_x[q * outs + c]);
      }
    }
  double scale = 0;
  for (std::size_t j = 0; j < m; ++j) scale += a[j * m + j];
  scale = std::max(scale / static_cast<double>(m), 1e-12);
  for (std::size_t j = 0; j < m; ++j) {
    for (std::size_t q = 0; q < j; ++q) a[q * m + j] = a[j * m + q];
    a[j * m + j] += lambda * scale;
  }
  auto w = solve_spd(std::move(a), std::move(r), m);
  std::vector<double> b(static_cast<std::size_t>(outs));
  for (std::int64_t c = 0; c < outs; ++c) {
    double v = mean_y[static_cast<std::size_t>(c)];
    for (std::size_t j = 0; j < m; ++j) v -= w[j] * mean_x[j * outs + c];
    b[static_cast<std::size_t>(c)] = v;
  }
  return {true, std::move(w), std::move(b), lambda};
}

Matrix predict(const StackingModel& model, const std::vector<Matrix>& p) {
  StackingCombiner c(model);
  return combine(c, p).value();
}

}  // namespace

std::span<const double> stacking_lambdas(bool regression) {
  if (regression) return kLambdasRegression;
  return kLambdasClassification;
}

Result<StackingModel> fit_stacking(const std::vector<Matrix>& predictions, const Targets& targets,
                                   double lambda) {
  if (auto st = check_predictions(predictions, &targets); !st.ok()) return st.error();
  if (!(lambda >= 0) || !std::isfinite(lambda))
    return Error::invalid("lambda", "expected a finite penalty >= 0");
  if (targets.rows() < 1) return Error::invalid("targets", "expected at least one row");
  return targets.classification() ? fit_classification(predictions, targets, lambda)
                                  : fit_regression(predictions, targets, lambda);
}

Result<StackingModel> fit_stacking_cv(const std::vector<Matrix>& predictions,
                                      const Targets& targets, const std::vector<int>& fold_of,
                                      int folds, std::span<const double> lambdas) {
  if (auto st = check_predictions(predictions, &targets); !st.ok()) return st.error();
  if (lambdas.empty()) return Error::invalid("lambdas", "expected at least one penalty");
  if (static_cast<std::int64_t>(fold_of.size()) != targets.rows())
    return Error::invalid("folds", "expected one fold per row");
  double best_loss = std::numeric_limits<double>::infinity();
  double best_lambda = lambdas[0];
  if (folds >= 2) {
    for (double lambda : lambdas) {
      double sum = 0;
      std::int64_t count = 0;
      for (int f = 0; f < folds; ++f) {
        std::vector<std::int64_t> train, held;
        for (std::size_t r = 0; r < fold_of.size(); ++r)
          (fold_of[r] == f ? held : train).push_back(static_cast<std::int64_t>(r));
        if (train.empty() || held.empty()) continue;
        std::vector<Matrix> ptrain, pheld;
        for (const auto& p : predictions) {
          ptrain.push_back(take_rows(p, train));
          pheld.push_back(take_rows(p, held));
        }
        auto model = fit_stacking(ptrain, targets.subset(train), lambda);
        if (!model) return model.error();
        sum += loss(predict(*model, pheld), targets.subset(held), Loss::kAuto) *
               static_cast<double>(held.size());
        count += static_cast<std::int64_t>(held.size());
      }
      const double l = count ? sum / static_cast<double>(count) : 0;
      if (l < best_loss) best_loss = l, best_lambda = lambda;
    }
  }
  return fit_stacking(predictions, targets, best_lambda);
}

Status StackingCombiner::fit(const std::vector<Matrix>& validation, const Targets& targets) {
  if (fitted_) return check_predictions(validation, &targets);
  std::vector<int> fold_of(static_cast<std::size_t>(targets.rows()));
  for (std::size_t r = 0; r < fold_of.size(); ++r) fold_of[r] = static_cast<int>(r % 5);
  auto model = fit_stacking_cv(validation, targets, fold_of, targets.rows() >= 10 ? 5 : 0,
                               stacking_lambdas(!targets.classification()));
  if (!model) return model.error();
  model_ = std::move(*model);
  fitted_ = true;
  return {};
}

bool StackingCombiner::combine_row(std::span<const float* const> rows, std::span<const int> members,
                                   std::int64_t cols, float* out) const {
  if (rows.empty()) return false;
  if (model_.regression) {
    for (std::int64_t c = 0; c < cols; ++c) {
      double v = model_.intercept.size() == static_cast<std::size_t>(cols)
                     ? model_.intercept[static_cast<std::size_t>(c)]
                     : 0.0;
      for (std::size_t i = 0; i < rows.size(); ++i)
        v += model_.coefficients[static_cast<std::size_t>(members[i])] * rows[i][c];
      out[c] = static_cast<float>(v);
    }
    return true;
  }
  std::vector<double> z(static_cast<std::size_t>(cols));
  for (std::int64_t c = 0; c < cols; ++c) {
    double v = static_cast<std::size_t>(c) < model_.intercept.size()
                   ? model_.intercept[static_cast<std::size_t>(c)]
                   : 0.0;
    for (std::size_t i = 0; i < rows.size(); ++i)
      v += model_.coefficients[static_cast<std::size_t>(members[i])] *
           std::log(std::max(static_cast<double>(rows[i][c]), kStackingLogFloor));
    z[static_cast<std::size_t>(c)] = v;
  }
  const double mx = *std::max_element(z.begin(), z.end());
  double sum = 0;
  for (double& v : z) sum += (v = std::exp(v - mx));
  for (std::int64_t c = 0; c < cols; ++c)
    out[c] = static_cast<float>(z[static_cast<std::size_t>(c)] / sum);
  return true;
}

}  // namespace hpo::ensemble
