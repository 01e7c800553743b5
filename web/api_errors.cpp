#include "web/api_errors.hpp"

#include <string>

#include <nlohmann/json.hpp>

namespace hpo::web {

int http_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return 400;
    case ErrorCode::kUnauthorized:
      return 401;
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kConflict:
      return 409;
    case ErrorCode::kLeaseLost:
      return 409;
    case ErrorCode::kPayloadTooLarge:
      return 413;
    case ErrorCode::kUnavailable:
      return 503;
    case ErrorCode::kInternal:
      return 500;
    case ErrorCode::kQuotaExceeded:
      return 429;
  }
  return 500;
}

namespace {
Response make(int status, const char* code, const std::string& message,
              const std::vector<FieldError>& fields) {
  nlohmann::json f = nlohmann::json::array();
  for (const auto& fe : fields) f.push_back({{"path", fe.path}, {"message", fe.message}});
  nlohmann::json body = {{"error", {{"code", code}, {"message", message}, {"fields", f}}}};
  return Response::json(status,
                        body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}
}  // namespace

Response error_response(const Error& error, int retry_after_s) {
  Response r = make(http_status(error.code), to_string(error.code), error.message, error.fields);
  if (error.code == ErrorCode::kUnauthorized)
    r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"hpo\"");
  if (error.code == ErrorCode::kUnavailable)
    r.headers.emplace_back("Retry-After", std::to_string(retry_after_s));
  return r;
}

Response error_response(int status, HttpError code, std::string message) {
  return make(status, kHttpErrorNames(code), message, {});
}

}  // namespace hpo::web
