// The Agent against the real RedisStore (tests/support/test_store.hpp: one
// redis-server for this executable, a key prefix per test): slot accounting
// for multi-slot trials, prune/cancel control, timeouts, and kinds this worker
// cannot run.
#include <algorithm>

#include <fcntl.h>
#include <gtest/gtest.h>

#include <sys/file.h>
#include <unistd.h>
#include <atomic>

#include <filesystem>
#include <fstream>

#include "search/test_functions.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/test_store.hpp"
#include "trials/redis/redis_store.hpp"
#include "trials/spec/spec.hpp"
#include "workers/agent/agent.hpp"

namespace hpo::workers {
namespace {

using hpo::testing::wait_for;
using trials::redis::RedisStore;

// Each agent thread gets a connection of its own (a RedisStore is one
// connection, not thread-safe) on the test's key prefix. The roles the agent
// has no business with count their uses: it needs the queue and the worker
// registry only (a claim carries the spec).
class CountingConnection final : public trials::Store {
 public:
  CountingConnection(std::unique_ptr<RedisStore> s, std::atomic<int>& foreign)
      : s_(std::move(s)), foreign_(foreign) {}
  trials::SweepStore& sweeps() override { return ++foreign_, *s_; }
  trials::TrialStore& trials() override { return ++foreign_, *s_; }
  trials::TrialQueue& queue() override { return *s_; }
  trials::WorkerRegistry& workers() override { return *s_; }
  trials::EventLog& events() override { return ++foreign_, *s_; }
  trials::ArtifactStore& artifacts() override { return ++foreign_, *s_; }
  trials::AccessStore& access() override { return ++foreign_, *s_; }

 private:
  std::unique_ptr<RedisStore> s_;
  std::atomic<int>& foreign_;
};

class AgentSlotsTest : public ::testing::Test {
 protected:
  // The agent's connections: each call opens a new one on this test's prefix.
  ConnectionFactory connect() {
    return [this]() -> Result<std::unique_ptr<trials::Store>> {
      return std::unique_ptr<trials::Store>(std::make_unique<CountingConnection>(
          hpo::testing::open_test_store(test_store_.prefix), foreign_roles_));
    };
  }

  Agent make_agent(int slots, ExecutorRegistry executors = builtin_executors(1.0)) {
    AgentOptions o;
    o.name = "mem-w";
    o.host = "h";
    o.slots = slots;
    o.lease_ms = 600;  // registry refresh every 200 ms
    return Agent(o, connect(), std::move(executors));
  }

  std::string sweep(const std::string& trial_json) {
    std::string spec = R"({"name": "m", "objective": {"metric": "value", "mode": "min"},
      "parameters": {"x1": {"type": "float", "min": -5, "max": 10},
                     "x2": {"type": "float", "min": 0, "max": 15}},
      "search": {"algorithm": "random", "max_trials": 50, "max_concurrent": 4, "seed": 1},
      "trial": )" + trial_json +
                       "}";
    EXPECT_TRUE(trials::parse_spec(spec).ok()) << trials::parse_spec(spec).error().message;
    auto id = store_.create_sweep({"m", spec, false});
    EXPECT_TRUE(id.ok());
    return id.ok() ? *id : "";
  }

  trials::Trial trial(const std::string& sid, std::int64_t number, int slots = 1) {
    trials::NewTrial t;
    t.sweep_id = sid;
    t.number = number;
    t.limit = 50;
    t.params = {{"x1", 1.0 + static_cast<double>(number)}, {"x2", 2.0}};
    t.slots = slots;
    auto r = store_.create_trial(t);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? *r : trials::Trial{};
  }

  trials::Trial get(const std::string& id) { return *store_.get_trial(id); }

  hpo::testing::TestStore test_store_;
  RedisStore& store_ = test_store_.store;  // the test thread's own connection
  std::atomic<int> foreign_roles_{0};      // the agent's uses of roles it should not need
};

TEST_F(AgentSlotsTest, ATwoSlotTrialNeverOverlapsAnotherOnTwoSlots) {
  auto sid = sweep(R"({"kind": "synthetic", "function": "branin", "sleep_s": 0.2})");
  auto wide = trial(sid, 0, /*slots=*/2);
  auto a = trial(sid, 1);
  auto b = trial(sid, 2);
  auto agent = make_agent(2);
  ASSERT_TRUE(agent.start().ok());
  ASSERT_TRUE(wait_for([&] {
    return get(wide.id).state == trials::TrialState::kCompleted &&
           get(a.id).state == trials::TrialState::kCompleted &&
           get(b.id).state == trials::TrialState::kCompleted;
  }));
  agent.stop();
  EXPECT_EQ(foreign_roles_.load(), 0) << "the agent read sweeps, trials, events or artifacts";
  auto w = get(wide.id);
  for (const auto& id : {a.id, b.id}) {
    auto t = get(id);
    bool disjoint = t.finished_ms <= w.started_ms || t.started_ms >= w.finished_ms;
    EXPECT_TRUE(disjoint) << id << " [" << t.started_ms << ", " << t.finished_ms
                          << "] overlaps the 2-slot trial [" << w.started_ms << ", "
                          << w.finished_ms << "]";
  }
  // The two 1-slot trials ran side by side: both slots were used.
  auto ta = get(a.id), tb = get(b.id);
  EXPECT_TRUE(ta.started_ms < tb.finished_ms && tb.started_ms < ta.finished_ms);
}

TEST_F(AgentSlotsTest, PruneControlStopsTheTrialPromptly) {
  auto sid = sweep(R"({"kind": "synthetic", "function": "branin", "sleep_s": 60, "steps": 600})");
  auto t = trial(sid, 0);
  auto agent = make_agent(1);
  ASSERT_TRUE(agent.start().ok());
  ASSERT_TRUE(wait_for([&] {
    auto r = store_.get_reports(t.id, 0, trials::kAll);
    return r.ok() && !r->reports.empty();
  }));
  ASSERT_TRUE(store_.set_control(t.id, trials::Control::kPrune).ok());
  ASSERT_TRUE(wait_for([&] { return get(t.id).state == trials::TrialState::kPruned; },
                       std::chrono::seconds(3)));
  agent.stop();
}

// A program that prints metric lines in a tight loop: the burst gets through,
// the flood is thinned, the trial still completes with its final value.
TEST_F(AgentSlotsTest, AReportFloodIsThinned) {
  char tmpl[] = "/tmp/hpo-flood-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const std::string script = dir + "/flood.sh";
  std::ofstream(script) << "i=0\n"
                           "while [ $i -lt 5000 ]; do\n"
                           "  echo \"hpo-metric {\\\"step\\\": $i, \\\"value\\\": 1}\"\n"
                           "  i=$((i+1))\n"
                           "done\n"
                           "echo 'hpo-metric {\"final\": true, \"value\": 2}'\n";
  auto sid = sweep(R"({"kind": "command", "argv": ["/bin/sh", ")" + script + R"("]})");
  auto t = trial(sid, 0);
  auto agent = make_agent(1);
  ASSERT_TRUE(agent.start().ok());
  ASSERT_TRUE(
      wait_for([&] { return trials::is_finished(get(t.id).state); }, std::chrono::seconds(60)));
  agent.stop();
  std::filesystem::remove_all(dir);
  ASSERT_EQ(get(t.id).state, trials::TrialState::kCompleted) << get(t.id).error;
  EXPECT_EQ(*get(t.id).value, 2);
  auto reports = store_.get_reports(t.id, 0, trials::kAll);
  ASSERT_TRUE(reports.ok());
  EXPECT_GE(reports->reports.size(), 200u);   // the burst
  EXPECT_LT(reports->reports.size(), 5000u);  // not the flood
  // Batched: reports that come together go in one call, one event.
  auto events = store_.read_events("0", 100000, 0);
  ASSERT_TRUE(events.ok());
  const auto sends = std::count_if(events->begin(), events->end(), [&](const trials::Event& e) {
    return e.type == "trial.reported" && e.trial_id == t.id;
  });
  EXPECT_GE(sends, 1);
  EXPECT_LE(sends * 2, static_cast<std::int64_t>(reports->reports.size()))
      << sends << " sends for " << reports->reports.size() << " reports";
}

TEST_F(AgentSlotsTest, TheTrialTimeoutAppliesToEveryKind) {
  auto sid = sweep(R"({"kind": "synthetic", "function": "branin", "sleep_s": 60, "timeout_s": 0.2,
                       "max_attempts": 1})");
  auto t = trial(sid, 0);
  auto agent = make_agent(1);
  ASSERT_TRUE(agent.start().ok());
  ASSERT_TRUE(wait_for([&] { return get(t.id).state == trials::TrialState::kFailed; }));
  agent.stop();
  EXPECT_EQ(get(t.id).error, "timed out after 0.2 s");
}

TEST_F(AgentSlotsTest, AKindWithoutAnExecutorFailsWithTheReason) {
  auto sid = sweep(R"({"kind": "synthetic", "function": "branin", "max_attempts": 1})");
  auto t = trial(sid, 0);
  ExecutorRegistry only_command = builtin_executors(1.0);
  only_command.erase(trials::TrialKind::kSynthetic);
  auto agent = make_agent(1, std::move(only_command));
  ASSERT_TRUE(agent.start().ok());
  ASSERT_TRUE(wait_for([&] { return get(t.id).state == trials::TrialState::kFailed; }));
  agent.stop();
  EXPECT_EQ(get(t.id).error, "this worker cannot run trials of kind synthetic");
}

TEST_F(AgentSlotsTest, RegistersItselfWithSlotsAndRunningTrials) {
  auto sid = sweep(R"({"kind": "synthetic", "function": "branin", "sleep_s": 60})");
  auto t = trial(sid, 0);
  auto agent = make_agent(3);
  ASSERT_TRUE(agent.start().ok());
  ASSERT_TRUE(wait_for([&] {
    auto w = store_.list_workers();
    return w.ok() && w->size() == 1 && (*w)[0].busy_slots == 1;
  }));
  auto w = (*store_.list_workers())[0];
  EXPECT_EQ(w.name, "mem-w");
  EXPECT_EQ(w.slots, 3);
  EXPECT_EQ(w.trials, std::vector<std::string>{t.id});
  agent.stop();
}

// Work directories of dead workers on this host are removed at start; a live
// worker's (its lock held) and anything that is not a worker's are left alone.
TEST_F(AgentSlotsTest, RemovesTheWorkDirectoriesOfDeadWorkers) {
  namespace fs = std::filesystem;
  char tmpl[] = "/tmp/hpo-work-XXXXXX";
  const fs::path base = ::mkdtemp(tmpl);
  auto make = [&](const std::string& name, bool lock_file) {
    fs::create_directories(base / name / "s-0-a0");
    std::ofstream(base / name / "s-0-a0" / "model.pt") << "bytes";
    if (lock_file) std::ofstream(base / name / ".hpo-worker.lock") << "";
  };
  make("dead-worker", true);
  make("live-worker", true);
  make("not-a-worker", false);
  int live = ::open((base / "live-worker" / ".hpo-worker.lock").c_str(), O_RDWR);
  ASSERT_GE(live, 0);
  ASSERT_EQ(::flock(live, LOCK_EX | LOCK_NB), 0);
  AgentOptions o;
  o.name = "me";
  o.work_root = (base / "me").string();
  Agent agent(o, connect(), builtin_executors(1.0));
  ASSERT_TRUE(agent.start().ok());
  EXPECT_FALSE(fs::exists(base / "dead-worker"));
  EXPECT_TRUE(fs::exists(base / "live-worker" / "s-0-a0" / "model.pt"));
  EXPECT_TRUE(fs::exists(base / "not-a-worker" / "s-0-a0" / "model.pt"));
  EXPECT_TRUE(fs::exists(base / "me" / ".hpo-worker.lock"));
  agent.stop();
  ::close(live);
  fs::remove_all(base);
}

}  // namespace
}  // namespace hpo::workers
