// End to end, a data-parallel torch trial with the real binaries: hpo-scheduler,
// one torch-enabled hpo-worker with 2 slots, the trial's 2 ranks as
// hpo-train-rank processes. One rank is killed with -9 mid-training.
//
// What must hold: the attempt fails promptly with the reason naming the rank
// and the signal (not after a collective timeout, and no rank is left behind),
// the trial is retried (attempt 1) on the same worker and completes, and the
// sweep ends with that one trial completed.
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/e2e/preemption_check.hpp"
#include "tests/support/cluster.hpp"
#include "tests/support/tabular.hpp"
#include "web/http_server.hpp"

namespace hpo::e2e {
namespace {

using Json = nlohmann::json;
using hpo::testing::Cluster;
using hpo::testing::wait_for;
using namespace std::chrono_literals;

struct RankProcess {
  pid_t pid = -1;
  std::string job, rank;
};

// The hpo-train-rank processes running now (their argv: program, job.json, rank).
std::vector<RankProcess> rank_processes() {
  std::vector<RankProcess> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "cmdline");
    std::stringstream ss;
    ss << in.rdbuf();
    std::vector<std::string> argv;
    std::string arg;
    for (char ch : ss.str()) {
      if (ch == '\0') {
        argv.push_back(arg);
        arg.clear();
      } else {
        arg.push_back(ch);
      }
    }
    if (argv.size() == 3 && argv[0].ends_with("/hpo-train-rank"))
      out.push_back({std::stoi(name), argv[1], argv[2]});
  }
  return out;
}

Json parallel_spec(const std::string& train) {
  return {{"name", "e2e data-parallel"},
          {"objective", {{"metric", "val_accuracy"}, {"mode", "max"}}},
          {"parameters", {{"lr", {{"type", "categorical"}, {"values", {0.01}}}}}},
          {"search", {{"algorithm", "grid"}, {"max_trials", 1}}},
          {"trial",
           {{"kind", "torch"},
            {"task", "classification"},
            {"model", {{"type", "mlp"}, {"hidden", 32}, {"depth", 1}}},
            {"data",
             {{"format", "csv"}, {"train", train}, {"target", "y"}, {"validation_fraction", 0.2}}},
            {"optimizer", {{"type", "adam"}, {"lr", "{lr}"}}},
            {"batch_size", 32},
            {"epochs", 60},
            {"data_parallel", {{"replicas", 2}, {"mode", "allreduce"}}},
            {"timeout_s", 300},
            {"max_attempts", 3}}}};
}

TEST(DataParallelEndToEnd, AKilledRankFailsTheAttemptAndTheRetryCompletes) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  c.start_worker("gpuhost", 2, 3000);
  const std::string train = c.home() + "/train.csv";
  hpo::testing::write_tabular_csv(train, 3000, 3);
  auto r = c.api().post("/api/sweeps", parallel_spec(train).dump());
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 201) << r->body;
  const std::string id = Json::parse(r->body)["id"];
  const std::string trial = id + "-0";

  // Both ranks of attempt 0 are up: kill rank 1.
  std::vector<RankProcess> ranks;
  ASSERT_TRUE(wait_for(
      [&] {
        ranks = rank_processes();
        int mine = 0;
        for (const auto& p : ranks)
          mine += p.job.find("ranks-" + trial + "-0-") != std::string::npos;
        return mine == 2;
      },
      60s))
      << c.logs();
  pid_t victim = -1, survivor = -1;
  for (const auto& p : ranks) {
    if (p.job.find("ranks-" + trial + "-0-") == std::string::npos) continue;
    (p.rank == "1" ? victim : survivor) = p.pid;
  }
  ASSERT_GT(victim, 0);
  ASSERT_GT(survivor, 0);
  const auto killed = std::chrono::system_clock::now();
  ASSERT_EQ(::kill(victim, SIGKILL), 0);

  Json sweep = c.wait_finished(id, 240s);
  ASSERT_EQ(sweep.value("state", ""), "finished") << sweep.dump(2) << c.logs();
  EXPECT_EQ(sweep["counts"]["completed"].get<int>(), 1) << sweep.dump(2);
  Json detail = c.get("/api/trials/" + trial);
  ASSERT_TRUE(detail.is_object());
  EXPECT_EQ(detail["state"], "completed") << detail.dump(2);
  EXPECT_EQ(detail["attempt"].get<int>(), 1) << detail.dump(2);
  ASSERT_GE(detail["attempts"].size(), 2u) << detail.dump(2);
  const Json& first = detail["attempts"][0];
  EXPECT_EQ(first["outcome"], "failed") << first.dump();
  EXPECT_NE(first["error"].get<std::string>().find("rank 1 of 2 killed by signal 9"),
            std::string::npos)
      << first.dump();
  // Failed within seconds of the kill: the executor saw the rank die, no rank
  // waited out the 60 s collective timeout.
  const auto killed_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(killed.time_since_epoch()).count();
  EXPECT_LT(first["ended_ms"].get<std::int64_t>() - killed_ms, 15000) << first.dump();
  EXPECT_EQ(detail["attempts"][1]["outcome"], "completed") << detail.dump(2);
  EXPECT_GT(detail["metrics"]["val_accuracy"].get<double>(), 0.5) << detail.dump(2);
  // The first attempt's surviving rank is gone too.
  EXPECT_NE(::kill(survivor, 0), 0);
}

// Preemption on one host (tests/e2e/preemption_check.hpp has what must hold):
// the notice file of the worker that runs the torch trial appears mid-trial.
TEST(DataParallelEndToEnd, APreemptedTrialResumesElsewhereAndEndsAsIfUninterrupted) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  const std::string notice = c.home() + "/termination-notice";
  auto& spot = c.start_worker("spot", 1, 3000, {"--threads", "1", "--notice-file", notice});
  const double s = check_preempted_trial_resumes(
      c, [&] { std::ofstream(notice) << "terminate\n"; }, spot,
      [&] {
        c.start_worker("steady", 1, 3000, {"--threads", "1"});
      });
  std::printf("preemption: notice to the next attempt's first report in %.1f s\n", s);
}

// The same, the notice from a cloud's metadata endpoint (AWS's spot
// instance-action, served here by the test): 404 until the stop is scheduled,
// then 200 with the action.
TEST(DataParallelEndToEnd, ANoticeFromTheMetadataUrlPreemptsTheTrialAsTheFileDoes) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  const std::string path = "/latest/meta-data/spot/instance-action";
  std::atomic<bool> scheduled{false};
  std::atomic<int> polls{0};
  web::ServerOptions o;
  o.port = 0;
  o.handler_threads = 1;
  web::HttpServer metadata(o, [&](const web::Request& r) {
    if (r.path != path) return web::Response::text(404, "not found");
    ++polls;
    if (!scheduled) return web::Response::text(404, "not found");
    return web::Response::json(200, R"({"action": "terminate", "time": "2026-12-02T21:00:00Z"})");
  });
  ASSERT_TRUE(metadata.start());
  const std::string url = fmt::format("http://127.0.0.1:{}{}", metadata.port(), path);
  auto& spot = c.start_worker("spot", 1, 3000,
                              {"--threads", "1", "--notice-url", url, "--notice-poll-s", "0.05"});
  const double s = check_preempted_trial_resumes(
      c, [&] { scheduled = true; }, spot,
      [&] {
        c.start_worker("steady", 1, 3000, {"--threads", "1"});
      });
  EXPECT_GT(polls.load(), 1);  // asked while no stop was scheduled, and then once it was
  EXPECT_NE(c.logs().find("notice URL " + url + " answered 200"), std::string::npos) << c.logs();
  std::printf(
      "preemption by the metadata URL: notice to the next attempt's first report in %.1f s\n", s);
}

}  // namespace
}  // namespace hpo::e2e
