// Worker credentials through the real hpo-scheduler and hpo-worker: a worker
// started with --scheduler and a worker token (no Redis credential at all)
// runs a sweep to its end; then the attacks once made with the shared worker
// Redis credential, replayed with a worker token against the real worker
// endpoint, each refused with nothing changed: rewriting another project's
// weight, limits or usage, reading a spec, cancelling a sweep, completing,
// reporting to or renewing a trial leased to another worker, reading its
// artifacts, offering another project's trials on a project-bound token,
// and a revoked token. Creation and revocation are in the audit log. The
// holder's own calls, an artifact past the API's body limit included, hold.
// A token for a prefix of names serves each worker under it as itself.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/cluster.hpp"
#include "tests/support/toy_spec.hpp"
#include "trials/redis/redis_store.hpp"

namespace {

using hpo::ErrorCode;
using hpo::testing::Cluster;
using hpo::testing::read_file;
using hpo::testing::wait_for;
using hpo::trials::redis::RedisClient;
using hpo::trials::redis::RedisStore;
using hpo::trials::redis::RedisStoreConfig;
using hpo::trials::redis::RedisUrl;
using Json = nlohmann::json;
using namespace std::chrono_literals;

// A worker token made over REST by the admin: {id, token}.
Json make_worker_token(Cluster& c, const std::string& host, const std::string& project = "") {
  Json body = {{"host", host}};
  if (!project.empty()) body["project"] = project;
  auto r = c.api().post("/api/worker-tokens", body.dump());
  EXPECT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : r.error().message);
  return r.ok() && r->status == 201 ? Json::parse(r->body) : Json::object();
}

// What a stolen worker token reaches: the worker endpoint, as the worker's own store code.
RedisUrl endpoint(const Cluster& c, const std::string& token) {
  RedisUrl url;
  url.gateway = c.api_url();
  url.password = token;
  return url;
}

std::unique_ptr<RedisStore> store_via(const RedisUrl& url) {
  RedisStoreConfig config;
  config.url = url;
  return std::make_unique<RedisStore>(config);
}

bool unauthorized(const hpo::Result<hpo::trials::redis::Reply>& r) {
  return r.ok() && r->is_error() && r->str.rfind("UNAUTHORIZED", 0) == 0;
}

// The token in a file of mode 0600 under the test's home: its path.
std::string token_file(Cluster& c, const Json& token, const std::string& name) {
  const std::string file = c.home() + "/" + name;
  std::ofstream(file) << token["token"].get<std::string>() << "\n";
  ::chmod(file.c_str(), 0600);
  return file;
}

// A sweep of `n` toy trials run to its end: its trials, each completed.
Json completed_trials(Cluster& c, int n) {
  const std::string id = c.submit(hpo::testing::toy_command_spec(n, 100));
  EXPECT_FALSE(id.empty());
  Json sweep = c.wait_finished(id, 120s);
  EXPECT_EQ(sweep.value("state", ""), "finished") << sweep.dump() << c.logs();
  Json trials = c.get("/api/sweeps/" + id + "/trials?limit=100")["trials"];
  EXPECT_EQ(trials.size(), static_cast<std::size_t>(n));
  for (const auto& t : trials) EXPECT_EQ(t["state"], "completed") << t.dump();
  return trials;
}

TEST(WorkerTokens, AWorkerWithOnlyAWorkerTokenRunsASweepToItsEnd) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  Json token = make_worker_token(c, "host-a");
  ASSERT_TRUE(token.contains("token"));
  const std::string file = token_file(c, token, "worker-token");
  c.start_worker("host-a", 2, 1500, {"--scheduler", c.api_url(), "--worker-token-file", file});
  for (const auto& t : completed_trials(c, 4)) EXPECT_EQ(t["worker"], "host-a") << t.dump();
  const std::string log = read_file(c.home() + "/worker-host-a.log");
  EXPECT_NE(log.find("the worker endpoint of " + c.api_url()), std::string::npos) << log;

  // A token file others may read is refused before anything starts.
  ::chmod(file.c_str(), 0644);
  auto& loose =
      c.start_worker("host-b", 1, 1500, {"--scheduler", c.api_url(), "--worker-token-file", file});
  EXPECT_EQ(loose.wait(30s), 2);
  EXPECT_NE(loose.log().find("chmod 600"), std::string::npos) << loose.log();
}

// One token for a prefix of names (a Slurm array's tasks, a DaemonSet's
// pods): each worker under it runs as itself, a name outside it is refused,
// and a request that names no worker is refused too.
TEST(WorkerTokens, ATokenForANamePrefixServesEachWorkerUnderItAsItself) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  Json token = make_worker_token(c, "pool-*");
  ASSERT_EQ(token.value("host", ""), "pool-*") << token.dump();
  const std::vector<std::string> flags = {"--scheduler", c.api_url(), "--worker-token-file",
                                          token_file(c, token, "pool-token")};
  auto& pool_a = c.start_worker("pool-a", 1, 1500, flags);
  auto& pool_b = c.start_worker("pool-b", 1, 1500, flags);
  auto& outside = c.start_worker("elsewhere", 1, 1500, flags);
  for (const auto& t : completed_trials(c, 6))
    EXPECT_TRUE(t["worker"] == "pool-a" || t["worker"] == "pool-b") << t.dump();
  // A worker outside the prefix is refused and exits, saying why.
  EXPECT_EQ(outside.wait(60s), 2) << outside.log();
  EXPECT_NE(outside.log().find("is for the workers named 'pool-*'"), std::string::npos)
      << outside.log();
  // The same secret from a caller that names no worker is refused outright.
  RedisClient anonymous(endpoint(c, token["token"].get<std::string>()));
  auto r = anonymous.command({"TIME"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnauthorized) << r.error().message;
  // Named under the prefix, it is that worker and no other in the same request.
  RedisUrl named = endpoint(c, token["token"].get<std::string>());
  named.user = "pool-z";
  auto store = store_via(named);
  auto held = store->worker_leases("pool-z");
  ASSERT_TRUE(held.ok()) << held.error().message;
  EXPECT_TRUE(held->empty());
  EXPECT_FALSE(store->worker_leases("pool-a").ok());
  // Revoked: every worker under it stops, saying why, instead of retrying.
  auto gone = c.api().request("DELETE", "/api/worker-tokens/" + token["id"].get<std::string>());
  ASSERT_TRUE(gone.ok() && gone->status == 204) << (gone.ok() ? gone->body : "");
  for (auto* w : {&pool_a, &pool_b}) {
    EXPECT_EQ(w->wait(60s), 2) << w->log();
    EXPECT_NE(w->log().find("revoked"), std::string::npos) << w->log();
  }
}

class StolenWorkerToken : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(c_.start_scheduler());
    auto made = c_.api().post("/api/projects", R"({"name": "victim", "max_slots": 7})");
    ASSERT_TRUE(made.ok() && made->status == 201);
    made = c_.api().post("/api/projects", R"({"name": "team"})");
    ASSERT_TRUE(made.ok() && made->status == 201);
    // The victim's sweep, one trial of it leased to the honest worker
    // (through the scheduler's own Redis user, as its worker would).
    auto r =
        c_.api().post("/api/sweeps?project=victim", hpo::testing::toy_command_spec(2, 20).dump());
    ASSERT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : "");
    sweep_ = Json::parse(r->body)["id"].get<std::string>();
    admin_ = RedisStore::open(c_.admin_redis_url()).value();
    ASSERT_TRUE(wait_for(
        [&] {
          auto got = admin_->claim("honest", 1, 600000);
          if (!got.ok() || !*got) return false;
          held_ = (*got)->trial;
          return true;
        },
        30s));
    ASSERT_TRUE(admin_->put_artifact(held_.id, held_.attempt, "honest", "model", "secret").ok());
    Json stolen = make_worker_token(c_, "mallory");
    token_ = stolen.value("token", "");
    token_id_ = stolen.value("id", "");
    ASSERT_FALSE(token_.empty());
  }

  Json project(const std::string& name) {
    const Json all = c_.get("/api/projects");  // named: a loop over a temporary's part dangles
    for (const auto& p : all["projects"])
      if (p["name"] == name) return p;
    return Json();
  }

  Cluster c_;
  std::unique_ptr<RedisStore> admin_;
  hpo::trials::Trial held_;
  std::string sweep_, token_, token_id_;
};

TEST_F(StolenWorkerToken, CannotChangeAnotherProjectsSettingsUsageOrSweeps) {
  RedisClient raw(endpoint(c_, token_));
  const Json before = project("victim");
  ASSERT_TRUE(before.is_object()) << c_.get("/api/projects").dump();
  EXPECT_TRUE(unauthorized(raw.command({"HSET", "hpo:project:victim", "weight", "1000"})));
  EXPECT_TRUE(unauthorized(raw.command({"HSET", "hpo:project:victim", "max_slots", "0"})));
  EXPECT_TRUE(unauthorized(raw.command({"HINCRBY", "hpo:project:victim", "use_slots", "1000000"})));
  EXPECT_TRUE(unauthorized(raw.command({"HGET", "hpo:sweep:" + sweep_, "spec"})));
  EXPECT_TRUE(unauthorized(raw.command({"FCALL", "hpo_cancel_sweep", "0", "hpo:", sweep_})));
  EXPECT_TRUE(unauthorized(raw.command(
      {"FCALL", "hpo_update_project", "0", "hpo:", "victim", "1000", "0", "0", "0", "0"})));
  EXPECT_TRUE(unauthorized(raw.command({"FLUSHALL"})));
  const Json after = project("victim");
  EXPECT_EQ(after["weight"], before["weight"]);
  EXPECT_EQ(after["limits"], before["limits"]);
  EXPECT_EQ(after["use"], before["use"]);
  EXPECT_EQ(c_.get("/api/sweeps/" + sweep_).value("state", ""), "running");
}

TEST_F(StolenWorkerToken, CannotActOnATrialLeasedToAnotherWorker) {
  RedisClient raw(endpoint(c_, token_));
  // As the honest worker: refused before anything runs.
  EXPECT_TRUE(unauthorized(
      raw.command({"FCALL", "hpo_complete_batch", "0", "hpo:", "honest", "1", held_.id,
                   std::to_string(held_.attempt), "completed", "-1e9", "{}", "", "0", ""})));
  // As itself, through the worker's own store code: the lease is another's.
  auto store = store_via(endpoint(c_, token_));
  hpo::trials::TrialResult forged;
  forged.value = -1e9;
  EXPECT_EQ(store->complete(held_.id, held_.attempt, "mallory", forged).error().code,
            ErrorCode::kLeaseLost);
  EXPECT_EQ(store->report(held_.id, held_.attempt, "mallory", {1, {{"value", -1e9}}}).error().code,
            ErrorCode::kLeaseLost);
  EXPECT_EQ(store->heartbeat(held_.id, held_.attempt, "mallory", 600000).error().code,
            ErrorCode::kLeaseLost);
  EXPECT_EQ(store->release(held_.id, held_.attempt, "mallory", "drain", false).error().code,
            ErrorCode::kLeaseLost);
  EXPECT_EQ(store->get_artifact(held_.id, "model").error().code, ErrorCode::kUnauthorized);
  EXPECT_FALSE(store->rendezvous(held_.id, held_.attempt, "mallory")->has_value());
  // Nothing changed: the trial still runs for the honest worker, no value.
  Json trial = c_.get("/api/trials/" + held_.id);
  EXPECT_EQ(trial["state"], "running") << trial.dump();
  EXPECT_EQ(trial["worker"], "honest");
  EXPECT_TRUE(trial["value"].is_null()) << trial.dump();
  // The honest worker's own calls still hold.
  EXPECT_TRUE(admin_->heartbeat(held_.id, held_.attempt, "honest", 600000).ok());
}

TEST_F(StolenWorkerToken, AProjectBoundTokenTakesItsProjectsTrialsOnly) {
  Json bound = make_worker_token(c_, "team-host", "team");
  ASSERT_TRUE(bound.contains("token"));
  auto store = store_via(endpoint(c_, bound["token"].get<std::string>()));
  hpo::trials::Offer any = hpo::trials::slots_only_offer(4);
  EXPECT_EQ(store->claim_batch("team-host", any, 4, 60000).error().code, ErrorCode::kUnauthorized);
  hpo::trials::Offer team = any;
  team.project = "team";
  auto got = store->claim_batch("team-host", team, 4, 60000);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_TRUE(got->claims.empty()) << "the victim's queued trial is not team's";
}

TEST_F(StolenWorkerToken, ARevokedTokenIsRefusedAndBothChangesAreAudited) {
  auto store = store_via(endpoint(c_, token_));
  ASSERT_TRUE(store->worker_leases("mallory").ok());
  auto gone = c_.api().request("DELETE", "/api/worker-tokens/" + token_id_);
  ASSERT_TRUE(gone.ok() && gone->status == 204) << (gone.ok() ? gone->body : "");
  EXPECT_TRUE(wait_for(
      [&] {
        auto r = store->worker_leases("mallory");
        return !r.ok() && r.error().code == ErrorCode::kUnauthorized;
      },
      10s));
  const Json listed = c_.get("/api/worker-tokens");
  for (const auto& t : listed["worker_tokens"]) EXPECT_NE(t["id"], token_id_);
  std::vector<std::string> actions;
  const Json audit = c_.get("/api/audit?limit=1000");
  for (const auto& e : audit["entries"])
    if (e["target"] == token_id_) actions.push_back(e["action"].get<std::string>());
  EXPECT_EQ(actions, (std::vector<std::string>{"worker_token.create", "worker_token.revoke"}))
      << audit.dump();
}

TEST_F(StolenWorkerToken, TheHoldersTokenStoresAnArtifactPastTheApisBodyLimit) {
  // The worker endpoint's lane takes an inline artifact's bytes (the API's
  // requests stay at 1 MiB), and the holder's own calls go through.
  Json own = make_worker_token(c_, "honest");
  ASSERT_TRUE(own.contains("token"));
  auto store = store_via(endpoint(c_, own["token"].get<std::string>()));
  const std::string big(3 << 20, 'x');
  auto put = store->put_artifact(held_.id, held_.attempt, "honest", "big", big);
  ASSERT_TRUE(put.ok()) << put.error().message;
  EXPECT_EQ(admin_->get_artifact(held_.id, "big")->value_or("").size(), big.size());
  EXPECT_EQ(store->get_artifact(held_.id, "big")->value_or("").size(), big.size());
  auto api = c_.api().post("/api/sweeps", big);
  ASSERT_TRUE(api.ok());
  EXPECT_EQ(api->status, 413);
}

TEST_F(StolenWorkerToken, OnlyAServiceAdminMakesWorkerTokens) {
  auto user = c_.api().post("/api/users", R"({"name": "mallory"})");
  ASSERT_TRUE(user.ok() && user->status == 201);
  hpo::HttpClient as_member(*hpo::parse_http_url(c_.api_url()), 10s);
  as_member.set_token(Json::parse(user->body)["token"]["token"].get<std::string>());
  auto r = as_member.post("/api/worker-tokens", R"({"host": "mine"})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 403) << r->body;
  r = as_member.get("/api/worker-tokens");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 403) << r->body;
  // A user's token is no worker token.
  RedisUrl url = endpoint(c_, Json::parse(user->body)["token"]["token"].get<std::string>());
  EXPECT_EQ(store_via(url)->worker_leases("mine").error().code, ErrorCode::kUnauthorized);
  auto bad = c_.api().post("/api/worker-tokens", R"({"host": "a b"})");
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("host"), std::string::npos) << bad->body;
}

}  // namespace
