// WorkerChannel: a worker's way to the store when it holds a worker token
// instead of a Redis credential. The RedisClient of a RedisUrl with `gateway`
// set sends each command (or pipeline) here: RESP in the body of
// `POST <scheduler>/api/worker/redis` with `Authorization: Bearer <token>`,
// and the scheduler's worker relay (worker_relay.hpp) answers the replies in
// RESP, having run only what a worker may ask for its own name. Not
// thread-safe, like the client that owns it.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/http_client.hpp"
#include "core/result.hpp"
#include "trials/redis/redis_client.hpp"

namespace hpo::trials::redis {

// The endpoint's path under the scheduler's base URL.
inline constexpr const char* kWorkerRelayPath = "/api/worker/redis";
// The header that names the worker a request is for (what a worker token
// for a prefix of names needs: trials/access.hpp WorkerTokenRecord).
inline constexpr const char* kWorkerNameHeader = "x-hpo-worker";

class WorkerChannel {
 public:
  // kInvalidArgument for a URL that is not http(s)://host[:port][/base].
  // `worker`: the name every request says it is for ("": none).
  static Result<std::unique_ptr<WorkerChannel>> open(const std::string& scheduler_url,
                                                     std::string token, std::string worker,
                                                     std::chrono::milliseconds connect_timeout);
  // The replies, one per command. kUnavailable: the scheduler did not answer
  // (retry); kUnauthorized: it refused the token (revoked, unknown).
  Result<std::vector<Reply>> send(const std::vector<std::vector<std::string>>& commands,
                                  std::chrono::milliseconds timeout);

 private:
  WorkerChannel(HttpUrl url, std::string token, std::string worker,
                std::chrono::milliseconds connect_timeout);
  HttpUrl url_;
  std::string worker_;
  HttpClient http_;
  std::chrono::milliseconds connect_timeout_;
};

}  // namespace hpo::trials::redis
