// HttpServer itself: the listening socket and its accept loop (the connection
// cap, a pause when out of descriptors), start() and the orderly stop(). A
// connection is served by a Session (http_session.cpp), on an HTTPS port after
// the TLS detector (server_tls.cpp).
#include "web/http_server.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>

#include "web/http_session.hpp"
#include "web/server_state.hpp"
#include "web/server_tls.hpp"

namespace hpo::web {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

void remember(ServerState* st, const std::shared_ptr<Conn>& conn) {
  std::lock_guard lock(st->mu);
  std::erase_if(st->sessions, [](const auto& w) { return w.expired(); });
  st->sessions.push_back(conn);
}

struct HttpServer::Impl {
  std::unique_ptr<ServerState> st;
  std::optional<tcp::acceptor> acceptor;
  std::optional<net::steady_timer> accept_pause;
  std::vector<std::thread> threads;
  int port = 0;
  bool started = false, stopped = false;

  void do_accept() {
    acceptor->async_accept(net::make_strand(st->ioc), [this](beast::error_code ec,
                                                             tcp::socket socket) {
      if (ec) {
        if (ec == net::error::operation_aborted || !acceptor->is_open()) return;
        // Out of descriptors (EMFILE, ENFILE) or memory: accepting again at
        // once would spin. Pause, keep serving the open connections.
        accept_pause->expires_after(std::chrono::milliseconds(100));
        accept_pause->async_wait([this](beast::error_code wec) {
          if (!wec && acceptor->is_open()) do_accept();
        });
        return;
      }
      {
        std::lock_guard lock(st->mu);
        if (st->stopping) return;
        if (st->live >= st->opts.max_connections) {
          // Full: a short answer instead of an unbounded queue of sockets.
          static const std::string kBusy = [] {
            const std::string body =
                R"({"error":{"code":"unavailable","fields":[],"message":"too many connections"}})";
            return "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: "
                   "application/json\r\nContent-Length: " +
                   std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
          }();
          beast::error_code wec;
          socket.non_blocking(true, wec);
          if (!st->tls) net::write(socket, net::buffer(kBusy), wec);  // TLS: just close
          socket.shutdown(tcp::socket::shutdown_both, wec);
          socket.close(wec);
          do_accept();
          return;
        }
        ++st->live;
      }
      auto live = std::make_unique<LiveSlot>(st.get());
      if (st->tls) {
        start_tls_detector(std::move(socket), st.get(), std::move(live));
      } else {
        start_session(beast::tcp_stream(std::move(socket)), beast::flat_buffer{}, st.get(),
                      std::move(live));
      }
      do_accept();
    });
  }
};

HttpServer::HttpServer(ServerOptions options, Handler handler) : impl_(std::make_unique<Impl>()) {
  impl_->st = std::make_unique<ServerState>(std::move(options), std::move(handler));
}

HttpServer::~HttpServer() {
  stop();
}

Status HttpServer::start() {
  auto& im = *impl_;
  if (im.started) return Error::conflict("server already started");
  if (auto st = load_tls(im.st.get()); !st) return st;
  beast::error_code ec;
  auto address = net::ip::make_address(im.st->opts.host, ec);
  if (ec) return Error::invalid("listen", "bad address '" + im.st->opts.host + "'");
  tcp::endpoint ep{address, static_cast<unsigned short>(im.st->opts.port)};
  im.acceptor.emplace(net::make_strand(im.st->ioc));
  im.accept_pause.emplace(im.acceptor->get_executor());
  im.acceptor->open(ep.protocol(), ec);
  if (!ec) im.acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) im.acceptor->bind(ep, ec);
  if (!ec) im.acceptor->listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    im.acceptor.reset();
    return Error::unavailable("cannot listen on " + im.st->opts.host + ":" +
                              std::to_string(im.st->opts.port) + ": " + ec.message());
  }
  im.port = im.acceptor->local_endpoint().port();
  im.started = true;
  im.do_accept();
  for (int i = 0; i < std::max(1, im.st->opts.io_threads); ++i)
    im.threads.emplace_back([st = im.st.get()] { st->ioc.run(); });
  return {};
}

int HttpServer::port() const {
  return impl_->port;
}

std::size_t HttpServer::connection_count() const {
  std::lock_guard lock(impl_->st->mu);
  return impl_->st->live;
}

void HttpServer::stop() {
  auto& im = *impl_;
  if (!im.started || im.stopped) return;
  im.stopped = true;
  auto& st = *im.st;
  std::vector<std::shared_ptr<Conn>> sessions;
  {
    std::lock_guard lock(st.mu);
    st.stopping = true;
    for (auto& w : st.sessions)
      if (auto s = w.lock()) sessions.push_back(std::move(s));
    st.sessions.clear();
  }
  net::post(im.acceptor->get_executor(), [&im] {
    beast::error_code ec;
    im.acceptor->close(ec);
  });
  for (auto& s : sessions) s->shutdown();
  sessions.clear();
  {
    std::unique_lock lock(st.mu);
    st.cv.wait_for(lock, st.opts.shutdown_timeout, [&] { return st.live == 0; });
  }
  st.pool.stop();  // handlers not yet started are dropped; running ones finish
  st.pool.join();
  st.probe_pool.stop();
  st.probe_pool.join();
  st.lane_pool->stop();
  st.lane_pool->join();
  st.ioc.stop();
  for (auto& t : im.threads) t.join();
  im.threads.clear();
}

}  // namespace hpo::web
