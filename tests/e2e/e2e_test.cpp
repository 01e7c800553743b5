// End to end with the real binaries: hpo-scheduler (embedded Redis, found by
// the workers through $HPO_HOME/scheduler.json), hpo-worker processes, the
// REST API, and toy_trial as the user's training program.
//
// What must hold: every trial's value is what the program computes from the
// trial's own params, the sweep's best is the minimum, and killing a worker
// or the scheduler with -9 in the middle still ends with exactly max_trials
// trials, each completed exactly once.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/http_client.hpp"
#include "tests/support/cluster.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/tls_certs.hpp"
#include "tests/support/toy_spec.hpp"
#include "trials/redis/redis_client.hpp"

namespace hpo::e2e {
namespace {

using Json = nlohmann::json;
using hpo::testing::Cluster;
using hpo::testing::Process;
using hpo::testing::read_file;
using hpo::testing::wait_for;
using namespace std::chrono_literals;

const std::string kBin = HPO_BINARY_DIR;

Json command_spec(int trials, int sleep_ms) {
  return hpo::testing::toy_command_spec(trials, sleep_ms);
}

double expected_value(const Json& params) {
  double x = params["x"].get<double>();
  double y = static_cast<double>(params["y"].get<std::int64_t>());
  return (x - 1) * (x - 1) + (y + 2) * (y + 2) + 0.5;
}

std::string submit(Cluster& c, const Json& spec) {
  return c.submit(spec);
}

// Every trial completed once with the value its params imply; best is the minimum.
void check_sweep(Cluster& c, const std::string& id, int expected_trials, const Json& sweep) {
  ASSERT_EQ(sweep.value("state", ""), "finished") << sweep.dump(2) << c.logs();
  EXPECT_EQ(sweep["counts"]["completed"].get<int>(), expected_trials);
  EXPECT_EQ(sweep["counts"]["failed"].get<int>(), 0);
  Json page = c.get("/api/sweeps/" + id + "/trials?limit=1000");
  ASSERT_TRUE(page.is_object());
  ASSERT_EQ(page["total"].get<int>(), expected_trials);
  std::set<std::int64_t> numbers;
  double best = INFINITY;
  std::string best_id;
  for (const auto& t : page["trials"]) {
    numbers.insert(t["number"].get<std::int64_t>());
    EXPECT_EQ(t["state"], "completed") << t.dump();
    double expect = expected_value(t["params"]);
    EXPECT_NEAR(t["value"].get<double>(), expect, 1e-9) << t.dump();
    if (expect < best) best = expect, best_id = t["id"].get<std::string>();
    // Exactly one completed attempt per trial.
    Json detail = c.get("/api/trials/" + t["id"].get<std::string>());
    int completed_attempts = 0;
    for (const auto& a : detail["attempts"])
      completed_attempts += a.value("outcome", "") == "completed";
    EXPECT_EQ(completed_attempts, 1) << detail.dump();
  }
  EXPECT_EQ(numbers.size(), static_cast<size_t>(expected_trials));
  EXPECT_EQ(*numbers.rbegin(), expected_trials - 1);
  ASSERT_TRUE(sweep["best"].is_object());
  EXPECT_NEAR(sweep["best"]["value"].get<double>(), best, 1e-9);
  EXPECT_EQ(sweep["best"]["trial_id"], best_id);
}

// A grid submitted over REST varies the parameter written first slowest, as
// the README says, whatever the names' alphabetical order: the spec is stored
// as submitted (it was once re-serialised with sorted keys, which put "alpha"
// first). The dashboard's copy of the spec keeps the order too.
TEST(EndToEnd, AGridOverRestVariesTheFirstWrittenParameterSlowest) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  c.start_worker("a", 2);
  const std::string text = R"({"name": "grid order",
    "objective": {"metric": "value", "mode": "min"},
    "parameters": {"zeta": {"type": "int", "min": 1, "max": 2},
                   "alpha": {"type": "categorical", "values": ["p", "q", "r"]}},
    "search": {"algorithm": "grid", "max_trials": 6, "max_concurrent": 1},
    "trial": {"kind": "synthetic", "function": "noop"}})";
  auto r = c.api().post("/api/sweeps", text);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 201) << r->body;
  const std::string id = Json::parse(r->body)["id"].get<std::string>();
  Json sweep = c.wait_finished(id, 60s);
  ASSERT_EQ(sweep.value("state", ""), "finished") << sweep.dump() << c.logs();
  Json page = c.get("/api/sweeps/" + id + "/trials?limit=10");
  std::vector<std::pair<std::int64_t, std::string>> got;
  for (const auto& t : page["trials"])
    got.emplace_back(t["params"]["zeta"].get<std::int64_t>(),
                     t["params"]["alpha"].get<std::string>());
  const std::vector<std::pair<std::int64_t, std::string>> want = {{1, "p"}, {1, "q"}, {1, "r"},
                                                                  {2, "p"}, {2, "q"}, {2, "r"}};
  EXPECT_EQ(got, want);
  auto doc = c.api().get("/api/sweeps/" + id);
  ASSERT_TRUE(doc.ok());
  const std::string shown = doc->body.substr(doc->body.find("\"spec\""));
  EXPECT_LT(shown.find("\"zeta\""), shown.find("\"alpha\"")) << shown;
}

TEST(EndToEnd, ThirtyCommandTrialsOnTwoWorkersWithTwoSlots) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  c.start_worker("a", 2);
  c.start_worker("b", 2);
  std::string id = submit(c, command_spec(30, 100));
  Json sweep = c.wait_finished(id, 120s);
  check_sweep(c, id, 30, sweep);
  // Both workers did some of the work.
  Json page = c.get("/api/sweeps/" + id + "/trials?limit=1000");
  std::set<std::string> workers;
  for (const auto& t : page["trials"]) workers.insert(t["worker"].get<std::string>());
  EXPECT_EQ(workers.size(), 2u) << c.logs();
  // The trial's log (its output that is not metrics) is kept with it.
  std::string first = page["trials"][0]["id"].get<std::string>();
  Json detail = c.get("/api/trials/" + first);
  ASSERT_TRUE(detail["log_tail"].is_string()) << detail.dump();
  EXPECT_NE(detail["log_tail"].get<std::string>().find("toy trial " + first + " starting"),
            std::string::npos)
      << detail["log_tail"];
}

// Placement with the real binaries: a GPU request lands only on the worker
// with matching GPUs (fake ones: toy_trial only reads CUDA_VISIBLE_DEVICES), a
// labelled one only on the worker with the label, and a request no worker can
// meet is reported on the sweep with each worker's reason.
TEST(EndToEnd, TrialsLandOnlyOnWorkersThatFitTheirRequest) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  c.start_worker("cpu", 2, 1500, {"--label", "zone=a"});
  c.start_worker(
      "gpu", 2, 1500,
      {"--fake-gpus", "NVIDIA A100-SXM4-80GB:80,NVIDIA A100-SXM4-80GB:80", "--label", "zone=b"});
  Json gpu = command_spec(6, 50);
  gpu["trial"]["resources"] = {{"gpus", 1}, {"gpu_model", "a100"}, {"gpu_memory_gb", 40}};
  Json zoned = command_spec(6, 50);
  zoned["trial"]["resources"] = {{"labels", {"zone=a"}}};
  Json never = command_spec(2, 50);
  never["trial"]["resources"] = {{"gpus", 1}, {"gpu_model", "H100"}};
  const std::string gpu_id = submit(c, gpu), zoned_id = submit(c, zoned),
                    never_id = submit(c, never);
  for (const auto& [id, worker, devices] :
       {std::tuple{gpu_id, "gpu", std::set<std::string>{"[0]", "[1]"}},
        std::tuple{zoned_id, "cpu", std::set<std::string>{"[]"}}}) {
    Json sweep = c.wait_finished(id, 120s);
    check_sweep(c, id, 6, sweep);
    Json page = c.get("/api/sweeps/" + id + "/trials?limit=100");
    for (const auto& t : page["trials"]) {
      EXPECT_EQ(t["worker"], worker) << t.dump();
      const std::string tid = t["id"].get<std::string>();
      const std::string log = c.get("/api/trials/" + tid)["log_tail"].get<std::string>();
      const std::string mark = "toy trial " + tid + " devices ";
      auto at = log.find(mark);
      ASSERT_NE(at, std::string::npos) << log;
      const std::string got = log.substr(at + mark.size(), log.find('\n', at) - at - mark.size());
      EXPECT_TRUE(devices.count(got)) << tid << " ran with CUDA_VISIBLE_DEVICES " << got;
    }
  }
  Json unmet = c.wait_unschedulable(never_id, 60s);
  ASSERT_FALSE(unmet.value("unschedulable", "").empty()) << unmet.dump() << c.logs();
  const std::string why = unmet["unschedulable"].get<std::string>();
  EXPECT_NE(why.find("gpu: a trial needs 1 whole GPU of model 'H100'"), std::string::npos) << why;
  EXPECT_NE(why.find("cpu: a trial needs 1 whole GPU"), std::string::npos) << why;
  EXPECT_EQ(unmet["counts"]["running"].get<int>(), 0);
  EXPECT_EQ(unmet["counts"]["completed"].get<int>(), 0);
}

TEST(EndToEnd, KillDashNineOfAWorkerLosesNothing) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  Process& victim = c.start_worker("victim", 2);
  c.start_worker("survivor", 2);
  std::string id = submit(c, command_spec(30, 400));
  // Kill the victim while it is running trials: as the store has them now
  // (the registry's busy slots lag by a heartbeat, and under load the victim
  // could have finished them by the time it is killed).
  ASSERT_TRUE(wait_for(
      [&] {
        Json s = c.get("/api/sweeps/" + id);
        if (!s.is_object() || s["counts"]["completed"].get<int>() < 6) return false;
        Json running = c.get("/api/sweeps/" + id + "/trials?state=running&limit=100");
        for (const auto& t : running["trials"])
          if (t["worker"] == "victim") return true;
        return false;
      },
      60s))
      << c.logs();
  victim.kill(SIGKILL);
  Json sweep = c.wait_finished(id, 180s);
  check_sweep(c, id, 30, sweep);
  // Some trial needed a second attempt because its lease expired.
  Json page = c.get("/api/sweeps/" + id + "/trials?limit=1000");
  int retried = 0;
  for (const auto& t : page["trials"]) retried += t["attempt"].get<int>() > 0;
  EXPECT_GT(retried, 0) << c.logs();
}

TEST(EndToEnd, KillDashNineOfTheSchedulerLosesNothing) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  c.start_worker("a", 2);
  c.start_worker("b", 2);
  std::string id = submit(c, command_spec(30, 300));
  ASSERT_TRUE(wait_for(
      [&] {
        Json s = c.get("/api/sweeps/" + id);
        return s.is_object() && s["counts"]["completed"].get<int>() >= 8;
      },
      60s))
      << c.logs();
  c.scheduler().kill(SIGKILL);
  // The embedded Redis goes down with it (SIGTERM via PDEATHSIG); start again.
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  Json sweep = c.wait_finished(id, 180s);
  check_sweep(c, id, 30, sweep);
}

// One owner per HPO_HOME: a second scheduler there refuses to start, naming the first.
TEST(EndToEnd, ASecondSchedulerOnTheSameHomeRefusesToStart) {
  Cluster c;
  c.start_scheduler();
  Process second({kBin + "/scheduler/hpo-scheduler", "--listen", "127.0.0.1:0"}, c.env(),
                 c.home() + "/second.log");
  EXPECT_EQ(second.wait(30s), 1) << second.log();
  EXPECT_NE(second.log().find("already owns HPO_HOME"), std::string::npos) << second.log();
  EXPECT_NE(second.log().find(std::to_string(c.scheduler().pid())), std::string::npos)
      << second.log();
  EXPECT_TRUE(c.scheduler().running());  // the first one is untouched
  EXPECT_TRUE(c.get("/healthz").is_object());
}

// The embedded Redis requires its password: a local user without the 0600
// scheduler.json cannot reach the data behind the API token.
TEST(EndToEnd, TheEmbeddedRedisRefusesClientsWithoutItsPassword) {
  Cluster c;
  c.start_scheduler();
  auto state = Json::parse(read_file(c.home() + "/scheduler.json"));
  auto url = trials::redis::RedisUrl::parse(state["redis"].get<std::string>());
  ASSERT_TRUE(url.ok());
  ASSERT_GE(url->password.size(), 32u);
  EXPECT_EQ(std::filesystem::status(c.home() + "/scheduler.json").permissions() &
                std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  redisContext* ctx = redisConnect("127.0.0.1", url->port);
  ASSERT_TRUE(ctx && !ctx->err);
  auto* r = static_cast<redisReply*>(redisCommand(ctx, "KEYS *"));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->type, REDIS_REPLY_ERROR);
  EXPECT_NE(std::string(r->str, r->len).find("NOAUTH"), std::string::npos);
  freeReplyObject(r);
  redisFree(ctx);
  // The password is in no log and no command line.
  EXPECT_EQ(read_file(c.home() + "/scheduler.log").find(url->password), std::string::npos);
  EXPECT_EQ(
      read_file("/proc/" + std::to_string(c.scheduler().pid()) + "/cmdline").find(url->password),
      std::string::npos);
}

// Another local user (a second uid, here nobody) can reach the embedded
// Redis's port but not its data: every command needs the password, and the
// files that hold it (scheduler.json, the data dir's redis.conf) are not
// readable to that user. Real tools under a real second uid (setpriv).
TEST(EndToEnd, ASecondLocalUserCannotUseTheEmbeddedRedis) {
  if (::geteuid() != 0) GTEST_SKIP() << "switching to a second uid needs root";
  Cluster c;
  c.start_scheduler();
  auto state = Json::parse(read_file(c.home() + "/scheduler.json"));
  auto url = trials::redis::RedisUrl::parse(state["redis"].get<std::string>());
  ASSERT_TRUE(url.ok());
  auto as_nobody = [&](const std::string& name, std::vector<std::string> cmd) {
    std::vector<std::string> argv = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                     "--clear-groups", "--"};
    argv.insert(argv.end(), cmd.begin(), cmd.end());
    const std::string log = c.home() + "/nobody-" + name + ".log";
    Process p(argv, {}, log);
    int code = p.wait(std::chrono::seconds(20));
    return std::make_pair(code, read_file(log));
  };
  const std::string port = std::to_string(url->port);
  auto [keys_code, keys] = as_nobody("keys", {"redis-cli", "-p", port, "KEYS", "*"});
  EXPECT_NE(keys.find("NOAUTH"), std::string::npos) << keys;
  auto [guess_code, guess] =
      as_nobody("guess", {"redis-cli", "-p", port, "--no-auth-warning", "-a", "hpo", "PING"});
  EXPECT_EQ(guess.find("PONG"), std::string::npos) << guess;
  EXPECT_NE(guess.find("WRONGPASS"), std::string::npos) << guess;
  for (const std::string& file : {c.home() + "/scheduler.json", c.home() + "/data/redis.conf"}) {
    ASSERT_TRUE(std::filesystem::exists(file)) << file;
    auto [cat_code, cat] = as_nobody("cat", {"cat", file});
    EXPECT_NE(cat_code, 0) << file;
    EXPECT_EQ(cat.find(url->password), std::string::npos) << file;
  }
  // With the password (which only the scheduler's uid can read) the same
  // second uid is served: the refusals above are the password's, not a dead server.
  auto [own_code, own] = as_nobody("own", {"redis-cli", "-p", port, "--no-auth-warning", "--user",
                                           url->user, "--pass", url->password, "PING"});
  EXPECT_NE(own.find("PONG"), std::string::npos) << own;
}

// An external Redis that does not persist every write is refused unless the
// operator accepts it explicitly.
TEST(EndToEnd, AVolatileExternalRedisIsRefusedUnlessAllowed) {
  hpo::testing::RedisServer redis;
  {
    redisContext* ctx = redisConnect("127.0.0.1", redis.port());
    ASSERT_TRUE(ctx && !ctx->err);
    auto* r = static_cast<redisReply*>(redisCommand(ctx, "CONFIG SET appendonly no"));
    ASSERT_TRUE(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    redisFree(ctx);
  }
  Cluster c;
  Process refused(
      {kBin + "/scheduler/hpo-scheduler", "--listen", "127.0.0.1:0", "--redis", redis.url()},
      c.env(), c.home() + "/refused.log");
  EXPECT_EQ(refused.wait(30s), 2) << refused.log();
  EXPECT_NE(refused.log().find("appendonly"), std::string::npos) << refused.log();
  EXPECT_NE(refused.log().find("--allow-volatile-redis"), std::string::npos) << refused.log();
  Process allowed({kBin + "/scheduler/hpo-scheduler", "--listen", "127.0.0.1:0", "--redis",
                   redis.url(), "--allow-volatile-redis"},
                  c.env(), c.home() + "/allowed.log");
  EXPECT_TRUE(wait_for([&] { return std::filesystem::exists(c.home() + "/scheduler.json"); }, 30s))
      << allowed.log();
  EXPECT_NE(allowed.log().find("acknowledged sweeps can be lost"), std::string::npos)
      << allowed.log();
  allowed.kill(SIGTERM);
  EXPECT_EQ(allowed.wait(30s), 0);
}

TEST(EndToEnd, BadSpecGets400WithTheFieldPathAndStoresNothing) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  Json spec = command_spec(5, 0);
  spec["parameters"]["x"]["min"] = 10;
  spec["trial"]["argv"][1] = "--x={z}";
  auto r = c.api().post("/api/sweeps", spec.dump());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 400);
  Json body = Json::parse(r->body);
  std::set<std::string> paths;
  for (const auto& f : body["error"]["fields"]) paths.insert(f["path"].get<std::string>());
  EXPECT_TRUE(paths.count("parameters.x")) << r->body;
  EXPECT_TRUE(paths.count("trial.argv[1]")) << r->body;
  Json list = c.get("/api/sweeps");
  EXPECT_TRUE(list["sweeps"].empty()) << list.dump();
  // Without the token a submit is refused.
  HttpClient anon(*parse_http_url(c.api_url()));
  auto unauth = anon.post("/api/sweeps", command_spec(5, 0).dump());
  ASSERT_TRUE(unauth.ok());
  EXPECT_EQ(unauth->status, 401);
}

TEST(EndToEnd, CliSubmitFollowStatusAndExitCodes) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  c.start_worker("a", 2);
  std::string spec_path = c.home() + "/spec.json";
  std::ofstream(spec_path) << command_spec(6, 0).dump(2);
  Process submit({kBin + "/cli/hpo", "submit", spec_path, "--follow"}, c.env(),
                 c.home() + "/cli.log");
  EXPECT_EQ(submit.wait(120s), 0) << submit.log() << c.logs();
  std::string out = submit.log();
  EXPECT_NE(out.find("6/6 done"), std::string::npos) << out;
  EXPECT_NE(out.find("best"), std::string::npos) << out;

  std::string bad_path = c.home() + "/bad.json";
  std::ofstream(bad_path) << R"({"name": "x"})";
  Process bad({kBin + "/cli/hpo", "submit", bad_path}, c.env(), c.home() + "/bad.log");
  EXPECT_EQ(bad.wait(30s), 2) << bad.log();
  EXPECT_NE(bad.log().find("objective"), std::string::npos) << bad.log();

  Process missing({kBin + "/cli/hpo", "status", "nope"}, c.env(), c.home() + "/missing.log");
  EXPECT_EQ(missing.wait(30s), 5) << missing.log();

  // hpo delete: the ended sweep goes, with its trials.
  Json list = c.get("/api/sweeps");
  ASSERT_EQ(list["sweeps"].size(), 1u);
  const std::string id = list["sweeps"][0]["id"].get<std::string>();
  Process del({kBin + "/cli/hpo", "delete", id}, c.env(), c.home() + "/delete.log");
  EXPECT_EQ(del.wait(30s), 0) << del.log();
  EXPECT_NE(del.log().find("deleted " + id), std::string::npos) << del.log();
  EXPECT_TRUE(c.get("/api/sweeps/" + id).is_null());
  EXPECT_TRUE(c.get("/api/trials/" + id + "-0").is_null());
}

// hpo import: the CSV `hpo trials --csv` writes, imported with the spec it
// was run with, is an ended sweep with the same trials (parameters, values,
// best); a malformed file is refused with its line (exit 2) and stores
// nothing; a sweep can warm-start from the import.
TEST(EndToEnd, TrialsExportedAsCsvImportAsTheSameSweep) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  c.start_worker("a", 2);
  const Json spec = command_spec(8, 0);
  const std::string original = submit(c, spec);
  ASSERT_EQ(c.wait_finished(original, 120s).value("state", ""), "finished") << c.logs();

  const std::string spec_path = c.home() + "/spec.json";
  std::ofstream(spec_path) << spec.dump(2);
  const std::string csv_path = c.home() + "/trials.csv";
  Process exported({kBin + "/cli/hpo", "trials", original, "--csv"}, c.env(), csv_path);
  ASSERT_EQ(exported.wait(30s), 0) << exported.log();
  Process imported({kBin + "/cli/hpo", "import", spec_path, csv_path}, c.env(),
                   c.home() + "/import.log");
  ASSERT_EQ(imported.wait(30s), 0) << imported.log();
  std::string id = imported.log();
  while (!id.empty() && std::isspace(static_cast<unsigned char>(id.back()))) id.pop_back();
  ASSERT_NE(id, original);

  Json sweep = c.get("/api/sweeps/" + id);
  ASSERT_TRUE(sweep.is_object()) << imported.log();
  EXPECT_EQ(sweep["state"], "finished");
  EXPECT_EQ(sweep["counts"]["completed"], 8);
  Json before = c.get("/api/sweeps/" + original);
  EXPECT_EQ(sweep["best"]["value"], before["best"]["value"]);
  EXPECT_EQ(sweep["best"]["params"], before["best"]["params"]);
  Json a = c.get("/api/sweeps/" + original + "/trials?limit=100");
  Json b = c.get("/api/sweeps/" + id + "/trials?limit=100");
  ASSERT_EQ(a["trials"].size(), b["trials"].size());
  for (std::size_t i = 0; i < a["trials"].size(); ++i) {
    EXPECT_EQ(b["trials"][i]["params"], a["trials"][i]["params"]) << i;
    EXPECT_EQ(b["trials"][i]["value"], a["trials"][i]["value"]) << i;
    EXPECT_EQ(b["trials"][i]["worker"], a["trials"][i]["worker"]) << i;
  }

  const std::string bad_path = c.home() + "/bad.csv";
  std::ofstream(bad_path) << "state,value,param:x,param:y\ncompleted,1.5,0.5,7\n";
  Process bad({kBin + "/cli/hpo", "import", spec_path, bad_path}, c.env(), c.home() + "/bad.log");
  EXPECT_EQ(bad.wait(30s), 2) << bad.log();
  EXPECT_NE(bad.log().find("line 2, column 4 (param:y)"), std::string::npos) << bad.log();
  EXPECT_EQ(c.get("/api/sweeps")["sweeps"].size(), 2u);

  Json warm = command_spec(4, 0);
  warm["search"]["algorithm"] = "tpe";
  warm["search"]["warm_start"] = {{"sweeps", {id}}};
  const std::string seeded = submit(c, warm);
  ASSERT_EQ(c.wait_finished(seeded, 120s).value("state", ""), "finished") << c.logs();
  const std::string log = read_file(c.home() + "/scheduler.log");
  EXPECT_NE(log.find("used=8"), std::string::npos) << log;
}

// Several objectives through the real scheduler and worker: NSGA-II on the
// synthetic ZDT1 (f1, f2 minimised); the sweep's Pareto front (API and
// `hpo pareto`) holds exactly the completed trials no other beats in both,
// with a positive hypervolume.
// A sweep of the synthetic ZDT1 (x1..x6, objectives f1 and f2) over `trials`.
Json zdt1_spec(const std::string& algorithm, int trials, double f2_reference) {
  Json spec = {
      {"name", "zdt1"},
      {"objectives",
       {{{"metric", "f1"}, {"reference", 1.1}}, {{"metric", "f2"}, {"reference", f2_reference}}}},
      {"parameters", Json::object()},
      {"search",
       {{"algorithm", algorithm}, {"max_trials", trials}, {"max_concurrent", 2}, {"seed", 4}}},
      {"trial", {{"kind", "synthetic"}, {"function", "zdt1"}}}};
  for (int i = 1; i <= 6; ++i)
    spec["parameters"]["x" + std::to_string(i)] = {{"type", "float"}, {"min", 0}, {"max", 1}};
  return spec;
}

TEST(EndToEnd, ANsga2SweepOverTwoObjectivesEndsWithItsParetoFront) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  c.start_worker("a", 2);
  Json spec = zdt1_spec("nsga2", 40, 11);
  spec["search"]["population"] = 8;
  const std::string id = submit(c, spec);
  Json sweep = c.wait_finished(id, 120s);
  ASSERT_EQ(sweep.value("state", ""), "finished") << c.logs();
  EXPECT_EQ(sweep["counts"]["completed"], 40);

  Json page = c.get("/api/sweeps/" + id + "/trials?limit=100");
  std::vector<std::pair<double, double>> all;
  for (const auto& t : page["trials"])
    all.emplace_back(t["metrics"]["f1"].get<double>(), t["metrics"]["f2"].get<double>());
  Json pareto = c.get("/api/sweeps/" + id + "/pareto");
  ASSERT_TRUE(pareto.is_object());
  EXPECT_EQ(pareto["counted"], 40);
  std::set<std::int64_t> front;
  for (const auto& m : pareto["front"]) front.insert(m["number"].get<std::int64_t>());
  ASSERT_FALSE(front.empty());
  for (std::size_t i = 0; i < all.size(); ++i) {
    bool beaten = false;
    for (const auto& o : all)
      beaten |= o.first <= all[i].first && o.second <= all[i].second && o != all[i];
    EXPECT_EQ(front.count(static_cast<std::int64_t>(i)) == 1, !beaten) << i;
  }
  EXPECT_GT(pareto["hypervolume"].get<double>(), 0);

  Process cli({kBin + "/cli/hpo", "pareto", id}, c.env(), c.home() + "/pareto.log");
  ASSERT_EQ(cli.wait(30s), 0) << cli.log();
  EXPECT_NE(cli.log().find("f1 (min)"), std::string::npos) << cli.log();
  EXPECT_NE(cli.log().find(std::to_string(front.size()) + " on the front of 40 counted trials"),
            std::string::npos)
      << cli.log();
}

// search.algorithm bayesian with several objectives: a GP per objective and
// expected hypervolume improvement, asked through the scheduler with two
// trials in flight (the pending one fantasised); its front dominates more of
// the declared box than a random sweep's of the same size.
TEST(EndToEnd, ABayesianSweepOverTwoObjectivesBeatsRandomSearch) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  c.start_worker("a", 2);
  std::map<std::string, double> hypervolume;
  for (const std::string algorithm : {"bayesian", "random"}) {
    const std::string id = submit(c, zdt1_spec(algorithm, 30, 1.1));
    Json sweep = c.wait_finished(id, 300s);
    ASSERT_EQ(sweep.value("state", ""), "finished") << c.logs();
    EXPECT_EQ(sweep["counts"]["completed"], 30);
    Json pareto = c.get("/api/sweeps/" + id + "/pareto");
    ASSERT_TRUE(pareto.is_object());
    EXPECT_EQ(pareto["reference"], Json::parse("[1.1, 1.1]"));
    hypervolume[algorithm] = pareto["hypervolume"].get<double>();
  }
  std::printf("zdt1, 30 trials through the service: hypervolume bayesian %.4f, random %.4f\n",
              hypervolume["bayesian"], hypervolume["random"]);
  EXPECT_GT(hypervolume["bayesian"], 0.5);
  EXPECT_GT(hypervolume["bayesian"], hypervolume["random"]);
}

// constraints through the service: the sweep's best and its Pareto front hold
// only trials that keep them, though trials that break them complete too, and
// the model's trials learn where they hold (f1 = x1 on ZDT1).
TEST(EndToEnd, ConstrainedSweepsKeepTheirBestAndFrontFeasible) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  c.start_worker("a", 2);
  // One objective (f2) with f1 <= 0.25, then both with f1 >= 0.3.
  Json one = zdt1_spec("bayesian", 24, 1.1);
  one.erase("objectives");
  one["objective"] = {{"metric", "f2"}};
  one["constraints"] = Json::parse(R"([{"metric": "f1", "max": 0.25}])");
  Json two = zdt1_spec("bayesian", 24, 1.1);
  two["constraints"] = Json::parse(R"([{"metric": "f1", "min": 0.3}])");
  for (const Json& spec : {one, two}) {
    const bool several = spec.contains("objectives");
    const std::string id = submit(c, spec);
    Json sweep = c.wait_finished(id, 300s);
    ASSERT_EQ(sweep.value("state", ""), "finished") << c.logs();
    EXPECT_EQ(sweep["counts"]["completed"], 24);
    auto keeps = [&](double f1) { return several ? f1 >= 0.3 : f1 <= 0.25; };
    Json page = c.get("/api/sweeps/" + id + "/trials?limit=100");
    const std::string metric = several ? "f1" : "f2";
    double best_feasible = INFINITY;
    std::int64_t broken = 0, model_kept = 0;
    for (const auto& t : page["trials"]) {
      const double f1 = t["metrics"]["f1"].get<double>();
      if (keeps(f1))
        best_feasible = std::min(best_feasible, t["metrics"][metric].get<double>());
      else
        ++broken;
      model_kept += t["number"].get<std::int64_t>() >= 12 && keeps(f1);
    }
    EXPECT_GT(broken, 0) << "the initial design should break it somewhere";
    EXPECT_GE(model_kept, 9) << "of the 12 model trials";
    ASSERT_TRUE(sweep["best"].is_object()) << sweep.dump();
    EXPECT_EQ(sweep["best"]["value"].get<double>(), best_feasible);
    Process cli({kBin + "/cli/hpo", "status", id}, c.env(), c.home() + "/status.log");
    ASSERT_EQ(cli.wait(30s), 0) << cli.log();
    EXPECT_NE(cli.log().find(several ? "constraint 0.3 <= f1" : "constraint f1 <= 0.25"),
              std::string::npos)
        << cli.log();
    EXPECT_NE(cli.log().find("within the constraints"), std::string::npos) << cli.log();
    if (several) {
      Json pareto = c.get("/api/sweeps/" + id + "/pareto");
      ASSERT_FALSE(pareto["front"].empty());
      EXPECT_EQ(pareto["counted"].get<std::int64_t>(), 24 - broken);
      for (const auto& m : pareto["front"]) EXPECT_GE(m["values"]["f1"].get<double>(), 0.3);
    }
  }
}

// search.warm_start: a TPE sweep seeded with an earlier sweep's trials asks
// other points than the same sweep cold and does not do worse; the seeding is
// read once per controller from ended sweeps, so kill -9 of the scheduler in
// the middle of a warm-started sweep changes none of its trials' parameters.
TEST(EndToEnd, AWarmStartedSweepIsSeededAndSurvivesASchedulerKill) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  c.start_worker("a", 1);
  auto tpe = [](int trials, int sleep_ms, int seed) {
    Json s = command_spec(trials, sleep_ms);
    s["search"]["algorithm"] = "tpe";
    s["search"]["max_concurrent"] = 1;
    s["search"]["seed"] = seed;
    return s;
  };
  auto params_by_number = [&](const std::string& id) {
    std::map<std::int64_t, std::string> out;
    Json page = c.get("/api/sweeps/" + id + "/trials?limit=100");
    for (const auto& t : page["trials"]) out[t["number"].get<std::int64_t>()] = t["params"].dump();
    return out;
  };
  auto best = [&](const std::string& id) { return c.get("/api/sweeps/" + id)["best"]["value"]; };
  const std::string earlier = submit(c, tpe(20, 0, 3));
  ASSERT_EQ(c.wait_finished(earlier, 120s).value("state", ""), "finished") << c.logs();

  Json warm_spec = tpe(12, 0, 5);
  warm_spec["search"]["warm_start"] = {{"sweeps", {earlier}}};
  const std::string warm = submit(c, warm_spec);
  const std::string cold = submit(c, tpe(12, 0, 5));
  ASSERT_EQ(c.wait_finished(warm, 120s).value("state", ""), "finished") << c.logs();
  ASSERT_EQ(c.wait_finished(cold, 120s).value("state", ""), "finished") << c.logs();
  EXPECT_NE(params_by_number(warm), params_by_number(cold));
  EXPECT_LE(best(warm).get<double>(), best(cold).get<double>());
  const std::string log = read_file(c.home() + "/scheduler.log");
  EXPECT_NE(log.find("warm start"), std::string::npos) << log;
  EXPECT_NE(log.find("used=20"), std::string::npos) << log;

  // The same warm-started sweep again, slower, with the scheduler killed halfway.
  Json again_spec = tpe(12, 150, 5);
  again_spec["search"]["warm_start"] = {{"sweeps", {earlier}}};
  const std::string again = submit(c, again_spec);
  ASSERT_TRUE(wait_for(
      [&] {
        Json s = c.get("/api/sweeps/" + again);
        return s.is_object() && s["counts"]["completed"].get<int>() >= 4;
      },
      60s))
      << c.logs();
  c.scheduler().kill(SIGKILL);
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  Json sweep = c.wait_finished(again, 120s);
  ASSERT_EQ(sweep.value("state", ""), "finished") << c.logs();
  EXPECT_EQ(sweep["counts"]["completed"].get<int>(), 12);
  EXPECT_EQ(params_by_number(again), params_by_number(warm));
  std::printf("warm start e2e: best %.4f warm, %.4f cold (12 trials each, 20 earlier)\n",
              best(warm).get<double>(), best(cold).get<double>());
}

// search.multi_fidelity through the service: a Hyperband sweep with TPE
// (BOHB) over synthetic learning curves (resource steps), the scheduler killed
// with -9 in the middle of its brackets. Every trial is one rung of one
// configuration; a promotion is a new trial of the same parameters one rung
// up that resumes the rung below's checkpoint (its reports start past the
// parent's budget) and reaches the value the curve has at its own budget.
// Nothing is lost or repeated: max_trials trials, each completed once, each
// trial promoted at most once and only from the top third of its rung.
TEST(EndToEnd, AHyperbandSweepPromotesByResumingAndSurvivesASchedulerKill) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  c.start_worker("a", 2);
  c.start_worker("b", 1);
  constexpr int kTrials = 30;
  const Json spec = Json::parse(R"({
    "name": "bohb",
    "objective": {"metric": "value", "mode": "min"},
    "parameters": {"x1": {"type": "float", "min": -5, "max": 10},
                   "x2": {"type": "float", "min": 0, "max": 15}},
    "search": {"algorithm": "tpe", "max_trials": 30, "max_concurrent": 3, "seed": 4,
               "multi_fidelity": {"type": "hyperband", "resource": "steps", "min": 1, "max": 9}},
    "trial": {"kind": "synthetic", "function": "branin", "sleep_s": 1.8, "curve": "crossing"}
  })");
  const std::string id = submit(c, spec);
  // Kill it once promotions to the middle rung have started.
  ASSERT_TRUE(wait_for(
      [&] {
        Json page = c.get("/api/sweeps/" + id + "/trials?limit=100");
        if (!page.is_object()) return false;
        int promoted = 0;
        for (const auto& t : page["trials"])
          promoted += t["extra"].is_object() && t["extra"].contains("resume_from");
        return promoted >= 2;
      },
      120s))
      << c.logs();
  c.scheduler().kill(SIGKILL);
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  Json sweep = c.wait_finished(id, 300s);
  ASSERT_EQ(sweep.value("state", ""), "finished") << c.logs();
  EXPECT_EQ(sweep["counts"]["completed"], kTrials);

  Json page = c.get("/api/sweeps/" + id + "/trials?limit=100");
  ASSERT_EQ(page["total"], kTrials);
  std::map<std::string, Json> by_id;
  for (const auto& t : page["trials"]) by_id[t["id"].get<std::string>()] = t;
  auto curve = [](const Json& params, double step) {
    const double x1 = params["x1"].get<double>(), x2 = params["x2"].get<double>();
    const double pi = 3.14159265358979323846;
    const double f = std::pow(x2 - 5.1 / (4 * pi * pi) * x1 * x1 + 5 / pi * x1 - 6, 2) +
                     10 * (1 - 1 / (8 * pi)) * std::cos(x1) + 10;
    const double u = (x1 + 5) / 15;
    return f + std::exp(-(0.5 + 4.5 * u) * step / 9);
  };
  std::set<std::string> parents;
  int resumed = 0, top = 0;
  const std::map<int, std::vector<double>> budgets = {{0, {1, 3, 9}}, {1, {3, 9}}, {2, {9}}};
  for (const auto& [tid, t] : by_id) {
    ASSERT_EQ(t["state"], "completed") << t.dump();
    const Json& x = t["extra"];
    ASSERT_TRUE(x.is_object()) << t.dump();
    const int bracket = x["bracket"].get<int>(), rung = x["rung"].get<int>();
    ASSERT_TRUE(budgets.count(bracket)) << t.dump();
    ASSERT_LT(rung, static_cast<int>(budgets.at(bracket).size())) << t.dump();
    const double budget = x["budget"].get<double>();
    EXPECT_EQ(budget, budgets.at(bracket)[rung]) << t.dump();
    EXPECT_NEAR(t["value"].get<double>(), curve(t["params"], budget), 1e-9) << t.dump();
    top += budget == 9;
    Json detail = c.get("/api/trials/" + tid);
    int completed_attempts = 0;
    for (const auto& a : detail["attempts"]) completed_attempts += a["outcome"] == "completed";
    EXPECT_EQ(completed_attempts, 1) << detail.dump();
    if (!x.contains("resume_from")) {
      EXPECT_EQ(rung, 0) << t.dump();
      continue;
    }
    // A promotion: the parent's configuration one rung down, promoted once.
    const std::string parent = x["resume_from"].get<std::string>();
    ASSERT_TRUE(by_id.count(parent)) << t.dump();
    const Json& p = by_id.at(parent);
    EXPECT_TRUE(parents.insert(parent).second) << parent << " promoted twice";
    EXPECT_EQ(p["params"], t["params"]);
    EXPECT_EQ(p["extra"]["bracket"], bracket);
    EXPECT_EQ(p["extra"]["rung"].get<int>(), rung - 1);
    // It went on from the parent's checkpoint: it says so, and it reports
    // only the steps past the parent's budget (reports are best effort: some
    // are lost while Redis is down with the scheduler).
    const double from = p["extra"]["budget"].get<double>();
    EXPECT_NE(detail.value("log_tail", "")
                  .find(fmt::format("resuming at step {} of {}", static_cast<int>(from) + 1,
                                    static_cast<int>(budget))),
              std::string::npos)
        << detail.dump();
    for (const auto& r : detail["reports"])
      EXPECT_GT(r["step"].get<double>(), from) << detail.dump();
    ++resumed;
  }
  // Promoted while in the top third of its rung's completed trials: at
  // least two of that rung had finished with worse values before the
  // promotion was created (ASHA never takes a promotion back, so a rung may
  // end with more promotions than a third of it).
  for (const auto& [tid, t] : by_id) {
    if (!t["extra"].contains("resume_from")) continue;
    const Json& p = by_id.at(t["extra"]["resume_from"].get<std::string>());
    int worse = 0;
    for (const auto& [oid, o] : by_id)
      worse += o["extra"]["bracket"] == p["extra"]["bracket"] &&
               o["extra"]["rung"] == p["extra"]["rung"] &&
               o["finished_ms"].get<std::int64_t>() <= t["created_ms"].get<std::int64_t>() &&
               o["value"].get<double>() > p["value"].get<double>();
    EXPECT_GE(worse, 2) << "promotion " << tid << " of " << p.dump();
  }
  EXPECT_GE(resumed, 3);
  EXPECT_GT(top, 0);
  // The best is the best completed trial at any budget.
  double best = INFINITY;
  for (const auto& [tid, t] : by_id) best = std::min(best, t["value"].get<double>());
  EXPECT_NEAR(sweep["best"]["value"].get<double>(), best, 1e-12);
  std::printf("hyperband e2e: %d trials, %d promotions (resumed), %d at the full budget\n", kTrials,
              resumed, top);
}

// search.pbt through the service: a population of 6 trains the noisy
// quadratic (each member's expected loss, stepped at its learning rate) in 6
// intervals; the scheduler is killed with -9 in the middle. Every interval of
// every member is one trial, completed once; each goes on from its member's
// previous interval or, exploiting, from a better member's same interval
// (with an explored rate); and its value is what that lineage's steps give,
// replayed here from the first interval, so no interval was lost, repeated
// or resumed from the wrong checkpoint.
TEST(EndToEnd, APbtSweepExploitsCheckpointsAndSurvivesASchedulerKill) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  c.start_worker("a", 2);
  c.start_worker("b", 1);
  constexpr int kPopulation = 6, kIntervals = 6, kInterval = 4;
  const Json spec = Json::parse(R"({
    "name": "pbt",
    "objective": {"metric": "value", "mode": "min"},
    "parameters": {"lr": {"type": "float", "min": 0.001, "max": 0.5, "log": true}},
    "search": {"algorithm": "random", "max_trials": 100, "max_concurrent": 3, "seed": 2,
               "pbt": {"population": 6, "resource": "steps", "interval": 4, "max": 24}},
    "trial": {"kind": "synthetic", "function": "noisy_quadratic", "sleep_s": 2.4}
  })");
  const std::string id = submit(c, spec);
  ASSERT_TRUE(wait_for(
      [&] {
        Json s = c.get("/api/sweeps/" + id);
        return s.is_object() && s["counts"]["completed"].get<int>() >= 14;
      },
      120s))
      << c.logs();
  c.scheduler().kill(SIGKILL);
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  Json sweep = c.wait_finished(id, 300s);
  ASSERT_EQ(sweep.value("state", ""), "finished") << c.logs();
  EXPECT_EQ(sweep["counts"]["completed"], kPopulation * kIntervals);

  Json page = c.get("/api/sweeps/" + id + "/trials?limit=100");
  ASSERT_EQ(page["total"], kPopulation * kIntervals);
  std::map<std::string, Json> by_id;
  for (const auto& t : page["trials"]) by_id[t["id"].get<std::string>()] = t;
  std::set<std::pair<int, int>> intervals;
  int exploits = 0;
  // The loss a trial's lineage reaches: every step of every interval from 1.
  std::function<double(const Json&)> replay = [&](const Json& t) -> double {
    const Json& x = t["extra"];
    const int budget = x["budget"].get<int>();
    double v = 1;
    int from = 0;
    if (x.contains("resume_from")) {
      const Json& parent = by_id.at(x["resume_from"].get<std::string>());
      v = replay(parent);
      from = parent["extra"]["budget"].get<int>();
    }
    const double lr = t["params"]["lr"].get<double>();
    for (int s = from; s < budget; ++s) v = (1 - 2 * lr) * (1 - 2 * lr) * v + lr * lr;
    return v;
  };
  for (const auto& [tid, t] : by_id) {
    ASSERT_EQ(t["state"], "completed") << t.dump();
    const Json& x = t["extra"];
    ASSERT_TRUE(x.is_object() && x.contains("member")) << t.dump();
    const int member = x["member"].get<int>(), generation = x["generation"].get<int>();
    EXPECT_TRUE(intervals.insert({member, generation}).second)
        << "member " << member << " interval " << generation << " twice";
    EXPECT_EQ(x["budget"].get<int>(), (generation + 1) * kInterval) << t.dump();
    EXPECT_NEAR(t["value"].get<double>(), replay(t), 1e-12) << t.dump();
    Json detail = c.get("/api/trials/" + tid);
    int completed_attempts = 0;
    for (const auto& a : detail["attempts"]) completed_attempts += a["outcome"] == "completed";
    EXPECT_EQ(completed_attempts, 1) << detail.dump();
    if (generation == 0) {
      EXPECT_FALSE(x.contains("resume_from")) << t.dump();
      continue;
    }
    ASSERT_TRUE(x.contains("resume_from")) << t.dump();
    const Json& parent = by_id.at(x["resume_from"].get<std::string>());
    // It goes on from its own interval g - 1, or (an exploit) from a donor's
    // interval at most g - 1 — never past its own budget — and trains from
    // the donor's step to its own budget.
    const int from_generation = parent["extra"]["generation"].get<int>();
    EXPECT_LE(from_generation, generation - 1) << t.dump();
    EXPECT_NE(
        detail.value("log_tail", "")
            .find(fmt::format("resuming at step {} of {}", parent["extra"]["budget"].get<int>() + 1,
                              (generation + 1) * kInterval)),
        std::string::npos)
        << detail.dump();
    if (x.value("exploited", false)) {
      ++exploits;
      EXPECT_NE(parent["extra"]["member"], member) << t.dump();
      EXPECT_NE(parent["params"], t["params"]) << t.dump();  // explored
      // The donor was ahead of this member's own interval at their common budget.
      for (const auto& [oid, o] : by_id)
        if (o["extra"]["member"] == member && o["extra"]["generation"] == from_generation) {
          EXPECT_LT(parent["value"].get<double>(), o["value"].get<double>()) << t.dump();
        }
    } else {
      EXPECT_EQ(from_generation, generation - 1) << t.dump();
      EXPECT_EQ(parent["extra"]["member"], member) << t.dump();
      EXPECT_EQ(parent["params"], t["params"]) << t.dump();
    }
  }
  EXPECT_EQ(intervals.size(), static_cast<std::size_t>(kPopulation * kIntervals));
  EXPECT_GT(exploits, 0);
  const std::string log = read_file(c.home() + "/scheduler.log");
  EXPECT_NE(log.find("pbt exploit"), std::string::npos) << log;
  std::printf("pbt e2e: %d intervals, %d exploits, best %.5f\n", kPopulation * kIntervals, exploits,
              sweep["best"]["value"].get<double>());
}

// --exit-when-idle-s: a worker that runs nothing while no sweep runs ends by
// itself (exit 0), as a batch job's worker must; it does not leave while the
// sweep still has work (it is the only worker, so the sweep could not finish).
TEST(EndToEnd, AWorkerWithExitWhenIdleEndsOnceNoSweepRuns) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  std::string id = submit(c, command_spec(5, 200));
  ASSERT_FALSE(id.empty());
  Process& w = c.start_worker("batch", 1, 1500, {"--exit-when-idle-s", "1"});
  EXPECT_EQ(w.wait(120s), 0) << c.logs();
  Json sweep = c.wait_finished(id, 10s);
  ASSERT_NO_FATAL_FAILURE(check_sweep(c, id, 5, sweep));
  EXPECT_NE(w.log().find("idle for 1 s: no sweep is running"), std::string::npos) << w.log();
}

// A Python trial that prints its reports and never flushes: they arrive while
// it runs (the worker starts trials with PYTHONUNBUFFERED=1; a pipe would
// otherwise hold them until exit), the trial waits for the test to have seen
// them, and its argv has no element for the inactive conditional parameter.
TEST(EndToEnd, APythonTrialsReportsArriveWhileItRunsWithoutAFlush) {
  // The worker passes PYTHON* variables on: not one of this process's.
  ::unsetenv("PYTHONUNBUFFERED");
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  const std::string go = c.home() + "/go", script = c.home() + "/unflushed.py";
  ASSERT_EQ(::mkfifo(go.c_str(), 0600), 0) << go;
  {
    std::ofstream py(script);
    py << R"(import json, os, signal, sys
print("argv " + json.dumps(sys.argv[1:]))
for step in range(3):
    print("hpo-metric " + json.dumps({"step": step, "loss": 1.0 / (step + 1)}))
signal.alarm(60)  # bounded: the test opens the FIFO once it has seen the reports
open(sys.argv[1]).close()  # blocks until the test holds the FIFO open for writing
print("hpo-metric " + json.dumps({"final": True, "loss": 0.25, "seed": int(os.environ["HPO_SEED"])}))
)";
  }
  constexpr int kTrials = 4;
  const Json spec = {
      {"name", "unflushed"},
      {"objective", {{"metric", "loss"}, {"mode", "min"}}},
      {"parameters",
       {{"opt", {{"type", "categorical"}, {"values", {"adam", "sgd"}}}},
        {"momentum", {{"type", "float"}, {"min", 0.1}, {"max", 0.9}, {"when", {{"opt", "sgd"}}}}}}},
      {"search",
       {{"algorithm", "random"},
        {"max_trials", kTrials},
        {"max_concurrent", kTrials},
        {"seed", 5}}},
      {"trial",
       {{"kind", "command"},
        {"argv", {"/usr/bin/python3", script, go, "--opt={opt}", "--momentum={momentum}"}},
        {"timeout_s", 120}}}};
  c.start_worker("w", kTrials);
  const std::string id = submit(c, spec);
  ASSERT_FALSE(id.empty()) << c.logs();
  // Bounded: without unbuffered output no report comes before `go`.
  Json page;
  const bool seen = wait_for(
      [&] {
        page = c.get("/api/sweeps/" + id + "/trials?limit=10");
        if (!page.is_object() || page["trials"].size() != kTrials) return false;
        for (const auto& t : page["trials"]) {
          Json d = c.get("/api/trials/" + t["id"].get<std::string>());
          if (!d.is_object() || d["reports"].size() != 3 || d.value("state", "") != "running")
            return false;
        }
        return true;
      },
      60s);
  ASSERT_TRUE(seen) << page.dump() << c.logs();
  // Held open until the sweep ends: every trial's open of the FIFO returns.
  std::ofstream gate(go);
  Json sweep = c.wait_finished(id, 60s);
  gate.close();
  ASSERT_EQ(sweep.value("state", ""), "finished") << sweep.dump(2) << c.logs();
  int inactive = 0;
  std::set<double> seeds;
  const Json ended = c.get("/api/sweeps/" + id + "/trials?limit=10");
  for (const auto& t : ended["trials"]) {
    const Json d = c.get("/api/trials/" + t["id"].get<std::string>());
    EXPECT_EQ(d["value"], 0.25) << d.dump();
    seeds.insert(d["metrics"]["seed"].get<double>());
    EXPECT_LT(d["metrics"]["seed"].get<double>(), 2147483648.0) << d.dump();
    // The inactive momentum has no element at all (the script prints its
    // argv as Python's json.dumps writes a list).
    const std::string log = d["log_tail"].get<std::string>();
    const std::string opt = t["params"]["opt"].get<std::string>();
    if (t["params"].contains("momentum")) {
      EXPECT_NE(log.find(fmt::format(R"(argv ["{}", "--opt={}", "--momentum=)", go, opt)),
                std::string::npos)
          << log;
    } else {
      ++inactive;
      EXPECT_NE(log.find(fmt::format(R"(argv ["{}", "--opt={}"])", go, opt)), std::string::npos)
          << log;
    }
  }
  EXPECT_GT(inactive, 0) << "seed 5 drew no adam trial: pick another";
  EXPECT_EQ(seeds.size(), static_cast<std::size_t>(kTrials));
}

// HTTPS: the scheduler serves the API and the dashboard with --tls-cert and
// --tls-key; the local CLI finds the URL and the certificate to trust in
// scheduler.json; a remote CLI needs --ca-file, and without it is refused with
// what to pass. A key other users can read is refused at start.
TEST(EndToEnd, HttpsApiDashboardAndCliVerifyTheCertificate) {
  hpo::testing::TestCerts certs;
  ASSERT_TRUE(certs.ok()) << certs.log();
  {
    Cluster loose;
    std::filesystem::copy_file(certs.key(), loose.home() + "/loose.key");
    std::filesystem::permissions(loose.home() + "/loose.key",
                                 std::filesystem::perms::owner_read |
                                     std::filesystem::perms::group_read |
                                     std::filesystem::perms::others_read);
    Process refused({kBin + "/scheduler/hpo-scheduler", "--listen", "127.0.0.1:0", "--tls-cert",
                     certs.cert(), "--tls-key", loose.home() + "/loose.key"},
                    loose.env(), loose.home() + "/refused.log");
    EXPECT_NE(refused.wait(30s), 0);
    EXPECT_NE(refused.log().find("readable by other users"), std::string::npos) << refused.log();
  }
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(
      c.start_scheduler({"--tls-cert", certs.cert(), "--tls-key", certs.key()}));
  auto state = Json::parse(read_file(c.home() + "/scheduler.json"));
  const std::string api = state["api"].get<std::string>();
  ASSERT_EQ(api.rfind("https://127.0.0.1:", 0), 0u) << api;
  c.start_worker("a", 2);
  // The dashboard over HTTPS.
  auto page = c.api().get("/");
  ASSERT_TRUE(page.ok()) << page.error().message;
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("<html"), std::string::npos);

  // The local CLI: URL and certificate from scheduler.json.
  std::string spec_path = c.home() + "/spec.json";
  std::ofstream(spec_path) << command_spec(4, 0).dump(2);
  Process submit({kBin + "/cli/hpo", "submit", spec_path, "--follow"}, c.env(),
                 c.home() + "/cli.log");
  EXPECT_EQ(submit.wait(120s), 0) << submit.log() << c.logs();
  EXPECT_NE(submit.log().find("4/4 done"), std::string::npos) << submit.log();

  // A remote CLI (no scheduler.json): refused without the CA, served with it.
  const std::vector<std::pair<std::string, std::string>> remote_env = {
      {"HPO_HOME", c.home() + "/elsewhere"}, {"HPO_TOKEN", state["token"].get<std::string>()}};
  Process untrusted({kBin + "/cli/hpo", "--server", api, "status"}, remote_env,
                    c.home() + "/untrusted.log");
  EXPECT_EQ(untrusted.wait(30s), 4) << untrusted.log();
  EXPECT_NE(untrusted.log().find("--ca-file"), std::string::npos) << untrusted.log();
  Process trusted({kBin + "/cli/hpo", "--server", api, "--ca-file", certs.ca(), "status"},
                  remote_env, c.home() + "/trusted.log");
  EXPECT_EQ(trusted.wait(30s), 0) << trusted.log();
  EXPECT_NE(trusted.log().find("finished"), std::string::npos) << trusted.log();
  // Plain HTTP to the HTTPS port is told what to use.
  Process plain({kBin + "/cli/hpo", "--server", "http" + api.substr(5), "status"}, remote_env,
                c.home() + "/plain.log");
  EXPECT_EQ(plain.wait(30s), 2) << plain.log();
  EXPECT_NE(plain.log().find("speaks HTTPS"), std::string::npos) << plain.log();
}

}  // namespace
}  // namespace hpo::e2e
