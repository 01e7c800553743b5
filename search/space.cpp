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

namespace {

bool on_grid(double v, const ParamSpec& p) {
  if (p.type == ParamType::kInt && v != std::floor(v)) return false;
  if (!p.step) return true;
  const double k = (v - p.min) / *p.step;
  return std::abs(k - std::round(k)) <= 1e-9 * std::max(1.0, std::abs(k));
}

std::string number(double v) {
  return to_string(Value{v});
}

}  // namespace

std::optional<Value> fit_value(const ParamSpec& p, const Value& v, std::string* why) {
  auto refuse = [&](std::string reason) -> std::optional<Value> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (p.type == ParamType::kCategorical) {
    if (std::find(p.choices.begin(), p.choices.end(), v) != p.choices.end()) return v;
    return refuse("\"" + to_string(v) + "\" is not among the choices");
  }
  auto x = as_double(v);
  if (!x || std::holds_alternative<bool>(v))
    return refuse("\"" + to_string(v) + "\" is not a number");
  if (!std::isfinite(*x)) return refuse(to_string(v) + " is not finite");
  const double eps = 1e-12 * std::max(1.0, std::abs(p.max - p.min));
  if (*x < p.min - eps) return refuse(number(*x) + " is below the minimum " + number(p.min));
  if (*x > p.max + eps) return refuse(number(*x) + " is above the maximum " + number(p.max));
  if (p.type == ParamType::kInt && *x != std::floor(*x))
    return refuse(number(*x) + " is not an integer");
  if (!on_grid(*x, p))
    return refuse(number(*x) + " is not on the grid " + number(p.min) + " + k * " +
                  number(*p.step));
  const double clamped = std::clamp(*x, p.min, p.max);
  if (p.type == ParamType::kInt) return Value{static_cast<std::int64_t>(std::llround(clamped))};
  return Value{clamped};
}

std::string describe(const ParamSpec& p) {
  if (p.type == ParamType::kCategorical) {
    std::string out = "one of ";
    for (std::size_t i = 0; i < p.choices.size(); ++i)
      out += (i ? ", " : "") + to_string(p.choices[i]);
    return out;
  }
  std::string out = std::string(p.type == ParamType::kInt ? "an integer" : "a float") + " in [" +
                    number(p.min) + ", " + number(p.max) + "]";
  if (p.step) out += " (step " + number(*p.step) + ")";
  if (p.log) out += " (log)";
  return out;
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
