// Hostile requests over the real HTTP server, the real API and a real
// redis-server: malformed, deep, huge, non-finite, wrong types, unknown
// fields, traversal, unknown ids, missing and wrong tokens, oversized headers.
// Each row is sent on a raw connection and must get its status, with the
// offending field path (or a word of the reason) in the body; afterwards the
// server still answers and nothing was stored.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/http_client.hpp"
#include "tests/support/redis_server.hpp"
#include "trials/data_roots.hpp"
#include "trials/redis/redis_store.hpp"
#include "web/api.hpp"
#include "web/event_pump.hpp"
#include "web/http_server.hpp"

namespace hpo::web {
namespace {

using Json = nlohmann::json;
using namespace std::chrono_literals;

constexpr char kToken[] = "tok-123";

// A valid spec with one field replaced (a JSON pointer) or removed (null).
std::string spec_with(const std::string& pointer, const Json& value) {
  Json s = Json::parse(R"({
    "name": "hostile",
    "objective": {"metric": "value", "mode": "min"},
    "parameters": {"x1": {"type": "float", "min": -5, "max": 10},
                   "x2": {"type": "float", "min": 0, "max": 15}},
    "search": {"algorithm": "random", "max_trials": 30, "max_concurrent": 4, "seed": 1},
    "trial": {"kind": "synthetic", "function": "branin"}})");
  if (pointer.empty()) return s.dump();
  Json::json_pointer p(pointer);
  if (value.is_null())
    s[p.parent_pointer()].erase(p.back());
  else
    s[p] = value;
  return s.dump();
}

// A torch spec whose data field `key` is `path` (a CSV training file otherwise).
std::string torch_spec_with(const std::string& key, const std::string& path) {
  Json s = Json::parse(R"({
    "name": "hostile-torch",
    "objective": {"metric": "val_loss", "mode": "min"},
    "parameters": {"lr": {"type": "float", "min": 0.001, "max": 0.1}},
    "search": {"algorithm": "random", "max_trials": 2},
    "trial": {"kind": "torch", "optimizer": {"lr": "{lr}"},
              "data": {"format": "csv", "train": "/usr/share/datasets/t.csv", "target": "y"}}})");
  s["trial"]["data"][key] = path;
  return s.dump();
}

struct Case {
  std::string name;
  std::string method, target, body;
  std::vector<std::string> headers;  // "Name: value"
  int status;
  std::string expect;  // in the body: the field path or a word of the reason ("" = anything)
  bool with_token = true;
};

std::string request_text(const Case& c) {
  std::string r =
      c.method + " " + c.target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (c.with_token) r += std::string("Authorization: Bearer ") + kToken + "\r\n";
  for (const auto& h : c.headers) r += h + "\r\n";
  if (!c.body.empty() || c.method == "POST")
    r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(c.body.size()) +
         "\r\n";
  return r + "\r\n" + c.body;
}

std::vector<Case> cases() {
  const std::string deep = std::string(300'000, '[') + std::string(300'000, ']');
  const std::string deep_obj = [] {
    std::string s;
    for (int i = 0; i < 100; ++i) s += R"({"a":)";
    s += "1";
    for (int i = 0; i < 100; ++i) s += "}";
    return s;
  }();
  auto spec = [](std::string name, const std::string& ptr, Json v, std::string expect) {
    return Case{std::move(name),  "POST", "/api/sweeps", spec_with(ptr, std::move(v)), {}, 400,
                std::move(expect)};
  };
  std::vector<Case> c = {
      // Malformed or not a spec at all.
      {"empty body", "POST", "/api/sweeps", "", {}, 400, "JSON"},
      {"truncated", "POST", "/api/sweeps", R"({"name":)", {}, 400, "JSON"},
      {"array", "POST", "/api/sweeps", "[]", {}, 400, "object"},
      {"null", "POST", "/api/sweeps", "null", {}, 400, "object"},
      {"number", "POST", "/api/sweeps", "1", {}, 400, "object"},
      {"string", "POST", "/api/sweeps", R"("spec")", {}, 400, "object"},
      {"NaN literal", "POST", "/api/sweeps", R"({"name": NaN})", {}, 400, "JSON"},
      {"number overflow",
       "POST",
       "/api/sweeps",
       R"({"name": "x", "search": {"max_trials": 1e999}})",
       {},
       400,
       ""},
      {"invalid UTF-8", "POST", "/api/sweeps", "{\"name\": \"\xff\xfe\"}", {}, 400, ""},
      {"300,000 nested arrays", "POST", "/api/sweeps", deep, {}, 400, "nested deeper"},
      {"100 nested objects", "POST", "/api/sweeps", deep_obj, {}, 400, "nested deeper"},
      {"trailing garbage", "POST", "/api/sweeps", spec_with("", nullptr) + "}", {}, 400, "JSON"},
      // Field by field.
      spec("no objective", "/objective", nullptr, "objective"),
      spec("name not a string", "/name", 5, "name"),
      spec("unknown top-level key", "/colour", "red", "colour"),
      spec("unknown parameter key", "/parameters/x1/scale", "log", "parameters.x1.scale"),
      spec("min above max", "/parameters/x1/min", 20, "parameters.x1"),
      spec("log with min 0", "/parameters/x2/log", true, "parameters.x2.log"),
      spec("negative step", "/parameters/x1/step", -1, "parameters.x1.step"),
      spec("range too wide", "/parameters/x1",
           Json{{"type", "float"}, {"min", -1e308}, {"max", 1e308}}, "parameters.x1"),
      spec("int beyond 2^53", "/parameters/x1",
           Json{{"type", "int"}, {"min", 0}, {"max", 9223372036854775807LL}}, "parameters.x1"),
      spec("too many steps", "/parameters/x1",
           Json{{"type", "float"}, {"min", 0}, {"max", 1}, {"step", 1e-300}}, "parameters.x1.step"),
      spec("empty categorical", "/parameters/x1",
           Json{{"type", "categorical"}, {"values", Json::array()}}, "parameters.x1.values"),
      spec("unknown parameter type", "/parameters/x1/type", "complex", "parameters.x1.type"),
      spec("condition on no parameter", "/parameters/x2/when", Json{{"nope", 1}},
           "parameters.x2.when"),
      spec("bad parameter name", "/parameters/has space",
           Json{{"type", "float"}, {"min", 0}, {"max", 1}}, "parameters.has space"),
      spec("max_trials 0", "/search/max_trials", 0, "search.max_trials"),
      spec("max_trials a string", "/search/max_trials", "many", "search.max_trials"),
      spec("max_concurrent 0", "/search/max_concurrent", 0, "search.max_concurrent"),
      spec("unknown algorithm", "/search/algorithm", "magic", "search.algorithm"),
      spec("grid with a continuous float", "/search/algorithm", "grid", "parameters"),
      spec("unknown trial kind", "/trial/kind", "shell", "trial.kind"),
      spec("unknown synthetic function", "/trial/function", "rm -rf", "trial.function"),
      spec("negative timeout", "/trial/timeout_s", -1, "trial.timeout_s"),
      spec("max_attempts 0", "/trial/max_attempts", 0, "trial.max_attempts"),
      spec("1000 gpus", "/trial/resources", Json{{"gpus", 1000}}, "trial.resources.gpus"),
      spec("memory_gb 0", "/trial/resources", Json{{"memory_gb", 0}}, "trial.resources.memory_gb"),
      spec("unknown resource", "/trial/resources", Json{{"tpus", 1}}, "trial.resources.tpus"),
      spec("data_parallel on synthetic", "/trial/data_parallel", Json{{"replicas", 2}},
           "trial.data_parallel"),
      spec("ensemble on synthetic", "/ensemble", Json{{"members", 4}}, "ensemble"),
      spec("command argv not an array", "/trial",
           Json{{"kind", "command"}, {"argv", "python3 train.py"}}, "trial.argv"),
      spec("command argv empty program", "/trial", Json{{"kind", "command"}, {"argv", {""}}},
           "trial.argv[0]"),
      spec("command placeholder of no parameter", "/trial",
           Json{{"kind", "command"}, {"argv", {"train", "--lr={lr}"}}}, "trial.argv[1]"),
      spec("command env value not a string", "/trial",
           Json{{"kind", "command"}, {"argv", {"train"}}, {"env", {{"A", 1}}}}, "trial.env.A"),
      spec("torch model far too big", "/trial",
           Json{{"kind", "torch"},
                {"model", {{"type", "mlp"}, {"layers", {65536, 65536, 65536}}}},
                {"data", {{"format", "csv"}, {"train", "t.csv"}, {"target", "y"}}}},
           "trial.model"),
      spec("early stopping unknown type", "/early_stopping", Json{{"type", "oracle"}},
           "early_stopping.type"),
      // Ids, paths and queries.
      {"unknown sweep", "GET", "/api/sweeps/nope", "", {}, 404, "nope"},
      {"traversal in a sweep id", "GET", "/api/sweeps/..%2F..%2Fetc%2Fpasswd", "", {}, 404, ""},
      {"NUL in a path", "GET", "/api/sweeps/a%00b", "", {}, 400, ""},
      {"unknown trial", "GET", "/api/trials/nope-1", "", {}, 404, "nope-1"},
      {"artifact name traversal", "GET", "/api/trials/x-0/artifacts/..", "", {}, 400, "name"},
      // Dataset files outside the data roots (the API's: /usr/share/datasets).
      {"dataset outside the roots",
       "POST",
       "/api/sweeps",
       torch_spec_with("train", "/etc/passwd"),
       {},
       400,
       "trial.data.train"},
      {"dataset traversal out of a root",
       "POST",
       "/api/sweeps",
       torch_spec_with("train", "/usr/share/datasets/../../etc/shadow"),
       {},
       400,
       "trial.data.train"},
      {"relative dataset climbing out",
       "POST",
       "/api/sweeps",
       torch_spec_with("test", "../../../root/.ssh/id_rsa"),
       {},
       400,
       "trial.data.test"},
      // Decoded before routing: a slash is a path separator, never part of a name.
      {"artifact name with a slash",
       "GET",
       "/api/trials/x-0/artifacts/a%2Fb",
       "",
       {},
       404,
       "no route"},
      {"limit not a number", "GET", "/api/sweeps?limit=abc", "", {}, 400, "limit"},
      {"negative offset", "GET", "/api/sweeps?offset=-1", "", {}, 400, "offset"},
      {"huge limit", "GET", "/api/sweeps?limit=99999999999999999999", "", {}, 400, "limit"},
      {"trials of an unknown sweep", "GET", "/api/sweeps/nope/trials", "", {}, 404, ""},
      {"delete an unknown sweep", "DELETE", "/api/sweeps/nope", "", {}, 404, ""},
      {"cancel an unknown sweep", "POST", "/api/sweeps/nope/cancel", "{}", {}, 404, ""},
      {"unknown route", "GET", "/api/nothing", "", {}, 404, ""},
      {"wrong method", "PUT", "/api/sweeps", "{}", {}, 405, ""},
      // Authority.
      {"submit without a token",
       "POST",
       "/api/sweeps",
       spec_with("", nullptr),
       {},
       401,
       "Bearer",
       false},
      {"submit with a wrong token",
       "POST",
       "/api/sweeps",
       spec_with("", nullptr),
       {"Authorization: Bearer wrong"},
       401,
       "unknown or was revoked",
       false},
      {"submit with an empty bearer",
       "POST",
       "/api/sweeps",
       spec_with("", nullptr),
       {"Authorization: Bearer "},
       401,
       "",
       false},
      {"submit with basic auth",
       "POST",
       "/api/sweeps",
       spec_with("", nullptr),
       {"Authorization: Basic dG9rLTEyMw=="},
       401,
       "",
       false},
      {"query token on a mutation",
       "POST",
       std::string("/api/sweeps?access_token=") + kToken,
       spec_with("", nullptr),
       {},
       401,
       "",
       false},
      {"delete without a token", "DELETE", "/api/sweeps/nope", "", {}, 401, "", false},
      // Users, projects, tokens, tags: what a tenant may send.
      {"an unknown token",
       "GET",
       "/api/sweeps",
       "",
       {"Authorization: Bearer hpo_0000"},
       401,
       "unknown or was revoked",
       false},
      {"a project name with a slash",
       "POST",
       "/api/sweeps?project=..%2Fother",
       spec_with("", nullptr),
       {},
       400,
       "project"},
      {"a project name in capitals",
       "POST",
       "/api/projects",
       R"({"name": "Team A"})",
       {},
       400,
       "name"},
      {"a project of weight 0",
       "POST",
       "/api/projects",
       R"({"name": "t", "weight": 0})",
       {},
       400,
       "weight"},
      {"a negative slot limit",
       "POST",
       "/api/projects",
       R"({"name": "t", "max_slots": -1})",
       {},
       400,
       "max_slots"},
      {"a GPU limit given as text",
       "POST",
       "/api/projects",
       R"({"name": "t", "max_gpus": "2"})",
       {},
       400,
       "max_gpus"},
      {"a project with an unknown key",
       "POST",
       "/api/projects",
       R"({"name": "t", "owner": "me"})",
       {},
       400,
       "owner"},
      {"a user without a name",
       "POST",
       "/api/users",
       R"({"service_admin": true})",
       {},
       400,
       "name"},
      {"a role that does not exist",
       "PUT",
       "/api/projects/default/members/admin",
       R"({"role": "owner"})",
       {},
       400,
       "role"},
      {"a token of an unknown user", "POST", "/api/users/nobody/tokens", "{}", {}, 404, "nobody"},
      {"revoking an unknown token", "DELETE", "/api/tokens/nope", "", {}, 404, "token nope"},
      {"tags on an unknown sweep",
       "PATCH",
       "/api/sweeps/nope",
       R"({"tags": ["a"]})",
       {},
       404,
       "sweep nope"},
      {"the audit of an unknown project",
       "GET",
       "/api/projects/nope/audit",
       "",
       {},
       404,
       "project nope"},
      {"an audit cursor that is not an id", "GET", "/api/audit?after=1-2-3", "", {}, 400, "after"},
      {"revoking the scheduler's own token",
       "DELETE",
       "/api/tokens/bootstrap",
       "",
       {},
       409,
       "scheduler's own"},
      {"a priority past its range",
       "PATCH",
       "/api/sweeps/nope",
       R"({"priority": 1e9})",
       {},
       404,
       "sweep nope"},
      {"cancel without a token", "POST", "/api/sweeps/nope/cancel", "{}", {}, 401, "", false},
      // Headers and sizes.
      {"oversized header",
       "GET",
       "/api/sweeps",
       "",
       {"X-Filler: " + std::string(40'000, 'a')},
       431,
       "header"},
      {"oversized body", "POST", "/api/sweeps", std::string(2 << 20, ' '), {}, 413, "exceeds"},
      {"bad Idempotency-Key",
       "POST",
       "/api/sweeps",
       spec_with("", nullptr),
       {"Idempotency-Key: has space"},
       400,
       "Idempotency-Key"},
      {"huge Idempotency-Key",
       "POST",
       "/api/sweeps",
       spec_with("", nullptr),
       {"Idempotency-Key: " + std::string(1000, 'k')},
       400,
       "Idempotency-Key"},
  };
  return c;
}

TEST(HostileRequests, EveryOneIsRefusedWithItsReasonAndNothingIsStored) {
  hpo::testing::RedisServer redis;
  const std::string url = redis.url();
  StoreFactory factory = [url]() -> Result<std::unique_ptr<trials::Store>> {
    return std::unique_ptr<trials::Store>(std::move(trials::redis::RedisStore::open(url).value()));
  };
  EventHub hub;
  ApiOptions options;
  options.token = kToken;
  options.data_roots = {trials::kDefaultDataRoot};
  Api api(options, factory, hub);
  ServerOptions so;
  so.port = 0;
  HttpServer server(so, api.handler());
  ASSERT_TRUE(server.start().ok());

  const auto table = cases();
  ASSERT_GE(table.size(), 60u);
  int refused = 0;
  for (const auto& c : table) {
    SCOPED_TRACE(c.name);
    hpo::testing::RawConnection conn(server.port());
    ASSERT_TRUE(conn.connected());
    conn.send(request_text(c));
    bool closed = false;
    const std::string reply = conn.read_until_closed(10s, closed);
    ASSERT_GE(reply.size(), 12u) << "no reply";
    const int status = std::stoi(reply.substr(9, 3));
    EXPECT_EQ(status, c.status) << reply.substr(0, 400);
    const std::string body = reply.substr(std::min(reply.size(), reply.find("\r\n\r\n") + 4));
    if (!c.expect.empty()) {
      EXPECT_NE(body.find(c.expect), std::string::npos) << body.substr(0, 400);
    }
    refused += status >= 400;
  }
  std::printf("hostile requests: %d sent, %d refused\n", static_cast<int>(table.size()), refused);
  // The server still serves, and nothing was stored.
  hpo::testing::HttpClient client("127.0.0.1", server.port());
  auto health = client.get("/healthz");
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->status, 200);
  auto store = factory();
  ASSERT_TRUE(store.ok());
  EXPECT_TRUE((*store)->sweeps().list_sweeps(0, 100)->empty());
  server.stop();
}

}  // namespace
}  // namespace hpo::web
