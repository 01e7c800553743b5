// The worker endpoint: POST /api/worker/redis, where worker hosts that hold a
// worker token (hpo worker-token create) instead of a Redis credential send
// their store calls (trials/redis/worker_channel.hpp). It checks the token
// and hands the body to the relay (trials/redis/worker_relay.hpp), which
// runs only a worker's own calls. Served on the HTTP server's lane for
// /api/worker/ (its own threads and body limit).
#pragma once

#include <functional>

#include "trials/redis/worker_relay.hpp"
#include "web/http_message.hpp"

namespace hpo::scheduler {

inline constexpr const char* kWorkerLanePrefix = "/api/worker/";

// The handler: the worker endpoint for its path, `api` for every other.
web::Handler with_worker_endpoint(trials::redis::WorkerRelay& relay, web::Handler api);

}  // namespace hpo::scheduler
