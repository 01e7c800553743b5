// The one place where an hpo::Error becomes an HTTP response. Every handler,
// the router's 404/405 and the server's 413/431/400 go through error_response,
// so a client sees one error shape:
//   {"error": {"code": "invalid_argument", "message": "...",
//              "fields": [{"path": "parameters.lr.min", "message": "..."}]}}
#pragma once

#include <cstddef>

#include "core/name_table.hpp"
#include "core/result.hpp"
#include "web/http_message.hpp"

namespace hpo::web {

// Errors of the HTTP layer that no handler returns (405, 400, 431, 416), and 403:
// codes of their own beside ErrorCode's, in the same JSON shape.
// 403 is the API's refusal of a caller who may see the resource but not do
// this to it (a viewer's cancel); one who may not see it gets 404 instead.
enum class HttpError {
  kMethodNotAllowed,
  kBadRequest,
  kHeaderTooLarge,
  kRangeNotSatisfiable,
  kForbidden
};
inline constexpr NameTable<HttpError, 5> kHttpErrorNames{{"method_not_allowed", "bad_request",
                                                          "header_too_large",
                                                          "range_not_satisfiable", "forbidden"}};
static_assert(static_cast<std::size_t>(HttpError::kForbidden) == 4);

int http_status(ErrorCode code);
// An unavailable error says when to retry: after retry_after_s seconds.
Response error_response(const Error& error, int retry_after_s = 1);
Response error_response(int status, HttpError code, std::string message);

}  // namespace hpo::web
