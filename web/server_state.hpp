// The state that HttpServer's acceptor and its connections share (internal to
// http_server.cpp, http_session.cpp and server_tls.cpp): options, the handler
// and its thread pools, the count and list of live connections that stop()
// waits for and shuts down. One header so that each of those files sees the
// same definitions.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/thread_pool.hpp>

#include "core/result.hpp"
#include "web/api_errors.hpp"
#include "web/http_message.hpp"
#include "web/http_server.hpp"

namespace hpo::web {

// A connection the server can ask to stop: a Session, or a TlsDetector that
// has not yet seen the client's first bytes.
class Conn {
 public:
  virtual ~Conn() = default;
  virtual void shutdown() = 0;
};

// Shared by the acceptor and every session. Members are destroyed in reverse
// order: the io_context (and the sessions its queued handlers hold) goes before
// the mutex that session destructors lock.
struct ServerState {
  ServerOptions opts;
  Handler handler;
  std::mutex mu;
  std::condition_variable cv;
  std::size_t live = 0;  // sessions alive
  std::vector<std::weak_ptr<Conn>> sessions;
  bool stopping = false;
  // Requests posted to the handler pool and not finished yet (queued or running).
  std::atomic<std::size_t> in_handlers{0};
  // Set when the server speaks TLS (ServerOptions::tls_cert_file).
  std::optional<boost::asio::ssl::context> tls;
  boost::asio::io_context ioc;
  boost::asio::thread_pool pool;
  // The probes' own lane (ServerOptions::probe_paths): one thread, never
  // behind the handler queue, so a health check answers under any load.
  boost::asio::thread_pool probe_pool{1};
  // ServerOptions::lane_prefix's threads (one when there is no lane).
  std::unique_ptr<boost::asio::thread_pool> lane_pool;

  ServerState(ServerOptions o, Handler h)
      : opts(std::move(o)),
        handler(std::move(h)),
        ioc(std::max(1, opts.io_threads)),
        pool(static_cast<std::size_t>(std::max(1, opts.handler_threads))),
        lane_pool(std::make_unique<boost::asio::thread_pool>(static_cast<std::size_t>(
            opts.lane_prefix.empty() ? 1 : std::max(1, opts.lane_threads)))) {}

  Response run_handler(const Request& req) {
    try {
      return handler(req);
    } catch (const std::exception& e) {
      return error_response(Error::internal(std::string("handler failed: ") + e.what()));
    } catch (...) {
      return error_response(Error::internal("handler failed"));
    }
  }
};

// One connection counted in ServerState::live, from the accept to the end of
// whichever object serves it last (a TlsDetector hands it to its Session).
class LiveSlot {
 public:
  explicit LiveSlot(ServerState* st) : st_(st) {}
  ~LiveSlot() {
    std::lock_guard lock(st_->mu);
    --st_->live;
    st_->cv.notify_all();
  }
  LiveSlot(const LiveSlot&) = delete;
  LiveSlot& operator=(const LiveSlot&) = delete;

 private:
  ServerState* st_;
};

// Adds `conn` to the connections that stop() shuts down. Defined in
// http_server.cpp, beside stop(), which reads the list.
void remember(ServerState* st, const std::shared_ptr<Conn>& conn);

}  // namespace hpo::web
