// End to end, the ensemble stage with the real binaries: hpo-scheduler, two
// torch-enabled hpo-workers, a small noisy tabular CSV generated here. A random
// search of 6 MLP trials, then 8 bagged members (bootstrap rows, 80% of the
// features) combined by soft vote.
//
// What must hold: the sweep finishes with exactly 8 completed members although
// a worker is killed with -9 while it trains one (its lease lapses, the member
// is retried on the other worker); the ensemble record is served by
// GET /api/sweeps/{id}/ensemble (404 before it exists); the ensemble's test
// accuracy is at least the mean member's.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "tests/support/cluster.hpp"
#include "tests/support/tabular.hpp"

namespace hpo::e2e {
namespace {

using Json = nlohmann::json;
using hpo::testing::Cluster;
using hpo::testing::Process;
using hpo::testing::read_file;
using hpo::testing::wait_for;
using namespace std::chrono_literals;

using hpo::testing::write_tabular_csv;

Json ensemble_spec(const std::string& train, const std::string& test) {
  return {
      {"name", "e2e ensemble"},
      {"objective", {{"metric", "val_accuracy"}, {"mode", "max"}}},
      {"parameters",
       {{"lr", {{"type", "float"}, {"min", 0.003}, {"max", 0.03}, {"log", true}}},
        {"width", {{"type", "int"}, {"min", 16}, {"max", 64}, {"step", 16}}}}},
      {"search", {{"algorithm", "random"}, {"max_trials", 6}, {"max_concurrent", 2}, {"seed", 5}}},
      {"trial",
       {{"kind", "torch"},
        {"task", "classification"},
        {"model", {{"type", "mlp"}, {"hidden", "{width}"}, {"depth", 1}}},
        {"data",
         {{"format", "csv"},
          {"train", train},
          {"test", test},
          {"target", "y"},
          {"validation_fraction", 0.2}}},
        {"optimizer", {{"type", "adam"}, {"lr", "{lr}"}}},
        {"batch_size", 64},
        {"epochs", 2},
        {"timeout_s", 120},
        {"max_attempts", 3}}},
      {"ensemble",
       {{"members", 8},
        {"base", "best"},
        {"bootstrap", true},
        {"max_features", 0.8},
        {"combine", "soft_vote"},
        {"seed", 7}}}};
}

// `hpo export` + `hpo-predict` on the sweep's own test file: the same members,
// preprocessing and combination as the record, so the same accuracy (up to an
// argmax flip from float summation order, well below one row in 800); a file
// with a column too few is refused naming the file and both counts.
void check_export_and_predict(Cluster& c, const std::string& id, const std::string& test,
                              double ensemble_test) {
  const std::string bin = hpo::testing::kBinaryDir;
  const std::string dir = c.home() + "/exported";
  Process exp({bin + "/cli/hpo", "export", "--sweep", id, dir}, c.env(),
              c.home() + "/export.log");
  ASSERT_EQ(exp.wait(60s), 0) << exp.log();
  for (const char* f : {"manifest.json", "ensemble.json", "spec.json"})
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + f)) << f;
  Json manifest = Json::parse(read_file(dir + "/manifest.json"));
  ASSERT_EQ(manifest["members"].size(), 8u);
  for (const auto& m : manifest["members"])
    EXPECT_GT(std::filesystem::file_size(dir + "/" + m["artifact"].get<std::string>()), 500u);

  // `hpo predict` = export to a temporary directory + hpo-predict (found in ../workers/).
  const std::string via_cli = c.home() + "/via_cli.csv";
  Process cli({bin + "/cli/hpo", "predict", "--sweep", id, test, "--output", via_cli},
              c.env(), c.home() + "/cli_predict.log");
  ASSERT_EQ(cli.wait(120s), 0) << cli.log();

  c.scheduler().kill(SIGKILL);  // the exported directory is all hpo-predict needs
  const std::string out = c.home() + "/predictions.csv";
  Process predict({bin + "/workers/hpo-predict", "--ensemble", dir, test, "--output", out}, {},
                  c.home() + "/predict.log");
  ASSERT_EQ(predict.wait(120s), 0) << predict.log();
  std::ifstream truth(test), pred(out);
  std::string t, p;
  std::getline(truth, t);
  std::getline(pred, p);
  EXPECT_EQ(p, "class,p0,p1,p2");
  int rows = 0, correct = 0;
  while (std::getline(truth, t) && std::getline(pred, p)) {
    ++rows;
    correct += t.substr(t.rfind(',') + 1) == p.substr(0, p.find(','));
  }
  ASSERT_EQ(rows, 800);
  const double accuracy = static_cast<double>(correct) / rows;
  std::printf("hpo-predict accuracy %.6f, record %.6f\n", accuracy, ensemble_test);
  EXPECT_NEAR(accuracy, ensemble_test, 1e-6) << predict.log();
  EXPECT_EQ(read_file(via_cli), read_file(out));

  // A column missing: a clear error naming the file and both counts, exit 2.
  const std::string bad = c.home() + "/bad.csv";
  {
    std::ifstream in(test);
    std::ofstream o(bad);
    std::string line;
    while (std::getline(in, line)) o << line.substr(line.find(',') + 1) << "\n";
  }
  Process refused({bin + "/workers/hpo-predict", "--ensemble", dir, bad}, {},
                  c.home() + "/refused.log");
  EXPECT_EQ(refused.wait(60s), 2) << refused.log();
  EXPECT_NE(refused.log().find(bad + ": 9 feature columns, the ensemble expects 10"),
            std::string::npos)
      << refused.log();
}

TEST(EnsembleEndToEnd, EightBaggedMembersSurviveAKilledWorkerAndBeatTheMeanMember) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  std::string train = c.home() + "/train.csv", test = c.home() + "/test.csv";
  write_tabular_csv(train, 2400, 1);
  write_tabular_csv(test, 800, 2);
  Process& victim = c.start_worker("victim", 1, 1500);
  c.start_worker("survivor", 1, 1500);

  auto r = c.api().post("/api/sweeps", ensemble_spec(train, test).dump());
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 201) << r->body;
  std::string id = Json::parse(r->body).value("id", "");

  // No record before the members have finished: a clear 404.
  auto early = c.api().get("/api/sweeps/" + id + "/ensemble");
  ASSERT_TRUE(early.ok());
  EXPECT_EQ(early->status, 404) << early->body;
  EXPECT_NE(early->body.find("no ensemble record"), std::string::npos) << early->body;

  // Kill the victim while it trains a member.
  ASSERT_TRUE(wait_for(
      [&] {
        Json page = c.get("/api/sweeps/" + id + "/trials?kind=member&state=running");
        if (!page.is_object()) return false;
        for (const auto& t : page["trials"])
          if (t.value("worker", "") == "victim") return true;
        return false;
      },
      90s))
      << c.logs();
  victim.kill(SIGKILL);

  Json sweep = c.wait_finished(id, 120s);
  ASSERT_EQ(sweep.value("state", ""), "finished") << sweep.dump(2) << c.logs();
  EXPECT_EQ(sweep["stage"], "done");
  EXPECT_EQ(sweep["counts"]["completed"].get<int>(), 6);
  EXPECT_EQ(sweep["member_counts"]["completed"].get<int>(), 8) << sweep.dump(2);

  Json members = c.get("/api/sweeps/" + id + "/trials?kind=member&limit=100");
  ASSERT_EQ(members["total"].get<int>(), 8);
  int retried = 0;
  for (const auto& t : members["trials"]) {
    EXPECT_EQ(t["state"], "completed") << t.dump();
    retried += t["attempt"].get<int>() > 0;
  }
  EXPECT_GT(retried, 0) << "the killed worker's member was not retried\n" << c.logs();

  Json rec = c.get("/api/sweeps/" + id + "/ensemble");
  ASSERT_TRUE(rec.is_object()) << c.logs();
  EXPECT_EQ(rec["combine"], "soft_vote");
  EXPECT_EQ(rec["members_completed"], 8);
  ASSERT_EQ(rec["members"].size(), 8u);
  double mean_test = 0, best_member = 0;
  for (const auto& m : rec["members"]) {
    double acc = m["metrics"]["test"]["accuracy"].get<double>();
    mean_test += acc / 8;
    best_member = std::max(best_member, acc);
  }
  double ensemble_test = rec["ensemble"]["test"]["accuracy"].get<double>();
  std::printf(
      "ensemble test accuracy %.4f, mean member %.4f, best member %.4f, "
      "ensemble val %.4f, best single (%s) val %.4f\n",
      ensemble_test, mean_test, best_member,
      rec["ensemble"]["validation"]["accuracy"].get<double>(),
      rec["best_single"]["trial_id"].get<std::string>().c_str(),
      rec["best_single"]["validation"]["accuracy"].get<double>());
  EXPECT_GE(ensemble_test, mean_test);
  EXPECT_GT(mean_test, 1.0 / hpo::testing::kTabularClasses + 0.1);  // the members did learn something

  // Using the ensemble: export it, stop needing the scheduler, predict the test
  // file with hpo-predict; its accuracy is the one the record computed.
  ASSERT_NO_FATAL_FAILURE(check_export_and_predict(c, id, test, ensemble_test));
}

// The scheduler killed with -9 during the member stage: the restarted one
// rebuilds the stage from Redis and ends with exactly 8 members and a record.
TEST(EnsembleEndToEnd, KillDashNineOfTheSchedulerDuringTheMemberStage) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  std::string train = c.home() + "/train.csv", test = c.home() + "/test.csv";
  write_tabular_csv(train, 2400, 1);
  write_tabular_csv(test, 800, 2);
  c.start_worker("a", 1, 1500);
  c.start_worker("b", 1, 1500);
  auto r = c.api().post("/api/sweeps", ensemble_spec(train, test).dump());
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 201) << r->body;
  std::string id = Json::parse(r->body).value("id", "");
  Json before;
  ASSERT_TRUE(wait_for(
      [&] {
        before = c.get("/api/sweeps/" + id);
        return before.is_object() && before["member_counts"]["completed"].get<int>() >= 2;
      },
      90s))
      << c.logs();
  c.scheduler().kill(SIGKILL);
  ASSERT_EQ(before["state"], "running") << before.dump(2);
  ASSERT_LT(before["member_counts"]["completed"].get<int>(), 8) << before.dump(2);
  std::size_t first_log = read_file(c.home() + "/scheduler.log").size();
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  Json sweep = c.wait_finished(id, 120s);
  ASSERT_EQ(sweep.value("state", ""), "finished") << sweep.dump(2) << c.logs();
  Json members = c.get("/api/sweeps/" + id + "/trials?kind=member&limit=100");
  ASSERT_EQ(members["total"].get<int>(), 8);
  std::set<std::int64_t> numbers;
  for (const auto& t : members["trials"]) numbers.insert(t["number"].get<std::int64_t>());
  EXPECT_EQ(numbers.size(), 8u);
  EXPECT_EQ(*numbers.rbegin(), 7);
  Json rec = c.get("/api/sweeps/" + id + "/ensemble");
  ASSERT_TRUE(rec.is_object()) << c.logs();
  EXPECT_EQ(rec["members_completed"], 8);
  // The restarted scheduler finished the stage.
  EXPECT_NE(read_file(c.home() + "/scheduler.log").substr(first_log).find("ensemble stored"),
            std::string::npos)
      << c.logs();
}

}  // namespace
}  // namespace hpo::e2e
