#include "search/grid_sampler.hpp"

#include <cmath>
#include <limits>
#include <set>

#include "search/encoding.hpp"

namespace hpo::search {
namespace {

constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint64_t>::max();

std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > kSaturated / a) return kSaturated;
  return a * b;
}

std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) {
  return b > kSaturated - a ? kSaturated : a + b;
}

// The index of `v` among the discrete values of `spec`, if it is one of them.
std::optional<std::int64_t> index_of(const ParamSpec& spec, const Value& v, std::int64_t n) {
  if (spec.type == ParamType::kCategorical) {
    auto k = choice_index(spec, v);
    if (!k) return std::nullopt;
    return static_cast<std::int64_t>(*k);
  }
  auto x = as_double(v);
  auto lo = as_double(discrete_value(spec, 0)), hi = as_double(discrete_value(spec, n - 1));
  if (!x || !lo || !hi || n < 1) return std::nullopt;
  if (n == 1) return std::optional<std::int64_t>(0);
  const double step = (*hi - *lo) / static_cast<double>(n - 1);
  if (!(step > 0)) return std::nullopt;
  auto k = std::llround((*x - *lo) / step);
  if (k < 0 || k >= n) return std::nullopt;
  return static_cast<std::int64_t>(k);
}

}  // namespace

GridSampler::GridSampler(SearchSpace space) : space_(std::move(space)) {
  const std::size_t n_params = space_.params.size();
  has_children_.assign(n_params, false);
  named_.assign(n_params, {});
  other_.assign(n_params, -1);
  for (std::size_t i = 0; i < n_params; ++i)
    if (!discrete_count(space_.params[i])) finite_ = false;
  if (!finite_) return;
  for (std::size_t i = 0; i < n_params; ++i) {
    const ParamSpec& spec = space_.params[i];
    const std::int64_t n = *discrete_count(spec);
    std::set<std::int64_t> named;
    for (std::size_t j = i + 1; j < n_params; ++j) {
      const ParamSpec& child = space_.params[j];
      if (!child.when || child.when->parent != spec.name) continue;
      has_children_[i] = true;
      for (const Value& v : child.when->values) {
        auto k = index_of(spec, v, n);
        if (!k) continue;
        Params probe{{spec.name, discrete_value(spec, *k)}};
        if (is_active(child, probe)) named.insert(*k);  // the same equality the sampler uses
      }
    }
    named_[i].assign(named.begin(), named.end());
    // One value no child names: the first index missing from the sorted list.
    std::int64_t k = 0;
    for (std::int64_t m : named_[i]) {
      if (m != k) break;
      ++k;
    }
    other_[i] = k < n ? k : -1;
  }
}

std::uint64_t GridSampler::completions_with(std::size_t i, std::int64_t k, Params& partial) const {
  const ParamSpec& spec = space_.params[i];
  partial[spec.name] = discrete_value(spec, k);
  std::uint64_t c = completions(i + 1, partial);
  partial.erase(spec.name);
  return c;
}

std::uint64_t GridSampler::completions(std::size_t from, Params& partial) const {
  if (from == space_.params.size()) return 1;
  const ParamSpec& spec = space_.params[from];
  if (!is_active(spec, partial)) return completions(from + 1, partial);
  auto n = static_cast<std::uint64_t>(*discrete_count(spec));
  if (!has_children_[from]) return sat_mul(n, completions(from + 1, partial));
  // Each named value opens its own branch; the others all complete alike.
  std::uint64_t total = 0;
  for (std::int64_t k : named_[from]) total = sat_add(total, completions_with(from, k, partial));
  const std::uint64_t others = n - named_[from].size();
  if (others > 0)
    total = sat_add(total, sat_mul(others, completions_with(from, other_[from], partial)));
  return total;
}

std::optional<std::uint64_t> GridSampler::size() const {
  if (!finite_) return std::nullopt;
  Params partial;
  return completions(0, partial);
}

std::optional<Params> GridSampler::point(std::uint64_t index) const {
  if (!finite_) return std::nullopt;
  Params out;
  for (std::size_t i = 0; i < space_.params.size(); ++i) {
    const ParamSpec& spec = space_.params[i];
    if (!is_active(spec, out)) continue;
    auto n = *discrete_count(spec);
    if (!has_children_[i]) {  // every value has the same number of completions
      out[spec.name] = discrete_value(spec, 0);
      std::uint64_t c = completions(i + 1, out);
      std::uint64_t k = index / c;
      if (k >= static_cast<std::uint64_t>(n)) return std::nullopt;
      out[spec.name] = discrete_value(spec, static_cast<std::int64_t>(k));
      index -= k * c;
      continue;
    }
    // Values in index order: runs of unnamed values (all completing alike)
    // between the named ones, each run skipped in one step.
    const std::uint64_t per_other = other_[i] >= 0 ? completions_with(i, other_[i], out) : 0;
    std::int64_t placed = -1;
    std::int64_t run_start = 0;
    for (std::size_t m = 0; m <= named_[i].size() && placed < 0; ++m) {
      const std::int64_t run_end = m < named_[i].size() ? named_[i][m] : n;
      const auto run = static_cast<std::uint64_t>(run_end - run_start);
      if (run > 0 && per_other > 0) {
        if (index / per_other < run) {
          placed = run_start + static_cast<std::int64_t>(index / per_other);
          index %= per_other;
          break;
        }
        index -= run * per_other;
      }
      if (m == named_[i].size()) break;
      const std::uint64_t c = completions_with(i, run_end, out);
      if (index < c) {
        placed = run_end;
        break;
      }
      index -= c;
      run_start = run_end + 1;
    }
    if (placed < 0) return std::nullopt;  // past the end
    out[spec.name] = discrete_value(spec, placed);
  }
  if (space_.params.empty() && index > 0) return std::nullopt;
  return out;
}

std::optional<Params> GridSampler::ask(std::span<const Observation>, std::span<const Params>,
                                       std::int64_t number) {
  if (number < 0) return std::nullopt;
  return point(static_cast<std::uint64_t>(number));
}

std::optional<std::uint64_t> grid_size(const SearchSpace& space) {
  return GridSampler(space).size();
}

}  // namespace hpo::search
