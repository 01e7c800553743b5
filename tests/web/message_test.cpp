#include "web/http_message.hpp"

#include <gtest/gtest.h>

#include "core/http_client.hpp"
#include "web/api_errors.hpp"

namespace hpo::web {
namespace {

TEST(HttpMessage, ParsesPathAndQuery) {
  std::string path;
  std::map<std::string, std::string> q;
  ASSERT_TRUE(parse_target("/api/sweeps%2Fx?limit=10&state=com%70leted&name=a+b&flag", path, q));
  EXPECT_EQ(path, "/api/sweeps/x");
  EXPECT_EQ(q["limit"], "10");
  EXPECT_EQ(q["state"], "completed");
  EXPECT_EQ(q["name"], "a b");
  EXPECT_EQ(q.count("flag"), 1u);
}

TEST(HttpMessage, RefusesMalformedTargets) {
  std::string path;
  std::map<std::string, std::string> q;
  EXPECT_FALSE(parse_target("no-slash", path, q));
  EXPECT_FALSE(parse_target("/bad%zz", path, q));
  EXPECT_FALSE(parse_target("/nul%00byte", path, q));
  EXPECT_FALSE(parse_target("/trunc%2", path, q));
  EXPECT_FALSE(parse_target("/?x=%4", path, q));
}

TEST(HttpMessage, PercentEncodeRoundTrips) {
  std::string s = "a b/c?d&e=é", out;
  ASSERT_TRUE(percent_decode(percent_encode(s), out, false));
  EXPECT_EQ(out, s);
}

TEST(HttpMessage, HeadersAreCaseInsensitive) {
  Request r;
  r.headers["last-event-id"] = "5-0";
  EXPECT_EQ(r.header("Last-Event-ID"), "5-0");
  EXPECT_EQ(r.header("missing"), "");
}

TEST(ApiErrors, EveryCodeMapsToItsStatus) {
  EXPECT_EQ(http_status(ErrorCode::kInvalidArgument), 400);
  EXPECT_EQ(http_status(ErrorCode::kUnauthorized), 401);
  EXPECT_EQ(http_status(ErrorCode::kNotFound), 404);
  EXPECT_EQ(http_status(ErrorCode::kConflict), 409);
  EXPECT_EQ(http_status(ErrorCode::kLeaseLost), 409);
  EXPECT_EQ(http_status(ErrorCode::kPayloadTooLarge), 413);
  EXPECT_EQ(http_status(ErrorCode::kInternal), 500);
  EXPECT_EQ(http_status(ErrorCode::kUnavailable), 503);
  auto r = error_response(Error{ErrorCode::kUnauthorized, "no", {}});
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.header("WWW-Authenticate").rfind("Bearer", 0), 0u);
  auto bad = error_response(Error::invalid("parameters.lr.min", "must be < max"));
  EXPECT_NE(bad.body.find("\"path\":\"parameters.lr.min\""), std::string::npos);
}

TEST(HttpUrl, ParsesTheForms) {
  auto a = parse_http_url("http://127.0.0.1:8080");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8080);
  auto b = parse_http_url("localhost:9000/base/");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "localhost");
  EXPECT_EQ(b->port, 9000);
  EXPECT_EQ(b->base, "/base");
  auto c = parse_http_url("http://[::1]:81");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->host, "::1");
  EXPECT_EQ(c->port, 81);
  EXPECT_EQ(parse_http_url("http://example.org")->port, 80);
  auto d = parse_http_url("https://sched.example/hpo");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->tls);
  EXPECT_EQ(d->port, 443);
  EXPECT_EQ(d->base, "/hpo");
  EXPECT_FALSE(a->tls);
  EXPECT_EQ(parse_http_url("https://x:8443")->port, 8443);
  auto bad = parse_http_url("ftp://x:1");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("http:// and https://"), std::string::npos);
  EXPECT_FALSE(parse_http_url("x:notaport").ok());
  EXPECT_FALSE(parse_http_url("x:70000").ok());
}

}  // namespace
}  // namespace hpo::web
