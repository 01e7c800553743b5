// The real hpo-worker binary against a real redis-server: finding a local
// scheduler through $HPO_HOME/scheduler.json, SIGTERM (exit 0, running trials
// left to lease expiry, their processes gone), and kill -9 (the trial's
// process dies with the worker).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <fstream>

#include "core/child_process.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/workers/agent/test_util.hpp"
#include "trials/redis/redis_store.hpp"
#include "workers/command_executor.hpp"

namespace hpo::workers {
namespace {

using hpo::testing::process_gone;
using hpo::testing::RedisServer;
using hpo::testing::wait_for;
using testing::read_file;
using trials::redis::RedisStore;

const std::string kWorker = std::string(HPO_BINARY_DIR) + "/workers/hpo-worker";

class WorkerBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = RedisStore::open(redis_.url());
    ASSERT_TRUE(s.ok());
    store_ = std::move(s.value());
  }

  // A command sweep whose trial runs `script` with the parameter a.
  trials::Trial command_trial(const std::string& script) {
    std::string spec = R"({"name": "bin", "objective": {"metric": "score", "mode": "max"},
      "parameters": {"a": {"type": "int", "min": 0, "max": 20}},
      "search": {"algorithm": "random", "max_trials": 10, "max_concurrent": 2, "seed": 1},
      "trial": {"kind": "command", "argv": [")" +
                       script + R"(", "{a}"], "env": {"D": ")" + dir_.path() + R"("}}})";
    auto sid = store_->create_sweep({"bin", spec, true});
    EXPECT_TRUE(sid.ok()) << sid.error().message;
    trials::NewTrial t;
    t.sweep_id = sid.ok() ? *sid : "";
    t.limit = 10;
    t.params = {{"a", std::int64_t{6}}};
    t.max_attempts = 3;
    auto r = store_->create_trial(t);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? *r : trials::Trial{};
  }

  trials::TrialState state(const std::string& id) {
    auto t = store_->get_trial(id);
    return t.ok() ? t->state : trials::TrialState::kQueued;
  }

  ChildProcess start_worker(std::vector<std::string> args, std::vector<std::string> env = {},
                            bool any_project = true) {
    SpawnOptions o;
    o.argv = {kWorker};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    if (args != std::vector<std::string>{"--help"}) {  // keep attempt dirs out of $HOME
      o.argv.push_back("--work-dir");
      o.argv.push_back(dir_.file("work"));
      // The trials write into the test's folder (0700): they run as the worker,
      // in its namespaces unless a test asks otherwise.
      o.argv.push_back("--trial-user");
      o.argv.push_back("none");
      if (std::find(args.begin(), args.end(), "--trial-namespaces") == args.end())
        o.argv.insert(o.argv.end(), {"--trial-namespaces", "off"});
      if (any_project) o.argv.push_back("--any-project-as-worker");
    }
    o.env = current_environment();
    o.env.insert(o.env.end(), env.begin(), env.end());
    auto c = ChildProcess::spawn(o);
    if (!c) throw std::runtime_error(c.error().message);
    return std::move(c.value());
  }

  // Polls the worker until it exits (its log goes to `log_`); nullopt on timeout.
  std::optional<int> wait_exit(ChildProcess& worker, std::chrono::seconds limit) {
    auto sink = [this](Stream, std::string_view line) { (log_ += line) += '\n'; };
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline)
      if (worker.poll(50, sink)) return worker.exit_status();
    return std::nullopt;
  }

  RedisServer redis_;
  testing::TempDir dir_;
  std::unique_ptr<RedisStore> store_;
  std::string log_;
};

// A worker whose trials run as itself takes one project's trials, or every
// project's only when told so: without either it refuses to start, saying why.
TEST_F(WorkerBinaryTest, AWorkerRunningTrialsAsItselfNeedsAProjectOrTheOptOut) {
  auto refused = start_worker({"--redis", redis_.url(), "--name", "shared"}, {}, false);
  auto status = wait_exit(refused, std::chrono::seconds(30));
  ASSERT_TRUE(status.has_value()) << log_;
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 2) << describe_wait_status(*status);
  EXPECT_NE(log_.find("trials would run as this worker"), std::string::npos) << log_;
  EXPECT_NE(log_.find("--project NAME"), std::string::npos) << log_;
  EXPECT_NE(log_.find("--any-project-as-worker"), std::string::npos) << log_;
  // Bound to one project it starts, and says so in its registration.
  log_.clear();
  auto bound =
      start_worker({"--redis", redis_.url(), "--name", "bound", "--project", "team"}, {}, false);
  ASSERT_TRUE(wait_for([&] {
    auto workers = store_->list_workers();
    return workers.ok() && workers->size() == 1 && workers->front().project == "team";
  }));
  bound.signal_group(SIGTERM);
  ASSERT_TRUE(wait_exit(bound, std::chrono::seconds(20)).has_value()) << log_;
  // Its trials in namespaces of their own (none of its files, processes or
  // ports in view), it takes every project's.
  log_.clear();
  auto confined = start_worker(
      {"--redis", redis_.url(), "--name", "confined", "--trial-namespaces", "on"}, {}, false);
  ASSERT_TRUE(wait_for([&] {
    auto workers = store_->list_workers();
    if (!workers.ok()) return false;
    for (const auto& w : *workers)
      if (w.name == "confined") return w.project.empty();
    return false;
  })) << log_;
  confined.signal_group(SIGTERM);
  ASSERT_TRUE(wait_exit(confined, std::chrono::seconds(20)).has_value()) << log_;
}

// Two workers of the same name on one host would release each other's
// leases: the second refuses to start.
TEST_F(WorkerBinaryTest, ASecondWorkerWithTheSameNameRefusesToStart) {
  auto first = start_worker({"--redis", redis_.url(), "--name", "twin"});
  ASSERT_TRUE(
      wait_for([&] { return std::filesystem::exists(dir_.file("work/.hpo-worker.lock")); }));
  auto second = start_worker({"--redis", redis_.url(), "--name", "twin"});
  auto status = wait_exit(second, std::chrono::seconds(30));
  ASSERT_TRUE(status.has_value()) << log_;
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 1) << describe_wait_status(*status);
  EXPECT_NE(log_.find("is --name (twin) unique on this host"), std::string::npos) << log_;
  first.signal_group(SIGTERM);
  ASSERT_TRUE(wait_exit(first, std::chrono::seconds(20)).has_value());
}

// A trial that prints its environment: nothing of the worker's own settings
// (the Redis URL, a token) nor stray secrets reaches it; PATH and its own HPO_* do.
TEST_F(WorkerBinaryTest, NoSecretReachesATrialProgram) {
  auto script = dir_.script("env.sh", R"(env > "$D/env"
echo "hpo-metric {\"final\": true, \"score\": 1}")");
  auto trial = command_trial(script);
  auto worker =
      start_worker({"--lease-ms", "3000"}, {"HPO_REDIS=" + redis_.url(), "HPO_TOKEN=tok-secret-123",
                                            "AWS_SECRET_ACCESS_KEY=aws-secret-456"});
  ASSERT_TRUE(wait_for([&] { return state(trial.id) == trials::TrialState::kCompleted; })) << log_;
  const std::string env = read_file(dir_.file("env"));
  EXPECT_EQ(env.find("tok-secret-123"), std::string::npos) << env;
  EXPECT_EQ(env.find("aws-secret-456"), std::string::npos) << env;
  EXPECT_EQ(env.find("HPO_REDIS="), std::string::npos) << env;
  EXPECT_NE(env.find("PATH="), std::string::npos) << env;
  EXPECT_NE(env.find("HPO_TRIAL_ID=" + trial.id), std::string::npos) << env;
  EXPECT_NE(env.find("D=" + dir_.path()), std::string::npos) << env;  // the trial's own env
  worker.signal_group(SIGTERM);
  ASSERT_TRUE(wait_exit(worker, std::chrono::seconds(20)).has_value());
}

TEST_F(WorkerBinaryTest, FindsALocalSchedulerThroughItsStateFileAndExitsZeroOnSigterm) {
  auto script =
      dir_.script("sq.sh", R"(echo "hpo-metric {\"final\": true, \"score\": $(($1 * $1))}")");
  auto trial = command_trial(script);
  std::ofstream(dir_.file("scheduler.json"))
      << R"({"redis": ")" << redis_.url() << R"(", "api": "http://127.0.0.1:1", "pid": )"
      << ::getpid() << "}";
  auto worker =
      start_worker({"--name", "bin-w", "--lease-ms", "3000"}, {"HPO_HOME=" + dir_.path()});
  ASSERT_TRUE(wait_for([&] { return state(trial.id) == trials::TrialState::kCompleted; }));
  auto done = store_->get_trial(trial.id);
  ASSERT_TRUE(done.ok() && done->value.has_value());
  EXPECT_DOUBLE_EQ(*done->value, 36);
  EXPECT_EQ(done->worker, "bin-w");

  worker.signal_group(SIGTERM);
  auto status = wait_exit(worker, std::chrono::seconds(10));
  ASSERT_TRUE(status.has_value()) << log_;
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << describe_wait_status(*status);
}

// SIGTERM drains: after --drain-grace-s the trial is stopped and its lease
// released, so the trial is queued again without a failed attempt.
TEST_F(WorkerBinaryTest, SigtermDrainsThenReleasesTheRunningTrial) {
  auto script = dir_.script("hang.sh", R"(
echo $$ > "$D/pid.tmp" && mv "$D/pid.tmp" "$D/pid"
exec sleep 1000
)");
  auto trial = command_trial(script);
  auto worker =
      start_worker({"--redis", redis_.url(), "--kill-grace-s", "1", "--drain-grace-s", "0.3"});
  ASSERT_TRUE(wait_for([&] { return std::filesystem::exists(dir_.file("pid")); }));
  pid_t trial_pid = std::stoi(read_file(dir_.file("pid")));

  worker.signal_group(SIGTERM);
  auto status = wait_exit(worker, std::chrono::seconds(20));
  ASSERT_TRUE(status.has_value()) << log_;
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << log_;
  EXPECT_TRUE(wait_for([&] { return process_gone(trial_pid); }));
  auto t = store_->get_trial(trial.id);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->state, trials::TrialState::kQueued) << log_;
  EXPECT_EQ(t->attempt, 1);
  EXPECT_EQ(t->released, 1);
  EXPECT_NE(log_.find("worker draining"), std::string::npos) << log_;
  EXPECT_NE(log_.find("trial released"), std::string::npos) << log_;
}

TEST_F(WorkerBinaryTest, ATrialDiesWithAWorkerKilledBySigkill) {
  auto script = dir_.script("hang.sh", R"(
echo $$ > "$D/pid.tmp" && mv "$D/pid.tmp" "$D/pid"
exec sleep 1000
)");
  command_trial(script);
  auto worker = start_worker({"--redis", redis_.url()});
  ASSERT_TRUE(wait_for([&] { return std::filesystem::exists(dir_.file("pid")); }));
  pid_t trial_pid = std::stoi(read_file(dir_.file("pid")));
  ASSERT_FALSE(process_gone(trial_pid));
  ::kill(worker.pid(), SIGKILL);
  ASSERT_TRUE(wait_exit(worker, std::chrono::seconds(10)).has_value());
  EXPECT_TRUE(wait_for([&] { return process_gone(trial_pid); }));
}

TEST_F(WorkerBinaryTest, WaitsForALocalSchedulerAndExitsZeroOnSigtermMeanwhile) {
  auto worker = start_worker({"--wait-s", "60"}, {"HPO_HOME=" + dir_.path()});
  auto sink = [this](Stream, std::string_view line) { (log_ += line) += '\n'; };
  ASSERT_TRUE(wait_for([&] {
    worker.poll(0, sink);
    return log_.find("waiting up to 60 s for a local hpo-scheduler") != std::string::npos;
  }));
  worker.signal_group(SIGTERM);
  auto status = wait_exit(worker, std::chrono::seconds(10));
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << log_;
}

TEST_F(WorkerBinaryTest, GivesUpWithAClearMessageWhenNoSchedulerAppears) {
  auto worker = start_worker({"--wait-s", "0.2"}, {"HPO_HOME=" + dir_.path()});
  auto status = wait_exit(worker, std::chrono::seconds(10));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 1);
  EXPECT_NE(log_.find("no local hpo-scheduler found"), std::string::npos) << log_;
  EXPECT_NE(log_.find("--redis URL"), std::string::npos) << log_;
}

TEST_F(WorkerBinaryTest, HelpListsTheFlagsAndBadFlagsExitTwo) {
  auto help = start_worker({"--help"});
  auto st = wait_exit(help, std::chrono::seconds(10));
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(WEXITSTATUS(*st), 0);
  EXPECT_NE(log_.find("--slots"), std::string::npos);
  auto bad = start_worker({"--slots", "0"});
  st = wait_exit(bad, std::chrono::seconds(10));
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(WEXITSTATUS(*st), 2);
}

}  // namespace
}  // namespace hpo::workers
