// Grid search: trial number i gets the i-th point of the full product.
//
// Order (documented for users): parameters in spec order, the FIRST parameter
// varies slowest (like nested for-loops written in spec order); numeric values
// ascend, categorical values keep the user's order. A conditional parameter
// takes part only in the combinations where it is active, so the grid holds
// no duplicates and no point differs only in an inactive parameter.
//
// Resumable by construction: the point depends only on `number`, never on the
// history, so a restarted scheduler hands out the remaining points in order.
// Points are computed by counting (not by materialising the grid), so a
// 10^9-point grid costs nothing until it is walked. A parameter that others
// are conditional on is not enumerated either: only the few values some
// child's `when` names open a branch of their own; all its other values share
// one completion count, so size() and point() cost O(values named in `when`)
// per parameter, whatever the parameter's range.
#pragma once

#include <cstdint>
#include <optional>

#include "search/sampler.hpp"

namespace hpo::search {

class GridSampler final : public Sampler {
 public:
  explicit GridSampler(SearchSpace space);

  std::optional<Params> ask(std::span<const Observation> history, std::span<const Params> pending,
                            std::int64_t number) override;

  // The point with index `index` (0-based), nullopt past the end or when the
  // space is not a finite grid.
  std::optional<Params> point(std::uint64_t index) const;

  // Number of points; nullopt for a continuous parameter without step.
  std::optional<std::uint64_t> size() const;

 private:
  // Points that complete `partial` from parameter `from` on (saturating).
  std::uint64_t completions(std::size_t from, Params& partial) const;

  // Points that complete `partial` once parameter `i` takes its k-th value.
  std::uint64_t completions_with(std::size_t i, std::int64_t k, Params& partial) const;

  SearchSpace space_;
  bool finite_ = true;
  std::vector<bool> has_children_;  // a later parameter is conditional on this one
  // Per parameter with children: the ascending indices of its values that
  // some child's `when` names (each opens its own branch), and the index of
  // one value that names none (-1 when every value is named).
  std::vector<std::vector<std::int64_t>> named_;
  std::vector<std::int64_t> other_;
};

}  // namespace hpo::search
