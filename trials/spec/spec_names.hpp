// The one spelling of each spec enum's values: the parser accepts exactly
// these (trials/spec_*.cpp), the spec writer writes them (spec_json.cpp), and
// logs and messages name values by them. A table lists the names in the
// enum's order (its values run 0..N-1), so a value added to an enum without
// its name fails to compile here.
#pragma once

#include "core/name_table.hpp"
#include "search/pruner.hpp"
#include "search/sampler.hpp"
#include "search/successive_halving.hpp"
#include "trials/spec/spec.hpp"

namespace hpo::trials {

inline constexpr NameTable<search::Algorithm, 6> kAlgorithmNames{
    {"grid", "random", "sobol", "bayesian", "tpe", "nsga2"}};
static_assert(static_cast<std::size_t>(search::Algorithm::kNsga2) == 5);

inline constexpr NameTable<TrialKind, 3> kTrialKindNames{{"command", "synthetic", "torch"}};
static_assert(static_cast<std::size_t>(TrialKind::kTorch) == 2);

inline constexpr NameTable<search::PrunerType, 2> kPrunerNames{{"median", "asha"}};
static_assert(static_cast<std::size_t>(search::PrunerType::kAsha) == 1);

inline constexpr NameTable<search::Schedule, 2> kScheduleNames{{"asha", "hyperband"}};
static_assert(static_cast<std::size_t>(search::Schedule::kHyperband) == 1);

}  // namespace hpo::trials
