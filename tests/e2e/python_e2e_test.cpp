// The hpo Python library through the real scheduler and worker (Debian's
// python3; the worker puts python/ on the trial's PYTHONPATH): a pruned
// trial stops reporting, a drained trial checkpoints through the library and
// resumes at its step on another worker, hpo.Client runs a sweep, the
// XGBoost callback reports every round and stops on a prune.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/cluster.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/tabular.hpp"

namespace hpo::e2e {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;
using hpo::testing::Cluster;
using hpo::testing::Process;
using hpo::testing::read_file;
using hpo::testing::wait_for;

const std::string kPython = "/usr/bin/python3";

std::string write_script(const Cluster& c, const std::string& name, const std::string& body) {
  const std::string path = c.home() + "/" + name;
  std::ofstream(path) << body;
  return path;
}

// Whether the worker has written a stop reason for an attempt (it does just
// before it signals the program).
bool stop_reason_written(const Cluster& c) {
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(c.home() + "/work", ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    if (it->path().filename() == "stop_reason") return true;
  return false;
}

Json trial_of(Cluster& c, const std::string& sweep, int number) {
  const Json page = c.get("/api/sweeps/" + sweep + "/trials?limit=50");
  if (!page.is_object()) return Json();
  for (const auto& t : page["trials"])
    if (t.value("number", -1) == number) return c.get("/api/trials/" + t["id"].get<std::string>());
  return Json();
}

// Drains the worker `first` once trial 0 of `sweep` has `reports` reports,
// starts the worker "second" and waits for the sweep to end; trial 0 then.
Json drain_and_finish_elsewhere(Cluster& c, const std::string& sweep, Process& first, int reports) {
  Json t;
  const bool running = wait_for(
      [&] {
        t = trial_of(c, sweep, 0);
        return t.is_object() && t.value("reports_total", 0) >= reports;
      },
      180s);
  EXPECT_TRUE(running) << t.dump() << c.logs();
  first.kill(SIGTERM);  // a drain
  EXPECT_GE(first.wait(120s), 0) << c.logs();
  c.start_worker("second", 1);
  const Json done = c.wait_finished(sweep, 300s);
  EXPECT_EQ(done.value("state", ""), "finished") << done.dump(2) << c.logs();
  return trial_of(c, sweep, 0);
}

// A trial that uses the library is pruned: it reports one step per tick of
// the test, so the prune decision (the trial's control turning "prune") falls
// between two known steps; after it the worker signals the trial, whose
// should_stop() ends it, and at most the one report already on its way is stored.
TEST(PythonLibrary, APrunedTrialStoresAtMostOneReportAfterTheDecision) {
  ::signal(SIGPIPE, SIG_IGN);  // the tick FIFO's reader may be gone
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  const std::string ticks = c.home() + "/ticks";
  ASSERT_EQ(::mkfifo(ticks.c_str(), 0600), 0);
  const std::string script = write_script(c, "pruned.py", R"(import os, select, signal, sys, time
import hpo

t = hpo.trial()
wake_r, wake_w = os.pipe()  # a byte per signal: the worker's stop wakes the select below
os.set_blocking(wake_w, False)
signal.set_wakeup_fd(wake_w)
if t.number < 2:  # the baseline the median pruner compares with
    for step in range(6):
        t.report(step, loss=1.0)
    t.final(loss=1.0)
    sys.exit(0)
gate = open(sys.argv[1], "rb", buffering=0)
deadline = time.monotonic() + 120  # bounded: the test ticks while it runs
for step in range(1000):
    while not t.should_stop():  # one tick per step, or the stop's signal
        if time.monotonic() > deadline:
            sys.exit("no tick")
        if gate in select.select([gate, wake_r], [], [], deadline - time.monotonic())[0]:
            if not gate.read(1):
                sys.exit("the test is gone")
            break
    if t.should_stop():
        print("stopped:", t.stop_reason)
        break
    t.report(step, loss=10.0)
)");
  const Json spec = {
      {"name", "pruned library trial"},
      {"objective", {{"metric", "loss"}, {"mode", "min"}}},
      {"parameters", {{"x", {{"type", "float"}, {"min", 0.0}, {"max", 1.0}}}}},
      {"search", {{"algorithm", "random"}, {"max_trials", 3}, {"max_concurrent", 1}, {"seed", 1}}},
      {"early_stopping", {{"type", "median"}, {"warmup_steps", 1}, {"min_trials", 2}}},
      {"trial", {{"kind", "command"}, {"argv", {kPython, script, ticks}}, {"timeout_s", 300}}}};
  c.start_worker("w", 1);
  const std::string id = c.submit(spec);
  ASSERT_FALSE(id.empty());
  Json t;
  ASSERT_TRUE(wait_for(
      [&] {
        t = trial_of(c, id, 2);
        return t.is_object() && t.value("state", "") == "running";
      },
      120s))
      << c.logs();
  const int gate = ::open(ticks.c_str(), O_WRONLY);  // the trial holds the other end
  ASSERT_GE(gate, 0);
  bool decided = false;  // the test has seen the trial's control turn "prune"
  for (int step = 0; step < 40; ++step) {
    if (decided) {
      // The worker writes the stop's reason, then signals: tick on only then.
      ASSERT_TRUE(wait_for([&] { return stop_reason_written(c); }, 60s)) << c.logs();
    }
    if (::write(gate, "t", 1) != 1) break;  // the trial has ended
    const bool moved = wait_for(
        [&] {
          t = trial_of(c, id, 2);
          if (!t.is_object()) return false;
          if (t.value("state", "") != "running" || t.value("control", "") == "prune") return true;
          return t.value("reports_total", 0) > step;
        },
        60s);
    ASSERT_TRUE(moved) << t.dump() << c.logs();
    decided = decided || t.value("control", "") == "prune";
    if (t.value("state", "") != "running") break;
  }
  ::close(gate);
  const Json sweep = c.wait_finished(id, 120s);
  t = trial_of(c, id, 2);
  ASSERT_EQ(t.value("state", ""), "pruned") << t.dump(2) << c.logs();
  // The decision as the scheduler logs it: "trial pruned ... trial=ID step=N".
  const std::string log = read_file(c.home() + "/scheduler.log");
  const std::string mark = "trial=" + t["id"].get<std::string>() + " step=";
  const auto at = log.find(mark);
  ASSERT_NE(at, std::string::npos) << log;
  const std::int64_t decision = std::stoll(log.substr(at + mark.size()));
  int after = 0;
  for (const auto& r : t["reports"]) after += r["step"].get<std::int64_t>() > decision;
  EXPECT_LE(after, 1) << "decided at step " << decision << ": " << t["reports"].dump();
  EXPECT_NE(t.value("log_tail", "").find("stopped: prune"), std::string::npos) << t.dump(2);
  EXPECT_EQ(sweep.value("state", ""), "finished");
}

// A drain on the first worker: the trial (it uses resume_step, so it
// checkpoints on a stop) gets SIGUSR1 and the reason "drain", saves its
// checkpoint through the library, and the second worker's attempt resumes
// at the saved step with the saved files; every step is reported once.
TEST(PythonLibrary, ADrainedTrialCheckpointsAndResumesAtItsStepOnAnotherWorker) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  const std::string script = write_script(c, "drained.py", R"(import os, select, signal, sys, time
import hpo

t = hpo.trial(defaults={"steps": 8})
wake_r, wake_w = os.pipe()
os.set_blocking(wake_w, False)
signal.set_wakeup_fd(wake_w)
start = t.resume_step
saved = (t.checkpoint_dir / "weights.txt")
print(f"attempt {t.attempt} starts at {start} with {saved.read_text() if saved.exists() else 'nothing'}")
for step in range(start, t.params.steps):
    t.report(step, loss=1.0 / (step + 1))
    if t.attempt == 0 and step == 2:
        # Until the drain's signal (a byte on the wakeup pipe, so one that came
        # before the select is not missed); bounded: the test drains this worker.
        deadline = time.monotonic() + 120
        while not t.should_stop() and time.monotonic() < deadline:
            select.select([wake_r], [], [], deadline - time.monotonic())
    if t.should_stop():
        print("stopping for", t.stop_reason)
        if t.checkpoint_on_stop:
            saved.write_text(f"weights after step {step}")
            t.save_checkpoint(step + 1)
        sys.exit(0)
t.final(loss=1.0 / t.params.steps)
)");
  const Json spec = {{"name", "drained library trial"},
                     {"objective", {{"metric", "loss"}, {"mode", "min"}}},
                     {"parameters", {{"x", {{"type", "float"}, {"min", 0.0}, {"max", 1.0}}}}},
                     {"search", {{"algorithm", "random"}, {"max_trials", 1}, {"seed", 1}}},
                     {"trial",
                      {{"kind", "command"},
                       {"argv", {kPython, script}},
                       {"timeout_s", 300},
                       {"max_attempts", 3}}}};
  Process& first = c.start_worker("first", 1);
  const std::string id = c.submit(spec);
  ASSERT_FALSE(id.empty());
  const Json t = drain_and_finish_elsewhere(c, id, first, 3);
  ASSERT_EQ(t.value("state", ""), "completed") << t.dump(2);
  std::vector<std::int64_t> steps;
  for (const auto& r : t["reports"]) steps.push_back(r["step"].get<std::int64_t>());
  EXPECT_EQ(steps, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7})) << t["reports"].dump();
  ASSERT_EQ(t["attempts"].size(), 2u) << t.dump(2);
  EXPECT_EQ(t["attempts"][0].value("worker", ""), "first");
  EXPECT_EQ(t["attempts"][1].value("worker", ""), "second");
  const std::string log = t.value("log_tail", "");
  EXPECT_NE(log.find("attempt 1 starts at 3 with weights after step 2"), std::string::npos) << log;
  EXPECT_NE(log.find("[hpo] resuming: 2 files of the last checkpoint"), std::string::npos) << log;
}

// hpo.Client from a Python session: submit a dict spec, follow it, read its
// trials and an artifact, cancel a second sweep.
TEST(PythonLibrary, TheClientRunsASweepAndReadsItsTrials) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  c.start_worker("w", 2);
  const std::string trial = write_script(c, "quick.py", R"(import hpo
t = hpo.trial(defaults={"lr": 0.1})
for step in range(3):
    t.report(step, loss=(t.params.lr - 0.3) ** 2 + 1.0 / (step + 1))
(t.output_dir / "notes.txt").write_text(f"lr {t.params.lr}")
t.final(loss=(t.params.lr - 0.3) ** 2)
)");
  const std::string session = write_script(c, "session.py",
                                           fmt::format(R"(import json, sys
import hpo

client = hpo.Client()  # the local scheduler, as the CLI finds it
spec = {{"name": "from a notebook", "objective": {{"metric": "loss", "mode": "min"}},
        "parameters": {{"lr": {{"type": "float", "min": 0.01, "max": 1.0, "log": True}}}},
        "search": {{"algorithm": "random", "max_trials": 4, "max_concurrent": 2, "seed": 2}},
        "trial": {{"kind": "command", "argv": ["{}", "{}"], "timeout_s": 120}}}}
sweep_id = client.submit(spec)
seen = []
done = client.wait(sweep_id, timeout=120, poll=0.2, on_change=lambda s: seen.append(s["state"]))
trials = client.trials(sweep_id)
notes = client.artifact(trials[0]["id"], "output.notes.txt").decode()
try:
    client.submit({{"name": "bad"}})
    refused = None
except hpo.HpoError as e:
    refused = [e.status, e.message]
other = client.submit(dict(spec, name="cancelled"))
cancelled = client.cancel(other)
print(json.dumps({{"state": done["state"], "seen": seen, "trials": trials, "notes": notes,
                  "refused": refused, "cancelled": client.wait(other, timeout=60, poll=0.2)["state"],
                  "me": client.whoami()}}))
)",
                                                       kPython, trial));
  Process py({kPython, session},
             {{"HPO_HOME", c.home()}, {"PYTHONPATH", std::string(HPO_SOURCE_DIR) + "/python"}},
             c.home() + "/session.log");
  ASSERT_EQ(py.wait(180s), 0) << read_file(c.home() + "/session.log") << c.logs();
  const std::string out = read_file(c.home() + "/session.log");
  Json r;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line.front() == '{') r = Json::parse(line, nullptr, false);
  ASSERT_TRUE(r.is_object()) << out;
  EXPECT_EQ(r["state"], "finished");
  EXPECT_EQ(r["seen"].back(), "finished");
  ASSERT_EQ(r["trials"].size(), 4u) << r.dump(2);
  std::set<double> lrs;
  for (const auto& t : r["trials"]) {
    EXPECT_EQ(t["state"], "completed") << t.dump();
    lrs.insert(t["params"]["lr"].get<double>());
    EXPECT_NEAR(t["value"].get<double>(), std::pow(t["params"]["lr"].get<double>() - 0.3, 2), 1e-9);
  }
  EXPECT_EQ(lrs.size(), 4u);
  EXPECT_EQ(r["notes"], fmt::format("lr {}", r["trials"][0]["params"]["lr"].get<double>()))
      << r.dump(2);
  ASSERT_TRUE(r["refused"].is_array()) << r.dump(2);
  EXPECT_EQ(r["refused"][0], 400);
  EXPECT_EQ(r["cancelled"], "cancelled");
}

// The same command ensemble twice: examples/python/softmax_trial.py (the
// protocol by hand) and softmax_library_trial.py (the library). Every search
// trial and every member computes the same validation loss (the same rows,
// features and seeds), and the two ensembles score the same test accuracy
// (the prediction files differ only in their printed digits).
TEST(PythonLibrary, ACommandEnsembleWithTheLibraryMatchesTheHandWrittenOne) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  const std::string train = c.home() + "/train.csv", val = c.home() + "/val.csv",
                    test = c.home() + "/test.csv";
  hpo::testing::write_tabular_csv(train, 600, 21);
  hpo::testing::write_tabular_csv(val, 200, 22);
  hpo::testing::write_tabular_csv(test, 200, 23);
  auto spec_for = [&](const std::string& script) {
    return Json{{"name", script},
                {"objective", {{"metric", "val_loss"}, {"mode", "min"}}},
                {"parameters",
                 {{"lr", {{"type", "float"}, {"min", 0.05}, {"max", 1.0}, {"log", true}}},
                  {"l2", {{"type", "float"}, {"min", 1e-5}, {"max", 1e-3}, {"log", true}}}}},
                {"search",
                 {{"algorithm", "random"}, {"max_trials", 4}, {"max_concurrent", 2}, {"seed", 7}}},
                {"trial",
                 {{"kind", "command"},
                  {"argv",
                   {kPython, std::string(HPO_SOURCE_DIR) + "/examples/python/" + script, train, val,
                    test, "3", "4"}},
                  {"data",
                   {{"task", "classification"},
                    {"classes", 3},
                    {"train_rows", 600},
                    {"validation_rows", 200},
                    {"test_rows", 200},
                    {"features", 10}}},
                  {"timeout_s", 300}}},
                {"ensemble",
                 {{"members", 4}, {"max_features", 0.7}, {"combine", "soft_vote"}, {"seed", 3}}}};
  };
  c.start_worker("w", 2);
  std::map<std::string, Json> records;
  std::map<std::string, std::map<std::string, double>> losses;  // script -> role/number -> val_loss
  for (const std::string script : {"softmax_trial.py", "softmax_library_trial.py"}) {
    const std::string id = c.submit(spec_for(script));
    ASSERT_FALSE(id.empty());
    const Json sweep = c.wait_finished(id, 300s);
    ASSERT_EQ(sweep.value("state", ""), "finished") << sweep.dump(2) << c.logs();
    records[script] = c.get("/api/sweeps/" + id + "/ensemble");
    for (const std::string kind : {"trial", "member"}) {
      const Json page = c.get("/api/sweeps/" + id + "/trials?limit=50&kind=" + kind);
      ASSERT_EQ(page["total"], 4) << kind << page.dump(2);
      for (const auto& t : page["trials"]) {
        ASSERT_EQ(t["state"], "completed") << t.dump(2);
        losses[script][kind + std::to_string(t["number"].get<int>())] = t["value"].get<double>();
      }
    }
  }
  EXPECT_EQ(losses["softmax_trial.py"], losses["softmax_library_trial.py"]);
  const Json& by_hand = records["softmax_trial.py"];
  const Json& library = records["softmax_library_trial.py"];
  ASSERT_TRUE(by_hand.is_object() && library.is_object());
  EXPECT_EQ(library["members_completed"], 4);
  EXPECT_EQ(library["oob"]["rows_covered"], by_hand["oob"]["rows_covered"]) << library.dump(2);
  EXPECT_NEAR(library["ensemble"]["test"]["accuracy"].get<double>(),
              by_hand["ensemble"]["test"]["accuracy"].get<double>(), 1.0 / 200 + 1e-9)
      << library.dump(2) << by_hand.dump(2);
}

// XGBoost's callback through the worker (Debian's python3-xgboost): every
// boosting round of every trial is one report, step by step; a trial whose
// rounds fall behind the others' median is pruned, and the callback ends its
// training (the round under way finishes, no other starts).
TEST(PythonLibrary, TheXGBoostCallbackReportsEveryRoundAndStopsOnAPrune) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  const std::string script = write_script(c, "boosted.py", R"(import numpy as np
import xgboost as xgb
import hpo
from hpo.integrations.xgboost import HpoCallback

t = hpo.trial()
# Trials 0 and 1 learn: the median the pruner compares with. Trial 2 barely
# moves and has rounds enough to run until it is stopped (bounded by
# timeout_s); its 100,000 rows make a round last some 50 ms, so that it reports
# more slowly than the worker passes reports on (a burst of 200, then 50 a
# second): every round's report is kept however late the prune lands.
eta, rounds, rows = (0.3, 30, 2000) if t.number < 2 else (1e-5, 10**7, 100000)
rng = np.random.default_rng(0)
x = rng.normal(size=(rows, 8))
y = (x[:, 0] + 0.5 * x[:, 1] - x[:, 2] > 0).astype(int)
cut = rows * 3 // 4
dtrain, dvalid = xgb.DMatrix(x[:cut], y[:cut]), xgb.DMatrix(x[cut:], y[cut:])
booster = xgb.train({"objective": "binary:logistic", "eval_metric": "logloss", "eta": eta,
                     "max_depth": 3, "nthread": 1},
                    dtrain, num_boost_round=rounds, evals=[(dvalid, "validation")],
                    callbacks=[HpoCallback(t)], verbose_eval=False)
print(f"trained {booster.num_boosted_rounds()} rounds; stop: {t.stop_reason}")
if not t.should_stop():
    t.final(**{"validation-logloss": float(booster.eval(dvalid).split(":")[1])})
)");
  const Json spec = {
      {"name", "xgboost callback"},
      {"objective", {{"metric", "validation-logloss"}, {"mode", "min"}}},
      {"parameters", {{"x", {{"type", "float"}, {"min", 0.0}, {"max", 1.0}}}}},
      {"search", {{"algorithm", "random"}, {"max_trials", 3}, {"max_concurrent", 1}, {"seed", 1}}},
      {"early_stopping", {{"type", "median"}, {"warmup_steps", 2}, {"min_trials", 2}}},
      {"trial", {{"kind", "command"}, {"argv", {kPython, script}}, {"timeout_s", 300}}}};
  c.start_worker("w", 1);
  const std::string id = c.submit(spec);
  ASSERT_FALSE(id.empty());
  const Json sweep = c.wait_finished(id, 360s);
  ASSERT_EQ(sweep.value("state", ""), "finished") << sweep.dump(2) << c.logs();
  // Every report's steps, in order, with the callback's metric name.
  auto steps_of = [](const Json& t) {
    std::vector<std::int64_t> steps;
    for (const auto& r : t["reports"]) {
      EXPECT_TRUE(r["metrics"].contains("validation-logloss")) << r.dump();
      steps.push_back(r["step"].get<std::int64_t>());
    }
    return steps;
  };
  for (int number : {0, 1}) {
    const Json t = trial_of(c, id, number);
    ASSERT_EQ(t.value("state", ""), "completed") << t.dump(2);
    std::vector<std::int64_t> every(30);
    for (int i = 0; i < 30; ++i) every[i] = i;
    EXPECT_EQ(steps_of(t), every) << t["reports"].dump();
  }
  const Json pruned = trial_of(c, id, 2);
  ASSERT_EQ(pruned.value("state", ""), "pruned") << pruned.dump(2) << c.logs();
  const auto steps = steps_of(pruned);
  ASSERT_GE(steps.size(), 3u) << pruned["reports"].dump();  // past the warm-up
  for (std::size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i], std::int64_t(i));
  // Training ended on the prune: the rounds boosted are the rounds reported,
  // or one more (the round under way when the signal came is not reported).
  const std::string log = pruned.value("log_tail", "");
  const std::string mark = "trained ";
  const auto at = log.find(mark);
  ASSERT_NE(at, std::string::npos) << log;
  const auto rounds = std::stoll(log.substr(at + mark.size()));
  EXPECT_GE(rounds, std::int64_t(steps.size())) << log;
  EXPECT_LE(rounds, std::int64_t(steps.size()) + 1) << log;
  EXPECT_NE(log.find("stop: prune"), std::string::npos) << log;
}

// examples/pytorch/fashion_mnist.py, the real PyTorch program, through the
// worker: a drain while it trains makes it save model, optimiser and epoch
// (SIGUSR1, the library's checkpoint_on_stop), and the other worker's attempt
// resumes at the next epoch; the sweep ends with every trial done.
TEST(PythonLibrary, ThePyTorchExampleIsDrainedAndResumesOnAnotherWorker) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  Json spec =
      Json::parse(read_file(std::string(HPO_SOURCE_DIR) + "/examples/pytorch_fashion_mnist.json"));
  spec["search"]["max_trials"] = 2;
  spec["search"]["max_concurrent"] = 1;
  spec["trial"]["argv"] = {
      kPython,           std::string(HPO_SOURCE_DIR) + "/examples/pytorch/fashion_mnist.py",
      "--train-samples", "6000",
      "--epochs",        "4"};
  spec["trial"]["env"]["FASHION_MNIST_ROOT"] = c.home() + "/fashion-mnist";
  Process& first = c.start_worker("first", 1);
  const std::string id = c.submit(spec);
  ASSERT_FALSE(id.empty());
  const Json t = drain_and_finish_elsewhere(c, id, first, 1);
  ASSERT_EQ(t.value("state", ""), "completed") << t.dump(2);
  ASSERT_EQ(t["attempts"].size(), 2u) << t.dump(2);
  std::set<std::int64_t> steps;
  for (const auto& r : t["reports"])
    EXPECT_TRUE(steps.insert(r["step"].get<std::int64_t>()).second);
  EXPECT_EQ(steps, (std::set<std::int64_t>{0, 1, 2, 3})) << t["reports"].dump();
  EXPECT_NE(t.value("log_tail", "").find("resuming at epoch"), std::string::npos) << t.dump(2);
}

}  // namespace
}  // namespace hpo::e2e
