// Mapping between parameter values and the unit interval.
//
// Every numeric sampler (random, sobol, GP, TPE) works on u in [0, 1] per
// parameter and converts at the edge, so the rules for log scale, ints and
// steps live in one place:
//  - continuous: u is linear (or logarithmic for `log`) between min and max;
//  - discrete (int, or float with `step`): the k-th of n values owns the cell
//    [k/n, (k+1)/n) in linear scale, so uniform u gives every value the same
//    chance; with `log` the cells are equal in log space around each value.
//    to_unit(v) is the centre of v's cell, so from_unit(to_unit(v)) == v and a
//    model that sees to_unit of stored values sees exactly what it proposes
//    after rounding (snap_unit);
//  - categorical: the k-th of n choices owns [k/n, (k+1)/n).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "search/space.hpp"

namespace hpo::search {

// Number of values of a discrete parameter (int, stepped float, categorical);
// nullopt for a continuous float.
std::optional<std::int64_t> discrete_count(const ParamSpec& spec);

// The k-th value (0-based) of a discrete parameter, in ascending / user order.
Value discrete_value(const ParamSpec& spec, std::int64_t k);

// u in [0, 1] -> a valid value of the parameter (clamped, rounded, typed).
Value from_unit(const ParamSpec& spec, double u);

// A value -> its position in [0, 1] (the cell centre for discrete parameters).
// Values outside the range are clamped; an unknown categorical maps to 0.5.
double to_unit(const ParamSpec& spec, const Value& v);

// Index of the discrete value (or categorical choice) that u stands for;
// -1 for a continuous parameter.
std::int64_t discrete_index(const ParamSpec& spec, double u);

// Rounds u to the position of the value it stands for.
inline double snap_unit(const ParamSpec& spec, double u) {
  return to_unit(spec, from_unit(spec, u));
}

// Index of a categorical choice, nullopt when `v` is not one of them.
std::optional<std::size_t> choice_index(const ParamSpec& spec, const Value& v);

// Draws the parameters of one trial from per-parameter unit coordinates:
// u[i] belongs to space.params[i]; inactive conditional parameters are skipped
// (their coordinate is simply unused), so the mapping stays fixed.
Params params_from_unit(const SearchSpace& space, const std::vector<double>& u);

}  // namespace hpo::search
