// The REST API end to end over HTTP: a real redis-server, the real RedisStore,
// the real HttpServer and EventPump, and the HttpClient the CLI uses.
#include "web/api.hpp"

#include <gtest/gtest.h>

#include "tests/support/http_client.hpp"
#include "tests/support/redis_server.hpp"
#include "trials/artifact_dir.hpp"
#include "trials/redis/redis_store.hpp"
#include "web/access_control.hpp"
#include "web/event_pump.hpp"
#include "web/http_server.hpp"
#include "web/json_codec.hpp"

namespace hpo::web {
namespace {

using namespace std::chrono_literals;
using testing::wait_for;

const char* const kSpec = R"({
  "name": "api-test",
  "objective": {"metric": "value", "mode": "min"},
  "parameters": {"x1": {"type": "float", "min": -5, "max": 10},
                 "x2": {"type": "float", "min": 0, "max": 15}},
  "search": {"algorithm": "random", "max_trials": 30, "max_concurrent": 4, "seed": 1},
  "trial": {"kind": "synthetic", "function": "branin"}
})";

std::unique_ptr<trials::redis::RedisStore> open_store(const std::string& url) {
  auto s = trials::redis::RedisStore::open(url);
  if (!s) throw std::runtime_error(s.error().message);
  return std::move(*s);
}

class ApiTest : public ::testing::Test {
 protected:
  void start(ApiOptions options = {}) {
    store_ = open_store(redis_.url());
    std::string url = redis_.url();
    factory_ = [url]() -> Result<std::unique_ptr<trials::Store>> {
      return std::unique_ptr<trials::Store>(open_store(url));
    };
    api_ = std::make_unique<Api>(options, factory_, hub_);
    pump_ = std::make_unique<EventPump>(factory_, hub_, 200);
    pump_->start();
    ServerOptions so;
    so.port = 0;
    so.body_limit = options.body_limit;
    so.handler_threads = options.handler_threads;
    server_ = std::make_unique<HttpServer>(so, api_->handler());
    ASSERT_TRUE(server_->start().ok());
    client_ = std::make_unique<HttpClient>("127.0.0.1", server_->port());
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (pump_) pump_->stop();
  }
  Json body(const ClientResponse& r) { return Json::parse(r.body); }
  // Ensemble member 0 of sweep `id`, queued.
  Result<trials::Trial> add_member(const std::string& id) {
    trials::NewTrial m;
    m.sweep_id = id;
    m.role = hpo::trials::TrialRole::kMember;
    m.limit = 4;
    return store_->create_trial(m);
  }
  std::string submit(const std::string& spec = kSpec) {
    auto r = client_->post("/api/sweeps", spec);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r->status, 201) << r->body;
    return body(*r)["id"].get<std::string>();
  }
  // Creates n trials of `sweep` and completes those with number % 3 != 2,
  // value = (number * 7) % 11.
  void add_trials(const std::string& sweep, int n) {
    for (int i = 0; i < n; ++i) {
      trials::NewTrial t;
      t.sweep_id = sweep;
      t.number = i;
      t.limit = 1000;
      t.params = {{"x1", 0.5 * i}, {"x2", std::int64_t{i % 4}}};
      ASSERT_TRUE(store_->create_trial(t).ok());
    }
    for (int i = 0; i < n; ++i) {
      auto c = store_->claim("w1", 1, 60000);
      ASSERT_TRUE(c.ok() && c->has_value());
      const auto& trial = (*c)->trial;
      if (trial.number % 3 == 2) continue;  // stays running
      trials::TrialResult res;
      res.value = static_cast<double>((trial.number * 7) % 11);
      res.metrics = {{"value", *res.value}};
      ASSERT_TRUE(store_->complete(trial.id, trial.attempt, "w1", res).ok());
    }
  }

  testing::RedisServer redis_;
  EventHub hub_;
  StoreFactory factory_;
  std::unique_ptr<trials::redis::RedisStore> store_;
  std::unique_ptr<Api> api_;
  std::unique_ptr<EventPump> pump_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<HttpClient> client_;
};

TEST_F(ApiTest, SubmitThenGetTheSweepDocument) {
  start();
  auto r = client_->post("/api/sweeps", kSpec);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 201) << r->body;
  std::string id = body(*r)["id"];
  EXPECT_EQ(r->header("location"), "/api/sweeps/" + id);
  auto g = client_->get("/api/sweeps/" + id);
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->status, 200);
  Json doc = body(*g);
  EXPECT_EQ(doc["id"], id);
  EXPECT_EQ(doc["name"], "api-test");
  EXPECT_EQ(doc["state"], "running");
  EXPECT_EQ(doc["objective"]["metric"], "value");
  EXPECT_EQ(doc["objective"]["mode"], "min");
  EXPECT_EQ(doc["max_trials"], 30);
  EXPECT_TRUE(doc["best"].is_null());
  EXPECT_EQ(doc["counts"]["queued"], 0);
  EXPECT_EQ(doc["spec"]["trial"]["function"], "branin");
  trials::Sweep decoded;
  ASSERT_TRUE(from_json(doc, decoded).ok());
  EXPECT_EQ(decoded.id, id);
  // Stored canonically, as the store has it.
  auto stored = store_->get_sweep(id);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(Json::parse(stored->spec_json), Json::parse(kSpec));
  // And listed.
  auto list = client_->get("/api/sweeps");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(body(*list)["sweeps"].size(), 1u);
  EXPECT_EQ(body(*list)["sweeps"][0]["id"], id);
}

TEST_F(ApiTest, BadSpecGets400WithTheFieldPathAndStoresNothing) {
  start();
  Json bad = Json::parse(kSpec);
  bad["parameters"]["x1"]["min"] = 20;  // min >= max
  bad["search"]["surprise"] = 1;        // unknown key
  auto r = client_->post("/api/sweeps", bad.dump());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 400);
  Json e = body(*r)["error"];
  EXPECT_EQ(e["code"], "invalid_argument");
  std::set<std::string> paths;
  for (const auto& f : e["fields"]) paths.insert(f["path"].get<std::string>());
  EXPECT_TRUE(std::any_of(paths.begin(), paths.end(), [](const std::string& p) {
    return p.rfind("parameters.x1", 0) == 0;
  })) << e.dump();
  EXPECT_TRUE(paths.count("search.surprise")) << e.dump();
  auto not_json = client_->post("/api/sweeps", "{not json");
  ASSERT_TRUE(not_json.ok());
  EXPECT_EQ(not_json->status, 400);
  auto sweeps = store_->list_sweeps(0, 10);
  ASSERT_TRUE(sweeps.ok());
  EXPECT_TRUE(sweeps->empty());
}

// A warm start names ended sweeps that exist; anything else is a 400 at its
// path, and nothing is stored.
TEST_F(ApiTest, AWarmStartFromAMissingOrRunningSweepIsRefused) {
  start();
  auto first = client_->post("/api/sweeps", kSpec);
  ASSERT_TRUE(first.ok() && first->status == 201);
  const std::string running = body(*first)["id"];
  Json warm = Json::parse(kSpec);
  warm["search"]["algorithm"] = "tpe";
  warm["search"]["warm_start"] = {{"sweeps", {running}}};
  auto r = client_->post("/api/sweeps", warm.dump());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(body(*r)["error"]["fields"][0]["path"], "search.warm_start.sweeps[0]") << r->body;
  EXPECT_NE(r->body.find("still running"), std::string::npos) << r->body;
  warm["search"]["warm_start"] = {{"sweeps", {running, "nosuchsweep"}}};
  ASSERT_TRUE(store_->cancel_sweep(running).ok());
  r = client_->post("/api/sweeps", warm.dump());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(body(*r)["error"]["fields"][0]["path"], "search.warm_start.sweeps[1]") << r->body;
  EXPECT_EQ(body(*r)["error"]["fields"][0]["message"], "no sweep \"nosuchsweep\"") << r->body;
  EXPECT_EQ(store_->list_sweeps(0, 10)->size(), 1u);
  warm["search"]["warm_start"] = {{"sweeps", {running}}};
  r = client_->post("/api/sweeps", warm.dump());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 201) << r->body;
}

// An import stores an ended sweep from the CSV `hpo trials --csv` writes: a
// 201 with its id; a malformed file is a 400 naming its line and column, and
// nothing is stored; a sweep warm-started from the import is accepted.
TEST_F(ApiTest, ImportStoresAnEndedSweepFromItsCsv) {
  start();
  auto import = [&](const Json& body, const std::string& key = "") {
    std::map<std::string, std::string> headers{{"Content-Type", "application/json"}};
    if (!key.empty()) headers["Idempotency-Key"] = key;
    return client_->request("POST", "/api/sweeps/import", body.dump(), headers);
  };
  const Json spec = Json::parse(kSpec);
  const std::string csv =
      "state,value,param:x1,param:x2\n"
      "completed,4.5,1.5,2\n"
      "completed,0.75,3.25,2.5\n"
      "failed,,-5,0\n";
  auto r = import({{"spec", spec}, {"csv", csv}}, "imp-1");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 201) << r->body;
  const std::string id = body(*r)["id"];
  EXPECT_EQ(body(*r)["trials"], 3);
  auto doc = client_->get("/api/sweeps/" + id);
  ASSERT_EQ(doc->status, 200);
  EXPECT_EQ(body(*doc)["state"], "finished") << doc->body;
  EXPECT_EQ(body(*doc)["best"]["value"], 0.75) << doc->body;
  EXPECT_EQ(body(*doc)["best"]["params"]["x1"], 3.25) << doc->body;
  auto rows = client_->get("/api/sweeps/" + id + "/trials");
  ASSERT_EQ(body(*rows)["trials"].size(), 3u) << rows->body;
  EXPECT_EQ(body(*rows)["trials"][2]["state"], "failed");
  // A retry gets the same sweep back.
  r = import({{"spec", spec}, {"csv", csv}}, "imp-1");
  ASSERT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(body(*r)["id"], id);

  struct Bad {
    Json body;
    std::string path, says;
  };
  Json bad_spec = spec;
  bad_spec["parameters"]["x1"]["min"] = "low";
  const std::vector<Bad> bad{
      {{{"spec", spec}, {"csv", "state,value,param:x1,param:x2\ncompleted,1,11,2\n"}},
       "csv",
       "line 2, column 3 (param:x1): 11 is above the maximum 10"},
      {{{"spec", spec}, {"csv", "state,param:x9\n"}}, "csv", "no parameter \"x9\""},
      {{{"spec", bad_spec}, {"csv", csv}}, "spec.parameters.x1", ""},
      {{{"spec", spec}}, "csv", "expected the trials as text"},
      {{{"csv", csv}}, "spec", "expected the sweep spec"},
      {{{"spec", spec}, {"csv", csv}, {"rows", 1}}, "rows", "unknown key"},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.body.dump());
    auto got = import(b.body);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->status, 400) << got->body;
    const Json field = body(*got)["error"]["fields"][0];
    EXPECT_EQ(field["path"].get<std::string>().rfind(b.path, 0), 0u) << got->body;
    EXPECT_NE(field["message"].get<std::string>().find(b.says), std::string::npos) << got->body;
  }
  EXPECT_EQ(store_->list_sweeps(0, 10)->size(), 1u);

  Json warm = spec;
  warm["search"]["algorithm"] = "tpe";
  warm["search"]["warm_start"] = {{"sweeps", {id}}};
  auto w = client_->post("/api/sweeps", warm.dump());
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->status, 201) << w->body;
}

// GET /api/sweeps/{id}/pareto: the front of the completed trials over the
// spec's objectives, each in its own direction, and its hypervolume.
TEST_F(ApiTest, ParetoFrontOfASweepWithSeveralObjectives) {
  start();
  Json spec = Json::parse(kSpec);
  spec.erase("objective");
  spec["objectives"] =
      Json::parse(R"([{"metric": "f1"}, {"metric": "f2", "mode": "max", "reference": 0}])");
  spec["search"]["algorithm"] = "nsga2";
  const std::string id = submit(spec.dump());
  const std::vector<std::pair<double, double>> results{{1, 3}, {2, 2}, {3, 4}, {0.5, 1}};
  for (std::size_t i = 0; i < results.size(); ++i) {
    trials::NewTrial t;
    t.sweep_id = id;
    t.number = static_cast<std::int64_t>(i);
    t.limit = 100;
    t.params = {{"x1", 0.5 * static_cast<double>(i)}, {"x2", 1.0}};
    ASSERT_TRUE(store_->create_trial(t).ok());
    auto c = store_->claim("w1", 1, 60000);
    ASSERT_TRUE(c.ok() && c->has_value());
    trials::TrialResult res;
    res.value = results[i].first;
    res.metrics = {{"f1", results[i].first}, {"f2", results[i].second}};
    ASSERT_TRUE(store_->complete((*c)->trial.id, 0, "w1", res).ok());
  }
  auto r = client_->get("/api/sweeps/" + id + "/pareto");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200) << r->body;
  Json doc = body(*r);
  EXPECT_EQ(doc["sweep"], id);
  EXPECT_EQ(doc["counted"], 4);
  EXPECT_EQ(doc["objectives"][1]["mode"], "max");
  // (2, 2) is beaten by (1, 3): lower f1 (minimised) and higher f2 (maximised).
  std::vector<std::int64_t> front;
  for (const auto& m : doc["front"]) front.push_back(m["number"].get<std::int64_t>());
  EXPECT_EQ(front, (std::vector<std::int64_t>{0, 2, 3})) << doc.dump();
  EXPECT_EQ(doc["front"][0]["values"]["f2"], 3.0);
  EXPECT_EQ(doc["reference"][0], 3.0);  // the worst f1; f2's from the spec
  EXPECT_EQ(doc["reference"][1], 0.0);
  // Up to (3, 0): [1,3]x[0,3] and [0.5,3]x[0,1]: 6 + 0.5.
  EXPECT_DOUBLE_EQ(doc["hypervolume"].get<double>(), 6.5) << doc.dump();
  EXPECT_EQ(client_->get("/api/sweeps/nope/pareto")->status, 404);
}

TEST_F(ApiTest, UnknownIdsAre404) {
  start();
  auto a = client_->get("/api/sweeps/nope");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->status, 404);
  EXPECT_EQ(body(*a)["error"]["code"], "not_found");
  EXPECT_EQ(client_->get("/api/sweeps/nope/trials")->status, 404);
  EXPECT_EQ(client_->get("/api/trials/nope-1")->status, 404);
  EXPECT_EQ(client_->get("/api/nothing")->status, 404);
  EXPECT_EQ(client_->request("DELETE", "/api/sweeps")->status, 405);
}

// A retried submit with the same Idempotency-Key gets the first sweep back.
TEST_F(ApiTest, IdempotencyKeyMakesARetriedSubmitReturnTheFirstSweep) {
  start();
  auto post = [&](const std::string& key, const std::string& spec) {
    return client_->request("POST", "/api/sweeps", spec,
                            {{"Content-Type", "application/json"}, {"Idempotency-Key", key}});
  };
  auto first = post("k-1", kSpec);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->status, 201) << first->body;
  auto again = post("k-1", kSpec);
  ASSERT_EQ(again->status, 201);
  EXPECT_EQ(body(*again)["id"], body(*first)["id"]);
  EXPECT_NE(body(*post("k-2", kSpec))["id"], body(*first)["id"]);
  auto bad = post("has space", kSpec);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(body(*bad)["error"]["fields"][0]["path"], "Idempotency-Key") << bad->body;
  auto sweeps = client_->get("/api/sweeps");
  EXPECT_EQ(body(*sweeps)["sweeps"].size(), 2u);
}

// Issue 11's first crasher: a body nested 300,000 levels deep is a 400, and
// the server goes on serving.
TEST_F(ApiTest, ADeeplyNestedBodyIsRefusedAndTheServerSurvives) {
  start();
  const std::string deep = std::string(300'000, '[') + std::string(300'000, ']');
  auto r = client_->post("/api/sweeps", deep);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 400) << r->body.substr(0, 200);
  EXPECT_NE(r->body.find("nested deeper than 64 levels"), std::string::npos);
  EXPECT_EQ(client_->get("/healthz")->status, 200);
  EXPECT_EQ(body(*client_->get("/api/sweeps"))["sweeps"].size(), 0u);  // nothing stored
}

TEST_F(ApiTest, DeleteRemovesAnEndedSweepOnly) {
  start();
  std::string id = submit();
  auto running = client_->request("DELETE", "/api/sweeps/" + id);
  EXPECT_EQ(running->status, 409);
  EXPECT_NE(body(*running)["error"]["message"].get<std::string>().find("cancel it first"),
            std::string::npos);
  ASSERT_EQ(client_->post("/api/sweeps/" + id + "/cancel", "{}")->status, 200);
  EXPECT_EQ(client_->request("DELETE", "/api/sweeps/" + id)->status, 204);
  EXPECT_EQ(client_->get("/api/sweeps/" + id)->status, 404);
  EXPECT_EQ(client_->request("DELETE", "/api/sweeps/" + id)->status, 404);
}

TEST_F(ApiTest, TrialsArePagedFilteredAndSorted) {
  start();
  std::string id = submit();
  add_trials(id, 25);
  auto page = client_->get("/api/sweeps/" + id + "/trials?limit=10&offset=20");
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->status, 200) << page->body;
  Json p = body(*page);
  EXPECT_EQ(p["total"], 25);
  ASSERT_EQ(p["trials"].size(), 5u);
  EXPECT_EQ(p["trials"][0]["number"], 20);
  EXPECT_EQ(p["trials"][4]["number"], 24);
  EXPECT_EQ(p["trials"][0]["id"], id + "-20");
  for (const char* field : {"id", "number", "state", "params", "value", "attempt", "worker"})
    EXPECT_TRUE(p["trials"][0].contains(field)) << field;

  // Completed ones, best first: values (7n mod 11) over n with n % 3 != 2.
  std::vector<double> expected;
  for (int n = 0; n < 25; ++n)
    if (n % 3 != 2) expected.push_back((n * 7) % 11);
  std::sort(expected.begin(), expected.end());
  auto best = client_->get("/api/sweeps/" + id + "/trials?state=completed&sort=value&limit=4");
  ASSERT_TRUE(best.ok());
  Json b = body(*best);
  EXPECT_EQ(b["total"], static_cast<int>(expected.size()));
  ASSERT_EQ(b["trials"].size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(b["trials"][i]["value"].get<double>(), expected[i]);
    EXPECT_EQ(b["trials"][i]["state"], "completed");
  }
  auto worst = client_->get("/api/sweeps/" + id + "/trials?state=completed&sort=-value&limit=1");
  EXPECT_EQ(body(*worst)["trials"][0]["value"].get<double>(), expected.back());
  auto running = client_->get("/api/sweeps/" + id + "/trials?state=running");
  EXPECT_EQ(body(*running)["total"], 8);  // n = 2, 5, ..., 23
  auto by_param = client_->get("/api/sweeps/" + id + "/trials?sort=-param:x1&limit=1");
  EXPECT_EQ(body(*by_param)["trials"][0]["number"], 24);

  auto bad_state = client_->get("/api/sweeps/" + id + "/trials?state=sleeping");
  EXPECT_EQ(bad_state->status, 400);
  EXPECT_EQ(body(*bad_state)["error"]["fields"][0]["path"], "state");
  EXPECT_EQ(client_->get("/api/sweeps/" + id + "/trials?limit=-1")->status, 400);
  EXPECT_EQ(client_->get("/api/sweeps/" + id + "/trials?sort=color")->status, 400);

  auto csv = client_->get("/api/sweeps/" + id + "/trials?format=csv");
  ASSERT_TRUE(csv.ok());
  EXPECT_EQ(csv->header("content-type"), "text/csv; charset=utf-8");
  EXPECT_EQ(std::count(csv->body.begin(), csv->body.end(), '\n'), 26);
  EXPECT_EQ(csv->body.rfind("id,number,state,value", 0), 0u);
  EXPECT_NE(csv->body.find("param:x1"), std::string::npos);

  // The sweep document counts them.
  Json sweep = body(*client_->get("/api/sweeps/" + id));
  EXPECT_EQ(sweep["counts"]["completed"], static_cast<int>(expected.size()));
  EXPECT_EQ(sweep["counts"]["running"], 8);
  EXPECT_EQ(sweep["best"]["value"].get<double>(), expected.front());
}

// CSV export neutralises cells a spreadsheet would run as formulas; numbers,
// negative ones included, stay numbers.
TEST_F(ApiTest, CsvExportNeutralisesFormulaCells) {
  start();
  std::string id = submit();
  trials::NewTrial t;
  t.sweep_id = id;
  t.limit = 10;
  t.params = {{"x1", -2.5}, {"x2", std::int64_t{-3}}, {"name", std::string("=HYPERLINK(\"x\")")}};
  ASSERT_TRUE(store_->create_trial(t).ok());
  auto claim = store_->claim("@evil", 1, 60'000);
  ASSERT_TRUE(claim.ok() && claim->has_value());
  trials::TrialResult failed;
  failed.outcome = trials::TrialState::kFailed;
  failed.error = "+cmd|' /C calc'!A0";
  failed.retryable = false;
  ASSERT_TRUE(store_->complete((*claim)->trial.id, 0, "@evil", failed).ok());
  auto csv = client_->get("/api/sweeps/" + id + "/trials?format=csv");
  ASSERT_TRUE(csv.ok());
  const std::string& b = csv->body;
  EXPECT_NE(b.find("\"'=HYPERLINK(\"\"x\"\")\""), std::string::npos) << b;
  EXPECT_NE(b.find("\"'@evil\""), std::string::npos) << b;
  EXPECT_NE(b.find("\"'+cmd|' /C calc'!A0\""), std::string::npos) << b;
  EXPECT_NE(b.find(",-2.5,-3\n"), std::string::npos) << b;  // numbers untouched
}

// The columns form holds the same trials as the object form, field by field:
// dictionary indexes resolve to the same state, worker and error; a parameter
// a trial lacks is null; filters, sorting and paging apply as for the objects.
TEST_F(ApiTest, ColumnsHoldTheSameTrialsAsObjects) {
  start();
  std::string id = submit();
  for (int n = 0; n < 6; ++n) {
    trials::NewTrial t;
    t.sweep_id = id;
    t.limit = 10;
    t.number = n;
    t.params = {{"x1", 0.25 * n}};
    if (n % 2 == 0) t.params["opt"] = std::string(n == 0 ? "adam" : "sgd");
    auto made = store_->create_trial(t);
    ASSERT_TRUE(made.ok()) << made.error().message;
  }
  for (int n = 0; n < 4; ++n) {  // 0..3 finish: completed, failed, completed, failed
    auto c = store_->claim(n % 2 ? "w-odd" : "w-even", 1, 60000);
    ASSERT_TRUE(c.ok() && c->has_value());
    trials::TrialResult r;
    if (n % 2) {
      r.outcome = trials::TrialState::kFailed;
      r.error = "diverged at step " + std::to_string(n);
      r.retryable = false;
    } else {
      r.outcome = trials::TrialState::kCompleted;
      r.value = 10.0 - n;
      r.metrics = {{"value", 10.0 - n}, {"acc", 0.5 + n / 10.0}};
    }
    ASSERT_TRUE(store_->complete((*c)->trial.id, 0, n % 2 ? "w-odd" : "w-even", r).ok());
  }
  auto check = [&](const std::string& query, std::size_t rows) {
    SCOPED_TRACE(query);
    auto objects = client_->get("/api/sweeps/" + id + "/trials?" + query);
    auto columns = client_->get("/api/sweeps/" + id + "/trials?format=columns&" + query);
    ASSERT_TRUE(objects.ok() && columns.ok());
    ASSERT_EQ(columns->status, 200) << columns->body;
    Json o = body(*objects), c = body(*columns);
    ASSERT_EQ(o["trials"].size(), rows);
    EXPECT_EQ(c["total"], o["total"]);
    ASSERT_EQ(c["count"], rows);
    const Json& col = c["columns"];
    const Json& dict = c["dictionaries"];
    for (std::size_t i = 0; i < rows; ++i) {
      const Json& t = o["trials"][i];
      EXPECT_EQ(col["id"][i], t["id"]);
      EXPECT_EQ(col["number"][i], t["number"]);
      EXPECT_EQ(dict["state"][col["state"][i].get<std::size_t>()], t["state"]);
      EXPECT_EQ(dict["worker"][col["worker"][i].get<std::size_t>()], t["worker"]);
      EXPECT_EQ(dict["error"][col["error"][i].get<std::size_t>()], t["error"]);
      EXPECT_EQ(col["value"][i], t["value"]);
      EXPECT_EQ(col["attempt"][i], t["attempt"]);
      for (const char* f : {"created_ms", "started_ms", "finished_ms"}) EXPECT_EQ(col[f][i], t[f]);
      for (const auto& [name, values] : c["params"].items())
        EXPECT_EQ(values[i], t["params"].value(name, Json(nullptr))) << name;
      for (const auto& [name, values] : c["metrics"].items())
        EXPECT_EQ(values[i], t["metrics"].value(name, Json(nullptr))) << name;
    }
    // Every parameter and metric of the page has its column.
    for (const auto& t : o["trials"]) {
      for (const auto& [name, v] : t["params"].items()) EXPECT_TRUE(c["params"].contains(name));
      for (const auto& [name, v] : t["metrics"].items()) EXPECT_TRUE(c["metrics"].contains(name));
    }
  };
  check("limit=1000", 6);
  check("sort=-value&limit=3", 3);
  check("state=failed", 2);
  check("offset=2&limit=3", 3);
  // Unbounded by default, unlike a JSON page; the limit reads null then.
  Json all = body(*client_->get("/api/sweeps/" + id + "/trials?format=columns"));
  EXPECT_EQ(all["count"], 6);
  EXPECT_TRUE(all["limit"].is_null());
  EXPECT_EQ(all["params"]["opt"][1], nullptr);  // trial 1 has no opt
  EXPECT_EQ(all["params"]["opt"][2], "sgd");

  auto bad = client_->get("/api/sweeps/" + id + "/trials?format=xml");
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(body(*bad)["error"]["fields"][0]["path"], "format");
  EXPECT_NE(body(*bad)["error"]["message"].get<std::string>().find("'xml'"), std::string::npos);
  EXPECT_EQ(client_->get("/api/sweeps/nope/trials?format=columns")->status, 404);
}

TEST_F(ApiTest, TrialDetailHasAttemptsAndReports) {
  start();
  std::string id = submit();
  trials::NewTrial t;
  t.sweep_id = id;
  t.limit = 10;
  t.params = {{"x1", 1.0}, {"x2", 2.0}};
  ASSERT_TRUE(store_->create_trial(t).ok());
  auto c = store_->claim("w9", 1, 60000);
  ASSERT_TRUE(c.ok() && c->has_value());
  const auto& trial = (*c)->trial;
  trials::StepReport rep;
  rep.step = 3;
  rep.metrics = {{"loss", 0.5}};
  ASSERT_TRUE(store_->report(trial.id, trial.attempt, "w9", rep).ok());
  auto r = client_->get("/api/trials/" + trial.id);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200) << r->body;
  Json doc = body(*r);
  EXPECT_EQ(doc["state"], "running");
  EXPECT_EQ(doc["worker"], "w9");
  ASSERT_EQ(doc["attempts"].size(), 1u);
  EXPECT_EQ(doc["attempts"][0]["worker"], "w9");
  ASSERT_EQ(doc["reports"].size(), 1u);
  EXPECT_EQ(doc["reports"][0]["step"], 3);
  EXPECT_EQ(doc["reports"][0]["metrics"]["loss"], 0.5);
  EXPECT_EQ(doc["reports_total"], 1);
  trials::Trial decoded;
  EXPECT_TRUE(from_json(doc, decoded).ok());

  // Reports are paged.
  for (int step = 4; step < 10; ++step) {
    rep.step = step;
    ASSERT_TRUE(store_->report(trial.id, trial.attempt, "w9", rep).ok());
  }
  auto page = client_->get("/api/trials/" + trial.id + "?reports_offset=2&reports_limit=3");
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->status, 200) << page->body;
  Json p = body(*page);
  EXPECT_EQ(p["reports_total"], 7);
  ASSERT_EQ(p["reports"].size(), 3u);
  EXPECT_EQ(p["reports"][0]["step"], 5);
  EXPECT_EQ(p["reports"][2]["step"], 7);
  auto bad = client_->get("/api/trials/" + trial.id + "?reports_limit=10001");
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("reports_limit"), std::string::npos) << bad->body;
}

TEST_F(ApiTest, MutatingCallsNeedTheTokenReadsDoNot) {
  ApiOptions o;
  o.token = "s3cret";
  start(o);
  auto none = client_->post("/api/sweeps", kSpec);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(none->header("www-authenticate").rfind("Bearer", 0), 0u);
  EXPECT_EQ(body(*none)["error"]["code"], "unauthorized");
  auto wrong = client_->request("POST", "/api/sweeps", kSpec, {{"Authorization", "Bearer nope"}});
  EXPECT_EQ(wrong->status, 401);
  auto sweeps = store_->list_sweeps(0, 10);
  EXPECT_TRUE(sweeps.ok() && sweeps->empty());
  client_->set_token("s3cret");
  std::string id = submit();
  HttpClient reader("127.0.0.1", server_->port());
  EXPECT_EQ(reader.get("/api/sweeps/" + id)->status, 200);
  EXPECT_EQ(reader.post("/api/sweeps/" + id + "/cancel", "")->status, 401);
  auto cancel = client_->post("/api/sweeps/" + id + "/cancel", "");
  ASSERT_TRUE(cancel.ok());
  EXPECT_EQ(cancel->status, 200) << cancel->body;
}

TEST_F(ApiTest, ProtectedReadsNeedTheTokenExceptHealthz) {
  ApiOptions o;
  o.token = "s3cret";
  o.auth_reads = true;
  start(o);
  auto open = client_->get("/api/sweeps");
  ASSERT_TRUE(open.ok());
  EXPECT_EQ(open->status, 401);
  // A token is never taken from a URL (logs, history, Referer keep those).
  EXPECT_EQ(client_->get("/api/sweeps?access_token=nope")->status, 401);
  EXPECT_EQ(client_->get("/api/sweeps?access_token=s3cret")->status, 401);
  EXPECT_EQ(client_->get("/api/events?access_token=s3cret")->status, 401);
  EXPECT_EQ(client_->get("/healthz")->status, 200);
  client_->set_token("s3cret");
  EXPECT_EQ(client_->get("/api/sweeps")->status, 200);
  HttpClient other("127.0.0.1", server_->port());
  EXPECT_EQ(other.post("/api/sweeps?access_token=s3cret", kSpec)->status, 401);
}

// An EventSource cannot send headers: it opens its stream with a ticket the
// page asked for with its token. A ticket opens one stream, once, and
// nothing else; it is refused after its time; asking for one needs a token.
TEST_F(ApiTest, AStreamTicketOpensOneStreamOnce) {
  ApiOptions o;
  o.token = "s3cret";
  o.auth_reads = true;
  start(o);
  HttpClient anonymous("127.0.0.1", server_->port());
  EXPECT_EQ(anonymous.post("/api/events/ticket", "")->status, 401);
  client_->set_token("s3cret");
  auto issue = [&] {
    auto r = client_->post("/api/events/ticket", "");
    EXPECT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.error().message);
    auto j = Json::parse(r.ok() ? r->body : "{}");
    EXPECT_EQ(j.value("expires_in_s", 0), 60);
    return j.value("ticket", "");
  };
  const std::string ticket = issue();
  ASSERT_EQ(ticket.size(), 64u);
  EXPECT_EQ(anonymous.get("/api/sweeps?ticket=" + ticket)->status, 401);  // streams only
  SseClient sse("127.0.0.1", server_->port());
  auto opened = sse.open("/api/events?ticket=" + ticket);
  ASSERT_TRUE(opened.ok());
  EXPECT_EQ(opened->status, 200);
  SseClient again("127.0.0.1", server_->port());
  auto reused = again.open("/api/events?ticket=" + ticket);
  ASSERT_TRUE(reused.ok());
  EXPECT_EQ(reused->status, 401);
  // A ticket past its time.
  AccessControl access("s3cret", true, factory_);
  const std::string late = access.issue_ticket(nullptr, "", std::chrono::milliseconds(0));
  Request r;
  r.method = "GET";
  r.path = "/api/events";
  r.query["ticket"] = late;
  auto who = access.identify(r);
  ASSERT_FALSE(who.ok());
  EXPECT_NE(who.error().message.find("unknown, used or expired"), std::string::npos);
}

TEST_F(ApiTest, CancelCancelsQueuedTrials) {
  start();
  std::string id = submit();
  trials::NewTrial t;
  t.sweep_id = id;
  t.limit = 10;
  t.params = {{"x1", 1.0}, {"x2", 2.0}};
  ASSERT_TRUE(store_->create_trial(t).ok());
  auto r = client_->post("/api/sweeps/" + id + "/cancel", "");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200) << r->body;
  auto trial = client_->get("/api/trials/" + id + "-0");
  EXPECT_EQ(body(*trial)["state"], "cancelled");
  EXPECT_EQ(client_->post("/api/sweeps/nope/cancel", "")->status, 404);
}

TEST_F(ApiTest, EnsembleRecordIs404UntilStoredThenServedAsIs) {
  start();
  std::string id = submit();
  EXPECT_EQ(client_->get("/api/sweeps/" + id + "/ensemble")->status, 404);
  auto member = add_member(id);
  ASSERT_TRUE(member.ok());
  auto before = client_->get("/api/sweeps/" + id + "/ensemble");
  EXPECT_EQ(before->status, 404);
  EXPECT_EQ(body(*before)["error"]["code"], "not_found");
  const std::string record = R"({"combine":"soft_vote","ensemble":{"test":{"accuracy":0.9}}})";
  ASSERT_TRUE(store_->put_sweep_record(id, "ensemble.json", record).ok());
  auto after = client_->get("/api/sweeps/" + id + "/ensemble");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(body(*after), Json::parse(record));
  auto raw = client_->get("/api/sweeps/" + id + "/artifacts/ensemble.json");
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->status, 200);
  EXPECT_EQ(raw->body, record);
  EXPECT_EQ(client_->get("/api/sweeps/" + id + "/artifacts/manifest.json")->status, 404);
  EXPECT_EQ(client_->get("/api/sweeps/" + id + "/artifacts/..")->status, 400);
  EXPECT_EQ(client_->get("/api/sweeps/nope/ensemble")->status, 404);
}

// A sweep whose ensemble ran under an earlier version keeps its record with
// its first member: it is still served, by the sweep's routes.
TEST_F(ApiTest, AnEnsembleRecordKeptWithTheFirstMemberIsStillServed) {
  start();
  std::string id = submit();
  auto member = add_member(id);
  ASSERT_TRUE(member.ok());
  const std::string record = R"({"combine":"mean","stored_with":")" + member->id + R"("})";
  ASSERT_TRUE(store_->put_record(member->id, "ensemble.json", record).ok());
  auto after = client_->get("/api/sweeps/" + id + "/ensemble");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(body(*after), Json::parse(record));
  EXPECT_EQ(client_->get("/api/sweeps/" + id + "/artifacts/ensemble.json")->body, record);
  // Only the ensemble's records: a member's own files are not the sweep's.
  ASSERT_TRUE(store_->put_record(member->id, "log.txt", "member output").ok());
  EXPECT_EQ(client_->get("/api/sweeps/" + id + "/artifacts/log.txt")->status, 404);
}

TEST_F(ApiTest, ArtifactsDownloadAsRawBytes) {
  start();
  std::string id = submit();
  auto member = add_member(id);
  ASSERT_TRUE(member.ok());
  const std::string model("PK\x03\x04\0\xff binary \0\r\n end", 20);
  auto claim = store_->claim("w", 1, 60'000);
  ASSERT_TRUE(claim.ok() && claim->has_value());
  ASSERT_EQ((*claim)->trial.id, member->id);
  ASSERT_TRUE(store_->put_artifact(member->id, 0, "w", "model.pt", model).ok());
  auto r = client_->get("/api/trials/" + member->id + "/artifacts/model.pt");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, model);
  EXPECT_EQ(r->header("content-type"), "application/octet-stream");
  EXPECT_EQ(r->header("accept-ranges"), "bytes");
  // One range of it (a download that goes on where it stopped), the last
  // bytes, and a range past the end (416 saying the size).
  const std::string target = "/api/trials/" + member->id + "/artifacts/model.pt";
  r = client_->request("GET", target, "", {{"Range", "bytes=4-11"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 206);
  EXPECT_EQ(r->body, model.substr(4, 8));
  EXPECT_EQ(r->header("content-range"), "bytes 4-11/20");
  r = client_->request("GET", target, "", {{"Range", "bytes=-5"}});
  EXPECT_EQ(r->status, 206);
  EXPECT_EQ(r->body, model.substr(15));
  // If-Range: the range of the version the client holds a part of, else the
  // whole of the one there is now.
  const std::string etag = r->header("etag");
  EXPECT_EQ(etag, "\"" + trials::sha256_hex(model) + "\"");
  r = client_->request("GET", target, "", {{"Range", "bytes=4-"}, {"If-Range", etag}});
  EXPECT_EQ(r->status, 206);
  r = client_->request("GET", target, "", {{"Range", "bytes=4-"}, {"If-Range", "\"older\""}});
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, model);
  r = client_->request("GET", target, "", {{"Range", "bytes=20-"}});
  EXPECT_EQ(r->status, 416);
  EXPECT_EQ(r->header("content-range"), "bytes */20");
  EXPECT_NE(body(*r)["error"]["message"].get<std::string>().find("past the end"),
            std::string::npos);
  auto absent = client_->get("/api/trials/" + member->id + "/artifacts/oob_predictions");
  EXPECT_EQ(absent->status, 404);
  EXPECT_EQ(body(*absent)["error"]["code"], "not_found");
  EXPECT_EQ(client_->get("/api/trials/nope/artifacts/model.pt")->status, 404);
  auto bad = client_->get("/api/trials/" + member->id + "/artifacts/model$pt");
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(client_->get("/api/trials/" + member->id + "/artifacts/..")->status, 400);
}

TEST_F(ApiTest, WorkersAreListed) {
  start();
  trials::WorkerInfo w;
  w.name = "gpu-1";
  w.host = "host-a";
  w.slots = 2;
  w.gpus = {{0, "H200", 141000, 10, 5}};
  ASSERT_TRUE(store_->put_worker(w, 30000).ok());
  auto r = client_->get("/api/workers");
  ASSERT_TRUE(r.ok());
  std::vector<trials::WorkerInfo> workers;
  ASSERT_TRUE(from_json_list(body(*r), "workers", workers).ok());
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0].name, "gpu-1");
  EXPECT_EQ(workers[0].gpus.at(0).name, "H200");
}

TEST_F(ApiTest, HealthzFollowsRedis) {
  start();
  auto ok = client_->get("/healthz");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->status, 200);
  redis_.kill();
  auto down = client_->get("/healthz");
  ASSERT_TRUE(down.ok());
  EXPECT_EQ(down->status, 503);
  EXPECT_EQ(body(*down)["error"]["code"], "unavailable");
  redis_.restart();
  EXPECT_TRUE(wait_for([&] { return client_->get("/healthz")->status == 200; }, 15s));
}

TEST_F(ApiTest, MetricsCountTrialsWorkersAndRequests) {
  start();
  std::string id = submit();
  add_trials(id, 6);  // completed: n = 0, 1, 3, 4; running: 2, 5
  trials::WorkerInfo w;
  w.name = "w1";
  w.slots = 3;
  w.busy_slots = 2;
  ASSERT_TRUE(store_->put_worker(w, 30000).ok());
  ASSERT_EQ(client_->get("/api/sweeps/" + id + "/trials")->status, 200);
  auto r = client_->get("/metrics");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->header("content-type").rfind("text/plain; version=0.0.4", 0), 0u);
  const std::string& m = r->body;
  EXPECT_NE(m.find("hpo_sweeps{state=\"running\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("hpo_trials{state=\"completed\"} 4\n"), std::string::npos) << m;
  EXPECT_NE(m.find("hpo_active_leases 2\n"), std::string::npos) << m;
  EXPECT_NE(m.find("hpo_queue_depth 0\n"), std::string::npos) << m;
  EXPECT_NE(m.find("hpo_results_total 4\n"), std::string::npos) << m;
  EXPECT_NE(m.find("hpo_workers 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("hpo_worker_busy_slots 2\n"), std::string::npos) << m;
  EXPECT_NE(m.find("hpo_http_request_duration_seconds_count{method=\"GET\",route=\"/api/sweeps/"
                   "{id}/trials\"} 1\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("hpo_http_requests_total{method=\"POST\",route=\"/api/sweeps\",code=\"201\"} 1"),
            std::string::npos)
      << m;
}

TEST_F(ApiTest, EventsStreamLiveAndResumeWithLastEventId) {
  start();
  SseClient sse("127.0.0.1", server_->port());
  auto open = sse.open("/api/events");
  ASSERT_TRUE(open.ok());
  ASSERT_EQ(open->status, 200);
  // The pump starts at "$": make sure it is reading before the first write.
  ASSERT_TRUE(wait_for([&] { return hub_.subscriber_count() == 1; }));
  std::string first;
  std::optional<SseEvent> created;
  // Bounded: submit until the pump has seen one (it may start after the first XADD).
  ASSERT_TRUE(wait_for(
      [&] {
        first = submit();
        auto ev = sse.next(1s);
        while (ev.ok() && *ev && (*ev)->type != "sweep.created") ev = sse.next(1s);
        if (ev.ok() && *ev) created = **ev;
        return created.has_value();
      },
      20s));
  Json data = Json::parse(created->data);
  EXPECT_EQ(data["type"], "sweep.created");
  EXPECT_FALSE(created->id.empty());
  sse.close();

  // While disconnected, another sweep is created; resuming replays it.
  std::string missed = submit();
  SseClient again("127.0.0.1", server_->port());
  ASSERT_TRUE(again.open("/api/events", {{"Last-Event-ID", created->id}}).ok());
  std::set<std::string> sweeps;
  for (;;) {
    auto ev = again.next(2s);
    ASSERT_TRUE(ev.ok());
    if (!*ev) break;
    EXPECT_NE((*ev)->id, created->id);
    sweeps.insert(Json::parse((*ev)->data)["sweep_id"].get<std::string>());
    if (sweeps.count(missed)) break;
  }
  EXPECT_TRUE(sweeps.count(missed));
  // And live events keep coming on the resumed stream.
  std::string later = submit();
  bool seen = false;
  for (int i = 0; i < 20 && !seen; ++i) {
    auto ev = again.next(1s);
    ASSERT_TRUE(ev.ok());
    if (*ev) seen = Json::parse((*ev)->data)["sweep_id"] == later;
  }
  EXPECT_TRUE(seen);
}

// Event streams are limited per client (peer address, whatever its port) and
// in all: past the limit /api/events answers 503 with Retry-After, other
// clients still get theirs, and a stream that ends frees its place.
TEST_F(ApiTest, EventStreamsPastTheLimitGet503PerClient) {
  start();
  EventHub hub(HubLimits{16, 8, 2});
  Api api(ApiOptions{}, factory_, hub);
  auto events = [&](const std::string& remote) {
    Request r;
    r.method = "GET";
    r.target = r.path = "/api/events";
    r.remote = remote;
    return api.handle(r);
  };
  std::vector<Response> open;
  open.push_back(events("10.1.1.1:5000"));
  open.push_back(events("10.1.1.1:5001"));
  for (const auto& r : open) {
    ASSERT_EQ(r.status, 200);
    ASSERT_TRUE(r.stream);
  }
  Response third = events("10.1.1.1:5002");
  EXPECT_EQ(third.status, 503);
  EXPECT_EQ(third.header("Retry-After"), "5");
  EXPECT_NE(third.body.find("per client"), std::string::npos) << third.body;
  EXPECT_FALSE(third.stream);
  EXPECT_EQ(events("10.1.1.2:6000").status, 200);  // another client
  open.pop_back();                                 // one stream of the first ends
  EXPECT_EQ(events("10.1.1.1:5003").status, 200);
}

// DNS rebinding: a request naming a host that is not configured is refused
// before anything runs; IP literals and the configured names (any case, a
// port, a trailing dot) pass.
TEST_F(ApiTest, RequestsForHostsNotConfiguredAreRefused) {
  ApiOptions options;
  options.allowed_hosts = {"hpo.example"};
  start(options);
  auto get = [&](const std::string& host) {
    Request r;
    r.method = "GET";
    r.target = r.path = "/api/sweeps";
    r.headers["host"] = host;
    return api_->handle(r);
  };
  for (const char* ok :
       {"hpo.example", "HPO.example:8080", "hpo.example.", "127.0.0.1:9", "[::1]:8080", "10.1.2.3"})
    EXPECT_EQ(get(ok).status, 200) << ok;
  for (const char* bad :
       {"evil.example", "evil.example:8080", "hpo.example.evil.example", "localhost", "[::1"}) {
    Response r = get(bad);
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_NE(r.body.find("\"path\":\"Host\""), std::string::npos) << r.body;
  }
}

// The spec is parsed once per process: the submit handler's parse is kept,
// and the sweep documents read the typed spec from the cache, never the text.
TEST_F(ApiTest, ASubmittedSpecIsNotParsedAgainForItsDocuments) {
  auto specs = std::make_shared<trials::SpecCache>();
  ApiOptions options;
  options.specs = specs;
  start(options);
  std::string id = submit();
  for (int i = 0; i < 3; ++i) {
    auto r = client_->get("/api/sweeps/" + id);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_GT(body(*r)["max_trials"].get<std::int64_t>(), 0);
    EXPECT_FALSE(body(*r)["objective"]["metric"].get<std::string>().empty());
  }
  ASSERT_TRUE(client_->get("/api/sweeps").ok());
  EXPECT_EQ(specs->parses(), 0);
  ASSERT_NE(specs->find(id), nullptr);
}

}  // namespace
}  // namespace hpo::web
