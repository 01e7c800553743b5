#include "web/router.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace hpo::web {
namespace {

Request req(std::string method, std::string path) {
  Request r;
  r.method = std::move(method);
  r.path = std::move(path);
  return r;
}

Router make_router() {
  Router r;
  r.add("GET", "/api/sweeps",
        [](const Request&, const PathParams&) { return Response::text(200, "list"); });
  r.add("POST", "/api/sweeps",
        [](const Request&, const PathParams&) { return Response::text(201, "create"); });
  r.add("GET", "/api/sweeps/{id}", [](const Request&, const PathParams& p) {
    return Response::text(200, "sweep " + p.at("id"));
  });
  r.add("GET", "/api/sweeps/{id}/trials", [](const Request&, const PathParams& p) {
    return Response::text(200, "trials " + p.at("id"));
  });
  r.add("GET", "/api/sweeps/{id}/trials/{n}", [](const Request&, const PathParams& p) {
    return Response::text(200, p.at("id") + "/" + p.at("n"));
  });
  return r;
}

TEST(Router, DispatchesByMethodAndPath) {
  auto r = make_router();
  EXPECT_EQ(r.handle(req("GET", "/api/sweeps")).body, "list");
  EXPECT_EQ(r.handle(req("POST", "/api/sweeps")).status, 201);
  EXPECT_EQ(r.handle(req("GET", "/api/sweeps/")).body, "list");  // trailing slash
}

TEST(Router, CapturesPathParameters) {
  auto r = make_router();
  EXPECT_EQ(r.handle(req("GET", "/api/sweeps/abc")).body, "sweep abc");
  EXPECT_EQ(r.handle(req("GET", "/api/sweeps/abc/trials")).body, "trials abc");
  EXPECT_EQ(r.handle(req("GET", "/api/sweeps/s1/trials/7")).body, "s1/7");
}

TEST(Router, UnknownPathIs404AsJson) {
  auto r = make_router();
  auto res = r.handle(req("GET", "/api/nothing"));
  EXPECT_EQ(res.status, 404);
  EXPECT_EQ(res.content_type, "application/json");
  EXPECT_EQ(nlohmann::json::parse(res.body)["error"]["code"], "not_found");
  EXPECT_EQ(r.handle(req("GET", "/api/sweeps/a/b/c/d")).status, 404);
}

TEST(Router, WrongMethodIs405WithAllow) {
  auto r = make_router();
  auto res = r.handle(req("DELETE", "/api/sweeps"));
  EXPECT_EQ(res.status, 405);
  EXPECT_EQ(res.header("Allow"), "GET, POST");
  EXPECT_EQ(nlohmann::json::parse(res.body)["error"]["code"], "method_not_allowed");
}

TEST(Router, FallbackTakesUnmatchedPaths) {
  auto r = make_router();
  r.set_fallback([](const Request& q) { return Response::text(200, "static " + q.path); });
  EXPECT_EQ(r.handle(req("GET", "/index.html")).body, "static /index.html");
  EXPECT_EQ(r.handle(req("DELETE", "/api/sweeps")).status, 405);  // still a known route
}

TEST(Router, ListsItsRoutes) {
  auto routes = make_router().routes();
  ASSERT_EQ(routes.size(), 5u);
  EXPECT_EQ(routes[2].method, "GET");
  EXPECT_EQ(routes[2].pattern, "/api/sweeps/{id}");
}

TEST(Router, PatternForNamesTheMatchedRoute) {
  auto r = make_router();
  EXPECT_EQ(r.pattern_for(req("GET", "/api/sweeps/x/trials")), "/api/sweeps/{id}/trials");
  EXPECT_EQ(r.pattern_for(req("DELETE", "/api/sweeps")), "");
  EXPECT_EQ(r.pattern_for(req("GET", "/nowhere")), "");
}

TEST(Router, EmptySegmentDoesNotMatchAParameter) {
  PathParams p;
  EXPECT_FALSE(Router::match(Router::split("/a/{id}"), Router::split("/a/"), p));
  EXPECT_TRUE(Router::match(Router::split("/a/{id}"), Router::split("/a/x"), p));
  EXPECT_EQ(p["id"], "x");
}

}  // namespace
}  // namespace hpo::web
