#include "core/http_client.hpp"

#include <array>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "core/byte_stream.hpp"
#include "core/text.hpp"

namespace hpo {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// `doing`: what the deadline cut short, "connecting", "sending" or "reading".
Error transport_error(const std::string& what, const beast::error_code& ec,
                      const char* doing = "reading") {
  if (ec == beast::error::timeout) return Error::unavailable(what + ": timed out " + doing);
  return Error::unavailable(what + ": " + ec.message());
}

// Resolves and connects `stream` within its expiry; runs `ioc` until done.
beast::error_code connect(net::io_context& ioc, beast::tcp_stream& stream, const std::string& host,
                          int port, std::chrono::milliseconds timeout) {
  tcp::resolver resolver(ioc);
  beast::error_code out = net::error::would_block;
  stream.expires_after(timeout);
  resolver.async_resolve(
      host, std::to_string(port), [&](beast::error_code ec, tcp::resolver::results_type results) {
        if (ec) {
          out = ec;
          return;
        }
        stream.async_connect(results,
                             [&](beast::error_code ec2, const tcp::endpoint&) { out = ec2; });
      });
  ioc.restart();
  ioc.run();
  return out;
}

using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One connection, over TCP or over TLS on TCP; `with` runs an operation on
// whichever it is.
struct Connection {
  std::optional<beast::tcp_stream> plain;
  std::optional<TlsStream> tls;

  bool open() const { return plain || tls; }
  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
  template <class F>
  void with(F&& f) {
    if (tls)
      f(*tls);
    else
      f(*plain);
  }
  void drop() {
    if (open()) {
      beast::error_code ec;
      lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
      lowest().socket().close(ec);
    }
    plain.reset();
    tls.reset();
  }
};

// Why a TLS handshake failed, in words a user can act on. `name_mismatch`:
// the chain was trusted but the certificate does not name `host`.
std::string handshake_failure(TlsStream& stream, const std::string& host, bool name_mismatch,
                              const beast::error_code& ec) {
  if (name_mismatch)
    return "the scheduler's certificate does not name '" + host +
           "' (its subjectAltName): connect by a name or address it names";
  const long verify = SSL_get_verify_result(stream.native_handle());
  if (verify != X509_V_OK)
    return fmt::format(
        "the scheduler's certificate is not trusted ({}): pass --ca-file with the CA that signed "
        "it (for a self-signed certificate, the certificate itself) [HPO_CA_FILE]",
        X509_verify_cert_error_string(verify));
  return ec.message() + " (is the server speaking HTTPS?)";
}

// Connects `conn` to host:port, with TLS (verified against `ctx`) when
// `ctx` is given. Runs `ioc` until done; kUnavailable on failure.
Status open_connection(net::io_context& ioc, Connection& conn, const std::string& host, int port,
                       net::ssl::context* ctx, std::chrono::milliseconds timeout) {
  const std::string where = host + ":" + std::to_string(port);
  beast::tcp_stream tcp_stream(ioc);
  if (auto ec = connect(ioc, tcp_stream, host, port, timeout))
    return transport_error("connect to " + where, ec, "connecting");
  if (!ctx) {
    conn.plain.emplace(std::move(tcp_stream));
    return {};
  }
  conn.tls.emplace(std::move(tcp_stream), *ctx);
  beast::error_code addr_ec;
  net::ip::make_address(host, addr_ec);
  if (addr_ec)  // a name: send it (SNI) for servers with several certificates
    SSL_set_tlsext_host_name(conn.tls->native_handle(), host.c_str());
  conn.tls->set_verify_mode(net::ssl::verify_peer);
  bool name_mismatch = false;
  conn.tls->set_verify_callback([&name_mismatch, check = net::ssl::host_name_verification(host)](
                                    bool preverified, net::ssl::verify_context& vc) {
    const bool ok = check(preverified, vc);
    if (preverified && !ok) name_mismatch = true;  // trusted, but for another name
    return ok;
  });
  beast::error_code ec = net::error::would_block;
  conn.lowest().expires_after(timeout);
  conn.tls->async_handshake(net::ssl::stream_base::client, [&](beast::error_code e) { ec = e; });
  ioc.restart();
  ioc.run();
  if (ec) {
    std::string why = handshake_failure(*conn.tls, host, name_mismatch, ec);
    conn.drop();
    return Error::unavailable("TLS handshake with " + where + " failed: " + why);
  }
  return {};
}

// The client side of TLS: verify peers against `ca_file`, or the system's CAs.
Result<std::unique_ptr<net::ssl::context>> client_context(const std::string& ca_file) {
  auto ctx = std::make_unique<net::ssl::context>(net::ssl::context::tls_client);
  ctx->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                   net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                   net::ssl::context::no_tlsv1_1);
  beast::error_code ec;
  if (ca_file.empty()) {
    ctx->set_default_verify_paths(ec);
  } else {
    ctx->load_verify_file(ca_file, ec);
    // Like curl: a certificate the user names is trusted as an anchor even
    // when it is not a self-signed root (an intermediate, the server's own).
    X509_STORE_set_flags(SSL_CTX_get_cert_store(ctx->native_handle()), X509_V_FLAG_PARTIAL_CHAIN);
  }
  if (ec)
    return Error::invalid(
        "--ca-file", "cannot read CA certificates from " +
                         (ca_file.empty() ? std::string("the system's store") : ca_file) + ": " +
                         ec.message());
  return ctx;
}

ClientResponse to_client(http::response<http::string_body>&& res) {
  ClientResponse out;
  out.status = static_cast<int>(res.result_int());
  for (const auto& f : res)
    out.headers[ascii_lower(std::string(f.name_string()))] = std::string(f.value());
  out.body = std::move(res.body());
  return out;
}

}  // namespace

std::string ClientResponse::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

Result<HttpUrl> parse_http_url(std::string_view url) {
  HttpUrl out;
  std::string_view rest = url;
  if (rest.rfind("http://", 0) == 0) {
    rest.remove_prefix(7);
  } else if (rest.rfind("https://", 0) == 0) {
    rest.remove_prefix(8);
    out.tls = true;
    out.port = 443;
  } else if (rest.find("://") != std::string_view::npos) {
    return Error::invalid(
        "server", "only http:// and https:// URLs are supported: '" + std::string(url) + "'");
  }
  auto slash = rest.find('/');
  std::string_view hostport = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    out.base = std::string(rest.substr(slash));
    while (!out.base.empty() && out.base.back() == '/') out.base.pop_back();
  }
  // "[::1]:8080", "host:8080", "host"
  auto bracket = hostport.rfind(']');
  auto colon = hostport.rfind(':');
  if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket)) {
    std::string p(hostport.substr(colon + 1));
    std::size_t used = 0;
    try {
      out.port = std::stoi(p, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != p.size() || out.port <= 0 || out.port > 65535)
      return Error::invalid("server", "bad port in '" + std::string(url) + "'");
    hostport = hostport.substr(0, colon);
  }
  out.host = std::string(hostport);
  if (out.host.size() > 2 && out.host.front() == '[' && out.host.back() == ']')
    out.host = out.host.substr(1, out.host.size() - 2);
  if (out.host.empty()) return Error::invalid("server", "no host in '" + std::string(url) + "'");
  return out;
}

// --- HttpClient -------------------------------------------------------------

struct HttpClient::Impl {
  std::string host;
  int port = 0;
  std::string base;
  bool tls = false;
  std::string ca_file;
  std::chrono::milliseconds timeout;
  std::uint64_t body_limit = std::uint64_t{1} << 30;
  std::string token;
  net::io_context ioc;
  std::unique_ptr<net::ssl::context> ctx;  // made at the first TLS connect
  Connection conn;
  beast::flat_buffer buffer;

  void drop() {
    conn.drop();
    buffer.clear();
  }

  // A connection (TLS: with the context made at the first connect).
  Status open() {
    if (tls && !ctx) {
      auto made = client_context(ca_file);
      if (!made) return made.error();
      ctx = std::move(*made);
    }
    auto st = open_connection(ioc, conn, host, port, ctx.get(), timeout);
    if (!st) drop();
    return st;
  }

  // The request's common headers.
  template <class Body>
  void prepare(http::request<Body>& req) {
    req.set(http::field::host, host + ":" + std::to_string(port));
    req.set(http::field::user_agent, "hpo");
    if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
  }

  // Writes `req`, then starts `read(stream)` (an async read with its own
  // handler), within the deadline; the write's error, else what the read
  // stored in `read_ec`.
  template <class Req, class Read>
  beast::error_code exchange(Req& req, beast::error_code& read_ec, Read read) {
    beast::error_code write_ec = net::error::would_block;
    read_ec = net::error::would_block;
    conn.lowest().expires_after(timeout);
    conn.with([&](auto& stream) {
      http::async_write(stream, req, [&, &s = stream](beast::error_code ec, std::size_t) {
        write_ec = ec;
        if (!ec) read(s);
      });
    });
    ioc.restart();
    ioc.run();
    return write_ec ? write_ec : read_ec;
  }
};

HttpClient::HttpClient(std::string host, int port, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>()) {
  impl_->host = std::move(host);
  impl_->port = port;
  impl_->timeout = timeout;
}

HttpClient::HttpClient(const HttpUrl& url, std::chrono::milliseconds timeout)
    : HttpClient(url.host, url.port, timeout) {
  impl_->base = url.base;
  impl_->tls = url.tls;
}

HttpClient::~HttpClient() {
  if (impl_) impl_->drop();
}
HttpClient::HttpClient(HttpClient&&) noexcept = default;
HttpClient& HttpClient::operator=(HttpClient&&) noexcept = default;

void HttpClient::set_token(std::string token) {
  impl_->token = std::move(token);
}
void HttpClient::set_ca_file(std::string path) {
  impl_->ca_file = std::move(path);
  impl_->ctx.reset();
  impl_->drop();
}
void HttpClient::set_timeout(std::chrono::milliseconds timeout) {
  impl_->timeout = timeout;
}
void HttpClient::set_body_limit(std::uint64_t bytes) {
  impl_->body_limit = bytes;
}
void HttpClient::close() {
  impl_->drop();
}

Result<ClientResponse> HttpClient::request(const std::string& method, const std::string& target,
                                           const std::string& body,
                                           const std::map<std::string, std::string>& headers) {
  auto& im = *impl_;
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool reused = im.conn.open();
    if (!im.conn.open())
      if (auto st = im.open(); !st) return st.error();
    http::request<http::string_body> req{http::string_to_verb(method), im.base + target, 11};
    if (req.method() == http::verb::unknown) req.method_string(method);
    im.prepare(req);
    if (!body.empty() || method == "POST" || method == "PUT")
      req.set(http::field::content_type, "application/json");
    for (const auto& [k, v] : headers) req.set(k, v);
    req.body() = body;
    req.keep_alive(true);
    req.prepare_payload();

    http::response_parser<http::string_body> parser;
    parser.body_limit(im.body_limit);
    beast::error_code read_ec;
    beast::error_code ec = im.exchange(req, read_ec, [&](auto& stream) {
      http::async_read(stream, im.buffer, parser,
                       [&](beast::error_code e, std::size_t) { read_ec = e; });
    });
    const bool sent = read_ec != net::error::would_block;  // the read began
    if (ec) {
      bool stale = reused && attempt == 0 && !parser.got_some() &&
                   (ec == http::error::end_of_stream || ec == net::error::connection_reset ||
                    ec == net::error::broken_pipe || ec == net::error::eof ||
                    ec == net::ssl::error::stream_truncated);
      im.drop();
      if (stale) continue;  // the server closed the idle connection: once more, fresh
      if (ec == http::error::body_limit)
        return Error::unavailable(
            fmt::format("{} {}: the answer is over {} bytes", method, target, im.body_limit));
      return transport_error(method + " " + target, ec, sent ? "reading" : "sending");
    }
    auto res = parser.release();
    bool keep = res.keep_alive();
    ClientResponse out = to_client(std::move(res));
    if (!keep) im.drop();
    return out;
  }
  return Error::unavailable(method + " " + target + ": connection closed");
}

Result<ClientResponse> HttpClient::download(
    const std::string& target, ByteSink& out, const std::map<std::string, std::string>& headers,
    const std::function<bool(const ClientResponse&)>& on_header) {
  auto& im = *impl_;
  im.drop();  // a fresh connection: a download is long, and never sent twice
  if (auto st = im.open(); !st) return st.error();
  http::request<http::empty_body> req{http::verb::get, im.base + target, 11};
  im.prepare(req);
  for (const auto& [k, v] : headers) req.set(k, v);
  req.keep_alive(false);

  http::response_parser<http::buffer_body> parser;
  // The sink decides how much it takes. (Not boost::none: this Beast compares
  // a Content-Length with an empty optional as larger.)
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  beast::error_code read_ec;
  beast::error_code ec = im.exchange(req, read_ec, [&](auto& stream) {
    http::async_read_header(stream, im.buffer, parser,
                            [&](beast::error_code e, std::size_t) { read_ec = e; });
  });
  if (ec) {
    im.drop();
    return transport_error("GET " + target, ec);
  }
  ClientResponse res;
  res.status = static_cast<int>(parser.get().result_int());
  for (const auto& f : parser.get())
    res.headers[ascii_lower(std::string(f.name_string()))] = std::string(f.value());
  if (on_header && !on_header(res)) {
    im.drop();
    return res;
  }
  const bool ok = res.status >= 200 && res.status < 300;
  std::string buffer(kStreamChunk, '\0');
  while (!parser.is_done()) {
    parser.get().body().data = buffer.data();
    parser.get().body().size = buffer.size();
    ec = net::error::would_block;
    im.conn.lowest().expires_after(im.timeout);  // per piece: a long download is not late
    im.conn.with([&](auto& stream) {
      http::async_read(stream, im.buffer, parser,
                       [&](beast::error_code e, std::size_t) { ec = e; });
    });
    im.ioc.restart();
    im.ioc.run();
    if (ec == http::error::need_buffer) ec = {};
    if (ec) {
      im.drop();
      return transport_error("GET " + target, ec);
    }
    const std::string_view got(buffer.data(), buffer.size() - parser.get().body().size);
    if (ok) {
      if (auto st = out.write(got); !st) {
        im.drop();
        return st.error();
      }
    } else if (res.body.size() < (std::size_t{1} << 20)) {
      res.body.append(got);  // an error's JSON
    }
  }
  im.drop();
  return res;
}

// --- SseClient --------------------------------------------------------------

struct SseClient::Impl {
  std::string host;
  int port = 0;
  std::string ca_file;
  bool tls = false;
  net::io_context ioc;
  Connection conn;
  beast::flat_buffer buffer;
  std::array<char, 8192> chunk{};
};

SseClient::SseClient(std::string host, int port) : impl_(std::make_unique<Impl>()) {
  impl_->host = std::move(host);
  impl_->port = port;
}

SseClient::~SseClient() {
  close();
}

void SseClient::use_tls(std::string ca_file) {
  impl_->tls = true;
  impl_->ca_file = std::move(ca_file);
}

void SseClient::close() {
  impl_->conn.drop();
}

Result<ClientResponse> SseClient::open(const std::string& target,
                                       const std::map<std::string, std::string>& headers) {
  auto& im = *impl_;
  close();
  pending_.clear();
  im.buffer.clear();
  const auto timeout = std::chrono::milliseconds(10000);
  std::unique_ptr<net::ssl::context> ctx;
  if (im.tls) {
    auto made = client_context(im.ca_file);
    if (!made) return made.error();
    ctx = std::move(*made);
  }
  if (auto st = open_connection(im.ioc, im.conn, im.host, im.port, ctx.get(), timeout); !st) {
    close();
    return st.error();
  }
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, im.host + ":" + std::to_string(im.port));
  req.set(http::field::accept, "text/event-stream");
  for (const auto& [k, v] : headers) req.set(k, v);
  http::response_parser<http::string_body> parser;
  beast::error_code ec = net::error::would_block;
  im.conn.lowest().expires_after(timeout);
  im.conn.with([&](auto& stream) {
    http::async_write(stream, req, [&](beast::error_code e, std::size_t) {
      ec = e;
      if (e) return;
      http::async_read_header(stream, im.buffer, parser,
                              [&](beast::error_code e2, std::size_t) { ec = e2; });
    });
  });
  im.ioc.restart();
  im.ioc.run();
  if (ec) {
    close();
    return transport_error("GET " + target, ec);
  }
  if (parser.get().result_int() != 200) {
    ec = net::error::would_block;
    im.conn.with([&](auto& stream) {
      http::async_read(stream, im.buffer, parser,
                       [&](beast::error_code e, std::size_t) { ec = e; });
    });
    im.ioc.restart();
    im.ioc.run();
    auto out = to_client(parser.release());
    close();
    return out;
  }
  im.conn.lowest().expires_never();
  ClientResponse out;
  out.status = 200;
  for (const auto& f : parser.get())
    out.headers[ascii_lower(std::string(f.name_string()))] = std::string(f.value());
  pending_ = beast::buffers_to_string(im.buffer.data());
  im.buffer.consume(im.buffer.size());
  return out;
}

Result<std::optional<SseEvent>> SseClient::next(std::chrono::milliseconds timeout) {
  auto& im = *impl_;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    // Complete frames first.
    for (auto end = pending_.find("\n\n"); end != std::string::npos; end = pending_.find("\n\n")) {
      std::string frame = pending_.substr(0, end);
      pending_.erase(0, end + 2);
      SseEvent ev;
      bool has_data = false;
      std::size_t start = 0;
      while (start <= frame.size()) {
        auto nl = frame.find('\n', start);
        std::string line =
            frame.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
        start = nl == std::string::npos ? frame.size() + 1 : nl + 1;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || line[0] == ':') continue;
        auto colon = line.find(':');
        std::string field = line.substr(0, colon);
        std::string value = colon == std::string::npos ? "" : line.substr(colon + 1);
        if (!value.empty() && value[0] == ' ') value.erase(0, 1);
        if (field == "id")
          ev.id = value;
        else if (field == "event")
          ev.type = value;
        else if (field == "retry")
          retry_ms_ = std::atoi(value.c_str());
        else if (field == "data") {
          ev.data += (has_data ? "\n" : "") + value;
          has_data = true;
        }
      }
      if (!has_data) continue;
      if (ev.type.empty()) ev.type = "message";
      return std::optional<SseEvent>(std::move(ev));
    }
    if (!im.conn.open()) return Error::unavailable("stream closed");
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return std::optional<SseEvent>();
    beast::error_code ec = net::error::would_block;
    std::size_t n = 0;
    im.conn.with([&](auto& stream) {
      stream.async_read_some(net::buffer(im.chunk), [&](beast::error_code e, std::size_t got) {
        ec = e;
        n = got;
      });
    });
    im.ioc.restart();
    im.ioc.run_for(deadline - now);
    if (ec == net::error::would_block) {  // timed out: cancel, keep the connection
      beast::error_code ignored;
      im.conn.lowest().socket().cancel(ignored);
      im.ioc.restart();
      im.ioc.run();
      pending_.append(im.chunk.data(), n);
      if (ec == net::error::operation_aborted) return std::optional<SseEvent>();
    } else {
      pending_.append(im.chunk.data(), n);
    }
    if (ec && ec != net::error::operation_aborted) {
      close();
      if (pending_.find("\n\n") == std::string::npos) return transport_error("event stream", ec);
    }
  }
}

std::string answer_message(const ClientResponse& r) {
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_object() &&
      j["error"].contains("message") && j["error"]["message"].is_string())
    return fmt::format("HTTP {}: {}", r.status, j["error"]["message"].get<std::string>());
  return fmt::format("HTTP {}", r.status);
}

}  // namespace hpo
