// HttpClient: the one HTTP client of hpo, small and synchronous, with a
// deadline on every call: the `hpo` CLI, the worker's termination-notice
// watch (a cloud's metadata endpoint), the end-to-end and web tests.
//
// Synchronous in interface, asynchronous inside: each call runs Beast's async
// operations on a private io_context, so the tcp_stream's timer can abort a
// connect, write or read that takes longer than the timeout (Beast's blocking
// calls have no deadline). One connection is kept alive between calls and
// re-opened once when the server closed it in the meantime. https:// URLs
// speak TLS (Boost.Asio over OpenSSL) and verify the server's certificate and
// its name; a failed verification says what to do.
//
// SseClient reads a server-sent-events stream event by event.
// Neither class is thread-safe; use one per thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/byte_stream.hpp"
#include "core/result.hpp"

namespace hpo {

struct ClientResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string header(const std::string& lower_name) const;
};

// "http://host:port[/base]", "https://host:port[/base]" or "host:port". The
// default port is 80 (443 for https).
struct HttpUrl {
  std::string host;
  int port = 80;
  std::string base;  // path prefix without a trailing '/', usually ""
  bool tls = false;  // https://
};
Result<HttpUrl> parse_http_url(std::string_view url);

// An error answer of hpo's API in one line: "HTTP <status>: <its JSON error's
// message>", else "HTTP <status>".
std::string answer_message(const ClientResponse& r);

class HttpClient {
 public:
  HttpClient(std::string host, int port,
             std::chrono::milliseconds timeout = std::chrono::milliseconds(10000));
  explicit HttpClient(const HttpUrl& url,
                      std::chrono::milliseconds timeout = std::chrono::milliseconds(10000));
  ~HttpClient();
  HttpClient(HttpClient&&) noexcept;
  HttpClient& operator=(HttpClient&&) noexcept;

  // Sent as `Authorization: Bearer <token>` with every request when not empty.
  void set_token(std::string token);
  // https:// URLs: verify the server's certificate against the PEM CA
  // certificates in `path` instead of the system's store.
  void set_ca_file(std::string path);
  void set_timeout(std::chrono::milliseconds timeout);
  // The most body bytes request() takes (default 1 GiB); a longer answer is
  // kUnavailable, naming the limit.
  void set_body_limit(std::uint64_t bytes);

  // Any status is a response; errors are transport failures: kUnavailable
  // (refused, reset, "timed out connecting / sending / reading") or kInternal.
  Result<ClientResponse> request(const std::string& method, const std::string& target,
                                 const std::string& body = "",
                                 const std::map<std::string, std::string>& headers = {});
  Result<ClientResponse> get(const std::string& target) { return request("GET", target); }
  Result<ClientResponse> post(const std::string& target, const std::string& body) {
    return request("POST", target, body);
  }
  // GET whose 2xx body is streamed into `out` in pieces (an artifact of
  // gigabytes), on a connection of its own; the deadline applies to each
  // piece, not the whole. The response comes back without that body (a
  // non-2xx answer's body, its error, is kept). `headers`: a Range to go on
  // where an interrupted download stopped. `on_header` (optional) sees the
  // status and headers before any of the body; false: stop there (the
  // response comes back without a body).
  Result<ClientResponse> download(const std::string& target, ByteSink& out,
                                  const std::map<std::string, std::string>& headers = {},
                                  const std::function<bool(const ClientResponse&)>& on_header = {});
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct SseEvent {
  std::string id;
  std::string type;  // "message" when the frame has no `event:` line
  std::string data;  // data lines joined with '\n'
};

class SseClient {
 public:
  SseClient(std::string host, int port);
  ~SseClient();
  // Speak HTTPS, verifying the server against `ca_file` (empty: the system's CAs).
  void use_tls(std::string ca_file);

  // Connects and sends GET target; returns the response status and headers
  // (a non-200 response's body is in `body`).
  Result<ClientResponse> open(const std::string& target,
                              const std::map<std::string, std::string>& headers = {});
  // The next event, nullopt when `timeout` passed first. kUnavailable when the
  // server closed the stream. Comments (keep-alives) are skipped; `retry:`
  // lines are remembered in retry_ms().
  Result<std::optional<SseEvent>> next(std::chrono::milliseconds timeout);
  int retry_ms() const { return retry_ms_; }
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string pending_;  // bytes received, not yet a complete frame
  int retry_ms_ = 0;
};

}  // namespace hpo
