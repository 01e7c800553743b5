// The Session: one connection of the HttpServer from its first request to its
// close, plain or over TLS, with its three kinds of response body (in memory,
// a file streamed from disk, server-sent events). Apart from the acceptor
// (http_server.cpp) because it is most of the transport's code.
//
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
#include "web/http_session.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "core/byte_stream.hpp"
#include "web/api_errors.hpp"
#include "web/event_hub.hpp"
#include "web/http_message.hpp"
#include "web/server_state.hpp"

namespace hpo::web {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

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

// The headers every answer carries, and the handler's own.
void set_headers(http::fields& f, const Response& r) {
  f.set(http::field::server, "hpo");
  f.set(http::field::content_type, r.content_type);
  f.set("X-Content-Type-Options", "nosniff");
  for (const auto& [k, v] : r.headers) f.insert(k, v);
}

http::response<http::string_body> to_beast(Response&& r, unsigned version, bool keep_alive) {
  http::response<http::string_body> res{static_cast<http::status>(r.status), version};
  set_headers(res, r);
  res.keep_alive(keep_alive);
  res.body() = std::move(r.body);
  res.prepare_payload();
  return res;
}

// Stream: beast::tcp_stream (plain HTTP) or ssl_stream<tcp_stream> (HTTPS).
template <class Stream>
class Session : public Conn, public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;
  using std::enable_shared_from_this<Session<Stream>>::shared_from_this;

 public:
  // `buffer`: bytes already read from the connection (the TLS detector's).
  Session(Stream&& stream, beast::flat_buffer buffer, ServerState* st,
          std::unique_ptr<LiveSlot> live)
      : stream_(std::move(stream)),
        st_(st),
        live_(std::move(live)),
        buffer_(std::move(buffer)),
        keepalive_(stream_.get_executor()) {
    beast::error_code ec;
    auto ep = lowest().socket().remote_endpoint(ec);
    if (!ec) remote_ = ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  void run() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      if constexpr (kTls) {
        self->handshake();
      } else {
        self->do_read();
      }
    });
  }

  // Server stop: finish what is in flight, then close.
  void shutdown() override {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      self->stopping_ = true;
      // A write in flight ends first (its completion sees stopping_ and
      // closes), so that a TLS stream ends with a close_notify after it.
      if ((self->sse_ || self->pending_.empty()) && !self->writing_) self->close();
    });
  }

 private:
  struct Slot {
    bool keep_alive = true;
    unsigned version = 11;
    std::optional<Response> response;
  };

  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  // TLS: the handshake, within the read deadline, before the first request. A
  // client that fails it (a bad certificate on its side, plain bytes) is closed.
  void handshake() {
    if constexpr (kTls) {
      lowest().expires_after(st_->opts.read_timeout);
      reading_ = true;
      stream_.async_handshake(net::ssl::stream_base::server, buffer_.data(),
                              [self = shared_from_this()](beast::error_code ec, std::size_t used) {
                                self->reading_ = false;
                                if (ec) {
                                  self->tls_broken_ = true;
                                  return self->close();
                                }
                                self->buffer_.consume(used);
                                self->do_read();
                              });
    }
  }

  void do_read() {
    if (reading_ || read_closed_ || closed_ || stopping_ || sse_) return;
    if (pending_.size() >= st_->opts.max_pipelined) return;  // resumed by on_write
    parser_.emplace();
    parser_->header_limit(st_->opts.header_limit);
    lowest().expires_after(st_->opts.read_timeout);
    reading_ = true;
    // The header first: it says whether the request is the lane's, whose
    // bodies may be larger. Beast checks a Content-Length against the limit
    // as the header ends, so the header is read under the larger one, and any
    // other request is held to its own here (a chunked body, as it comes).
    const auto& o = st_->opts;
    parser_->body_limit(o.lane_prefix.empty() ? o.body_limit
                                              : std::max(o.body_limit, o.lane_body_limit));
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              if (ec || self->closed_ || self->sse_) return self->on_read(ec, n);
                              if (!self->in_lane(target_of(*self->parser_))) {
                                const auto length = self->parser_->content_length();
                                if (length && *length > self->st_->opts.body_limit)
                                  return self->on_read(http::error::body_limit, n);
                                self->parser_->body_limit(self->st_->opts.body_limit);
                              }
                              http::async_read(
                                  self->stream_, self->buffer_, *self->parser_,
                                  beast::bind_front_handler(&Session<Stream>::on_read, self));
                            });
  }

  template <class Parser>
  static std::string_view target_of(Parser& p) {
    auto t = p.get().target();
    return {t.data(), t.size()};
  }

  bool in_lane(std::string_view target) const {
    return !st_->opts.lane_prefix.empty() && target.starts_with(st_->opts.lane_prefix);
  }

  void on_read(beast::error_code ec, std::size_t) {
    reading_ = false;
    if (closed_ || sse_) return;
    if (ec) {
      read_closed_ = true;
      if (ec == http::error::body_limit) {
        const bool lane = parser_ && in_lane(target_of(*parser_));
        queue_ready(error_response(Error{
            ErrorCode::kPayloadTooLarge,
            "request body exceeds " +
                std::to_string(lane ? st_->opts.lane_body_limit : st_->opts.body_limit) + " bytes",
            {}}));
      } else if (ec == http::error::header_limit) {
        queue_ready(error_response(431, HttpError::kHeaderTooLarge, "request headers too large"));
      } else if (is_http_error(ec) && ec != http::error::end_of_stream &&
                 ec != http::error::partial_message) {
        queue_ready(
            error_response(400, HttpError::kBadRequest, "malformed request: " + ec.message()));
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
      queue_ready(error_response(400, HttpError::kBadRequest, "malformed request target"));
      return;
    }
    // Probes (/healthz) take their own lane: answered now, not after the queue.
    const bool probe =
        req.method == "GET" && std::find(st_->opts.probe_paths.begin(), st_->opts.probe_paths.end(),
                                         req.path) != st_->opts.probe_paths.end();
    if (probe) return dispatch(st_->probe_pool, std::move(req), keep_alive, version, false);
    // The lane (workers' calls) has its own threads: a worker's wait holds
    // one of those, never an API handler.
    if (in_lane(req.path))
      return dispatch(*st_->lane_pool, std::move(req), keep_alive, version, false);
    // A bounded handler queue: when the handlers are that far behind (a slow
    // store, a flood), answering 503 now is better than an unbounded backlog
    // whose answers come too late for anyone.
    if (st_->in_handlers.fetch_add(1) >= st_->opts.max_queued_requests) {
      st_->in_handlers.fetch_sub(1);
      read_closed_ = true;
      // 503 with Retry-After: 1, as every kUnavailable.
      queue_ready(error_response(Error::unavailable("the server is busy; retry shortly")));
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
    if (front.response->file)
      return start_file(std::move(*front.response), front.version, keep_alive);
    auto msg = std::make_shared<http::response<http::string_body>>(
        to_beast(std::move(*front.response), front.version, keep_alive));
    out_ = msg;
    writing_ = true;
    lowest().expires_after(st_->opts.write_timeout);
    http::async_write(
        stream_, *msg,
        beast::bind_front_handler(&Session<Stream>::on_write, shared_from_this(), keep_alive));
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
    if constexpr (kTls) return close();  // the TLS close_notify ends it
    beast::error_code ec;
    lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
    lowest().expires_after(std::chrono::seconds(2));
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
    if constexpr (kTls) {
      // A TLS close_notify, so that the client can tell the end of a stream
      // from a truncation; only when no read or write is in flight on it.
      if (!tls_broken_ && !reading_ && !writing_) {
        lowest().expires_after(std::chrono::seconds(2));
        stream_.async_shutdown(
            [self = shared_from_this()](beast::error_code) { self->close_socket(); });
        return;
      }
    }
    close_socket();
  }

  void close_socket() {
    beast::error_code ec;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    lowest().socket().close(ec);
  }

  // --- file bodies -------------------------------------------------------------
  // The header, then the file in kStreamChunk pieces (pread on this strand:
  // one chunk of disk at a time), each under the write deadline.

  void start_file(Response res, unsigned version, bool keep_alive) {
    file_ = std::move(res.file);
    file_header_ = {};
    file_header_.version(version);
    file_header_.result(static_cast<http::status>(res.status));
    set_headers(file_header_, res);
    file_header_.set(http::field::content_length, std::to_string(file_->length));
    file_header_.keep_alive(keep_alive);
    file_sr_.emplace(file_header_);
    writing_ = true;
    lowest().expires_after(st_->opts.write_timeout);
    http::async_write_header(
        stream_, *file_sr_,
        [self = shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
          self->writing_ = false;
          if (ec || self->closed_) return self->close();
          self->file_pump(keep_alive);
        });
  }

  void file_pump(bool keep_alive) {
    if (closed_) return;
    if (file_->length == 0) {
      file_.reset();
      file_sr_.reset();
      file_buf_.clear();
      file_buf_.shrink_to_fit();
      return on_write(keep_alive, {}, 0);
    }
    file_buf_.resize(static_cast<std::size_t>(
        std::min<std::int64_t>(file_->length, static_cast<std::int64_t>(kStreamChunk))));
    ssize_t n;
    do {
      n = ::pread(file_->fd, file_buf_.data(), file_buf_.size(), file_->offset);
    } while (n < 0 && errno == EINTR);
    // A file cut short under us: the client sees a body shorter than its
    // Content-Length, never other bytes.
    if (n <= 0) return close();
    file_->offset += n;
    file_->length -= n;
    writing_ = true;
    lowest().expires_after(st_->opts.write_timeout);
    net::async_write(stream_, net::buffer(file_buf_.data(), static_cast<std::size_t>(n)),
                     [self = shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
                       self->writing_ = false;
                       if (ec || self->closed_) return self->close();
                       self->file_pump(keep_alive);
                     });
  }

  // --- server-sent events ---------------------------------------------------

  void start_sse(Response res, unsigned version) {
    sse_ = true;
    if (reading_) {  // a pipelined read: nothing more is read on a stream
      beast::error_code ec;
      lowest().socket().cancel(ec);
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
    lowest().expires_after(st_->opts.write_timeout);
    http::async_write_header(stream_, *sse_sr_,
                             [self = shared_from_this()](beast::error_code ec, std::size_t) {
                               self->writing_ = false;
                               if (ec || self->closed_ || self->stopping_) return self->close();
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
    lowest().expires_after(st_->opts.write_timeout);
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

  Stream stream_;
  ServerState* st_;
  std::unique_ptr<LiveSlot> live_;
  std::string remote_;
  beast::flat_buffer buffer_;
  bool tls_broken_ = false;  // the handshake failed: no close_notify to send
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
  std::shared_ptr<FileBody> file_;
  http::response<http::empty_body> file_header_;
  std::optional<http::response_serializer<http::empty_body>> file_sr_;
  std::string file_buf_;
  http::response<http::empty_body> sse_header_;
  std::optional<http::response_serializer<http::empty_body>> sse_sr_;
  std::string sse_out_, sse_buf_;
  net::steady_timer keepalive_;
};

}  // namespace

void start_session(beast::tcp_stream&& stream, beast::flat_buffer buffer, ServerState* st,
                   std::unique_ptr<LiveSlot> live) {
  auto session = std::make_shared<Session<beast::tcp_stream>>(std::move(stream), std::move(buffer),
                                                              st, std::move(live));
  remember(st, session);
  session->run();
}

void start_session(beast::ssl_stream<beast::tcp_stream>&& stream, beast::flat_buffer buffer,
                   ServerState* st, std::unique_ptr<LiveSlot> live) {
  auto session = std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(
      std::move(stream), std::move(buffer), st, std::move(live));
  remember(st, session);
  session->run();
}

}  // namespace hpo::web
