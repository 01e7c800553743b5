#include "search/encoding.hpp"

#include <algorithm>
#include <cmath>

namespace hpo::search {
namespace {

struct Discrete {
  double min;
  double step;
  std::int64_t n;
};

std::optional<Discrete> numeric_grid(const ParamSpec& spec) {
  if (spec.type == ParamType::kFloat && !spec.step) return std::nullopt;
  double step = spec.step.value_or(1.0);
  double lo = spec.min;
  double hi = spec.max;
  if (spec.type == ParamType::kInt) {
    lo = std::ceil(lo - 1e-9);
    hi = std::floor(hi + 1e-9);
    step = std::max(1.0, std::round(step));
  }
  if (!(step > 0) || hi < lo) return Discrete{lo, 1.0, 1};
  auto n = static_cast<std::int64_t>(std::floor((hi - lo) / step + 1e-9)) + 1;
  return Discrete{lo, step, std::max<std::int64_t>(n, 1)};
}

Value numeric_value(const ParamSpec& spec, double x) {
  if (spec.type == ParamType::kInt) return static_cast<std::int64_t>(std::llround(x));
  return x;
}

// Log scale needs min > 0 (the spec validator enforces it); a space built by
// hand without it falls back to linear rather than producing NaN.
bool log_scale(const ParamSpec& spec) {
  return spec.log && spec.min > 0;
}

// The continuous range [lo, hi] that discrete cells tile (see the header).
std::pair<double, double> cell_range(const ParamSpec& spec, const Discrete& g) {
  double lo = g.min - g.step / 2;
  double hi = g.min + static_cast<double>(g.n - 1) * g.step + g.step / 2;
  if (log_scale(spec) && lo <= 0) lo = g.min;
  return {lo, hi};
}

}  // namespace

std::optional<std::int64_t> discrete_count(const ParamSpec& spec) {
  if (spec.type == ParamType::kCategorical) return static_cast<std::int64_t>(spec.choices.size());
  auto g = numeric_grid(spec);
  if (!g) return std::nullopt;
  return g->n;
}

Value discrete_value(const ParamSpec& spec, std::int64_t k) {
  if (spec.type == ParamType::kCategorical) return spec.choices.at(static_cast<std::size_t>(k));
  auto g = numeric_grid(spec);
  k = std::clamp<std::int64_t>(k, 0, g->n - 1);
  double x = g->min + static_cast<double>(k) * g->step;
  if (spec.type == ParamType::kFloat) x = std::min(x, spec.max);  // no 0.30000000000000004 > max
  return numeric_value(spec, x);
}

std::int64_t discrete_index(const ParamSpec& spec, double u) {
  u = std::clamp(u, 0.0, 1.0);
  if (spec.type == ParamType::kCategorical) {
    auto n = static_cast<std::int64_t>(spec.choices.size());
    return std::clamp<std::int64_t>(static_cast<std::int64_t>(u * static_cast<double>(n)), 0,
                                    n - 1);
  }
  auto g = numeric_grid(spec);
  if (!g) return -1;
  std::int64_t k;
  if (!log_scale(spec)) {
    k = static_cast<std::int64_t>(u * static_cast<double>(g->n));
  } else {
    auto [lo, hi] = cell_range(spec, *g);
    double x = std::exp(std::log(lo) + u * (std::log(hi) - std::log(lo)));
    k = std::llround((x - g->min) / g->step);
  }
  return std::clamp<std::int64_t>(k, 0, g->n - 1);
}

Value from_unit(const ParamSpec& spec, double u) {
  u = std::clamp(u, 0.0, 1.0);
  if (spec.type == ParamType::kCategorical)
    return spec.choices.at(static_cast<std::size_t>(discrete_index(spec, u)));
  if (!numeric_grid(spec)) {
    double x = log_scale(spec)
                   ? std::exp(std::log(spec.min) + u * (std::log(spec.max) - std::log(spec.min)))
                   : spec.min + u * (spec.max - spec.min);
    return std::clamp(x, spec.min, spec.max);
  }
  return discrete_value(spec, discrete_index(spec, u));
}

double to_unit(const ParamSpec& spec, const Value& v) {
  if (spec.type == ParamType::kCategorical) {
    auto k = choice_index(spec, v);
    if (!k) return 0.5;
    return (static_cast<double>(*k) + 0.5) / static_cast<double>(spec.choices.size());
  }
  double x = as_double(v).value_or(spec.min);
  auto g = numeric_grid(spec);
  if (!g) {
    x = std::clamp(x, spec.min, spec.max);
    if (spec.max <= spec.min) return 0.5;
    if (log_scale(spec))
      return (std::log(x) - std::log(spec.min)) / (std::log(spec.max) - std::log(spec.min));
    return (x - spec.min) / (spec.max - spec.min);
  }
  auto k = std::clamp<std::int64_t>(std::llround((x - g->min) / g->step), 0, g->n - 1);
  if (!log_scale(spec)) return (static_cast<double>(k) + 0.5) / static_cast<double>(g->n);
  x = g->min + static_cast<double>(k) * g->step;
  auto [lo, hi] = cell_range(spec, *g);
  return std::clamp((std::log(x) - std::log(lo)) / (std::log(hi) - std::log(lo)), 0.0, 1.0);
}

std::optional<std::size_t> choice_index(const ParamSpec& spec, const Value& v) {
  for (std::size_t i = 0; i < spec.choices.size(); ++i) {
    const Value& c = spec.choices[i];
    if (c == v) return i;
    auto a = as_double(c), b = as_double(v);
    if (a && b && !std::holds_alternative<std::string>(c) && *a == *b) return i;
  }
  return std::nullopt;
}

Params params_from_unit(const SearchSpace& space, const std::vector<double>& u) {
  Params out;
  for (std::size_t i = 0; i < space.params.size(); ++i) {
    const ParamSpec& spec = space.params[i];
    if (!is_active(spec, out)) continue;
    out.emplace(spec.name, from_unit(spec, i < u.size() ? u[i] : 0.5));
  }
  return out;
}

}  // namespace hpo::search
