#include "search/pareto.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

namespace hpo::search {

namespace {

bool finite(const Point& p) {
  return std::all_of(p.begin(), p.end(), [](double v) { return std::isfinite(v); });
}

// Volume dominated by `pts` (each strictly inside `ref`), in the first `d`
// objectives. Each call spends from `budget` what it touches; once it is
// below zero the result is meaningless and the callers stop.
double volume(std::vector<Point> pts, const Point& ref, std::size_t d, std::int64_t& budget) {
  if (pts.empty() || budget < 0) return 0;
  budget -= static_cast<std::int64_t>(pts.size());
  if (d == 1) {
    double lo = ref[0];
    for (const auto& p : pts) lo = std::min(lo, p[0]);
    return ref[0] - lo;
  }
  if (d == 2) {
    // Ascending in objective 0; each point adds the strip its objective 1 improves.
    std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) {
      return a[0] != b[0] ? a[0] < b[0] : a[1] < b[1];
    });
    double v = 0, best1 = ref[1];
    for (const auto& p : pts) {
      if (p[1] >= best1) continue;
      v += (ref[0] - p[0]) * (best1 - p[1]);
      best1 = p[1];
    }
    return v;
  }
  // Slice along the last objective: between consecutive values, the points at
  // or below the slice's bottom dominate a (d-1)-dimensional cross-section.
  const std::size_t k = d - 1;
  std::sort(pts.begin(), pts.end(), [k](const Point& a, const Point& b) { return a[k] < b[k]; });
  double v = 0;
  std::vector<Point> below;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    below.push_back(pts[i]);
    const double top = i + 1 < pts.size() ? pts[i + 1][k] : ref[k];
    if (top <= pts[i][k]) continue;
    budget -= static_cast<std::int64_t>(below.size() * below.size());
    if (budget < 0) return 0;
    below = non_dominated_prefix(std::move(below), k);
    v += volume(below, ref, k, budget) * (top - pts[i][k]);
  }
  return v;
}

// The points strictly inside `reference`, finite, of its length.
std::vector<Point> inside_of(const std::vector<Point>& points, const Point& reference) {
  std::vector<Point> inside;
  for (const auto& p : points) {
    if (p.size() != reference.size() || !finite(p)) continue;
    bool strictly = true;
    for (std::size_t i = 0; i < p.size(); ++i) strictly &= p[i] < reference[i];
    if (strictly) inside.push_back(p);
  }
  return inside;
}

}  // namespace

bool weakly_dominates(const Point& a, const Point& b) {
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (a[i] > b[i]) return false;
  return true;
}

std::vector<Point> non_dominated_prefix(std::vector<Point> pts, std::size_t d) {
  for (auto& p : pts) p.resize(d);
  std::sort(pts.begin(), pts.end());
  pts.erase(std::unique(pts.begin(), pts.end()), pts.end());
  std::vector<Point> out;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    bool dominated = false;
    for (std::size_t j = 0; j < pts.size() && !dominated; ++j)
      dominated = j != i && dominates(pts[j], pts[i]);
    if (!dominated) out.push_back(pts[i]);
  }
  return out;
}

bool dominates(const Point& a, const Point& b) {
  bool better = false;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] > b[i]) return false;
    better |= a[i] < b[i];
  }
  return better;
}

std::vector<std::vector<std::size_t>> non_dominated_fronts(const std::vector<Point>& points) {
  const std::size_t n = points.size();
  std::vector<std::vector<std::size_t>> dominated_by(n);  // who i dominates
  std::vector<std::size_t> count(n, 0);                   // how many dominate i
  std::vector<bool> ok(n);
  for (std::size_t i = 0; i < n; ++i) ok[i] = finite(points[i]);
  for (std::size_t i = 0; i < n; ++i) {
    if (!ok[i]) continue;
    for (std::size_t j = i + 1; j < n; ++j) {
      if (!ok[j]) continue;
      if (dominates(points[i], points[j])) {
        dominated_by[i].push_back(j);
        ++count[j];
      } else if (dominates(points[j], points[i])) {
        dominated_by[j].push_back(i);
        ++count[i];
      }
    }
  }
  std::vector<std::vector<std::size_t>> fronts;
  std::vector<std::size_t> current;
  for (std::size_t i = 0; i < n; ++i)
    if (ok[i] && count[i] == 0) current.push_back(i);
  while (!current.empty()) {
    std::vector<std::size_t> next;
    for (std::size_t i : current)
      for (std::size_t j : dominated_by[i])
        if (--count[j] == 0) next.push_back(j);
    std::sort(next.begin(), next.end());
    fronts.push_back(std::move(current));
    current = std::move(next);
  }
  return fronts;
}

std::vector<std::size_t> first_front(const std::vector<Point>& points) {
  // Lexicographic order: no point is dominated by one after it, so each is
  // checked against the front so far only.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < points.size(); ++i)
    if (finite(points[i])) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return points[a] < points[b]; });
  std::vector<std::size_t> front;
  for (std::size_t i : order) {
    const bool dominated = std::any_of(
        front.begin(), front.end(), [&](std::size_t f) { return dominates(points[f], points[i]); });
    if (!dominated) front.push_back(i);
  }
  std::sort(front.begin(), front.end());
  return front;
}

std::vector<double> crowding_distance(const std::vector<Point>& points,
                                      const std::vector<std::size_t>& front) {
  const std::size_t n = front.size();
  std::vector<double> dist(n, 0);
  if (n == 0) return dist;
  const double inf = std::numeric_limits<double>::infinity();
  const std::size_t m = points[front[0]].size();
  std::vector<std::size_t> order(n);
  for (std::size_t k = 0; k < m; ++k) {
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return points[front[a]][k] < points[front[b]][k];
    });
    const double lo = points[front[order.front()]][k], hi = points[front[order.back()]][k];
    dist[order.front()] = dist[order.back()] = inf;
    if (hi <= lo) continue;
    for (std::size_t r = 1; r + 1 < n; ++r)
      dist[order[r]] +=
          (points[front[order[r + 1]]][k] - points[front[order[r - 1]]][k]) / (hi - lo);
  }
  return dist;
}

Point padded_nadir(const std::vector<Point>& points, double fraction) {
  const std::size_t m = points[0].size();
  Point r(m);
  for (std::size_t j = 0; j < m; ++j) {
    double lo = points[0][j], hi = points[0][j];
    for (const Point& p : points) lo = std::min(lo, p[j]), hi = std::max(hi, p[j]);
    const double range = hi - lo > 0 ? hi - lo : std::max(1e-9, 1e-3 * std::abs(hi));
    r[j] = hi + fraction * range;
  }
  return r;
}

double hypervolume(const std::vector<Point>& points, const Point& reference) {
  if (reference.empty()) return 0;
  std::int64_t unlimited = std::numeric_limits<std::int64_t>::max();
  return volume(non_dominated_prefix(inside_of(points, reference), reference.size()), reference,
                reference.size(), unlimited);
}

HypervolumeEstimate hypervolume_bounded(const std::vector<Point>& points, const Point& reference,
                                        std::int64_t budget, int samples) {
  HypervolumeEstimate out;
  if (reference.empty()) return out;
  const std::size_t m = reference.size();
  std::vector<Point> front = non_dominated_prefix(inside_of(points, reference), m);
  if (front.empty()) return out;
  std::int64_t left = m <= 3 ? std::numeric_limits<std::int64_t>::max() : budget;
  out.value = volume(front, reference, m, left);
  if (left >= 0) return out;
  // Monte Carlo in the box [best, reference]: the share of uniform points
  // some member weakly dominates. Members sorted by their first objective,
  // so a sample's scan stops at the first member past it there.
  Point lo = front.front();
  for (const auto& p : front)
    for (std::size_t j = 0; j < m; ++j) lo[j] = std::min(lo[j], p[j]);
  double box = 1;
  for (std::size_t j = 0; j < m; ++j) box *= reference[j] - lo[j];
  std::sort(front.begin(), front.end());
  std::mt19937_64 rng(0x9e3779b97f4a7c15ULL ^ (front.size() * 0x100000001b3ULL));
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const int n = std::max(1, samples);
  std::int64_t hit = 0;
  Point s(m);
  for (int i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < m; ++j) s[j] = lo[j] + unit(rng) * (reference[j] - lo[j]);
    for (const auto& p : front) {
      if (p[0] > s[0]) break;
      if (weakly_dominates(p, s)) {
        ++hit;
        break;
      }
    }
  }
  const double share = static_cast<double>(hit) / n;
  out.exact = false;
  out.value = box * share;
  out.std_error = box * std::sqrt(share * (1 - share) / n);
  return out;
}

std::vector<std::size_t> greedy_hypervolume_subset(const std::vector<Point>& points,
                                                   const Point& reference, std::size_t k,
                                                   int samples) {
  const std::size_t n = points.size();
  k = std::min(k, n);
  std::vector<std::size_t> order;
  std::vector<char> taken(n, 0);
  if (n == 0 || k == 0) return order;
  const std::size_t m = reference.size();
  if (m <= 3) {
    std::vector<Point> chosen;
    double volume = 0;
    for (std::size_t step = 0; step < k; ++step) {
      std::size_t best = n;
      double best_gain = -1;
      for (std::size_t a = 0; a < n; ++a) {
        if (taken[a]) continue;
        chosen.push_back(points[a]);
        const double gain = hypervolume(chosen, reference) - volume;
        chosen.pop_back();
        if (gain > best_gain) best_gain = gain, best = a;
      }
      taken[best] = 1;
      chosen.push_back(points[best]);
      volume += best_gain;
      order.push_back(best);
    }
    return order;
  }
  // The samples each point dominates, then greedy counts of those not yet covered.
  Point lo = points.front();
  for (const auto& p : points)
    for (std::size_t j = 0; j < m; ++j) lo[j] = std::min(lo[j], p[j]);
  std::mt19937_64 rng(0x9e3779b97f4a7c15ULL ^ (n * 0x100000001b3ULL));
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const std::size_t s_count = static_cast<std::size_t>(std::max(1, samples));
  std::vector<Point> sample(s_count, Point(m));
  for (auto& s : sample)
    for (std::size_t j = 0; j < m; ++j) s[j] = lo[j] + unit(rng) * (reference[j] - lo[j]);
  std::vector<std::vector<std::uint32_t>> covers(n);
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t i = 0; i < s_count; ++i)
      if (weakly_dominates(points[a], sample[i]))
        covers[a].push_back(static_cast<std::uint32_t>(i));
  std::vector<char> covered(s_count, 0);
  for (std::size_t step = 0; step < k; ++step) {
    std::size_t best = n;
    std::int64_t best_gain = -1;
    for (std::size_t a = 0; a < n; ++a) {
      if (taken[a]) continue;
      std::int64_t gain = 0;
      for (std::uint32_t i : covers[a]) gain += !covered[i];
      if (gain > best_gain) best_gain = gain, best = a;
    }
    taken[best] = 1;
    for (std::uint32_t i : covers[best]) covered[i] = 1;
    order.push_back(best);
  }
  return order;
}

}  // namespace hpo::search
