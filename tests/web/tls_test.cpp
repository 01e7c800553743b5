// HttpServer over TLS on real loopback sockets with certificates made by the
// openssl command: requests and keep-alive over HTTPS, server-sent events over
// HTTPS, the client's verification (an untrusted CA, a certificate for another
// name) and what it says, plain HTTP to the HTTPS port, and certificate files
// the server cannot use.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/http_client.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/redis_server.hpp"  // wait_for
#include "tests/support/tls_certs.hpp"
#include "web/event_hub.hpp"
#include "web/http_server.hpp"

namespace hpo::web {
namespace {

using namespace std::chrono_literals;
using testing::TestCerts;
using testing::wait_for;

Response echo(const Request& r) {
  nlohmann::json j = {{"method", r.method}, {"path", r.path}, {"body", r.body}};
  return Response::json(200, j.dump());
}

ServerOptions tls_options(const std::string& cert, const std::string& key) {
  ServerOptions o;
  o.port = 0;
  o.handler_threads = 2;
  o.tls_cert_file = cert;
  o.tls_key_file = key;
  return o;
}

HttpUrl https(int port) {
  return HttpUrl{"127.0.0.1", port, "", true};
}

TEST(Tls, RequestsGoOverHttpsOnOneVerifiedConnection) {
  TestCerts certs;
  ASSERT_TRUE(certs.ok()) << certs.log();
  HttpServer server(tls_options(certs.cert(), certs.key()), echo);
  ASSERT_TRUE(server.start().ok());
  HttpClient client(https(server.port()), 10s);
  client.set_ca_file(certs.ca());
  for (int i = 0; i < 3; ++i) {
    auto r = client.request("POST", "/over/tls", "payload " + std::to_string(i));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->status, 200);
    auto j = nlohmann::json::parse(r->body);
    EXPECT_EQ(j["path"], "/over/tls");
    EXPECT_EQ(j["body"], "payload " + std::to_string(i));
  }
  EXPECT_EQ(server.connection_count(), 1u);  // kept alive across the three
  // The name in the certificate works as well as the address.
  HttpClient by_name(HttpUrl{"localhost", server.port(), "", true}, 10s);
  by_name.set_ca_file(certs.ca());
  auto r = by_name.get("/by/name");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 200);
}

TEST(Tls, AnUntrustedCertificateIsRefusedAndTheErrorSaysWhatToPass) {
  TestCerts certs;
  ASSERT_TRUE(certs.ok()) << certs.log();
  HttpServer server(tls_options(certs.cert(), certs.key()), echo);
  ASSERT_TRUE(server.start().ok());
  HttpClient client(https(server.port()), 10s);  // the system's CAs only
  auto r = client.get("/x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(r.error().message.find("not trusted"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("--ca-file"), std::string::npos) << r.error().message;
  // The server itself is unharmed and serves a client that trusts it.
  client.set_ca_file(certs.ca());
  auto ok = client.get("/x");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->status, 200);
}

TEST(Tls, ACertificateForAnotherNameIsRefused) {
  TestCerts certs;
  ASSERT_TRUE(certs.ok()) << certs.log();
  HttpServer server(tls_options(certs.other_cert(), certs.other_key()), echo);
  ASSERT_TRUE(server.start().ok());
  HttpClient client(https(server.port()), 10s);
  client.set_ca_file(certs.ca());
  auto r = client.get("/x");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("does not name '127.0.0.1'"), std::string::npos)
      << r.error().message;
}

TEST(Tls, PlainHttpToTheHttpsPortIsToldToUseHttps) {
  TestCerts certs;
  ASSERT_TRUE(certs.ok()) << certs.log();
  HttpServer server(tls_options(certs.cert(), certs.key()), echo);
  ASSERT_TRUE(server.start().ok());
  HttpClient plain("127.0.0.1", server.port(), 10s);
  auto r = plain.get("/x");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("this server speaks HTTPS"), std::string::npos) << r->body;
  // A client that speaks neither (garbage bytes, then silence) is closed.
  testing::RawConnection raw(server.port());
  ASSERT_TRUE(raw.send("\x16\x03\x01garbage that is no ClientHello"));
  ASSERT_TRUE(wait_for([&] { return server.connection_count() == 0; }, 10s));
}

TEST(Tls, ServerSentEventsStreamOverHttps) {
  TestCerts certs;
  ASSERT_TRUE(certs.ok()) << certs.log();
  EventHub hub;
  HttpServer server(tls_options(certs.cert(), certs.key()), [&](const Request& r) {
    if (r.path != "/events") return Response::text(404, "no");
    Response res;
    res.content_type = "text/event-stream";
    res.body = format_sse_frame({"1-0", "replayed", "", "{\"n\":0}"});
    res.stream = hub.subscribe();
    res.stream->skip_through("1-0");
    return res;
  });
  ASSERT_TRUE(server.start().ok());
  SseClient sse("127.0.0.1", server.port());
  sse.use_tls(certs.ca());
  auto open = sse.open("/events");
  ASSERT_TRUE(open.ok()) << open.error().message;
  EXPECT_EQ(open->status, 200);
  auto first = sse.next(10s);
  ASSERT_TRUE(first.ok() && *first) << (first.ok() ? "timed out" : first.error().message);
  EXPECT_EQ((*first)->type, "replayed");
  ASSERT_TRUE(wait_for([&] { return hub.subscriber_count() == 1; }));
  hub.publish({"2-0", "trial.finished", "s1", "{\"n\":2}"});
  auto second = sse.next(10s);
  ASSERT_TRUE(second.ok() && *second) << (second.ok() ? "timed out" : second.error().message);
  EXPECT_EQ((*second)->id, "2-0");
  EXPECT_EQ((*second)->data, "{\"n\":2}");
  server.stop();  // ends the stream with a close_notify: a clean end, not a truncation
  auto end = sse.next(10s);
  ASSERT_FALSE(end.ok());
  EXPECT_EQ(end.error().message.find("truncated"), std::string::npos) << end.error().message;
}

TEST(Tls, CertificateFilesTheServerCannotUseAreNamed) {
  TestCerts certs;
  ASSERT_TRUE(certs.ok()) << certs.log();
  {
    HttpServer server(tls_options(certs.dir() + "/missing.pem", certs.key()), echo);
    auto st = server.start();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("--tls-cert"), std::string::npos) << st.error().message;
    EXPECT_NE(st.error().message.find("missing.pem"), std::string::npos) << st.error().message;
  }
  {
    HttpServer server(tls_options(certs.cert(), certs.other_key()), echo);
    auto st = server.start();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("is not the key of the certificate"), std::string::npos)
        << st.error().message;
  }
  {
    HttpServer server(tls_options(certs.cert(), ""), echo);
    auto st = server.start();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("both --tls-cert and --tls-key"), std::string::npos)
        << st.error().message;
  }
}

}  // namespace
}  // namespace hpo::web
