// The helpers shared by the Api's handler files (api_helpers.hpp).
#include "web/api_helpers.hpp"

#include "web/api_errors.hpp"

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

}  // namespace hpo::web
