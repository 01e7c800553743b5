// Many teams on one server: through the real HTTP server, the real API and a
// real redis-server, every route asked with a token of another project
// answers exactly as for an id that does not exist; a viewer cannot mutate;
// a member changes only their own sweeps; a revoked token is refused within
// one second (its open event stream ends); and the audit log holds every
// mutation the test made.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/support/http_client.hpp"
#include "tests/support/redis_server.hpp"
#include "trials/access.hpp"
#include "trials/redis/redis_store.hpp"
#include "web/api.hpp"
#include "web/event_pump.hpp"
#include "web/http_server.hpp"

namespace hpo::web {
namespace {

using Json = nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr char kAdminToken[] = "the-schedulers-admin-token";

const char* const kSpec = R"({
  "name": "tenant",
  "objective": {"metric": "value", "mode": "min"},
  "parameters": {"x1": {"type": "float", "min": -5, "max": 10},
                 "x2": {"type": "float", "min": 0, "max": 15}},
  "search": {"algorithm": "random", "max_trials": 30, "max_concurrent": 4, "seed": 1},
  "trial": {"kind": "synthetic", "function": "branin"}})";

struct Reply {
  int status = 0;
  std::string body;
  Json json() const { return Json::parse(body, nullptr, false); }
};

class Tenancy : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string url = redis_.url();
    factory_ = [url]() -> Result<std::unique_ptr<trials::Store>> {
      auto s = trials::redis::RedisStore::open(url);
      if (!s) return s.error();
      return std::unique_ptr<trials::Store>(std::move(*s));
    };
    store_ = std::move(factory_().value());
    // What hpo-scheduler does at start.
    ASSERT_TRUE(
        store_->access().bootstrap("admin", trials::token_digest(kAdminToken), "default").ok());
    ApiOptions options;
    options.token = kAdminToken;
    api_ = std::make_unique<Api>(options, factory_, hub_);
    pump_ = std::make_unique<EventPump>(factory_, hub_, 200);
    pump_->start();
    ServerOptions so;
    so.port = 0;
    server_ = std::make_unique<HttpServer>(so, api_->handler());
    ASSERT_TRUE(server_->start().ok());
  }
  void TearDown() override {
    server_->stop();
    pump_->stop();
  }

  Reply call(const std::string& method, const std::string& target, const std::string& token,
             const std::string& body = "") {
    hpo::testing::HttpClient client("127.0.0.1", server_->port());
    client.set_token(token);
    std::map<std::string, std::string> headers;
    if (!body.empty()) headers["Content-Type"] = "application/json";
    auto r = client.request(method, target, body, headers);
    EXPECT_TRUE(r.ok()) << method << " " << target;
    if (!r.ok()) return {};
    return {r->status, r->body};
  }
  // POST /api/users as the admin: the new user's token.
  std::string user(const std::string& name) {
    auto r = call("POST", "/api/users", kAdminToken, Json{{"name", name}}.dump());
    EXPECT_EQ(r.status, 201) << r.body;
    token_ids_[name] = r.json()["token"]["id"];
    return r.json()["token"]["token"];
  }
  void project(const std::string& name) {
    auto r = call("POST", "/api/projects", kAdminToken, Json{{"name", name}}.dump());
    EXPECT_EQ(r.status, 201) << r.body;
  }
  void member(const std::string& project, const std::string& user, const std::string& role) {
    auto r = call("PUT", "/api/projects/" + project + "/members/" + user, kAdminToken,
                  Json{{"role", role}}.dump());
    EXPECT_EQ(r.status, 200) << r.body;
  }
  std::string submit(const std::string& project, const std::string& token,
                     const std::string& spec = kSpec) {
    auto r = call("POST", "/api/sweeps?project=" + project, token, spec);
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json().value("id", "");
  }

  hpo::testing::RedisServer redis_;
  trials::StoreFactory factory_;
  std::unique_ptr<trials::Store> store_;
  EventHub hub_;
  std::unique_ptr<Api> api_;
  std::unique_ptr<EventPump> pump_;
  std::unique_ptr<HttpServer> server_;
  std::map<std::string, std::string> token_ids_;
};

// `text` with every `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

TEST_F(Tenancy, EveryRouteOfAnotherProjectAnswersAsIfItDidNotExist) {
  project("alpha");
  project("beta");
  const std::string ann = user("ann");
  const std::string bob = user("bob");
  member("alpha", "ann", "member");
  member("beta", "bob", "admin");
  const std::string sweep = submit("alpha", ann);
  ASSERT_EQ(sweep.size(), 8u);
  // A trial, a trial artifact and a sweep record of alpha's sweep.
  trials::NewTrial nt;
  nt.sweep_id = sweep;
  nt.number = 0;
  nt.limit = 30;
  nt.params = {{"x1", search::Value(1.0)}, {"x2", search::Value(2.0)}};
  auto trial = store_->trials().create_trial(nt);
  ASSERT_TRUE(trial.ok()) << trial.error().message;
  ASSERT_TRUE(store_->artifacts().put_record(trial->id, "notes.txt", "alpha's").ok());
  ASSERT_TRUE(store_->artifacts().put_sweep_record(sweep, "ensemble.json", "{}").ok());
  // A worker token of alpha's pool (a service admin's to revoke).
  ASSERT_TRUE(store_->access()
                  .add_worker_token({"wt-alpha", "gpu-1", "alpha", 0, "admin"},
                                    trials::token_digest("alpha's worker"))
                  .ok());
  // Ann sees all of it.
  EXPECT_EQ(call("GET", "/api/sweeps/" + sweep, ann).status, 200);
  EXPECT_EQ(call("GET", "/api/trials/" + trial->id, ann).status, 200);
  EXPECT_EQ(call("GET", "/api/trials/" + trial->id + "/artifacts/notes.txt", ann).status, 200);

  // Each route with a path parameter, as bob and with an id that does not exist.
  const std::map<std::string, std::pair<std::string, std::string>> ids = {
      {"/api/sweeps/{id}", {sweep, "0badc0de"}},
      {"/api/sweeps/{id}/pareto", {sweep, "0badc0de"}},
      {"/api/sweeps/{id}/trials", {sweep, "0badc0de"}},
      {"/api/sweeps/{id}/ensemble", {sweep, "0badc0de"}},
      {"/api/sweeps/{id}/cancel", {sweep, "0badc0de"}},
      {"/api/trials/{id}", {trial->id, "0badc0de-0"}},
      {"/api/tokens/{id}", {token_ids_["ann"], "feedfacecafe"}},
      {"/api/worker-tokens/{id}", {"wt-alpha", "wfeedfacecafe"}},
  };
  int compared = 0;
  for (const auto& route : api_->routes()) {
    const std::string& pattern = route.pattern;
    if (pattern.find('{') == std::string::npos) continue;
    std::string theirs = pattern, missing = pattern, hidden, absent;
    auto put = [&](const std::string& param, const std::string& a, const std::string& b) {
      if (theirs.find(param) == std::string::npos) return;
      theirs = replaced(theirs, param, a);
      missing = replaced(missing, param, b);
      if (hidden.empty()) hidden = a, absent = b;
    };
    if (auto it = ids.find(pattern); it != ids.end()) {
      put("{id}", it->second.first, it->second.second);
    } else if (pattern.rfind("/api/sweeps/{id}", 0) == 0) {
      put("{id}", sweep, "0badc0de");
    } else if (pattern.rfind("/api/trials/{id}", 0) == 0) {
      put("{id}", trial->id, "0badc0de-0");
    } else if (pattern.rfind("/api/projects/{name}", 0) == 0) {
      put("{name}", "alpha", "gamma");
    } else if (pattern.rfind("/api/users/{name}", 0) == 0) {
      put("{name}", "ann", "nobody");
    }
    put("{name}", pattern.find("/trials/") != std::string::npos ? "notes.txt" : "ensemble.json",
        pattern.find("/trials/") != std::string::npos ? "notes.txt" : "ensemble.json");
    put("{user}", "ann", "ann");
    ASSERT_EQ(theirs.find('{'), std::string::npos)
        << "no id for " << route.method << " " << pattern;
    const std::string body = route.method == "PUT" ? R"({"role": "viewer"})" : "";
    SCOPED_TRACE(route.method + " " + theirs);
    const Reply seen = call(route.method, theirs, bob, body);
    const Reply none = call(route.method, missing, bob, body);
    EXPECT_EQ(seen.status, 404) << seen.body;
    EXPECT_EQ(seen.status, none.status);
    EXPECT_EQ(replaced(seen.body, hidden, absent), none.body);
    ++compared;
  }
  EXPECT_GE(compared, 15);

  // The routes without ids: nothing of alpha's shows.
  const Reply list = call("GET", "/api/sweeps", bob);
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(list.body.find(sweep), std::string::npos);
  EXPECT_EQ(call("GET", "/api/sweeps?project=alpha", bob).body,
            replaced(call("GET", "/api/sweeps?project=gamma", bob).body, "gamma", "alpha"));
  const Reply projects = call("GET", "/api/projects", bob);
  EXPECT_EQ(projects.body.find("alpha"), std::string::npos) << projects.body;
  EXPECT_NE(projects.body.find("beta"), std::string::npos) << projects.body;
  const Reply submit_there = call("POST", "/api/sweeps?project=alpha", bob, kSpec);
  EXPECT_EQ(submit_there.status, 404);
  EXPECT_EQ(replaced(submit_there.body, "alpha", "gamma"),
            call("POST", "/api/sweeps?project=gamma", bob, kSpec).body);
  const Json import = {{"spec", Json::parse(kSpec)}, {"csv", "number,state,value,x1,x2\n"}};
  EXPECT_EQ(call("POST", "/api/sweeps/import?project=alpha", bob, import.dump()).status, 404);
  // A warm start from a sweep bob may not read names a sweep that does not exist.
  ASSERT_EQ(call("POST", "/api/sweeps/" + sweep + "/cancel", ann).status, 200);
  Json warm = Json::parse(kSpec);
  warm["search"]["warm_start"] = {{"sweeps", {sweep}}};
  const Reply warm_hidden = call("POST", "/api/sweeps?project=beta", bob, warm.dump());
  warm["search"]["warm_start"]["sweeps"][0] = "0badc0de";
  const Reply warm_absent = call("POST", "/api/sweeps?project=beta", bob, warm.dump());
  EXPECT_EQ(warm_hidden.status, 400) << warm_hidden.body;
  EXPECT_EQ(replaced(warm_hidden.body, sweep, "0badc0de"), warm_absent.body);
  // The pool is shared; alpha's running trials are not shown to bob.
  trials::WorkerInfo w;
  w.name = "gpu-1";
  w.host = "h";
  w.slots = 2;
  w.trials = {trial->id};
  ASSERT_TRUE(store_->workers().put_worker(w, 60000).ok());
  const Reply workers = call("GET", "/api/workers", bob);
  EXPECT_NE(workers.body.find("gpu-1"), std::string::npos) << workers.body;
  EXPECT_EQ(workers.body.find(trial->id), std::string::npos) << workers.body;
  EXPECT_NE(call("GET", "/api/workers", ann).body.find(trial->id), std::string::npos);
  // Counts over every project are a service admin's.
  EXPECT_EQ(call("GET", "/metrics", bob).status, 403);
  EXPECT_EQ(call("GET", "/metrics", kAdminToken).status, 200);
  EXPECT_EQ(call("GET", "/api/users", bob).status, 403);
  EXPECT_EQ(call("GET", "/api/audit", bob).status, 403);
}

TEST_F(Tenancy, TheEventStreamShowsOnlyTheCallersProjects) {
  project("alpha");
  project("beta");
  const std::string ann = user("ann");
  const std::string bob = user("bob");
  member("alpha", "ann", "member");
  member("beta", "bob", "member");
  const std::string before = submit("alpha", ann);
  // Replayed from the start, and live.
  hpo::SseClient sse("127.0.0.1", server_->port());
  auto opened = sse.open("/api/events?last_event_id=0-0", {{"Authorization", "Bearer " + bob}});
  ASSERT_TRUE(opened.ok());
  ASSERT_EQ(opened->status, 200);
  const std::string theirs = submit("alpha", ann);
  const std::string mine = submit("beta", bob);
  std::set<std::string> sweeps;
  const auto deadline = Clock::now() + 20s;
  while (!sweeps.count(mine) && Clock::now() < deadline) {
    auto e = sse.next(1s);
    ASSERT_TRUE(e.ok()) << e.error().message;
    if (!*e) continue;
    auto data = Json::parse((*e)->data, nullptr, false);
    if (data.is_object() && data.contains("sweep_id")) sweeps.insert(data["sweep_id"]);
  }
  EXPECT_TRUE(sweeps.count(mine));
  EXPECT_FALSE(sweeps.count(before));
  EXPECT_FALSE(sweeps.count(theirs));
  // Another project's sweep cannot be followed by name.
  hpo::SseClient other("127.0.0.1", server_->port());
  auto refused = other.open("/api/events?sweep=" + theirs, {{"Authorization", "Bearer " + bob}});
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->status, 404);
}

TEST_F(Tenancy, AViewerCannotMutateAndAMemberChangesOnlyTheirOwnSweeps) {
  project("alpha");
  const std::string ann = user("ann");
  const std::string amy = user("amy");
  const std::string vic = user("vic");
  const std::string ada = user("ada");
  member("alpha", "ann", "member");
  member("alpha", "amy", "member");
  member("alpha", "vic", "viewer");
  member("alpha", "ada", "admin");
  const std::string sweep = submit("alpha", ann);
  // The viewer reads, and every mutation is 403.
  EXPECT_EQ(call("GET", "/api/sweeps/" + sweep, vic).status, 200);
  EXPECT_EQ(call("GET", "/api/sweeps/" + sweep + "/trials", vic).status, 200);
  EXPECT_EQ(call("POST", "/api/sweeps?project=alpha", vic, kSpec).status, 403);
  const Json import = {{"spec", Json::parse(kSpec)}, {"csv", "number,state,value,x1,x2\n"}};
  EXPECT_EQ(call("POST", "/api/sweeps/import?project=alpha", vic, import.dump()).status, 403);
  EXPECT_EQ(call("POST", "/api/sweeps/" + sweep + "/cancel", vic).status, 403);
  EXPECT_EQ(call("DELETE", "/api/sweeps/" + sweep, vic).status, 403);
  EXPECT_EQ(call("PUT", "/api/projects/alpha/members/vic", vic, R"({"role":"admin"})").status, 403);
  EXPECT_EQ(call("DELETE", "/api/projects/alpha/members/ann", vic).status, 403);
  EXPECT_EQ(call("GET", "/api/projects/alpha/audit", vic).status, 403);
  EXPECT_EQ(call("POST", "/api/projects", vic, R"({"name":"mine"})").status, 403);
  EXPECT_EQ(call("POST", "/api/users", vic, R"({"name":"eve"})").status, 403);
  // Nothing changed: the sweep runs, vic is still a viewer.
  EXPECT_EQ(call("GET", "/api/sweeps/" + sweep, vic).json()["state"], "running");
  auto members = store_->access().members("alpha");
  ASSERT_TRUE(members.ok());
  EXPECT_EQ(members->at("vic"), trials::ProjectRole::kViewer);
  // Another member may not cancel ann's sweep; its owner and the project's admin may.
  EXPECT_EQ(call("POST", "/api/sweeps/" + sweep + "/cancel", amy).status, 403);
  EXPECT_EQ(call("POST", "/api/sweeps/" + sweep + "/cancel", ann).status, 200);
  const std::string amys = submit("alpha", amy);
  EXPECT_EQ(call("POST", "/api/sweeps/" + amys + "/cancel", ada).status, 200);
  EXPECT_EQ(call("DELETE", "/api/sweeps/" + amys, ann).status, 403);
  EXPECT_EQ(call("DELETE", "/api/sweeps/" + amys, amy).status, 204);
  // A viewer made a member submits (roles are re-read within AccessControl::kTtl).
  member("alpha", "vic", "member");
  int status = 403;
  for (const auto until = Clock::now() + 30s; status == 403 && Clock::now() < until;)
    status = call("POST", "/api/sweeps?project=alpha", vic, kSpec).status;
  EXPECT_EQ(status, 201);
}

TEST_F(Tenancy, ARevokedTokenIsRefusedWithinOneSecondAndItsStreamEnds) {
  project("alpha");
  const std::string ann = user("ann");
  member("alpha", "ann", "member");
  ASSERT_EQ(call("GET", "/api/sweeps", ann).status, 200);  // her principal is cached now
  hpo::SseClient sse("127.0.0.1", server_->port());
  auto opened = sse.open("/api/events", {{"Authorization", "Bearer " + ann}});
  ASSERT_TRUE(opened.ok());
  ASSERT_EQ(opened->status, 200);
  // She revokes her own token.
  ASSERT_EQ(call("DELETE", "/api/tokens/" + token_ids_["ann"], ann).status, 204);
  const auto revoked = Clock::now();
  // Every request that starts a second after the revocation is refused; ask
  // until one has (the answer's time does not matter, only when it was asked).
  bool asked_late = false, refused = false;
  const auto deadline = revoked + 30s;
  while (!(asked_late && refused) && Clock::now() < deadline) {
    const auto asked = Clock::now();
    const int status = call("GET", "/api/sweeps", ann).status;
    if (asked - revoked >= 1s) {
      asked_late = true;
      EXPECT_EQ(status, 401) << "a request " << (asked - revoked) / 1ms
                             << " ms after the revocation";
    }
    refused = refused || status == 401;
  }
  EXPECT_TRUE(asked_late && refused);
  // Her open stream ends at the next event.
  submit("alpha", kAdminToken);
  bool ended = false;
  while (!ended && Clock::now() < deadline) {
    auto e = sse.next(1s);
    ended = !e.ok();
  }
  EXPECT_TRUE(ended);
}

// A service admin disables a user (every token of theirs is refused, with
// the reason, within a second), enables them again, and demotes another
// service admin; the scheduler's own admin can be neither. Only a service
// admin may: to anyone else the route is a user that does not exist. Each
// change is in the service's audit log.
TEST_F(Tenancy, UsersAreDisabledEnabledAndDemoted) {
  project("alpha");
  const std::string ann = user("ann");
  member("alpha", "ann", "member");
  const auto laptop = call("POST", "/api/users/ann/tokens", ann, R"({"label":"laptop"})");
  ASSERT_EQ(laptop.status, 201);
  const std::string second = laptop.json()["token"];
  ASSERT_EQ(call("GET", "/api/sweeps", ann).status, 200);

  EXPECT_EQ(call("PATCH", "/api/users/ann", ann, R"({"disabled": false})").status, 404);
  EXPECT_EQ(call("PATCH", "/api/users/ann", kAdminToken, R"({"disabled": "yes"})").status, 400);
  EXPECT_EQ(call("PATCH", "/api/users/nobody", kAdminToken, R"({"disabled": true})").status, 404);
  ASSERT_EQ(call("PATCH", "/api/users/ann", kAdminToken, R"({"disabled": true})").status, 200);
  for (const std::string& token : {ann, second}) {
    Reply r;
    EXPECT_TRUE(hpo::testing::wait_for(
        [&] { return (r = call("GET", "/api/sweeps", token)).status == 401; }, 10s));
    EXPECT_NE(r.body.find("user ann is disabled"), std::string::npos) << r.body;
  }
  EXPECT_EQ(call("POST", "/api/sweeps?project=alpha", ann, kSpec).status, 401);
  const Json users = call("GET", "/api/users", kAdminToken).json();
  for (const auto& u : users["users"])
    EXPECT_EQ(u["disabled"].get<bool>(), u["name"] == "ann") << u.dump();
  ASSERT_EQ(call("PATCH", "/api/users/ann", kAdminToken, R"({"disabled": false})").status, 200);
  EXPECT_TRUE(
      hpo::testing::wait_for([&] { return call("GET", "/api/sweeps", ann).status == 200; }, 10s));

  // A second service admin, demoted: their token keeps working, without the rights.
  const auto made =
      call("POST", "/api/users", kAdminToken, R"({"name": "sam", "service_admin": true})");
  ASSERT_EQ(made.status, 201);
  const std::string sam = made.json()["token"]["token"];
  ASSERT_EQ(call("GET", "/api/users", sam).status, 200);
  ASSERT_EQ(call("PATCH", "/api/users/sam", kAdminToken, R"({"service_admin": false})").status,
            200);
  EXPECT_TRUE(
      hpo::testing::wait_for([&] { return call("GET", "/api/users", sam).status == 403; }, 10s));
  EXPECT_EQ(call("POST", "/api/users", sam, R"({"name": "eve"})").status, 403);
  // The scheduler's own admin stays what it is.
  const Reply own = call("PATCH", "/api/users/admin", kAdminToken, R"({"disabled": true})");
  EXPECT_EQ(own.status, 409);
  EXPECT_NE(own.body.find("scheduler's own token"), std::string::npos) << own.body;

  std::multiset<std::string> changes;
  const Json log = call("GET", "/api/audit", kAdminToken).json();
  for (const auto& e : log["entries"])
    if (e["action"] == "user.update")
      changes.insert(e["target"].get<std::string>() + ": " + e["detail"].get<std::string>());
  EXPECT_EQ(changes, (std::multiset<std::string>{"ann: disabled", "ann: enabled",
                                                 "sam: not service admin"}));
}

// A token made to expire is refused from then on, saying so; the others of
// its user go on. The list shows when each expires.
TEST_F(Tenancy, ATokenMadeToExpireIsRefusedOnceItHas) {
  const std::string ann = user("ann");
  EXPECT_EQ(call("POST", "/api/users/ann/tokens", ann, R"({"expires_in_days": 0})").status, 400);
  EXPECT_EQ(call("POST", "/api/users/ann/tokens", ann, R"({"expires_in_days": 4000})").status, 400);
  // About a tenth of a second (the smallest lifetime the API takes is a
  // fraction of a day; the store's clock decides).
  const auto brief =
      call("POST", "/api/users/ann/tokens", ann, R"({"label": "brief", "expires_in_days": 1e-6})");
  ASSERT_EQ(brief.status, 201) << brief.body;
  const std::string token = brief.json()["token"];
  const auto month =
      call("POST", "/api/users/ann/tokens", ann, R"({"label": "month", "expires_in_days": 30})");
  ASSERT_EQ(month.status, 201);
  Reply r;
  EXPECT_TRUE(hpo::testing::wait_for(
      [&] { return (r = call("GET", "/api/whoami", token)).status == 401; }, 10s));
  EXPECT_NE(r.body.find("has expired"), std::string::npos) << r.body;
  EXPECT_EQ(call("GET", "/api/whoami", ann).status, 200);
  EXPECT_EQ(call("GET", "/api/whoami", month.json()["token"]).status, 200);
  const Json tokens = call("GET", "/api/users/ann/tokens", ann).json();
  int expiring = 0;
  for (const auto& t : tokens["tokens"]) expiring += t["expires_ms"].is_number();
  EXPECT_EQ(expiring, 2) << tokens.dump();
}

TEST_F(Tenancy, TheAuditLogHoldsEveryMutation) {
  std::set<std::pair<std::string, std::string>> alpha_done, service_done;
  project("alpha");
  alpha_done.insert({"project.create", "alpha"});
  const std::string ann = user("ann");
  service_done.insert({"user.create", "ann"});
  service_done.insert({"token.create", token_ids_["ann"]});
  member("alpha", "ann", "member");
  alpha_done.insert({"member.set", "ann"});
  const std::string sweep = submit("alpha", ann);
  alpha_done.insert({"sweep.submit", sweep});
  ASSERT_EQ(call("POST", "/api/sweeps/" + sweep + "/cancel", ann).status, 200);
  alpha_done.insert({"sweep.cancel", sweep});
  const auto extra = call("POST", "/api/users/ann/tokens", ann, R"({"label":"laptop"})");
  ASSERT_EQ(extra.status, 201);
  service_done.insert({"token.create", extra.json()["id"].get<std::string>()});
  ASSERT_EQ(call("DELETE", "/api/tokens/" + std::string(extra.json()["id"]), ann).status, 204);
  service_done.insert({"token.revoke", extra.json()["id"].get<std::string>()});
  ASSERT_EQ(call("DELETE", "/api/projects/alpha/members/ann", kAdminToken).status, 204);
  alpha_done.insert({"member.remove", "ann"});
  // A refused call is not a mutation and is not recorded.
  EXPECT_EQ(call("POST", "/api/sweeps?project=gamma", ann, kSpec).status, 404);

  auto logged = [&](const std::string& target) {
    std::set<std::pair<std::string, std::string>> out;
    const Reply r = call("GET", target, kAdminToken);
    EXPECT_EQ(r.status, 200) << r.body;
    const Json doc = r.json();
    for (const auto& e : doc["entries"]) {
      out.insert({e["action"].get<std::string>(), e["target"].get<std::string>()});
      EXPECT_FALSE(e["user"].get<std::string>().empty());
      EXPECT_GT(e["time_ms"].get<std::int64_t>(), 0);
    }
    return out;
  };
  EXPECT_EQ(logged("/api/projects/alpha/audit"), alpha_done);
  EXPECT_EQ(logged("/api/audit"), service_done);
  // Who: ann submitted and cancelled, the admin made the project.
  const Json alpha_log = call("GET", "/api/projects/alpha/audit", kAdminToken).json();
  for (const auto& e : alpha_log["entries"]) {
    if (e["action"] == "sweep.submit" || e["action"] == "sweep.cancel") {
      EXPECT_EQ(e["user"], "ann");
    }
    if (e["action"] == "project.create") {
      EXPECT_EQ(e["user"], "admin");
    }
  }
  // Paged by `after`.
  const Json first = call("GET", "/api/projects/alpha/audit?limit=2", kAdminToken).json();
  ASSERT_EQ(first["entries"].size(), 2u);
  const Json rest =
      call("GET", "/api/projects/alpha/audit?after=" + first["entries"][1]["id"].get<std::string>(),
           kAdminToken)
          .json();
  EXPECT_EQ(rest["entries"].size() + 2, alpha_done.size());
}

TEST_F(Tenancy, TagsAndNotesAreSetByTheOwnerAndFilterSweepsAndTrials) {
  project("alpha");
  const std::string ann = user("ann");
  const std::string vic = user("vic");
  member("alpha", "ann", "member");
  member("alpha", "vic", "viewer");
  const std::string tagged = submit("alpha", ann);
  const std::string other = submit("alpha", ann);
  trials::NewTrial nt;
  nt.sweep_id = tagged;
  nt.limit = 30;
  nt.params = {{"x1", search::Value(1.0)}, {"x2", search::Value(2.0)}};
  auto t0 = store_->trials().create_trial(nt);
  nt.number = 1;
  auto t1 = store_->trials().create_trial(nt);
  ASSERT_TRUE(t0.ok() && t1.ok());

  Reply r = call("PATCH", "/api/sweeps/" + tagged, ann,
                 R"({"tags": ["baseline", "lr:sweep"], "note": "the first try"})");
  ASSERT_EQ(r.status, 200) << r.body;
  r = call("PATCH", "/api/trials/" + t1->id, ann, R"({"tags": ["keep"], "note": "odd curve"})");
  ASSERT_EQ(r.status, 200) << r.body;
  // A viewer reads them and cannot change them; bad tags are refused by path.
  EXPECT_EQ(call("PATCH", "/api/sweeps/" + tagged, vic, R"({"tags": []})").status, 403);
  r = call("PATCH", "/api/sweeps/" + tagged, ann, R"({"tags": ["ok", "not ok"]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("tags[1]"), std::string::npos) << r.body;
  const Json sweep = call("GET", "/api/sweeps/" + tagged, vic).json();
  EXPECT_EQ(sweep["tags"], Json::array({"baseline", "lr:sweep"}));
  EXPECT_EQ(sweep["note"], "the first try");
  // Filters.
  const Json listed = call("GET", "/api/sweeps?tag=baseline", vic).json();
  ASSERT_EQ(listed["sweeps"].size(), 1u);
  EXPECT_EQ(listed["sweeps"][0]["id"], tagged);
  EXPECT_EQ(call("GET", "/api/sweeps?tag=nothing", vic).json()["sweeps"].size(), 0u);
  EXPECT_EQ(call("GET", "/api/sweeps", vic).json()["sweeps"].size(), 2u);
  const Json trials = call("GET", "/api/sweeps/" + tagged + "/trials?tag=keep", vic).json();
  ASSERT_EQ(trials["trials"].size(), 1u);
  EXPECT_EQ(trials["trials"][0]["id"], t1->id);
  EXPECT_EQ(trials["trials"][0]["note"], "odd curve");
  EXPECT_EQ(call("GET", "/api/trials/" + t1->id, vic).json()["tags"], Json::array({"keep"}));
  EXPECT_EQ(call("GET", "/api/trials/" + t0->id, vic).json()["tags"], Json::array());
  // A sweep's priority is the project admins' to set.
  EXPECT_EQ(call("PATCH", "/api/sweeps/" + tagged, ann, R"({"priority": 3})").status, 403);
  r = call("PATCH", "/api/sweeps/" + tagged, kAdminToken, R"({"priority": 3})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(call("GET", "/api/sweeps/" + tagged, vic).json()["priority"], 3);
  // A key left out stays: the note is kept when only the tags change.
  ASSERT_EQ(call("PATCH", "/api/sweeps/" + tagged, ann, R"({"tags": ["final"]})").status, 200);
  EXPECT_EQ(call("GET", "/api/sweeps/" + tagged, vic).json()["note"], "the first try");
  const Json log = call("GET", "/api/projects/alpha/audit", kAdminToken).json();
  int annotations = 0;
  for (const auto& e : log["entries"])
    annotations += e["action"] == "sweep.annotate" || e["action"] == "trial.annotate";
  EXPECT_EQ(annotations, 4);
  (void)other;
}

// A trial wider than its project's slot or GPU limit could never run: the
// submit is refused naming the limit; raised, the same spec is taken.
TEST_F(Tenancy, ATrialWiderThanItsProjectsLimitsIsRefusedAtSubmit) {
  auto made = call("POST", "/api/projects", kAdminToken,
                   R"({"name": "small", "max_slots": 4, "max_gpus": 1})");
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string on_two_gpus = replaced(kSpec, R"("function": "branin"})",
                                           R"("function": "branin", "resources": {"gpus": 2}})");
  ASSERT_NE(on_two_gpus, kSpec);
  auto refused = call("POST", "/api/sweeps?project=small", kAdminToken, on_two_gpus);
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(refused.body.find("max_gpus"), std::string::npos) << refused.body;
  EXPECT_EQ(call("GET", "/api/sweeps?project=small", kAdminToken).json()["sweeps"].size(), 0u);
  submit("small", kAdminToken,  // one GPU is within the limit
         replaced(kSpec, R"("function": "branin"})",
                  R"("function": "branin", "resources": {"gpus": 1}})"));
  auto raised = call("PATCH", "/api/projects/small", kAdminToken, R"({"max_gpus": 2})");
  ASSERT_EQ(raised.status, 200) << raised.body;
  submit("small", kAdminToken, on_two_gpus);
  for (const auto& p : call("GET", "/api/projects", kAdminToken).json()["projects"])
    if (p["name"] == "small") {
      EXPECT_EQ(p["limits"]["max_gpus"], 2) << p.dump();
      EXPECT_EQ(p["use"]["gpus"], 0) << p.dump();  // no worker has claimed
    }
}

TEST_F(Tenancy, AOnePersonInstallReadsWithoutATokenUntilASecondUserExists) {
  const std::string sweep = submit("default", kAdminToken);
  EXPECT_EQ(call("GET", "/api/sweeps/" + sweep, "").status, 200);
  EXPECT_EQ(call("POST", "/api/sweeps/" + sweep + "/cancel", "").status, 401);
  user("ann");
  // The answer about the user count is at most a second old.
  const auto made = Clock::now();
  int status = 200;
  while (status != 401 && Clock::now() < made + 30s) status = call("GET", "/api/sweeps", "").status;
  EXPECT_EQ(status, 401);
  EXPECT_EQ(call("GET", "/healthz", "").status, 200);
  EXPECT_EQ(call("GET", "/api/openapi.json", "").status, 200);
}

}  // namespace
}  // namespace hpo::web
