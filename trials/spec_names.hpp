// The one spelling of each spec enum's values: the parser accepts exactly
// these (trials/spec_*.cpp), the spec writer writes them (spec_json.cpp), and
// logs and messages name values by them. A table lists the names in the
// enum's order (its values run 0..N-1), so a value added to an enum without
// its name fails to compile here.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

#include "search/pruner.hpp"
#include "search/sampler.hpp"
#include "search/successive_halving.hpp"
#include "trials/spec.hpp"

namespace hpo::trials {

template <class E, std::size_t N>
struct NameTable {
  std::array<const char*, N> names;  // names[i]: the value E(i)

  constexpr const char* operator()(E value) const {
    const auto i = static_cast<std::size_t>(value);
    return i < N ? names[i] : "?";
  }
  // The value of that name; nullopt for any other text.
  constexpr std::optional<E> parse(std::string_view name) const {
    for (std::size_t i = 0; i < N; ++i)
      if (name == names[i]) return static_cast<E>(i);
    return std::nullopt;
  }
  // Every name, for the parser's "expected one of ...".
  constexpr std::span<const char* const> all() const { return names; }
};

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
