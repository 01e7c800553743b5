#include "trials/redis/worker_channel.hpp"

#include <map>

#include "trials/redis/resp.hpp"

namespace hpo::trials::redis {

Result<std::unique_ptr<WorkerChannel>> WorkerChannel::open(
    const std::string& scheduler_url, std::string token, std::string worker,
    std::chrono::milliseconds connect_timeout) {
  auto url = parse_http_url(scheduler_url);
  if (!url) return Error::invalid("scheduler", url.error().message);
  if (token.empty())
    return Error::invalid("worker_token",
                          "a worker that talks to the scheduler needs its worker token "
                          "(hpo worker-token create NAME)");
  return std::unique_ptr<WorkerChannel>(
      new WorkerChannel(std::move(*url), std::move(token), std::move(worker), connect_timeout));
}

WorkerChannel::WorkerChannel(HttpUrl url, std::string token, std::string worker,
                             std::chrono::milliseconds connect_timeout)
    : url_(std::move(url)),
      worker_(std::move(worker)),
      http_(url_, connect_timeout),
      connect_timeout_(connect_timeout) {
  http_.set_token(std::move(token));
}

Result<std::vector<Reply>> WorkerChannel::send(
    const std::vector<std::vector<std::string>>& commands, std::chrono::milliseconds timeout) {
  std::string body;
  for (const auto& argv : commands) body += resp_command(argv);
  // The deadline covers the command's own wait (a blocking read) and the trip.
  http_.set_timeout(timeout + connect_timeout_);
  std::map<std::string, std::string> headers{{"content-type", "application/x-redis-resp"}};
  if (!worker_.empty()) headers[kWorkerNameHeader] = worker_;
  auto r = http_.request("POST", url_.base + kWorkerRelayPath, body, headers);
  if (!r) return r.error();
  if (r->status == 401 || r->status == 403)
    return Error{
        ErrorCode::kUnauthorized, "the scheduler refused this worker: " + answer_message(*r), {}};
  if (r->status >= 500 || r->status == 429)
    return Error::unavailable("the scheduler's worker endpoint: " + answer_message(*r));
  if (r->status != 200)
    return Error::internal("the scheduler's worker endpoint: " + answer_message(*r));
  auto replies = parse_resp(r->body, commands.size());
  if (!replies)
    return Error::internal("the scheduler's worker endpoint: " + replies.error().message);
  if (replies->size() != commands.size())
    return Error::internal("the scheduler's worker endpoint answered " +
                           std::to_string(replies->size()) + " replies to " +
                           std::to_string(commands.size()) + " commands");
  return replies;
}

}  // namespace hpo::trials::redis
