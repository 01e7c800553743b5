// RESP, Redis's wire format, as bytes: the worker endpoint on the scheduler
// (worker_relay.hpp) carries a worker's commands and their replies in it
// inside an HTTP body, so both sides reuse hiredis's own reader and writer.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "trials/redis/redis_client.hpp"

struct redisReply;

namespace hpo::trials::redis {

// A hiredis reply as an owned Reply.
Reply from_hiredis(const redisReply* r);

// One command as RESP (an array of bulk strings, binary-safe).
std::string resp_command(const std::vector<std::string>& argv);
// One reply as RESP 2 (an error's text on one line).
std::string resp_reply(const Reply& reply);
// Every value in `bytes`, in order; kInvalidArgument for bytes that are not
// RESP, end within a value, or hold more than `max_values`.
Result<std::vector<Reply>> parse_resp(std::string_view bytes, std::size_t max_values);
// Commands: values that are arrays of strings, as argument vectors (the
// same errors, and one naming a value that is not such an array).
Result<std::vector<std::vector<std::string>>> parse_commands(std::string_view bytes,
                                                             std::size_t max_commands);

}  // namespace hpo::trials::redis
