#include "scheduler/worker_endpoint.hpp"

#include <utility>

#include "core/log.hpp"
#include "trials/redis/worker_channel.hpp"
#include "web/access_control.hpp"
#include "web/api_errors.hpp"

namespace hpo::scheduler {

namespace {

web::Response unauthorized(const std::string& message) {
  return web::error_response(Error{ErrorCode::kUnauthorized, message, {}});
}

web::Response serve(trials::redis::WorkerRelay& relay, const web::Request& request) {
  if (request.method != "POST")
    return web::error_response(405, web::HttpError::kMethodNotAllowed,
                               "the worker endpoint takes POST");
  const std::string token = web::AccessControl::bearer(request);
  if (token.empty())
    return unauthorized("the worker endpoint needs a worker token (hpo worker-token create NAME)");
  auto who = relay.authenticate(token);
  if (!who) return web::error_response(who.error());
  if (!*who) {
    log_warn("worker endpoint: a token that is no worker token", {{"remote", request.remote}});
    return unauthorized("not a worker token, or one that was revoked");
  }
  // A token for a prefix of names runs as the worker the request names.
  auto as = (*who)->as_worker(request.header(trials::redis::kWorkerNameHeader));
  if (!as) {
    log_warn("worker endpoint: " + as.error().message, {{"remote", request.remote}});
    return web::error_response(as.error());
  }
  auto replies = relay.relay(*as, request.body);
  if (!replies) return web::error_response(replies.error());
  return web::Response::text(200, std::move(*replies), "application/x-redis-resp");
}

}  // namespace

web::Handler with_worker_endpoint(trials::redis::WorkerRelay& relay, web::Handler api) {
  return [&relay, api = std::move(api)](const web::Request& request) -> web::Response {
    if (request.path == trials::redis::kWorkerRelayPath) return serve(relay, request);
    return api(request);
  };
}

}  // namespace hpo::scheduler
