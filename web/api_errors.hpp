// The one place where an hpo::Error becomes an HTTP response. Every handler,
// the router's 404/405 and the server's 413/431/400 go through error_response,
// so a client sees one error shape:
//   {"error": {"code": "invalid_argument", "message": "...",
//              "fields": [{"path": "parameters.lr.min", "message": "..."}]}}
#pragma once

#include "core/result.hpp"
#include "web/http_message.hpp"

namespace hpo::web {

int http_status(ErrorCode code);
Response error_response(const Error& error);
// For errors that have no ErrorCode of their own (405, 431): same JSON shape.
Response error_response(int status, const char* code, std::string message);

}  // namespace hpo::web
