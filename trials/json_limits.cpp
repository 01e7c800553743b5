#include "trials/json_limits.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace hpo::trials {

Status check_json_depth(std::string_view text, const std::string& path, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character cannot end the string
      else if (c == '"')
        in_string = false;
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth)
          return Error::invalid(
              path, fmt::format("JSON nested deeper than {} levels (at byte {})", max_depth, i));
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return {};
}

namespace {
template <class Json>
std::optional<std::int64_t> int64_of(const Json& v) {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  if (v.is_number_unsigned()) {
    auto u = v.template get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(kMax)) return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) return v.template get<std::int64_t>();
  if (v.is_number_float()) {
    double d = v.template get<double>();
    // [-2^63, 2^63): both bounds are exact doubles.
    if (!std::isfinite(d) || d != std::floor(d) || d < -9223372036854775808.0 ||
        d >= 9223372036854775808.0)
      return std::nullopt;
    return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::int64_t> json_int64(const nlohmann::json& v) {
  return int64_of(v);
}
std::optional<std::int64_t> json_int64(const nlohmann::ordered_json& v) {
  return int64_of(v);
}

}  // namespace hpo::trials
