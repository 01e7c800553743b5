// JSON codec of a trial's parameters. Ints stay ints, floats stay floats (a
// float that happens to be integral, 1.0, is written as 1.0 so it reads back as
// a float), so `{layers}` renders "3" and `{lr}` renders "0.001".
#include <cmath>

#include <nlohmann/json.hpp>

#include "trials/json_limits.hpp"
#include "trials/spec.hpp"

namespace hpo::trials {

namespace {
nlohmann::json value_to_json(const search::Value& v) {
  return std::visit([](const auto& x) { return nlohmann::json(x); }, v);
}
}  // namespace

std::string params_to_json(const search::Params& params) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : params) j[name] = value_to_json(value);
  return j.dump();
}

Result<search::Params> params_from_json(std::string_view json_text) {
  if (auto st = check_json_depth(json_text, "params"); !st) return st.error();
  auto j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Error::invalid("params", "expected a JSON object");
  search::Params out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const auto& v = it.value();
    if (v.is_boolean())
      out[it.key()] = v.get<bool>();
    else if (v.is_number_integer() && json_int64(v))
      out[it.key()] = *json_int64(v);
    else if (v.is_number_float())
      out[it.key()] = v.get<double>();
    else if (v.is_string())
      out[it.key()] = v.get<std::string>();
    else
      return Error::invalid("params." + it.key(), "expected a number, boolean or string");
  }
  return out;
}

}  // namespace hpo::trials
