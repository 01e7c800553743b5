#include "search/lbfgs.hpp"

#include <cmath>
#include <deque>

namespace hpo::search {

LbfgsResult lbfgs_minimize(const Objective& f, Eigen::VectorXd x0, const LbfgsOptions& options) {
  const Eigen::Index n = x0.size();
  LbfgsResult r;
  r.x = std::move(x0);
  Eigen::VectorXd g(n), g_new(n), x_new(n), d(n);
  r.value = f(r.x, g);
  r.evaluations = 1;
  if (!std::isfinite(r.value)) return r;
  std::deque<Eigen::VectorXd> s_hist, y_hist;
  std::deque<double> rho_hist;
  std::vector<double> alpha(static_cast<std::size_t>(options.memory));

  for (; r.iterations < options.max_iterations; ++r.iterations) {
    if (g.lpNorm<Eigen::Infinity>() < options.gradient_tolerance) break;
    // Two-loop recursion: d = -H g.
    d = -g;
    const std::size_t m = s_hist.size();
    for (std::size_t k = m; k-- > 0;) {
      alpha[k] = rho_hist[k] * s_hist[k].dot(d);
      d -= alpha[k] * y_hist[k];
    }
    if (m > 0) d *= s_hist.back().dot(y_hist.back()) / y_hist.back().squaredNorm();
    for (std::size_t k = 0; k < m; ++k) {
      double beta = rho_hist[k] * y_hist[k].dot(d);
      d += s_hist[k] * (alpha[k] - beta);
    }
    double slope = g.dot(d);
    if (!(slope < 0)) {  // not a descent direction: restart from steepest descent
      s_hist.clear();
      y_hist.clear();
      rho_hist.clear();
      d = -g;
      slope = -g.squaredNorm();
    }
    // First iteration without curvature information: a cautious step.
    double step = m == 0 ? std::min(1.0, 1.0 / std::max(1e-12, g.lpNorm<Eigen::Infinity>())) : 1.0;
    double f_new = 0;
    bool accepted = false;
    while (r.evaluations < options.max_evaluations) {
      x_new = r.x + step * d;
      f_new = f(x_new, g_new);
      ++r.evaluations;
      if (std::isfinite(f_new) && f_new <= r.value + 1e-4 * step * slope) {
        accepted = true;
        break;
      }
      step *= 0.3;
      if (step < 1e-12) break;
    }
    if (!accepted) break;
    Eigen::VectorXd s = x_new - r.x;
    Eigen::VectorXd y = g_new - g;
    double sy = s.dot(y);
    const double improvement = r.value - f_new;
    r.x = x_new;
    g = g_new;
    r.value = f_new;
    if (sy > 1e-12 * y.squaredNorm()) {
      if (static_cast<int>(s_hist.size()) == options.memory) {
        s_hist.pop_front();
        y_hist.pop_front();
        rho_hist.pop_front();
      }
      s_hist.push_back(std::move(s));
      y_hist.push_back(std::move(y));
      rho_hist.push_back(1.0 / sy);
    }
    if (improvement <= options.relative_tolerance * std::max(1.0, std::abs(r.value))) break;
    if (r.evaluations >= options.max_evaluations) break;
  }
  return r;
}

}  // namespace hpo::search
