// The helpers shared by the Api's handler files (api_helpers.hpp).
#include "web/api_helpers.hpp"

#include "web/api_errors.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <system_error>

#include "web/json_codec.hpp"

namespace hpo::web {

Response json_ok(int status, const Json& j) {
  return Response::json(status, dump(j));
}

Result<trials::ProjectRecord> find_project(trials::AccessStore& access, const std::string& name) {
  auto all = access.list_projects();
  if (!all) return all.error();
  for (auto& p : *all)
    if (p.name == name) return std::move(p);
  return Error::not_found("project " + name);
}

Response forbidden(const std::string& message) {
  return error_response(403, HttpError::kForbidden, message);
}

Result<std::int64_t> int_param(const Request& req, const std::string& name, std::int64_t fallback,
                               std::int64_t min, std::int64_t max) {
  auto it = req.query.find(name);
  if (it == req.query.end() || it->second.empty()) return fallback;
  std::int64_t v = 0;
  const auto& s = it->second;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size())
    return Error::invalid(name, "expected an integer, got '" + s + "'");
  if (v < min || v > max)
    return Error::invalid(name,
                          "must be between " + std::to_string(min) + " and " + std::to_string(max));
  return v;
}

Result<Json> object_body(const Request& request, std::initializer_list<const char*> allowed) {
  auto body = parse_json(request.body.empty() ? std::string("{}") : request.body);
  if (!body) return body.error();
  if (!body->is_object()) return Error::invalid("body", "expected a JSON object");
  for (const auto& item : body->items()) {
    const std::string& key = item.key();  // a named variable: lambdas may not capture bindings
    if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; }))
      return Error::invalid(key, "unknown key");
  }
  return body;
}

Result<std::string> string_field(const Json& body, const char* key, bool required,
                                 std::string fallback) {
  if (!body.contains(key)) {
    if (required) return Error::invalid(key, "missing");
    return fallback;
  }
  if (!body[key].is_string()) return Error::invalid(key, "expected a string");
  return body[key].get<std::string>();
}

}  // namespace hpo::web
