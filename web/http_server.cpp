// HttpServer: the transport. Sessions follow Boost.Beast's advanced server:
// one strand per connection, a parser per request with body/header limits,
// `expires_after` before every read and write, an ordered queue of in-flight
// requests (the pipelining cap). Unlike the Beast examples the handler does
// not run on the io thread: it is posted to a thread pool because handlers
// call Redis, and the result is posted back to the connection's strand.
//
// Closing after an error response (413, 400) is "lingering": we stop sending,
// then read and discard what the client is still sending for a short while,
// so that it reads our response instead of a connection reset.
#include "web/http_server.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "web/api_errors.hpp"
#include "web/event_hub.hpp"

namespace hpo::web {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

class Session;

// Shared by the acceptor and every session. Members are destroyed in reverse
// order: the io_context (and the sessions its queued handlers hold) goes before
// the mutex that session destructors lock.
struct ServerState {
  ServerOptions opts;
  Handler handler;
  std::mutex mu;
  std::condition_variable cv;
  std::size_t live = 0;  // sessions alive
  std::vector<std::weak_ptr<Session>> sessions;
  bool stopping = false;
  // Requests posted to the handler pool and not finished yet (queued or running).
  std::atomic<std::size_t> in_handlers{0};
  net::io_context ioc;
  net::thread_pool pool;
  // The probes' own lane (ServerOptions::probe_paths): one thread, never
  // behind the handler queue, so a health check answers under any load.
  net::thread_pool probe_pool{1};

  ServerState(ServerOptions o, Handler h)
      : opts(std::move(o)),
        handler(std::move(h)),
        ioc(std::max(1, opts.io_threads)),
        pool(static_cast<std::size_t>(std::max(1, opts.handler_threads))) {}

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

bool is_http_error(const beast::error_code& ec) {
  return &ec.category() == &http::make_error_code(http::error::bad_target).category();
}

Request to_request(http::request<http::string_body>&& msg, const std::string& remote, bool& ok) {
  Request req;
  req.method = std::string(msg.method_string());
  req.target = std::string(msg.target());
  ok = parse_target(req.target, req.path, req.query);
  for (const auto& f : msg) {
    std::string name = ascii_lower(std::string(f.name_string()));
    auto [it, inserted] = req.headers.emplace(name, std::string(f.value()));
    if (!inserted) it->second += ", " + std::string(f.value());
  }
  req.body = std::move(msg.body());
  req.remote = remote;
  return req;
}

http::response<http::string_body> to_beast(Response&& r, unsigned version, bool keep_alive) {
  http::response<http::string_body> res{static_cast<http::status>(r.status), version};
  res.set(http::field::server, "hpo");
  res.set(http::field::content_type, r.content_type);
  res.set("X-Content-Type-Options", "nosniff");
  for (auto& [k, v] : r.headers) res.insert(k, v);
  res.keep_alive(keep_alive);
  res.body() = std::move(r.body);
  res.prepare_payload();
  return res;
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, ServerState* st)
      : stream_(std::move(socket)), st_(st), keepalive_(stream_.get_executor()) {
    beast::error_code ec;
    auto ep = stream_.socket().remote_endpoint(ec);
    if (!ec) remote_ = ep.address().to_string() + ":" + std::to_string(ep.port());
  }
  ~Session() {
    std::lock_guard lock(st_->mu);
    --st_->live;
    st_->cv.notify_all();
  }

  void run() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->do_read(); });
  }

  // Server stop: finish what is in flight, then close.
  void shutdown() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      self->stopping_ = true;
      if (self->sse_ || (self->pending_.empty() && !self->writing_)) self->close();
    });
  }

 private:
  struct Slot {
    bool keep_alive = true;
    unsigned version = 11;
    std::optional<Response> response;
  };

  void do_read() {
    if (reading_ || read_closed_ || closed_ || stopping_ || sse_) return;
    if (pending_.size() >= st_->opts.max_pipelined) return;  // resumed by on_write
    parser_.emplace();
    parser_->body_limit(st_->opts.body_limit);
    parser_->header_limit(st_->opts.header_limit);
    stream_.expires_after(st_->opts.read_timeout);
    reading_ = true;
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, std::size_t) {
    reading_ = false;
    if (closed_ || sse_) return;
    if (ec) {
      read_closed_ = true;
      if (ec == http::error::body_limit) {
        queue_ready(error_response(
            Error{ErrorCode::kPayloadTooLarge,
                  "request body exceeds " + std::to_string(st_->opts.body_limit) + " bytes",
                  {}}));
      } else if (ec == http::error::header_limit) {
        queue_ready(error_response(431, "header_too_large", "request headers too large"));
      } else if (is_http_error(ec) && ec != http::error::end_of_stream &&
                 ec != http::error::partial_message) {
        queue_ready(error_response(400, "bad_request", "malformed request: " + ec.message()));
      } else {
        maybe_finish();  // end of stream, timeout, reset: nothing to answer
      }
      return;
    }
    auto msg = parser_->release();
    bool keep_alive = msg.keep_alive();
    unsigned version = msg.version();
    bool target_ok = true;
    Request req = to_request(std::move(msg), remote_, target_ok);
    if (!keep_alive) read_closed_ = true;
    if (!target_ok) {
      read_closed_ = true;
      queue_ready(error_response(400, "bad_request", "malformed request target"));
      return;
    }
    // Probes (/healthz) take their own lane: answered now, not after the queue.
    const bool probe =
        req.method == "GET" && std::find(st_->opts.probe_paths.begin(), st_->opts.probe_paths.end(),
                                         req.path) != st_->opts.probe_paths.end();
    if (probe) return dispatch(st_->probe_pool, std::move(req), keep_alive, version, false);
    // A bounded handler queue: when the handlers are that far behind (a slow
    // store, a flood), answering 503 now is better than an unbounded backlog
    // whose answers come too late for anyone.
    if (st_->in_handlers.fetch_add(1) >= st_->opts.max_queued_requests) {
      st_->in_handlers.fetch_sub(1);
      read_closed_ = true;
      Response busy = error_response(503, "unavailable", "the server is busy; retry shortly");
      busy.headers.emplace_back("Retry-After", "1");
      queue_ready(std::move(busy));
      return;
    }
    dispatch(st_->pool, std::move(req), keep_alive, version, /*counted=*/true);
  }

  // Runs the handler on `pool`; its response goes back to this connection's
  // strand in request order. `counted`: the request holds a place in the
  // bounded handler queue (in_handlers) until its handler returns.
  void dispatch(net::thread_pool& pool, Request req, bool keep_alive, unsigned version,
                bool counted) {
    std::uint64_t seq = next_seq_++;
    pending_.push_back({keep_alive, version, std::nullopt});
    net::post(pool, [self = shared_from_this(), seq, req = std::move(req), counted]() mutable {
      Response res = self->st_->run_handler(req);
      if (counted) self->st_->in_handlers.fetch_sub(1);
      net::post(self->stream_.get_executor(), [self, seq, res = std::move(res)]() mutable {
        self->on_response(seq, std::move(res));
      });
    });
    do_read();
  }

  // An answer that needs no handler (protocol errors); the connection ends after it.
  void queue_ready(Response res) {
    ++next_seq_;
    pending_.push_back({false, 11, std::move(res)});
    do_write();
  }

  void on_response(std::uint64_t seq, Response res) {
    if (closed_ || seq < first_seq_) return;
    pending_[seq - first_seq_].response = std::move(res);
    do_write();
  }

  void do_write() {
    if (writing_ || closed_ || sse_) return;
    if (pending_.empty()) {
      maybe_finish();
      return;
    }
    Slot& front = pending_.front();
    if (!front.response) return;  // its handler is still running
    if (front.response->stream) {
      start_sse(std::move(*front.response), front.version);
      return;
    }
    bool keep_alive = front.keep_alive && !stopping_;
    auto msg = std::make_shared<http::response<http::string_body>>(
        to_beast(std::move(*front.response), front.version, keep_alive));
    out_ = msg;
    writing_ = true;
    stream_.expires_after(st_->opts.write_timeout);
    http::async_write(
        stream_, *msg,
        beast::bind_front_handler(&Session::on_write, shared_from_this(), keep_alive));
  }

  void on_write(bool keep_alive, beast::error_code ec, std::size_t) {
    writing_ = false;
    out_.reset();
    if (ec || closed_) return close();
    pending_.pop_front();
    ++first_seq_;
    if (!keep_alive) {
      // A pipelined read may still be pending: abandon it. Otherwise linger.
      if (reading_ || stopping_) return close();
      return linger_close();
    }
    do_read();
    do_write();
  }

  void maybe_finish() {
    if (closed_ || writing_ || !pending_.empty()) return;
    if (read_closed_ || stopping_) close();
  }

  void linger_close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.expires_after(std::chrono::seconds(2));
    drain();
  }
  void drain() {
    stream_.async_read_some(net::buffer(drain_buf_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec || self->closed_) return self->close();
                              self->drain();
                            });
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    keepalive_.cancel();
    if (sub_) sub_->close();
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
  }

  // --- server-sent events ---------------------------------------------------

  void start_sse(Response res, unsigned version) {
    sse_ = true;
    if (reading_) {  // a pipelined read: nothing more is read on a stream
      beast::error_code ec;
      stream_.socket().cancel(ec);
    }
    sub_ = std::move(res.stream);
    sse_out_ = std::move(res.body);
    sse_header_.version(version);
    sse_header_.result(static_cast<http::status>(res.status));
    sse_header_.set(http::field::server, "hpo");
    sse_header_.set(http::field::content_type, "text/event-stream");
    sse_header_.set(http::field::cache_control, "no-cache");
    sse_header_.set("X-Accel-Buffering", "no");
    for (auto& [k, v] : res.headers) sse_header_.insert(k, v);
    sse_header_.keep_alive(false);  // the body ends when the connection does
    sse_sr_.emplace(sse_header_);
    writing_ = true;
    stream_.expires_after(st_->opts.write_timeout);
    http::async_write_header(stream_, *sse_sr_,
                             [self = shared_from_this()](beast::error_code ec, std::size_t) {
                               self->writing_ = false;
                               if (ec || self->closed_) return self->close();
                               self->pending_.clear();
                               std::weak_ptr<Session> weak = self;
                               auto exec = self->stream_.get_executor();
                               self->sub_->set_notify([weak, exec] {
                                 if (auto s = weak.lock()) net::post(exec, [s] { s->sse_pump(); });
                               });
                               self->arm_keepalive();
                               self->sse_pump();
                             });
  }

  void sse_pump() {
    if (closed_ || writing_) return;
    std::string data = std::move(sse_out_);
    sse_out_.clear();
    auto batch = sub_->take();
    data += batch.frames;
    if (data.empty()) {
      if (batch.closed) close();
      return;
    }
    sse_buf_ = std::move(data);
    sse_end_ = batch.closed;
    writing_ = true;
    stream_.expires_after(st_->opts.write_timeout);
    net::async_write(stream_, net::buffer(sse_buf_),
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       self->writing_ = false;
                       if (ec || self->sse_end_ || self->stopping_) return self->close();
                       self->sse_pump();
                     });
  }

  void arm_keepalive() {
    keepalive_.expires_after(st_->opts.sse_keepalive);
    keepalive_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || self->closed_) return;
      self->sub_->offer_raw(": keepalive\n\n");
      self->arm_keepalive();
    });
  }

  beast::tcp_stream stream_;
  ServerState* st_;
  std::string remote_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::deque<Slot> pending_;  // in request order; front is written next
  std::uint64_t first_seq_ = 0, next_seq_ = 0;
  bool reading_ = false, writing_ = false, read_closed_ = false, closed_ = false;
  bool stopping_ = false;
  std::shared_ptr<void> out_;  // the response being written
  std::array<char, 4096> drain_buf_{};

  bool sse_ = false;
  bool sse_end_ = false;
  std::shared_ptr<Subscription> sub_;
  http::response<http::empty_body> sse_header_;
  std::optional<http::response_serializer<http::empty_body>> sse_sr_;
  std::string sse_out_, sse_buf_;
  net::steady_timer keepalive_;
};

}  // namespace

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
      std::shared_ptr<Session> session;
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
          net::write(socket, net::buffer(kBusy), wec);
          socket.shutdown(tcp::socket::shutdown_both, wec);
          socket.close(wec);
          do_accept();
          return;
        }
        session = std::make_shared<Session>(std::move(socket), st.get());
        ++st->live;
        std::erase_if(st->sessions, [](const auto& w) { return w.expired(); });
        st->sessions.push_back(session);
      }
      session->run();
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
  std::vector<std::shared_ptr<Session>> sessions;
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
  st.ioc.stop();
  for (auto& t : im.threads) t.join();
  im.threads.clear();
}

}  // namespace hpo::web
