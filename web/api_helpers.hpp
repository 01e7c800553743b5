// The small helpers that the Api's handler files share (api_sweeps.cpp,
// api_trials.cpp, api_resources.cpp): a JSON response and an integer query
// parameter checked against its range, a JSON object body and its string
// fields. Internal to web/.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/result.hpp"
#include "trials/access.hpp"
#include "web/http_message.hpp"
#include "web/json_codec.hpp"

namespace hpo::web {

Response json_ok(int status, const Json& j);

// Project `name`'s record: kNotFound ("project NAME") when there is none.
Result<trials::ProjectRecord> find_project(trials::AccessStore& access, const std::string& name);

// 403: the caller may see the resource but not do this to it.
Response forbidden(const std::string& message);

// ?name= as an integer in [min, max]; `fallback` when absent or empty, an
// invalid_argument naming `name` otherwise.
Result<std::int64_t> int_param(const Request& req, const std::string& name, std::int64_t fallback,
                               std::int64_t min, std::int64_t max);

// The body as a JSON object with only `allowed` keys ("{}" when empty).
Result<Json> object_body(const Request& request, std::initializer_list<const char*> allowed);
// body[key] as a string: `fallback` when absent and not `required`.
Result<std::string> string_field(const Json& body, const char* key, bool required,
                                 std::string fallback = "");

}  // namespace hpo::web
