// NameTable: the one spelling of an enum's values, in the enum's order (its
// values run 0..N-1), so a value added without its name fails to compile
// where the table is declared (trials/spec/spec_names.hpp, trials/record_names.hpp,
// core/result.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

namespace hpo {

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
  // Every value, in the enum's order, for walking it.
  static constexpr std::array<E, N> values() {
    std::array<E, N> v{};
    for (std::size_t i = 0; i < N; ++i) v[i] = static_cast<E>(i);
    return v;
  }
};

}  // namespace hpo
