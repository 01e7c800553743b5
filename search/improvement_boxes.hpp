// Exact expected hypervolume improvement through a box decomposition.
//
// The region a new point y can add to a front's hypervolume is
//   A = { z < reference : no front member weakly dominates z },
// and the volume y adds is the part of A that y dominates: vol(A ∩ [y, ∞)).
// A is cut into disjoint boxes [l, u) (l may be -∞) by slicing along the last
// objective: between two consecutive values of it, the members at or below
// the slice leave a region of one objective fewer, decomposed the same way
// (one objective: below the smallest value). For F members that is at most
// F + 1 boxes for two objectives and (F + 1)(F + 2) / 2 for three.
//
// Then HVI(y) = Σ_boxes Π_j (u_j - max(l_j, y_j))⁺, and since
// (u - max(l, y))⁺ = (u - y)⁺ - (l - y)⁺, with independent normal y_j each
// factor's expectation is ψ_j(u_j) - ψ_j(l_j), ψ(a) = E[(a - y)⁺] =
// (a - μ) Φ(z) + σ φ(z), z = (a - μ) / σ, and ψ(-∞) = 0. So EHVI under a
// posterior of independent normals is exact: no Monte Carlo noise that would
// reward a candidate for one lucky draw, and ψ is evaluated once per distinct
// coordinate, not per box. Pure computation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "search/pareto.hpp"

namespace hpo::search {

class ImprovementBoxes {
 public:
  // `front`: any points (dominated ones add no boxes); `reference`: the
  // upper corner (minimised objectives). Stops once `max_boxes` boxes are made
  // (complete() is then false and the decomposition must not be used).
  ImprovementBoxes(const std::vector<Point>& front, const Point& reference,
                   std::size_t max_boxes = 20000);

  bool complete() const { return complete_; }
  std::size_t size() const { return lower_.size() / std::max<std::size_t>(m_, 1); }

  // The volume y adds to the front's hypervolume (as hypervolume_improvement).
  double improvement(const Point& y) const;

  // E[improvement(y)] for y_j ~ N(mean_j, sd_j²) independently (sd_j ≥ 0).
  double expected_improvement(const Point& mean, const Point& sd) const;

 private:
  std::size_t m_ = 0;
  bool complete_ = true;
  // Per objective, the distinct finite bounds of the boxes, ascending.
  std::vector<std::vector<double>> cuts_;
  // Box b's bounds in objective j, as indices into cuts_[j] (lower: -1 for -∞).
  std::vector<std::int32_t> lower_, upper_;  // [b * m + j]
};

}  // namespace hpo::search
