#include "search/warm_start.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "search/encoding.hpp"

namespace hpo::search {

namespace {

// The inverse of the standard normal CDF (Acklam's rational approximation,
// relative error below 1.2e-9), for p in (0, 1).
double normal_quantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double lo = 0.02425, hi = 1 - lo;
  if (p < lo) {
    const double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > hi) {
    const double q = std::sqrt(-2 * std::log(1 - p));
    return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

}  // namespace

std::optional<Params> fit_to_space(const Params& params, const SearchSpace& space) {
  Params out;
  for (const auto& p : space.params) {
    if (!is_active(p, out)) continue;
    auto it = params.find(p.name);
    if (it == params.end()) return std::nullopt;
    auto v = fit_value(p, it->second);
    if (!v) return std::nullopt;
    out[p.name] = std::move(*v);
  }
  return out;
}

std::vector<double> normal_scores(std::span<const double> values) {
  const std::size_t n = values.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j + 1 < n && values[order[j + 1]] == values[order[i]]) ++j;
    const double rank = 0.5 * static_cast<double>(i + j);  // ties: their mean rank
    const double z = normal_quantile((rank + 0.5) / static_cast<double>(n));
    for (std::size_t k = i; k <= j; ++k) out[order[k]] = z;
    i = j + 1;
  }
  return out;
}

WarmStart::WarmStart(const SearchSpace& space, const std::vector<std::vector<PriorTrial>>& sources,
                     int initial_design) {
  struct Ranked {
    double score;
    std::size_t source, index;
    Params params;
  };
  std::vector<Ranked> all;
  for (std::size_t s = 0; s < sources.size(); ++s) {
    std::vector<Params> fitted;
    std::vector<double> values;
    for (const auto& t : sources[s]) {
      if (!std::isfinite(t.value)) continue;
      auto p = fit_to_space(t.params, space);
      if (!p) continue;
      fitted.push_back(std::move(*p));
      values.push_back(t.value);
    }
    const auto z = normal_scores(values);
    auto& scored = sources_.emplace_back();
    for (std::size_t i = 0; i < fitted.size(); ++i) {
      scored.push_back({fitted[i], z[i], values[i]});
      all.push_back({z[i], s, i, std::move(fitted[i])});
    }
  }
  usable_ = all.size();
  std::stable_sort(all.begin(), all.end(), [](const Ranked& a, const Ranked& b) {
    return a.score < b.score || (a.score == b.score && a.source < b.source);
  });
  // Unit coordinates of the active parameters; another activity is far away.
  auto unit = [&](const Params& p) {
    std::vector<double> u;
    for (const auto& spec : space.params) {
      auto it = p.find(spec.name);
      u.push_back(it == p.end() ? -10.0 : to_unit(spec, it->second));
    }
    return u;
  };
  const int slots = static_cast<int>(std::ceil(kEarlierShare * initial_design));
  std::vector<std::vector<double>> chosen;
  const double dims = static_cast<double>(std::max<std::size_t>(1, space.params.size()));
  for (auto& r : all) {
    if (static_cast<int>(design_.size()) >= slots) break;
    const auto u = unit(r.params);
    bool near = false;
    for (const auto& c : chosen) {
      double d2 = 0;
      for (std::size_t k = 0; k < u.size(); ++k) d2 += (u[k] - c[k]) * (u[k] - c[k]);
      if (std::sqrt(d2 / dims) < 0.05) {
        near = true;
        break;
      }
    }
    if (near) continue;
    chosen.push_back(u);
    design_.push_back(std::move(r.params));
  }
}

std::optional<Params> WarmStart::initial(std::int64_t number) const {
  if (number < 0 || number >= static_cast<std::int64_t>(design_.size())) return std::nullopt;
  return design_[static_cast<std::size_t>(number)];
}

}  // namespace hpo::search
