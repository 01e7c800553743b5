#include "web/http_client.hpp"

#include <array>
#include <optional>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "web/http_message.hpp"

namespace hpo::web {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

Error transport_error(const std::string& what, const beast::error_code& ec) {
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
  if (rest.rfind("http://", 0) == 0)
    rest.remove_prefix(7);
  else if (rest.find("://") != std::string_view::npos)
    return Error::invalid("server", "only http:// URLs are supported: '" + std::string(url) + "'");
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
  std::chrono::milliseconds timeout;
  std::string token;
  net::io_context ioc;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;

  void drop() {
    if (stream) {
      beast::error_code ec;
      stream->socket().shutdown(tcp::socket::shutdown_both, ec);
      stream->socket().close(ec);
    }
    stream.reset();
    buffer.clear();
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
}

HttpClient::~HttpClient() {
  if (impl_) impl_->drop();
}
HttpClient::HttpClient(HttpClient&&) noexcept = default;
HttpClient& HttpClient::operator=(HttpClient&&) noexcept = default;

void HttpClient::set_token(std::string token) {
  impl_->token = std::move(token);
}
void HttpClient::set_timeout(std::chrono::milliseconds timeout) {
  impl_->timeout = timeout;
}
void HttpClient::close() {
  impl_->drop();
}

Result<ClientResponse> HttpClient::request(const std::string& method, const std::string& target,
                                           const std::string& body,
                                           const std::map<std::string, std::string>& headers) {
  auto& im = *impl_;
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool reused = im.stream.has_value();
    if (!im.stream) {
      im.stream.emplace(im.ioc);
      if (auto ec = connect(im.ioc, *im.stream, im.host, im.port, im.timeout)) {
        im.drop();
        return transport_error("connect to " + im.host + ":" + std::to_string(im.port), ec);
      }
    }
    http::request<http::string_body> req{http::string_to_verb(method), im.base + target, 11};
    if (req.method() == http::verb::unknown) req.method_string(method);
    req.set(http::field::host, im.host + ":" + std::to_string(im.port));
    req.set(http::field::user_agent, "hpo");
    if (!im.token.empty()) req.set(http::field::authorization, "Bearer " + im.token);
    if (!body.empty() || method == "POST" || method == "PUT")
      req.set(http::field::content_type, "application/json");
    for (const auto& [k, v] : headers) req.set(k, v);
    req.body() = body;
    req.keep_alive(true);
    req.prepare_payload();

    http::response_parser<http::string_body> parser;
    parser.body_limit(std::uint64_t{1} << 30);
    beast::error_code write_ec = net::error::would_block, read_ec = net::error::would_block;
    im.stream->expires_after(im.timeout);
    http::async_write(*im.stream, req, [&](beast::error_code ec, std::size_t) {
      write_ec = ec;
      if (ec) return;
      http::async_read(*im.stream, im.buffer, parser,
                       [&](beast::error_code ec2, std::size_t) { read_ec = ec2; });
    });
    im.ioc.restart();
    im.ioc.run();
    beast::error_code ec = write_ec ? write_ec : read_ec;
    if (ec) {
      bool stale = reused && attempt == 0 && !parser.got_some() &&
                   (ec == http::error::end_of_stream || ec == net::error::connection_reset ||
                    ec == net::error::broken_pipe || ec == net::error::eof);
      im.drop();
      if (stale) continue;  // the server closed the idle connection: once more, fresh
      return transport_error(method + " " + target, ec);
    }
    auto res = parser.release();
    bool keep = res.keep_alive();
    ClientResponse out = to_client(std::move(res));
    if (!keep) im.drop();
    return out;
  }
  return Error::unavailable(method + " " + target + ": connection closed");
}

// --- SseClient --------------------------------------------------------------

struct SseClient::Impl {
  std::string host;
  int port = 0;
  net::io_context ioc;
  std::optional<beast::tcp_stream> stream;
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

void SseClient::close() {
  if (impl_->stream) {
    beast::error_code ec;
    impl_->stream->socket().shutdown(tcp::socket::shutdown_both, ec);
    impl_->stream->socket().close(ec);
    impl_->stream.reset();
  }
}

Result<ClientResponse> SseClient::open(const std::string& target,
                                       const std::map<std::string, std::string>& headers) {
  auto& im = *impl_;
  close();
  pending_.clear();
  im.buffer.clear();
  const auto timeout = std::chrono::milliseconds(10000);
  im.stream.emplace(im.ioc);
  if (auto ec = connect(im.ioc, *im.stream, im.host, im.port, timeout)) {
    close();
    return transport_error("connect", ec);
  }
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, im.host + ":" + std::to_string(im.port));
  req.set(http::field::accept, "text/event-stream");
  for (const auto& [k, v] : headers) req.set(k, v);
  http::response_parser<http::string_body> parser;
  beast::error_code ec = net::error::would_block;
  im.stream->expires_after(timeout);
  http::async_write(*im.stream, req, [&](beast::error_code e, std::size_t) {
    ec = e;
    if (e) return;
    http::async_read_header(*im.stream, im.buffer, parser,
                            [&](beast::error_code e2, std::size_t) { ec = e2; });
  });
  im.ioc.restart();
  im.ioc.run();
  if (ec) {
    close();
    return transport_error("GET " + target, ec);
  }
  if (parser.get().result_int() != 200) {
    ec = net::error::would_block;
    http::async_read(*im.stream, im.buffer, parser,
                     [&](beast::error_code e, std::size_t) { ec = e; });
    im.ioc.restart();
    im.ioc.run();
    auto out = to_client(parser.release());
    close();
    return out;
  }
  im.stream->expires_never();
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
    if (!im.stream) return Error::unavailable("stream closed");
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return std::optional<SseEvent>();
    beast::error_code ec = net::error::would_block;
    std::size_t n = 0;
    im.stream->socket().async_read_some(net::buffer(im.chunk),
                                        [&](beast::error_code e, std::size_t got) {
                                          ec = e;
                                          n = got;
                                        });
    im.ioc.restart();
    im.ioc.run_for(deadline - now);
    if (ec == net::error::would_block) {  // timed out: cancel, keep the connection
      beast::error_code ignored;
      im.stream->socket().cancel(ignored);
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

}  // namespace hpo::web
