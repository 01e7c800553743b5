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
#include "trials/redis/redis_client.hpp"

namespace hpo::e2e {
namespace {

using Json = nlohmann::json;
using hpo::testing::Cluster;
using hpo::testing::Process;
using hpo::testing::read_file;
using hpo::testing::wait_for;
using namespace std::chrono_literals;

using hpo::testing::write_regression_csv;
using hpo::testing::write_tabular_csv;

// A random search of `trials` small MLPs (lr, width) on CSV data, then `ensemble`.
Json mlp_sweep(const std::string& name, const std::string& task, const std::string& train,
               const std::string& test, int trials, int epochs, Json ensemble) {
  const bool classification = task == "classification";
  return {{"name", name},
          {"objective",
           {{"metric", classification ? "val_accuracy" : "val_loss"},
            {"mode", classification ? "max" : "min"}}},
          {"parameters",
           {{"lr", {{"type", "float"}, {"min", 0.003}, {"max", 0.03}, {"log", true}}},
            {"width",
             {{"type", "int"}, {"min", 16}, {"max", classification ? 64 : 48}, {"step", 16}}}}},
          {"search",
           {{"algorithm", "random"}, {"max_trials", trials}, {"max_concurrent", 2}, {"seed", 5}}},
          {"trial",
           {{"kind", "torch"},
            {"task", task},
            {"model", {{"type", "mlp"}, {"hidden", "{width}"}, {"depth", 1}}},
            {"data",
             {{"format", "csv"},
              {"train", train},
              {"test", test},
              {"target", "y"},
              {"validation_fraction", classification ? 0.2 : 0.25}}},
            {"optimizer", {{"type", "adam"}, {"lr", "{lr}"}}},
            {"batch_size", 64},
            {"epochs", epochs},
            {"timeout_s", 120},
            {"max_attempts", 3}}},
          {"ensemble", std::move(ensemble)}};
}

Json ensemble_spec(const std::string& train, const std::string& test) {
  return mlp_sweep("e2e ensemble", "classification", train, test, 6, 2,
                   {{"members", 8},
                    {"base", "best"},
                    {"bootstrap", true},
                    {"max_features", 0.8},
                    {"combine", "soft_vote"},
                    {"choose", "bagged"},  // the bagged combination, whatever validation says
                    {"seed", 7}});
}

// Waits (up to `within`) until `victim` runs one of the sweep's members, then kills it -9.
void kill_while_it_trains_a_member(Cluster& c, const std::string& id, Process& victim,
                                   std::chrono::seconds within) {
  ASSERT_TRUE(wait_for(
      [&] {
        Json page = c.get("/api/sweeps/" + id + "/trials?kind=member&state=running");
        if (!page.is_object()) return false;
        for (const auto& t : page["trials"])
          if (t.value("worker", "") == "victim") return true;
        return false;
      },
      within))
      << c.logs();
  victim.kill(SIGKILL);
}

// `hpo export` + `hpo-predict` on the sweep's own test file: the same members,
// preprocessing and combination as the record, so the same accuracy (up to an
// argmax flip from float summation order, well below one row in 800); a file
// with a column too few is refused naming the file and both counts.
void check_export_and_predict(Cluster& c, const std::string& id, const std::string& test,
                              double ensemble_test) {
  const std::string bin = hpo::testing::kBinaryDir;
  const std::string dir = c.home() + "/exported";
  Process exp({bin + "/cli/hpo", "export", "--sweep", id, dir}, c.env(), c.home() + "/export.log");
  ASSERT_EQ(exp.wait(60s), 0) << exp.log();
  for (const char* f : {"manifest.json", "ensemble.json", "spec.json"})
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + f)) << f;
  Json manifest = Json::parse(read_file(dir + "/manifest.json"));
  ASSERT_EQ(manifest["members"].size(), 8u);
  for (const auto& m : manifest["members"])
    EXPECT_GT(std::filesystem::file_size(dir + "/" + m["artifact"].get<std::string>()), 500u);

  // `hpo predict` = export to a temporary directory + hpo-predict (found in ../workers/).
  const std::string via_cli = c.home() + "/via_cli.csv";
  Process cli({bin + "/cli/hpo", "predict", "--sweep", id, test, "--output", via_cli}, c.env(),
              c.home() + "/cli_predict.log");
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
  ASSERT_NO_FATAL_FAILURE(kill_while_it_trains_a_member(c, id, victim, 90s));

  Json sweep = c.wait_finished(id, 120s);
  ASSERT_TRUE(sweep.is_object()) << "the scheduler does not answer\n" << c.logs();
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
  EXPECT_EQ(rec["chosen"], "bagged");
  EXPECT_EQ(rec["members_completed"], 8);
  // Every model considered: the 8 members and the 6 search trials.
  ASSERT_EQ(rec["members"].size(), 14u);
  double mean_test = 0, best_member = 0;
  for (const auto& m : rec["members"]) {
    if (m["kind"] != "member") continue;
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
  EXPECT_GT(mean_test,
            1.0 / hpo::testing::kTabularClasses + 0.1);  // the members did learn something

  // Using the ensemble: export it, stop needing the scheduler, predict the test
  // file with hpo-predict; its accuracy is the one the record computed.
  ASSERT_NO_FATAL_FAILURE(check_export_and_predict(c, id, test, ensemble_test));
}

// A sweep of the user's own program in Python (examples/python/softmax_trial.py,
// standard library only): its search trials and members write their predictions
// to HPO_OUTPUT_DIR, members train on the rows and columns of HPO_BAGGING_FILE,
// a worker is killed -9 while it trains a member, and the stage still ends with
// every member and chooses among the candidates by cross-validated loss. The
// learner is made high-variance (SGD with a large constant step: every model's
// final weights are noisy), the case bagging is for, so a combination must win.
TEST(EnsembleEndToEnd, APythonCommandSweepBecomesAnEnsemble) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  const std::string train = c.home() + "/train.csv", val = c.home() + "/val.csv",
                    test = c.home() + "/test.csv";
  write_tabular_csv(train, 1200, 11);
  write_tabular_csv(val, 400, 12);
  write_tabular_csv(test, 400, 13);
  const std::string script = std::string(HPO_SOURCE_DIR) + "/examples/python/softmax_trial.py";
  Json spec = {
      {"name", "e2e python ensemble"},
      {"objective", {{"metric", "val_loss"}, {"mode", "min"}}},
      {"parameters",
       {{"lr", {{"type", "float"}, {"min", 0.3}, {"max", 1.0}, {"log", true}}},
        {"l2", {{"type", "float"}, {"min", 1e-5}, {"max", 1e-3}, {"log", true}}}}},
      {"search", {{"algorithm", "random"}, {"max_trials", 6}, {"max_concurrent", 2}, {"seed", 3}}},
      {"trial",
       {{"kind", "command"},
        {"argv", {"/usr/bin/python3", script, train, val, test, "3", "12"}},
        {"env", {{"SOFTMAX_DECAY", "0"}}},
        {"data",
         {{"task", "classification"},
          {"classes", 3},
          {"train_rows", 1200},
          {"validation_rows", 400},
          {"test_rows", 400},
          {"features", 10}}},
        {"timeout_s", 120},
        {"max_attempts", 3}}},
      {"ensemble",
       {{"members", 6}, {"max_features", 0.7}, {"combine", "soft_vote"}, {"seed", 11}}}};
  Process& victim = c.start_worker("victim", 1, 1500);
  c.start_worker("survivor", 1, 1500);
  auto r = c.api().post("/api/sweeps", spec.dump());
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 201) << r->body;
  const std::string id = Json::parse(r->body).value("id", "");

  ASSERT_NO_FATAL_FAILURE(kill_while_it_trains_a_member(c, id, victim, 120s));

  Json sweep = c.wait_finished(id, 180s);
  ASSERT_EQ(sweep.value("state", ""), "finished") << sweep.dump(2) << c.logs();
  EXPECT_EQ(sweep["counts"]["completed"].get<int>(), 6);
  EXPECT_EQ(sweep["member_counts"]["completed"].get<int>(), 6) << sweep.dump(2);
  Json members = c.get("/api/sweeps/" + id + "/trials?kind=member&limit=100");
  ASSERT_EQ(members["total"].get<int>(), 6);
  int retried = 0;
  for (const auto& t : members["trials"]) retried += t["attempt"].get<int>() > 0;
  EXPECT_GT(retried, 0) << "the killed worker's member was not retried\n" << c.logs();

  Json rec = c.get("/api/sweeps/" + id + "/ensemble");
  ASSERT_TRUE(rec.is_object()) << c.logs();
  EXPECT_EQ(rec["members_completed"], 6);
  EXPECT_EQ(rec["n_features"], 10);
  ASSERT_EQ(rec["members"].size(), 12u) << rec.dump(2);  // 6 members + 6 search trials
  for (const auto& m : rec["members"]) {
    ASSERT_TRUE(m["metrics"]["test"].contains("accuracy")) << m.dump();
    if (m["kind"] == "member") {
      EXPECT_EQ(m["features"].size(), 7u) << m.dump();  // 0.7 of 10
    }
  }
  ASSERT_TRUE(rec.contains("oob")) << rec.dump(2);  // every member predicted its out-of-bag rows
  EXPECT_GT(rec["oob"]["rows_covered"].get<int>(), 1000);

  // The candidates and the choice.
  ASSERT_EQ(rec["candidates"].size(), 4u) << rec.dump(2);
  const std::string chosen = rec["chosen"];
  double chosen_test = -1;
  for (const auto& cand : rec["candidates"]) {
    EXPECT_TRUE(cand["cross_validated"].get<bool>());
    if (cand["name"] == chosen) chosen_test = cand["test"]["accuracy"].get<double>();
  }
  // A combination replaces the sweep's best trial only when it beats it beyond
  // the noise (the objective is val_loss: the loss and the objective are one);
  // the record says what was compared and why.
  const Json& d = rec["decision"];
  EXPECT_EQ(d["chosen"], chosen);
  EXPECT_EQ(d["objective"]["scored_as"], "log_loss");
  if (chosen != "best_single") {
    EXPECT_TRUE(d["decided"].get<bool>()) << d.dump(2);
    EXPECT_GT(d["loss_advantage"]["mean"].get<double>(), d["loss_advantage"]["se"].get<double>());
  } else if (!d["decided"].get<bool>()) {
    ASSERT_FALSE(rec["warnings"].empty()) << rec.dump(2);
  }
  EXPECT_EQ(chosen_test, rec["ensemble"]["test"]["accuracy"].get<double>());
  // Not worse on the held-out rows than the model the search found best (the
  // trial with the lowest val_loss, the record's only best single model):
  // within 3 of 400 test rows.
  Json trials = c.get("/api/sweeps/" + id + "/trials?limit=100");
  std::string best_trial;
  double best_loss = 1e300;
  for (const auto& t : trials["trials"])
    if (t["value"].is_number() && t["value"].get<double>() < best_loss)
      best_loss = t["value"].get<double>(), best_trial = t["id"];
  EXPECT_EQ(rec["best_single"]["trial_id"], best_trial);
  EXPECT_EQ(d["best_single"], best_trial);
  double best_trial_test = -1;
  for (const auto& m : rec["members"])
    if (m["trial_id"] == best_trial) best_trial_test = m["metrics"]["test"]["accuracy"];
  std::printf("python ensemble: chosen %s, test accuracy %.4f; best search trial %s %.4f\n",
              chosen.c_str(), chosen_test, best_trial.c_str(), best_trial_test);
  EXPECT_GE(chosen_test, best_trial_test - 3.0 / 400) << rec["candidates"].dump(2);
  // Noisy models: averaging them wins clearly, on validation and on the test rows.
  EXPECT_NE(chosen, "best_single") << rec["candidates"].dump(2);
  EXPECT_GT(chosen_test, best_trial_test) << rec["candidates"].dump(2);

  // The program's own files are kept with the trial.
  auto model = c.api().get("/api/trials/" + members["trials"][0]["id"].get<std::string>() +
                           "/artifacts/output.model.json");
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->status, 200);
  EXPECT_EQ(Json::parse(model->body)["features"].size(), 7u);
}

// Regression end to end: MLP regressors searched, 4 bagged members combined by
// median, the stage made to return the stacked (ridge) ensemble; `hpo predict`
// on the test file reproduces the record's test MSE from the exported models.
// The sweep's id in `id`; `scheduler_flags` for the scheduler.
void regression_stacked_and_predict(Cluster& c, const std::vector<std::string>& scheduler_flags,
                                    std::string& id) {
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler(scheduler_flags));
  const std::string train = c.home() + "/train.csv", test = c.home() + "/test.csv";
  write_regression_csv(train, 1600, 21);
  write_regression_csv(test, 400, 22);
  c.start_worker("a", 2, 1500);
  Json spec =
      mlp_sweep("e2e regression ensemble", "regression", train, test, 4, 4,
                {{"members", 4}, {"combine", "median"}, {"choose", "stacking"}, {"seed", 3}});
  // Submitted with `hpo submit --follow`: it prints the id, then progress lines
  // (not a terminal: one per change) that include the member stage.
  const std::string bin = hpo::testing::kBinaryDir;
  const std::string spec_path = c.home() + "/regression.json";
  std::ofstream(spec_path) << spec.dump(2);
  Process follow({bin + "/cli/hpo", "submit", spec_path, "--follow"}, c.env(),
                 c.home() + "/follow.log");
  ASSERT_EQ(follow.wait(240s), 0) << follow.log() << c.logs();
  const std::string followed = follow.log();
  id = followed.substr(0, followed.find('\n'));
  EXPECT_NE(followed.find(" running | 0 failed | members "), std::string::npos) << followed;
  EXPECT_NE(followed.find("| members 4/4 done"), std::string::npos) << followed;
  Json sweep = c.get("/api/sweeps/" + id);
  ASSERT_EQ(sweep.value("state", ""), "finished") << sweep.dump(2) << c.logs();
  EXPECT_EQ(sweep["members_requested"], 4);
  Json rec = c.get("/api/sweeps/" + id + "/ensemble");
  ASSERT_TRUE(rec.is_object()) << c.logs();
  EXPECT_EQ(rec["task"], "regression");
  EXPECT_EQ(rec["chosen"], "stacking");
  EXPECT_EQ(rec["method"], "stacking");
  EXPECT_EQ(rec["n_features"], hpo::testing::kRegressionFeatures);
  ASSERT_EQ(rec["candidates"].size(), 4u);
  for (const auto& cand : rec["candidates"]) {
    ASSERT_TRUE(cand["test"].contains("mse")) << cand.dump();
    if (cand["name"] == "bagged") {
      EXPECT_NE(cand["detail"].get<std::string>().find("median"), std::string::npos);
    }
  }
  const double record_mse = rec["ensemble"]["test"]["mse"].get<double>();
  double mean_member = rec["mean_member"]["test"]["mse"].get<double>();
  std::printf("regression: stacked test MSE %.4f, mean member %.4f\n", record_mse, mean_member);
  EXPECT_LT(record_mse, 1.5);  // the variance of y is about 2.7: the models learned

  const std::string out = c.home() + "/predicted.csv";
  Process cli({bin + "/cli/hpo", "predict", "--sweep", id, test, "--output", out}, c.env(),
              c.home() + "/predict.log");
  ASSERT_EQ(cli.wait(120s), 0) << cli.log();
  std::ifstream truth(test), pred(out);
  std::string t, p;
  std::getline(truth, t);
  std::getline(pred, p);
  EXPECT_EQ(p, "value");
  double se = 0;
  int rows = 0;
  while (std::getline(truth, t) && std::getline(pred, p)) {
    const double d = std::stod(t.substr(t.rfind(',') + 1)) - std::stod(p);
    se += d * d;
    ++rows;
  }
  ASSERT_EQ(rows, 400);
  EXPECT_NEAR(se / rows, record_mse, 1e-3 * record_mse) << cli.log();

  // What the sweep costs Redis (docs/operations.md sizes from this).
  hpo::trials::redis::RedisClient redis(*hpo::trials::redis::RedisUrl::parse(c.admin_redis_url()));
  auto info = redis.command({"INFO", "memory"});
  ASSERT_TRUE(info.ok());
  const auto at = info->str.find("used_memory:");
  ASSERT_NE(at, std::string::npos);
  std::printf("redis: used_memory %s bytes after 4 trials + 4 members (artifacts %s)\n",
              info->str.substr(at + 12, info->str.find('\r', at) - at - 12).c_str(),
              scheduler_flags.empty() ? "in Redis" : "in a folder");
}

TEST(EnsembleEndToEnd, RegressionStackedEnsembleAndHpoPredict) {
  Cluster c;
  std::string id;
  regression_stacked_and_predict(c, {}, id);
}

// The same sweep with --artifacts on the scheduler only (the worker takes the
// folder the scheduler announces): every model, checkpoint and prediction set
// is a file in the folder, Redis holds only references to them, the ensemble
// and `hpo predict` read them back, and `hpo delete` removes the sweep's folder.
TEST(EnsembleEndToEnd, WithAnArtifactFolderModelsNeverPassThroughRedis) {
  Cluster c;
  const std::string folder = c.home() + "/shared-artifacts";
  std::filesystem::create_directories(folder);
  std::string id;
  ASSERT_NO_FATAL_FAILURE(regression_stacked_and_predict(c, {"--artifacts", folder}, id));
  ASSERT_FALSE(id.empty());

  hpo::trials::redis::RedisClient redis(*hpo::trials::redis::RedisUrl::parse(c.admin_redis_url()));
  std::size_t keys = 0, largest = 0;
  std::string cursor = "0";
  do {
    auto r = redis.command({"SCAN", cursor, "MATCH", "hpo:artifact:" + id + "-*", "COUNT", "1000"});
    ASSERT_TRUE(r.ok() && r->elements.size() == 2);
    cursor = r->elements[0].str;
    for (const auto& k : r->elements[1].elements) {
      auto len = redis.command({"STRLEN", k.str});
      ASSERT_TRUE(len.ok());
      ++keys;
      const bool log = k.str.size() >= 8 && k.str.substr(k.str.size() - 8) == ":log.txt";
      if (!log) largest = std::max(largest, static_cast<std::size_t>(len->integer));
    }
  } while (cursor != "0");
  std::size_t files = 0, models = 0;
  std::uintmax_t bytes = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(folder + "/" + id))
    if (e.is_regular_file()) {
      ++files;
      bytes += e.file_size();
      models += e.path().filename().string().rfind("model.pt.", 0) == 0;
    }
  std::printf(
      "artifact folder: %zu files, %ju bytes; Redis: %zu artifact keys, largest "
      "non-log value %zu bytes\n",
      files, bytes, keys, largest);
  EXPECT_EQ(models, 8u);  // 4 search trials and 4 members
  EXPECT_GT(keys, 0u);
  EXPECT_LT(largest, 400u) << "an artifact's bytes are in Redis";
  EXPECT_GT(bytes, 100'000u);

  const std::string bin = hpo::testing::kBinaryDir;
  Process del({bin + "/cli/hpo", "delete", id}, c.env(), c.home() + "/delete.log");
  ASSERT_EQ(del.wait(60s), 0) << del.log();
  EXPECT_FALSE(std::filesystem::exists(folder + "/" + id));
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
