// The `parameters` section of a sweep spec: each parameter's type, range or
// choices and `when` condition, then the order that puts parents first.
// Apart from the rest of the spec because the space has rules of its own (the
// samplers' arithmetic bounds the ranges, conditions form a graph).
#include "trials/spec/spec_sections.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "trials/json_limits.hpp"

namespace hpo::trials::spec_sections {

namespace {

std::optional<search::Value> scalar_value(const Json& v) {
  if (v.is_boolean()) return search::Value(v.get<bool>());
  if (v.is_number_integer()) {  // unsigned included; past int64 it is refused, not wrapped
    auto i = json_int64(v);
    if (!i) return std::nullopt;
    return search::Value(*i);
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d)) return std::nullopt;
    return search::Value(d);
  }
  if (v.is_string()) return search::Value(v.get<std::string>());
  return std::nullopt;
}

bool valid_param_name(const std::string& name) {
  static const std::regex kName("[A-Za-z_][A-Za-z0-9_.-]{0,63}");
  return std::regex_match(name, kName);
}

// Whether `v` is a value the parameter `p` can take (for `when` conditions).
bool in_domain(const search::ParamSpec& p, const search::Value& v) {
  if (p.type == search::ParamType::kCategorical)
    return std::any_of(p.choices.begin(), p.choices.end(), [&](const search::Value& c) {
      auto a = search::as_double(c), b = search::as_double(v);
      return c == v || (a && b && !std::holds_alternative<std::string>(c) && *a == *b);
    });
  auto d = search::as_double(v);
  if (!d || std::holds_alternative<bool>(v)) return false;
  if (*d < p.min || *d > p.max) return false;
  if (p.type == search::ParamType::kInt && *d != std::floor(*d)) return false;
  if (p.step) {
    double k = (*d - p.min) / *p.step;
    return std::fabs(k - std::round(k)) < 1e-9;
  }
  return true;
}

// Sane numeric ranges: wide enough for any hyperparameter, narrow enough that
// the samplers' arithmetic (widths, logs, int64 values) stays finite and exact.
constexpr double kMaxBound = 1e150;
constexpr double kMaxIntBound = 9007199254740992.0;  // 2^53: every int is an exact double
constexpr double kMaxSteps = 1e15;

// `values` of a categorical parameter: distinct scalars, at least one.
void parse_choices(Reader& r, search::ParamSpec& out) {
  const Json* values = r.array("values", true);
  if (values && values->empty()) {
    r.error(r.at("values"), "must not be empty");
  } else if (values) {
    for (std::size_t i = 0; i < values->size(); ++i) {
      auto v = scalar_value((*values)[i]);
      std::string vp = Reader::item(r.at("values"), i);
      if (!v) {
        r.expected(vp, "a string, boolean or number (integers within int64)", (*values)[i]);
        continue;
      }
      if (std::find(out.choices.begin(), out.choices.end(), *v) != out.choices.end()) {
        r.error(vp, fmt::format("duplicate value {}", Reader::describe((*values)[i])));
        continue;
      }
      out.choices.push_back(*v);
    }
  }
}

// min, max, log and step of an int or float parameter.
void parse_range(Reader& r, const std::string& path, search::ParamSpec& out) {
  bool is_int = out.type == search::ParamType::kInt;
  auto read_bound = [&](const char* key) -> std::optional<double> {
    const Json* v = r.get(key, true);
    if (!v) return std::nullopt;
    if (is_int && !r.is_integer(*v)) {
      r.expected(r.at(key), "an integer", *v);
      return std::nullopt;
    }
    return r.as_number(*v, r.at(key));
  };
  auto lo = read_bound("min");
  auto hi = read_bound("max");
  out.log = r.boolean("log").value_or(false);
  if (const Json* step = r.get("step")) {
    if (is_int && !r.is_integer(*step))
      r.expected(r.at("step"), "an integer", *step);
    else if (auto s = r.as_number(*step, r.at("step"))) {
      if (*s <= 0)
        r.error(r.at("step"), fmt::format("must be > 0, got {}", *s));
      else
        out.step = *s;
    }
  }
  if (lo && hi) {
    out.min = *lo;
    out.max = *hi;
    if (*lo >= *hi) r.error(path, fmt::format("min ({}) must be less than max ({})", *lo, *hi));
    if (out.log && *lo <= 0)
      r.error(r.at("log"), fmt::format("log scale needs min > 0, got min = {}", *lo));
    if (out.step && out.log) r.error(r.at("step"), "step cannot be combined with log: true");
    if (out.step && *lo<*hi&& * out.step> * hi - *lo)
      r.error(r.at("step"),
              fmt::format("step ({}) is larger than max - min ({})", *out.step, *hi - *lo));
    // Samplers compute with max - min (and int values as int64): a range
    // whose width overflows would produce NaN or wrapped parameters.
    if (!is_int && *lo < *hi &&
        !(std::isfinite(*hi - *lo) && std::fabs(*lo) <= kMaxBound && std::fabs(*hi) <= kMaxBound))
      r.error(path, fmt::format("the range [{}, {}] is too wide: bounds must be within ±{:g}", *lo,
                                *hi, kMaxBound));
    if (is_int && !(std::fabs(*lo) <= kMaxIntBound && std::fabs(*hi) <= kMaxIntBound))
      r.error(path, fmt::format("integer bounds must be within ±{:g} (2^53), got [{}, {}]",
                                kMaxIntBound, *lo, *hi));
    if (out.step && *out.step < (*hi - *lo) / kMaxSteps)
      r.error(r.at("step"), fmt::format("step ({}) makes more than {:g} values in [{}, {}]",
                                        *out.step, kMaxSteps, *lo, *hi));
  }
}

// `when`: the parent parameter and the values of it that make this one active.
void parse_when(Reader& r, search::ParamSpec& out) {
  if (const Json* when = r.get("when")) {
    std::string wp = r.at("when");
    if (!when->is_object() || when->size() != 1) {
      r.error(wp,
              "expected an object with one key, the parent parameter: {\"parent\": value} or "
              "{\"parent\": [values]}");
    } else {
      search::Condition cond;
      cond.parent = when->begin().key();
      const Json& vals = when->begin().value();
      std::vector<Json> list =
          vals.is_array() ? std::vector<Json>(vals.begin(), vals.end()) : std::vector<Json>{vals};
      if (list.empty()) r.error(wp + "." + cond.parent, "needs at least one value");
      for (const Json& v : list) {
        if (auto sv = scalar_value(v))
          cond.values.push_back(*sv);
        else
          r.error(wp + "." + cond.parent,
                  fmt::format("{} is not a parameter value", Reader::describe(v)));
      }
      out.when = std::move(cond);
    }
  }
}

void parse_parameter(const std::string& name, const Json& j, const std::string& path,
                     search::ParamSpec& out, std::vector<FieldError>& errors) {
  out.name = name;
  if (!valid_param_name(name))
    errors.push_back({path,
                      "parameter names are 1-64 characters of letters, digits, '_', '.', "
                      "'-', starting with a letter or '_'"});
  Reader r(j, path, errors);
  if (!j.is_object()) {
    r.expected(path, "an object", j);
    return;
  }
  auto type = r.one_of("type", {"float", "int", "categorical"}, true);
  if (!type) {
    r.mark_seen("min"), r.mark_seen("max"), r.mark_seen("log"), r.mark_seen("step");
    r.mark_seen("values"), r.mark_seen("when");
    return;
  }
  if (*type == "categorical") {
    out.type = search::ParamType::kCategorical;
    parse_choices(r, out);
  } else {
    out.type = *type == "int" ? search::ParamType::kInt : search::ParamType::kFloat;
    parse_range(r, path, out);
  }
  parse_when(r, out);
  r.unknown_keys("type, min, max, log, step, values, when");
}

// Orders parameters so that parents come before children (stable: the user's
// order otherwise) and checks conditions: parents exist, no cycles, values possible.
void order_parameters(std::vector<search::ParamSpec>& params, std::vector<FieldError>& errors) {
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < params.size(); ++i) index[params[i].name] = i;
  bool ok = true;
  for (const auto& p : params) {
    if (!p.when) continue;
    std::string path = "parameters." + p.name + ".when." + p.when->parent;
    auto it = index.find(p.when->parent);
    if (it == index.end()) {
      errors.push_back({path, fmt::format("unknown parent parameter \"{}\"", p.when->parent)});
      ok = false;
      continue;
    }
    if (p.when->parent == p.name) {
      errors.push_back({path, "a parameter cannot depend on itself"});
      ok = false;
      continue;
    }
    const auto& parent = params[it->second];
    for (const auto& v : p.when->values)
      if (!in_domain(parent, v))
        errors.push_back({path, fmt::format("impossible condition: \"{}\" never takes the value {}",
                                            parent.name, search::to_string(v))});
  }
  if (!ok) return;
  // Kahn's algorithm, always taking the earliest ready parameter.
  std::vector<search::ParamSpec> sorted;
  std::vector<bool> placed(params.size(), false);
  while (sorted.size() < params.size()) {
    bool progress = false;
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (placed[i]) continue;
      const auto& p = params[i];
      if (p.when && !placed[index[p.when->parent]]) continue;
      placed[i] = true;
      sorted.push_back(p);
      progress = true;
      break;
    }
    if (!progress) {
      for (std::size_t i = 0; i < params.size(); ++i)
        if (!placed[i])
          errors.push_back({"parameters." + params[i].name + ".when", "conditions form a cycle"});
      return;
    }
  }
  params = std::move(sorted);
}

}  // namespace

void parse_parameters(const Json& params, search::SearchSpace& space,
                      std::vector<FieldError>& errors) {
  for (auto it = params.begin(); it != params.end(); ++it) {
    search::ParamSpec p;
    parse_parameter(it.key(), it.value(), "parameters." + it.key(), p, errors);
    space.params.push_back(std::move(p));
  }
  order_parameters(space.params, errors);
}

}  // namespace hpo::trials::spec_sections
