// Pareto fronts of several objectives, all minimised (the controller negates
// `mode: max` objectives, as for one objective): dominance, non-dominated
// sorting into fronts, NSGA-II's crowding distance, and the hypervolume a
// front dominates up to a reference point.
//
// Points are rows of equal length; a point with a non-finite coordinate takes
// no part (it is in no front and adds no volume).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hpo::search {

using Point = std::vector<double>;

// a dominates b: no worse in every objective and better in one.
bool dominates(const Point& a, const Point& b);
// a weakly dominates b: no worse in every objective (equal points too).
bool weakly_dominates(const Point& a, const Point& b);

// `points` cut to their first `d` objectives, without duplicates and without
// those another of them dominates there: the cross-section that slicing along
// objective d shapes (the hypervolume below, improvement_boxes.hpp).
std::vector<Point> non_dominated_prefix(std::vector<Point> points, std::size_t d);

// Indices of `points` by front: [0] the non-dominated ones, [1] those
// dominated only by front 0, and so on; within a front, ascending index.
// Deb's fast non-dominated sort, O(M N^2).
std::vector<std::vector<std::size_t>> non_dominated_fronts(const std::vector<Point>& points);

// Indices of the non-dominated points alone (front 0, ascending index; of
// equal points all), in O(N F) for a front of F: for a whole sweep's trials.
std::vector<std::size_t> first_front(const std::vector<Point>& points);

// NSGA-II's crowding distance of each member of `front` (indices into
// `points`), in the front's order: the sum over objectives of the normalised
// gap between its neighbours; the extremes of each objective get infinity.
std::vector<double> crowding_distance(const std::vector<Point>& points,
                                      const std::vector<std::size_t>& front);

// A reference point for points that bring none: each objective's worst value
// pushed out by `fraction` of its range (a zero range by 1e-3 of the value,
// at least 1e-9), so that every point strictly dominates it and the extremes
// still add volume. `points` non-empty, of equal length.
Point padded_nadir(const std::vector<Point>& points, double fraction = 0.1);

// The volume dominated by `points` and bounded by `reference` (which every
// counted point must strictly dominate; others add nothing). Exact: a sweep
// over the last objective for 2, slicing objective by objective (HSO) above;
// fine for the fronts of a sweep (hundreds of points, a handful of objectives).
double hypervolume(const std::vector<Point>& points, const Point& reference);

// The same in bounded time, for fronts of any size and objective count (the
// exact slicing grows like N^(M-1): 300 points of 6 objectives take hours).
// Exact while the slicing stays within `budget` elementary steps (about a
// tenth of a second at the default; 2 and 3 objectives always are); past it,
// a Monte Carlo estimate from `samples` points drawn uniformly in the box
// between the front's best values and the reference, with its standard
// error. The draw is seeded: the same points give the same estimate.
struct HypervolumeEstimate {
  double value = 0;
  bool exact = true;
  double std_error = 0;  // 0 when exact
};
inline constexpr std::int64_t kHypervolumeBudget = 20'000'000;
inline constexpr int kHypervolumeSamples = 50'000;
HypervolumeEstimate hypervolume_bounded(const std::vector<Point>& points, const Point& reference,
                                        std::int64_t budget = kHypervolumeBudget,
                                        int samples = kHypervolumeSamples);

// Hypervolume subset selection, greedily: the indices of `k` of `points`
// (all strictly inside `reference`), each the one that adds the most volume
// to those taken before it (ties: the lower index). Exact volumes for up to 3
// objectives; beyond, each gain is counted on `samples` seeded uniform
// points of the box [best, reference] (the estimate hypervolume_bounded
// makes), so that it stays fast for 6 objectives over hundreds of points.
std::vector<std::size_t> greedy_hypervolume_subset(const std::vector<Point>& points,
                                                   const Point& reference, std::size_t k,
                                                   int samples = 4096);

}  // namespace hpo::search
