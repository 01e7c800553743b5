#include "search/grid_sampler.hpp"

#include <limits>

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

}  // namespace

GridSampler::GridSampler(SearchSpace space) : space_(std::move(space)) {
  has_children_.assign(space_.params.size(), false);
  for (std::size_t i = 0; i < space_.params.size(); ++i) {
    if (!discrete_count(space_.params[i])) finite_ = false;
    for (std::size_t j = i + 1; j < space_.params.size(); ++j)
      if (space_.params[j].when && space_.params[j].when->parent == space_.params[i].name)
        has_children_[i] = true;
  }
}

std::uint64_t GridSampler::completions(std::size_t from, Params& partial) const {
  if (from == space_.params.size()) return 1;
  const ParamSpec& spec = space_.params[from];
  if (!is_active(spec, partial)) return completions(from + 1, partial);
  auto n = static_cast<std::uint64_t>(*discrete_count(spec));
  if (!has_children_[from]) return sat_mul(n, completions(from + 1, partial));
  // The value decides which later parameters exist: count each branch.
  std::uint64_t total = 0;
  for (std::uint64_t k = 0; k < n; ++k) {
    partial[spec.name] = discrete_value(spec, static_cast<std::int64_t>(k));
    total = sat_add(total, completions(from + 1, partial));
  }
  partial.erase(spec.name);
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
    bool placed = false;
    for (std::int64_t k = 0; k < n && !placed; ++k) {
      out[spec.name] = discrete_value(spec, k);
      std::uint64_t c = completions(i + 1, out);
      if (index < c) {
        placed = true;
      } else {
        index -= c;
      }
    }
    if (!placed) return std::nullopt;  // past the end
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
