// HTTPS for the HttpServer: the TLS context, and the detector that every
// connection to an HTTPS port meets first. Apart from the acceptor and the
// Session so that certificates, keys and the plain-HTTP-to-HTTPS answer are in
// one place.
#include "web/server_tls.hpp"

#include <memory>
#include <string>
#include <utility>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>

#include "web/api_errors.hpp"
#include "web/http_session.hpp"
#include "web/server_state.hpp"

namespace hpo::web {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// On an HTTPS port: reads the client's first bytes. A TLS ClientHello goes on
// to a Session over TLS; anything else (plain HTTP to the HTTPS port) gets a
// plain 400 that says so, instead of a handshake error the user cannot read.
class TlsDetector : public Conn, public std::enable_shared_from_this<TlsDetector> {
 public:
  TlsDetector(tcp::socket&& socket, ServerState* st, std::unique_ptr<LiveSlot> live)
      : stream_(std::move(socket)), st_(st), live_(std::move(live)) {}

  void run() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      self->stream_.expires_after(self->st_->opts.read_timeout);
      beast::async_detect_ssl(self->stream_, self->buffer_,
                              beast::bind_front_handler(&TlsDetector::on_detect, self));
    });
  }

  void shutdown() override {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      beast::error_code ec;
      self->stream_.socket().close(ec);
    });
  }

 private:
  void on_detect(beast::error_code ec, bool tls) {
    if (ec) {
      beast::error_code ignored;
      stream_.socket().close(ignored);
      return;
    }
    if (tls) {
      start_session(beast::ssl_stream<beast::tcp_stream>(std::move(stream_), *st_->tls),
                    std::move(buffer_), st_, std::move(live_));
      return;
    }
    static const std::string kPlain = [] {
      const std::string body =
          std::string(R"({"error":{"code":")") + kHttpErrorNames(HttpError::kBadRequest) +
          R"(","fields":[],"message":"this server speaks HTTPS: use an https:// URL"}})";
      return "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    }();
    stream_.expires_after(st_->opts.write_timeout);
    net::async_write(stream_, net::buffer(kPlain),
                     [self = shared_from_this()](beast::error_code, std::size_t) {
                       beast::error_code ignored;
                       self->stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
                       self->stream_.socket().close(ignored);
                     });
  }

  beast::tcp_stream stream_;
  ServerState* st_;
  std::unique_ptr<LiveSlot> live_;
  beast::flat_buffer buffer_;
};

}  // namespace

// TLS 1.2 and newer with the certificate chain and key of ServerOptions.
Status load_tls(ServerState* st) {
  const auto& o = st->opts;
  if (o.tls_cert_file.empty() && o.tls_key_file.empty()) return {};
  if (o.tls_cert_file.empty() || o.tls_key_file.empty())
    return Error::invalid(o.tls_cert_file.empty() ? "--tls-cert" : "--tls-key",
                          "TLS needs both --tls-cert and --tls-key");
  net::ssl::context ctx(net::ssl::context::tls_server);
  ctx.set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                  net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                  net::ssl::context::no_tlsv1_1 | net::ssl::context::single_dh_use);
  beast::error_code ec;
  ctx.use_certificate_chain_file(o.tls_cert_file, ec);
  if (ec)
    return Error::invalid("--tls-cert", "cannot load a PEM certificate chain from " +
                                            o.tls_cert_file + ": " + ec.message());
  ctx.use_private_key_file(o.tls_key_file, net::ssl::context::pem, ec);
  if (ec && ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH)
    return Error::invalid(
        "--tls-key", o.tls_key_file + " is not the key of the certificate in " + o.tls_cert_file);
  if (ec)
    return Error::invalid(
        "--tls-key", "cannot load a PEM private key from " + o.tls_key_file + ": " + ec.message());
  if (SSL_CTX_check_private_key(ctx.native_handle()) != 1)
    return Error::invalid(
        "--tls-key", o.tls_key_file + " is not the key of the certificate in " + o.tls_cert_file);
  st->tls.emplace(std::move(ctx));
  return {};
}

void start_tls_detector(tcp::socket&& socket, ServerState* st, std::unique_ptr<LiveSlot> live) {
  auto detector = std::make_shared<TlsDetector>(std::move(socket), st, std::move(live));
  remember(st, detector);
  detector->run();
}

}  // namespace hpo::web
