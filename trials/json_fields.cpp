// The field reader (json_fields.hpp): every typed JSON section is read through it,
// so each problem has one message and one path whichever document it is in.
#include "trials/json_fields.hpp"

#include <cmath>
#include <type_traits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "trials/json_limits.hpp"

namespace hpo::trials {

template <class Json>
BasicFieldReader<Json>::BasicFieldReader(const Json& j, std::string path,
                                         std::vector<FieldError>& errors, FieldRules rules)
    : j_(j),
      path_(std::move(path)),
      errors_(errors),
      errors_before_(errors.size()),
      rules_(rules) {}

template <class Json>
std::string BasicFieldReader<Json>::at(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

template <class Json>
std::string BasicFieldReader<Json>::item(const std::string& path, std::size_t i) {
  return fmt::format("{}[{}]", path, i);
}

template <class Json>
void BasicFieldReader<Json>::error(const std::string& path, std::string message) {
  errors_.push_back({path, std::move(message)});
}

template <class Json>
void BasicFieldReader<Json>::expected(const std::string& path, std::string_view what,
                                      const Json& got) {
  error(path, got.is_null()
                  ? fmt::format("expected {}, got null", what)
                  : fmt::format("expected {}, got {} {}", what, type_name(got), describe(got)));
}

template <class Json>
const Json* BasicFieldReader<Json>::get(const std::string& key, bool required) {
  seen_.insert(key);
  auto it = j_.find(key);
  if (it == j_.end() || (rules_.null_is_absent && it->is_null())) {
    if (required) error(at(key), "is required");
    return nullptr;
  }
  return &*it;
}

template <class Json>
std::optional<std::string> BasicFieldReader<Json>::string(const std::string& key, bool required) {
  const Json* v = get(key, required);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    expected(at(key), "a string", *v);
    return std::nullopt;
  }
  return v->template get<std::string>();
}

template <class Json>
std::optional<std::string> BasicFieldReader<Json>::one_of(
    const std::string& key, std::initializer_list<const char*> allowed, bool required) {
  return one_of(key, std::span<const char* const>(allowed.begin(), allowed.size()), required);
}

template <class Json>
std::optional<std::string> BasicFieldReader<Json>::one_of(const std::string& key,
                                                          std::span<const char* const> allowed,
                                                          bool required) {
  auto s = string(key, required);
  if (!s) return std::nullopt;
  for (const char* a : allowed)
    if (*s == a) return s;
  std::string list;
  for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
  error(at(key), fmt::format("\"{}\" is not one of: {}", *s, list));
  return std::nullopt;
}

template <class Json>
std::optional<double> BasicFieldReader<Json>::number(const std::string& key, bool required) {
  const Json* v = get(key, required);
  if (!v) return std::nullopt;
  return as_number(*v, at(key));
}

template <class Json>
std::optional<double> BasicFieldReader<Json>::number_in(const std::string& key, double lo,
                                                        double hi, bool required) {
  auto d = number(key, required);
  if (d && (*d < lo || *d > hi)) {
    error(at(key), fmt::format("{} is out of range: expected {} to {}", *d, lo, hi));
    return std::nullopt;
  }
  return d;
}

template <class Json>
std::optional<std::int64_t> BasicFieldReader<Json>::integer(const std::string& key, std::int64_t lo,
                                                            std::int64_t hi, bool required) {
  const Json* v = get(key, required);
  if (!v) return std::nullopt;
  return as_integer(*v, at(key), lo, hi);
}

template <class Json>
std::optional<bool> BasicFieldReader<Json>::boolean(const std::string& key, bool required) {
  const Json* v = get(key, required);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) {
    expected(at(key), "true or false", *v);
    return std::nullopt;
  }
  return v->template get<bool>();
}

template <class Json>
const Json* BasicFieldReader<Json>::object(const std::string& key, bool required) {
  const Json* v = get(key, required);
  if (v && !v->is_object()) {
    expected(at(key), "an object", *v);
    return nullptr;
  }
  return v;
}

template <class Json>
const Json* BasicFieldReader<Json>::array(const std::string& key, bool required) {
  const Json* v = get(key, required);
  if (v && !v->is_array()) {
    expected(at(key), "an array", *v);
    return nullptr;
  }
  return v;
}

template <class Json>
std::optional<double> BasicFieldReader<Json>::as_number(const Json& v, const std::string& path) {
  if (!v.is_number()) {
    expected(path, "a number", v);
    return std::nullopt;
  }
  double d = v.template get<double>();
  if (!std::isfinite(d)) {
    error(path, "must be a finite number");
    return std::nullopt;
  }
  return d;
}

template <class Json>
std::optional<std::int64_t> BasicFieldReader<Json>::as_integer(const Json& v,
                                                               const std::string& path,
                                                               std::int64_t lo, std::int64_t hi) {
  if (!is_integer(v)) {
    expected(path, "an integer", v);
    return std::nullopt;
  }
  auto i = json_int64(v);
  if (!i || *i < lo || *i > hi) {
    error(path, fmt::format("{} is out of range: expected {} to {}", describe(v), lo, hi));
    return std::nullopt;
  }
  return i;
}

template <class Json>
bool BasicFieldReader<Json>::is_integer(const Json& v) const {
  if (v.is_number_integer()) return true;  // unsigned included
  if (!v.is_number_float() || !rules_.floats_as_integers) return false;
  double d = v.template get<double>();
  return std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15;
}

template <class Json>
void BasicFieldReader<Json>::unknown_keys(const char* expected_keys) {
  if (!j_.is_object()) return;
  for (auto it = j_.begin(); it != j_.end(); ++it) {
    if (seen_.count(it.key())) continue;
    error(at(it.key()), expected_keys
                            ? fmt::format("unknown key (expected one of: {})", expected_keys)
                            : std::string("unknown key"));
  }
}

template <class Json>
std::string BasicFieldReader<Json>::type_name(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer()) return "an integer";  // unsigned included
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

template <class Json>
std::string BasicFieldReader<Json>::describe(const Json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

template class BasicFieldReader<nlohmann::json>;
template class BasicFieldReader<nlohmann::ordered_json>;

}  // namespace hpo::trials
