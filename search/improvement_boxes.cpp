#include "search/improvement_boxes.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hpo::search {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct RawBox {
  Point lower, upper;
};

// Boxes of { z < reference[0..m) : no point weakly dominates z } over the
// first m coordinates of `points`, appended to `out` (each box's coordinates
// from m on are filled by the caller). False once `limit` is reached.
bool decompose(std::vector<Point> points, const Point& reference, std::size_t m,
               std::vector<RawBox>& out, std::size_t limit) {
  if (m == 1) {
    double u = reference[0];
    for (const Point& p : points) u = std::min(u, p[0]);
    out.push_back({Point{-kInf}, Point{u}});
    return out.size() < limit;
  }
  const std::size_t last = m - 1;
  std::erase_if(points, [&](const Point& p) { return !(p[last] < reference[last]); });
  std::sort(points.begin(), points.end(),
            [&](const Point& a, const Point& b) { return a[last] < b[last]; });
  // Slab k lies between the k-th distinct last value (or -∞) and the next
  // (or the reference); the points at or below its bottom shape it, in the
  // objectives before the last.
  std::vector<Point> active;
  double bottom = -kInf;
  std::size_t i = 0;
  while (true) {
    while (i < points.size() && points[i][last] <= bottom) active.push_back(points[i++]);
    const double top = i < points.size() ? points[i][last] : reference[last];
    if (top > bottom) {
      const std::size_t first = out.size();
      const bool more = decompose(non_dominated_prefix(active, last), reference, last, out, limit);
      for (std::size_t b = first; b < out.size(); ++b) {
        out[b].lower.push_back(bottom);
        out[b].upper.push_back(top);
      }
      if (!more) return false;
    }
    if (i >= points.size()) break;
    bottom = points[i][last];
  }
  return out.size() < limit;
}

// ψ(a) = E[(a - y)⁺] for y ~ N(mu, sd²).
double expected_shortfall_below(double a, double mu, double sd) {
  if (a == -kInf) return 0;
  if (!(sd > 0)) return std::max(0.0, a - mu);
  const double z = (a - mu) / sd;
  const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
  const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI);
  return (a - mu) * cdf + sd * pdf;
}

}  // namespace

ImprovementBoxes::ImprovementBoxes(const std::vector<Point>& front, const Point& reference,
                                   std::size_t max_boxes)
    : m_(reference.size()), cuts_(m_) {
  if (m_ == 0) return;
  std::vector<Point> points;
  for (const Point& p : front)
    if (p.size() == m_ &&
        std::all_of(p.begin(), p.end(), [](double v) { return std::isfinite(v); }))
      points.push_back(p);
  std::vector<RawBox> raw;
  complete_ = decompose(std::move(points), reference, m_, raw, max_boxes);
  if (!complete_) return;
  for (const RawBox& b : raw)
    for (std::size_t j = 0; j < m_; ++j) {
      if (b.lower[j] > -kInf) cuts_[j].push_back(b.lower[j]);
      cuts_[j].push_back(b.upper[j]);
    }
  for (auto& c : cuts_) {
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
  }
  auto index = [&](std::size_t j, double v) {
    return std::int32_t(std::lower_bound(cuts_[j].begin(), cuts_[j].end(), v) - cuts_[j].begin());
  };
  for (const RawBox& b : raw) {
    bool empty = false;
    for (std::size_t j = 0; j < m_; ++j) empty = empty || !(b.upper[j] > b.lower[j]);
    if (empty) continue;
    for (std::size_t j = 0; j < m_; ++j) {
      lower_.push_back(b.lower[j] > -kInf ? index(j, b.lower[j]) : -1);
      upper_.push_back(index(j, b.upper[j]));
    }
  }
}

double ImprovementBoxes::improvement(const Point& y) const {
  // With no spread ψ(a) = (a - y)⁺, and each factor is (u - max(l, y))⁺.
  return expected_improvement(y, Point(m_, 0.0));
}

double ImprovementBoxes::expected_improvement(const Point& mean, const Point& sd) const {
  // ψ_j at every cut, once.
  thread_local std::vector<std::vector<double>> psi;
  psi.resize(m_);
  for (std::size_t j = 0; j < m_; ++j) {
    psi[j].resize(cuts_[j].size());
    for (std::size_t k = 0; k < cuts_[j].size(); ++k)
      psi[j][k] = expected_shortfall_below(cuts_[j][k], mean[j], sd[j]);
  }
  double sum = 0;
  for (std::size_t b = 0; b < size(); ++b) {
    double e = 1;
    for (std::size_t j = 0; j < m_ && e > 0; ++j) {
      const std::int32_t lo = lower_[b * m_ + j];
      e *= std::max(
          0.0, psi[j][std::size_t(upper_[b * m_ + j])] - (lo < 0 ? 0.0 : psi[j][std::size_t(lo)]));
    }
    sum += e;
  }
  return sum;
}

}  // namespace hpo::search
