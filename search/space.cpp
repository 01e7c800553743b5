#include "search/space.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace hpo::search {

std::optional<double> as_double(const Value& v) {
  if (auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  if (auto* d = std::get_if<double>(&v)) return *d;
  if (auto* b = std::get_if<bool>(&v)) return *b ? 1.0 : 0.0;
  return std::nullopt;
}

std::string to_string(const Value& v) {
  if (auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  // Shortest representation that reads back to the same double.
  double d = std::get<double>(v);
  char buf[32];
  for (int prec = 6; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  return buf;
}

bool is_active(const ParamSpec& spec, const Params& params) {
  if (!spec.when) return true;
  auto it = params.find(spec.when->parent);
  if (it == params.end()) return false;  // parent inactive
  const Value& pv = it->second;
  return std::any_of(spec.when->values.begin(), spec.when->values.end(), [&](const Value& v) {
    if (v == pv) return true;
    auto a = as_double(v), b = as_double(pv);
    return a && b && !std::holds_alternative<std::string>(v) && *a == *b;
  });
}

}  // namespace hpo::search
