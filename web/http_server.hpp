// HttpServer: HTTP/1.1 over Boost.Beast; moves bytes, runs nothing else.
//
// Threads: an io_context with `io_threads` threads owns the sockets and never
// runs application code. Each parsed request is posted to a handler pool
// (`handler_threads` threads) where the pure Handler runs (it may block on
// Redis); its Response is posted back to the connection's strand and written.
// Responses on one connection go out in request order; up to `max_pipelined`
// requests of one connection may be in flight at once.
//
// Limits: a deadline on every request (`read_timeout` from its first byte to
// its last: a client idle between requests, or slow to send headers or body,
// even one byte at a time, is disconnected), body and header size limits
// (413 / 431 with the JSON error shape), a write deadline, a cap on
// connections and one on requests queued for the handlers (503 with
// Retry-After past either).
//
// A Response with `stream` set turns the connection into a server-sent-events
// stream (see event_hub.hpp); a keep-alive comment is written every
// `sse_keepalive` so that dead peers are noticed.
//
// TLS (ServerOptions::tls_cert_file): every connection is first sniffed for a
// TLS ClientHello, then handshaken (within read_timeout) and served as above
// over Boost.Asio's OpenSSL stream; it ends with a close_notify.
//
// stop(): stop accepting, let in-flight requests finish and their responses be
// written (up to `shutdown_timeout`), close idle and streaming connections,
// join every thread. The destructor calls stop().
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "web/http_message.hpp"

namespace hpo::web {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: pick a free port; see HttpServer::port()
  int io_threads = 1;
  int handler_threads = 4;
  std::uint64_t body_limit = 1 << 20;             // bytes; larger bodies get 413
  std::uint32_t header_limit = 16 * 1024;         // bytes; larger headers get 431
  std::size_t max_pipelined = 8;                  // requests in flight per connection
  std::chrono::milliseconds read_timeout{30000};  // per request, and idle keep-alive
  std::chrono::milliseconds write_timeout{30000};
  std::chrono::milliseconds sse_keepalive{15000};
  std::chrono::milliseconds shutdown_timeout{5000};
  // Connections served at once (event streams included); one more is answered
  // 503 with Retry-After and closed, so a flood cannot exhaust descriptors.
  std::size_t max_connections = 1024;
  // Requests waiting for or running in a handler thread, all connections
  // together; one more is answered 503 with Retry-After (and its connection
  // closed) instead of queueing behind work that is already late.
  std::size_t max_queued_requests = 1024;
  // GET paths answered on a lane of their own (one thread), outside the
  // handler queue and its cap: health probes that must answer under any load.
  std::vector<std::string> probe_paths = {"/healthz"};
  // Paths under this prefix (the scheduler's worker endpoint) take a lane of
  // their own, outside the handler queue and its cap: `lane_threads` threads
  // (a worker waiting for work holds one, never an API handler) and bodies up
  // to `lane_body_limit` bytes (an artifact kept in Redis). Empty: no lane.
  std::string lane_prefix;
  int lane_threads = 32;
  std::uint64_t lane_body_limit = 1 << 20;
  // HTTPS: a PEM certificate chain (the server's certificate first) and its
  // PEM private key; both empty: plain HTTP. On an HTTPS port a plain HTTP
  // request is answered 400 ("this server speaks HTTPS").
  std::string tls_cert_file;
  std::string tls_key_file;
};

class HttpServer {
 public:
  HttpServer(ServerOptions options, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts the threads. kUnavailable when the address
  // cannot be bound (in use, bad host); kInvalidArgument naming --tls-cert or
  // --tls-key when the certificate or key cannot be loaded.
  Status start();
  // The bound port (the real one when options.port was 0); 0 before start().
  int port() const;
  // Idempotent; see the header comment.
  void stop();
  // Open connections right now (tests).
  std::size_t connection_count() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hpo::web
