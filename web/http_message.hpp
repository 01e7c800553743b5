// Request and Response: the plain structs that handlers, the router and tests
// use, so that nothing above the transport touches Boost.Beast types.
//
// A handler is a function Request -> Response. A Response whose `stream` is set
// is a server-sent-events stream: the server writes the status line, the
// headers and `body` (the replayed frames), then keeps the connection open and
// writes whatever the Subscription receives from the EventHub.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/text.hpp"

namespace hpo::trials {
struct Principal;  // trials/access.hpp
}

namespace hpo::web {

class Subscription;

struct Request {
  std::string method;                          // "GET", "POST", ... (upper case)
  std::string target;                          // as received: "/api/sweeps?limit=10"
  std::string path;                            // percent-decoded, without the query
  std::map<std::string, std::string> query;    // decoded query parameters (last one wins)
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string remote;  // peer address, for logs
  // Who sent it (trials/access.hpp), set by the Api before its handlers run.
  std::shared_ptr<const trials::Principal> principal;
  // The digest of the user's token behind it ("" for the scheduler's own, or
  // none), set with `principal`: a stream follows that token's revocation.
  std::string token_digest;

  // The header's value, or "" (name in any case).
  std::string header(std::string_view name) const;
  // The query parameter's value, or `fallback`.
  std::string query_or(const std::string& name, std::string fallback = "") const;
};

// A response body read from a file as it is written (an artifact of
// gigabytes: kStreamChunk through memory at a time): `length` bytes from
// `offset` of the open descriptor, which it owns.
struct FileBody {
  FileBody(int fd, std::int64_t offset, std::int64_t length)
      : fd(fd), offset(offset), length(length) {}
  ~FileBody();
  FileBody(const FileBody&) = delete;
  FileBody& operator=(const FileBody&) = delete;
  int fd;
  std::int64_t offset;
  std::int64_t length;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
  std::string body;
  std::shared_ptr<Subscription> stream;  // set: server-sent events follow `body`
  std::shared_ptr<FileBody> file;        // set: the body (`body` is ignored)

  static Response json(int status, std::string body);
  static Response text(int status, std::string body, std::string content_type = "text/plain");
  // The value of an extra header, or "" (tests).
  std::string header(std::string_view name) const;
};

using Handler = std::function<Response(const Request&)>;

// "%2Fa+b" -> "/a b" when `plus_is_space` (query strings), else "/a+b".
// Returns false on a malformed escape or a decoded NUL byte.
// ASCII case-insensitive equality (header names, auth schemes), and ASCII
// lower case (core/text.hpp).
bool iequals(std::string_view a, std::string_view b);
using ::hpo::ascii_lower;

bool percent_decode(std::string_view in, std::string& out, bool plus_is_space);
std::string percent_encode(std::string_view in);

// Splits a request target into the decoded path and query parameters.
// Returns false when the target is malformed (bad escape, not starting with '/').
bool parse_target(std::string_view target, std::string& path,
                  std::map<std::string, std::string>& query);

}  // namespace hpo::web
