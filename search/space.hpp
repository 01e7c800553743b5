// The search space: typed parameter definitions and the values a trial takes.
//
// A SearchSpace is built once from a validated sweep spec (trials/spec/spec.cpp does
// the parsing and validation) and never changes afterwards. Parameters are kept
// in an order where every parent of a conditional parameter comes before its
// children, so a sampler can walk the list front to back and decide which
// parameters are active.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace hpo::search {

// One parameter value. Ints and floats are kept apart so that `{lr}` renders
// as "0.001" and `{layers}` as "3". Categorical values may be any of the four.
using Value = std::variant<std::int64_t, double, bool, std::string>;

// The parameters of one trial, by name. Inactive conditional parameters are
// absent. std::map keeps a stable order for JSON and for hashing.
using Params = std::map<std::string, Value>;

enum class ParamType { kFloat, kInt, kCategorical };

// A parameter is active only when its parent is active and takes one of `values`.
struct Condition {
  std::string parent;         // name of an earlier parameter (categorical, int or float)
  std::vector<Value> values;  // the parent values under which this parameter exists
};

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::kFloat;
  double min = 0;  // float/int: inclusive bounds
  double max = 0;
  bool log = false;               // float/int: sample uniformly in log space (min > 0)
  std::optional<double> step;     // float/int: values are min + k*step, k integer
  std::vector<Value> choices;     // categorical: the values, in the user's order
  std::optional<Condition> when;  // conditional parameter
};

struct SearchSpace {
  std::vector<ParamSpec> params;  // parents before children

  const ParamSpec* find(const std::string& name) const {
    for (const auto& p : params)
      if (p.name == name) return &p;
    return nullptr;
  }
};

// True when `spec` is active given the (partially built) params of a trial.
bool is_active(const ParamSpec& spec, const Params& params);

// Numeric view of a value (int -> double, bool -> 0/1); nullopt for strings.
std::optional<double> as_double(const Value& v);

// "0.001", "3", "true", "relu": how a value is rendered into a command line.
std::string to_string(const Value& v);

// `v` as parameter `p` takes it: among the choices (categorical), or a number
// inside the bounds and on the step / integer grid (within rounding; an int
// parameter's value becomes an int, a float's a double, clamped into the
// bounds). nullopt when it does not fit; `why`, when given, then says how
// ("1.5 is above the maximum 1", "2.5 is not an integer", ...).
std::optional<Value> fit_value(const ParamSpec& p, const Value& v, std::string* why = nullptr);

// What `p` takes, for messages: "a float in [0.0001, 1] (log)", "an integer in
// [1, 8] (step 2)", "one of relu, tanh".
std::string describe(const ParamSpec& p);

}  // namespace hpo::search
