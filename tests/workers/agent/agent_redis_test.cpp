// A whole Agent (in-process, its real threads) against a real redis-server:
// sweeps and trials are created directly through RedisStore, the agent claims,
// runs and completes them; lease loss is provoked through the store's reaper.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "search/test_functions.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/workers/agent/test_util.hpp"
#include "trials/redis/redis_store.hpp"
#include "trials/spec/spec.hpp"
#include "workers/agent/agent.hpp"

namespace hpo::workers {
namespace {

using hpo::testing::RedisServer;
using hpo::testing::wait_for;
using trials::redis::RedisStore;

constexpr const char* kPrefix = "agtest:";

// Holds a stale attempt's completion back until the trial's next attempt has
// been claimed: the order in which a refusal meets the retry already running.
struct CompletionGate {
  std::mutex mu;
  std::condition_variable cv;
  int hold_below = -1;  // completions of attempts below this wait for its claim
  int claimed = -1;     // the highest attempt claimed so far
  // A claim's reply held back on its way to the agent (until hold_claims is cleared).
  bool hold_claims = false;
  bool claim_held = false;
};

// Passes everything through to a RedisStore, except that heartbeats can be
// swallowed (answered "ok" without reaching Redis), so the lease really expires.
class SwallowingConnection final : public trials::Store, public trials::TrialQueue {
 public:
  SwallowingConnection(std::unique_ptr<RedisStore> impl, const std::atomic<bool>& swallow,
                       const std::atomic<bool>& strip_spec, CompletionGate& gate)
      : impl_(std::move(impl)), swallow_(swallow), strip_spec_(strip_spec), gate_(gate) {}
  trials::SweepStore& sweeps() override { return *impl_; }
  trials::TrialStore& trials() override { return *impl_; }
  trials::TrialQueue& queue() override { return *this; }
  trials::WorkerRegistry& workers() override { return *impl_; }
  trials::EventLog& events() override { return *impl_; }
  trials::ArtifactStore& artifacts() override { return *impl_; }
  trials::AccessStore& access() override { return *impl_; }

  Result<trials::Claims> claim_batch(const std::string& w, const trials::Offer& offer,
                                     int max_trials, std::int64_t lease_ms) override {
    auto c = impl_->claim_batch(w, offer, max_trials, lease_ms);
    // As a store whose functions an older hpo reloaded would answer.
    if (c.ok() && strip_spec_.load())
      for (auto& claim : c->claims) claim.spec_json.clear();
    if (c.ok() && !c->claims.empty()) {
      std::unique_lock lk(gate_.mu);
      for (const auto& claim : c->claims)
        gate_.claimed = std::max(gate_.claimed, claim.trial.attempt);
      gate_.claim_held = gate_.hold_claims;
      gate_.cv.notify_all();
      gate_.cv.wait_for(lk, std::chrono::seconds(10), [&] { return !gate_.hold_claims; });
    }
    return c;
  }
  Result<bool> wait_for_work(const std::string& cursor, int block_ms) override {
    return impl_->wait_for_work(cursor, block_ms);
  }
  Result<std::vector<Result<trials::Control>>> heartbeat_batch(
      const std::string& w, const std::vector<trials::HeldLease>& leases,
      std::int64_t lease_ms) override {
    if (swallow_.load())
      return std::vector<Result<trials::Control>>(leases.size(), trials::Control::kNone);
    return impl_->heartbeat_batch(w, leases, lease_ms);
  }
  Result<trials::Control> report_batch(const std::string& id, int attempt, const std::string& w,
                                       const std::vector<trials::StepReport>& r) override {
    return impl_->report_batch(id, attempt, w, r);
  }
  Result<std::vector<Status>> complete_batch(const std::string& w,
                                             const std::vector<trials::Completion>& done) override {
    {
      std::unique_lock lk(gate_.mu);
      for (const auto& d : done)
        if (d.attempt < gate_.hold_below)
          gate_.cv.wait_for(lk, std::chrono::seconds(10),
                            [&] { return gate_.claimed >= gate_.hold_below; });
    }
    return impl_->complete_batch(w, done);
  }
  Status release(const std::string& id, int attempt, const std::string& w,
                 const std::string& reason, bool counted) override {
    return impl_->release(id, attempt, w, reason, counted);
  }
  Status put_artifact(const std::string& id, int attempt, const std::string& w,
                      const std::string& name, const std::string& bytes) override {
    return impl_->put_artifact(id, attempt, w, name, bytes);
  }
  Result<std::vector<trials::HeldLease>> worker_leases(const std::string& w) override {
    return impl_->worker_leases(w);
  }
  Result<int> reap(int max, std::int64_t outage_ms) override { return impl_->reap(max, outage_ms); }
  Result<bool> rank_heartbeat(const std::string& t, int a, const std::string& w,
                              std::int64_t lease_ms) override {
    return impl_->rank_heartbeat(t, a, w, lease_ms);
  }
  Result<bool> release_gang(const std::string& t, int a, const std::string& w) override {
    return impl_->release_gang(t, a, w);
  }
  Status publish_rendezvous(const std::string& t, int a, const std::string& w,
                            const std::string& address, std::int64_t ttl_ms) override {
    return impl_->publish_rendezvous(t, a, w, address, ttl_ms);
  }
  Result<std::optional<std::string>> rendezvous(const std::string& t, int a,
                                                const std::string& w) override {
    return impl_->rendezvous(t, a, w);
  }

 private:
  std::unique_ptr<RedisStore> impl_;
  const std::atomic<bool>& swallow_;
  const std::atomic<bool>& strip_spec_;
  CompletionGate& gate_;
};

class AgentRedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = RedisStore::open(redis_.url(), kPrefix);
    ASSERT_TRUE(s.ok()) << s.error().message;
    admin_ = std::move(s.value());
  }

  ConnectionFactory factory() {
    return [this]() -> Result<std::unique_ptr<trials::Store>> {
      auto s = RedisStore::open(redis_.url(), kPrefix);
      if (!s) return s.error();
      return std::unique_ptr<trials::Store>(std::make_unique<SwallowingConnection>(
          std::move(s.value()), swallow_, strip_spec_, gate_));
    };
  }

  AgentOptions options(int slots, std::int64_t lease_ms) {
    AgentOptions o;
    o.name = "w-test";
    o.host = "testhost";
    o.slots = slots;
    o.lease_ms = lease_ms;
    o.work_root = dir_.file("work");
    return o;
  }

  std::string create_sweep(const std::string& spec_json) {
    auto spec = trials::parse_spec(spec_json);
    EXPECT_TRUE(spec.ok()) << spec.error().message;
    auto id = admin_->create_sweep({"test", spec_json, false});
    EXPECT_TRUE(id.ok()) << id.error().message;
    return id.ok() ? *id : "";
  }

  trials::Trial create_trial(const std::string& sweep, std::int64_t number, search::Params params,
                             int slots = 1, int max_attempts = 3) {
    trials::NewTrial t;
    t.sweep_id = sweep;
    t.number = number;
    t.limit = 1000;
    t.params = std::move(params);
    t.slots = slots;
    t.max_attempts = max_attempts;
    auto r = admin_->create_trial(t);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? *r : trials::Trial{};
  }

  trials::Trial trial(const std::string& id) {
    auto t = admin_->get_trial(id);
    EXPECT_TRUE(t.ok()) << t.error().message;
    return t.ok() ? *t : trials::Trial{};
  }

  RedisServer redis_;
  testing::TempDir dir_;
  std::unique_ptr<RedisStore> admin_;
  std::atomic<bool> swallow_{false};
  std::atomic<bool> strip_spec_{false};
  CompletionGate gate_;
};

std::string synthetic_spec(const std::string& extra = "") {
  return R"({"name": "syn", "objective": {"metric": "value", "mode": "min"},
    "parameters": {"x1": {"type": "float", "min": -5, "max": 10},
                   "x2": {"type": "float", "min": 0, "max": 15}},
    "search": {"algorithm": "random", "max_trials": 100, "max_concurrent": 4, "seed": 1},
    "trial": {"kind": "synthetic", "function": "branin")" +
         extra + "}}";
}

TEST_F(AgentRedisTest, TwoSlotsCompleteEveryTrialWithTheRightValue) {
  const std::string syn = create_sweep(synthetic_spec(R"(, "steps": 3)"));
  auto script = dir_.script("mul.sh", R"(
echo "hpo-metric {\"step\": 1, \"score\": 0}"
echo "hpo-metric {\"final\": true, \"score\": $(($1 * $2))}"
)");
  const std::string cmd =
      create_sweep(R"({"name": "cmd", "objective": {"metric": "score", "mode": "max"},
    "parameters": {"a": {"type": "int", "min": 0, "max": 20}, "b": {"type": "int", "min": 0, "max": 20}},
    "search": {"algorithm": "random", "max_trials": 100, "max_concurrent": 4, "seed": 1},
    "trial": {"kind": "command", "argv": [")" +
                   script + R"(", "{a}", "{b}"]}})");

  std::vector<std::pair<trials::Trial, double>> expected;
  for (int i = 0; i < 6; ++i) {
    double x1 = -5 + 2.5 * i, x2 = 1.5 * i;
    // The last one needs both slots.
    auto t = create_trial(syn, i, {{"x1", x1}, {"x2", x2}}, i == 5 ? 2 : 1);
    expected.emplace_back(t, search::branin({x1, x2}));
  }
  for (int i = 0; i < 4; ++i) {
    auto t = create_trial(cmd, i, {{"a", std::int64_t{i + 2}}, {"b", std::int64_t{7 - i}}});
    expected.emplace_back(t, (i + 2) * (7 - i));
  }

  Agent agent(options(2, 3000), factory(), builtin_executors(1.0));
  ASSERT_TRUE(agent.start().ok());
  ASSERT_TRUE(wait_for(
      [&] {
        for (const auto& [t, v] : expected)
          if (!trials::is_finished(trial(t.id).state)) return false;
        return true;
      },
      std::chrono::seconds(30)));

  for (const auto& [t, v] : expected) {
    auto got = trial(t.id);
    EXPECT_EQ(got.state, trials::TrialState::kCompleted) << t.id << ": " << got.error;
    ASSERT_TRUE(got.value.has_value()) << t.id;
    EXPECT_DOUBLE_EQ(*got.value, v) << t.id;
    EXPECT_EQ(got.worker, "w-test");
    EXPECT_EQ(got.attempt, 0);
  }
  // The synthetic learning curve went through the store.
  auto reports = admin_->get_reports(expected[0].first.id, 0, trials::kAll);
  ASSERT_TRUE(reports.ok());
  EXPECT_EQ(reports->reports.size(), 3u);

  auto workers = admin_->list_workers();
  ASSERT_TRUE(workers.ok());
  ASSERT_EQ(workers->size(), 1u);
  EXPECT_EQ((*workers)[0].name, "w-test");
  EXPECT_EQ((*workers)[0].slots, 2);

  agent.stop();
  EXPECT_EQ(agent.stats().completed, static_cast<std::int64_t>(expected.size()));
  EXPECT_EQ(agent.stats().dropped, 0);
}

// A claim without the sweep's spec (the store's functions reloaded by an
// older hpo) is given back, not failed: no attempt counts against the trial,
// and it completes once claims carry the spec again.
TEST_F(AgentRedisTest, AClaimWithoutTheSpecIsReleasedNotFailed) {
  auto sid = create_sweep(synthetic_spec());
  auto t = create_trial(sid, 0, {{"x1", 1.0}, {"x2", 2.0}}, 1, /*max_attempts=*/1);
  strip_spec_ = true;
  Agent agent(options(1, 3000), factory(), builtin_executors(1.0));
  ASSERT_TRUE(agent.start().ok());
  ASSERT_TRUE(wait_for([&] { return trial(t.id).released >= 1; }, std::chrono::seconds(30)));
  EXPECT_NE(trial(t.id).state, trials::TrialState::kFailed);
  strip_spec_ = false;
  ASSERT_TRUE(wait_for([&] { return trial(t.id).state == trials::TrialState::kCompleted; },
                       std::chrono::seconds(30)));
  agent.stop();
  auto done = trial(t.id);
  EXPECT_GE(done.released, 1);
  EXPECT_TRUE(done.value.has_value());
}

TEST_F(AgentRedisTest, TrialWhoseLeaseWasLostIsStoppedAndNotReported) {
  const std::string sid = create_sweep(synthetic_spec(R"(, "sleep_s": 60)"));
  auto t = create_trial(sid, 0, {{"x1", 1.0}, {"x2", 2.0}});
  Agent agent(options(1, 600), factory(), builtin_executors(1.0));
  swallow_ = true;  // the worker believes it heartbeats; Redis sees nothing
  ASSERT_TRUE(agent.start().ok());
  ASSERT_TRUE(wait_for([&] { return trial(t.id).state == trials::TrialState::kRunning; }));
  // The lease lapses (server time); the reaper re-queues attempt 1.
  ASSERT_TRUE(wait_for([&] {
    auto n = admin_->reap(10, 0);
    return n.ok() && *n == 1;
  }));
  swallow_ = false;  // the next heartbeat of attempt 0 is refused: lease lost
  ASSERT_TRUE(wait_for([&] { return agent.stats().dropped == 1; }, std::chrono::seconds(5)));

  auto attempts = admin_->get_attempts(t.id);
  ASSERT_TRUE(attempts.ok());
  ASSERT_GE(attempts->size(), 1u);
  EXPECT_EQ((*attempts)[0].outcome, "lease_expired");
  auto now = trial(t.id);
  EXPECT_EQ(now.attempt, 1);
  EXPECT_FALSE(now.value.has_value());
  EXPECT_FALSE(trials::is_finished(now.state));

  // Attempt 1 (claimed again by the same agent) obeys a cancel.
  ASSERT_TRUE(admin_->cancel_sweep(sid).ok());
  ASSERT_TRUE(wait_for([&] { return trial(t.id).state == trials::TrialState::kCancelled; }));
  agent.stop();
  EXPECT_EQ(agent.stats().dropped, 1);
}

TEST_F(AgentRedisTest, StaleCompletionIsRefusedAndTheRetryCompletes) {
  const std::string sid = create_sweep(synthetic_spec(R"(, "sleep_s": 1.0)"));
  auto t = create_trial(sid, 0, {{"x1", 3.0}, {"x2", 4.0}});
  auto o = options(1, 300);
  // An attempt this agent no longer counts as running is soon given back as an
  // orphan: attempt 1 (1 s) outlasts that only if the refusal left it alone.
  o.orphan_after = std::chrono::milliseconds(200);
  Agent agent(o, factory(), builtin_executors(1.0));
  swallow_ = true;
  // Attempt 0's refusal arrives only once attempt 1 is claimed by this same
  // agent: the refusal must not take attempt 1 with it.
  gate_.hold_below = 1;
  ASSERT_TRUE(agent.start().ok());
  ASSERT_TRUE(wait_for([&] { return trial(t.id).state == trials::TrialState::kRunning; }));
  ASSERT_TRUE(wait_for([&] {
    auto n = admin_->reap(10, 0);
    return n.ok() && *n == 1;
  }));
  // Attempt 0 finishes unaware and is refused; attempt 1 runs and is accepted.
  ASSERT_TRUE(wait_for([&] { return agent.stats().dropped == 1; }));
  swallow_ = false;
  ASSERT_TRUE(wait_for([&] { return trial(t.id).state == trials::TrialState::kCompleted; }));
  auto done = trial(t.id);
  EXPECT_EQ(done.attempt, 1);
  EXPECT_EQ(done.released, 0);  // attempt 1 was never taken for an orphan
  EXPECT_DOUBLE_EQ(*done.value, search::branin({3.0, 4.0}));
  auto attempts = admin_->get_attempts(t.id);
  ASSERT_TRUE(attempts.ok());
  EXPECT_EQ(attempts->size(), 2u);
  agent.stop();
}

// A stop (no drain grace left) releases what runs: back to the queue, no attempt counted.
TEST_F(AgentRedisTest, StopReleasesRunningAttemptsWithoutCountingAFailure) {
  const std::string sid = create_sweep(synthetic_spec(R"(, "sleep_s": 60)"));
  auto t = create_trial(sid, 0, {{"x1", 1.0}, {"x2", 2.0}});
  Agent agent(options(1, 5000), factory(), builtin_executors(1.0));
  ASSERT_TRUE(agent.start().ok());
  ASSERT_TRUE(wait_for([&] { return trial(t.id).state == trials::TrialState::kRunning; }));
  agent.stop();
  auto now = trial(t.id);
  EXPECT_EQ(now.state, trials::TrialState::kQueued);
  EXPECT_EQ(now.attempt, 1);
  EXPECT_EQ(now.released, 1);
  EXPECT_EQ(agent.stats().released, 1);
  auto attempts = admin_->get_attempts(t.id);
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ((*attempts)[0].outcome, "released");
}

// A drain lets a trial that ends within the grace finish and report.
TEST_F(AgentRedisTest, DrainLetsRunningTrialsFinishWithinTheGrace) {
  const std::string sid = create_sweep(synthetic_spec(R"(, "sleep_s": 0.5)"));
  auto t = create_trial(sid, 0, {{"x1", 1.0}, {"x2", 2.0}});
  auto second = create_trial(sid, 1, {{"x1", 2.0}, {"x2", 2.0}});
  auto o = options(1, 5000);
  o.drain_grace = std::chrono::minutes(5);
  Agent agent(o, factory(), builtin_executors(1.0));
  ASSERT_TRUE(agent.start().ok());
  ASSERT_TRUE(wait_for([&] { return trial(t.id).state == trials::TrialState::kRunning; }));
  agent.drain();
  EXPECT_EQ(trial(t.id).state, trials::TrialState::kCompleted);
  EXPECT_EQ(trial(second.id).state, trials::TrialState::kQueued);  // not claimed while draining
  EXPECT_EQ(trial(second.id).attempt, 0);
}

// A drain that begins while a claim's reply is on its way waits for that
// trial too: it runs and completes within the grace instead of being given back.
TEST_F(AgentRedisTest, ADrainWaitsForTheClaimInFlight) {
  const std::string sid = create_sweep(synthetic_spec(R"(, "sleep_s": 0.2)"));
  auto t = create_trial(sid, 0, {{"x1", 1.0}, {"x2", 2.0}});
  auto o = options(1, 5000);
  o.drain_grace = std::chrono::minutes(5);
  Agent agent(o, factory(), builtin_executors(1.0));
  {
    std::lock_guard lk(gate_.mu);
    gate_.hold_claims = true;
  }
  ASSERT_TRUE(agent.start().ok());
  {
    std::unique_lock lk(gate_.mu);
    ASSERT_TRUE(gate_.cv.wait_for(lk, std::chrono::seconds(10), [&] { return gate_.claim_held; }));
  }
  std::thread drainer([&] { agent.drain(); });
  // The registry shows the drain (the heartbeat says so at once); then the reply arrives.
  EXPECT_TRUE(wait_for([&] {
    auto workers = admin_->list_workers();
    return workers.ok() && !workers->empty() && workers->front().draining;
  }));
  {
    std::lock_guard lk(gate_.mu);
    gate_.hold_claims = false;
  }
  gate_.cv.notify_all();
  drainer.join();
  EXPECT_EQ(trial(t.id).state, trials::TrialState::kCompleted);
  EXPECT_EQ(trial(t.id).released, 0);
}

// A claim whose reply never reached the worker: the lease is found and given back.
TEST_F(AgentRedisTest, ALeaseHeldButNotRunIsReleased) {
  const std::string sid = create_sweep(synthetic_spec(""));
  auto t = create_trial(sid, 0, {{"x1", 1.0}, {"x2", 2.0}});
  auto o = options(1, 600);
  o.orphan_after = std::chrono::milliseconds(300);
  // The store hands the trial to "w" but the reply is lost: the same state a
  // lost reply leaves, made with a second connection under the worker's name.
  auto lost = admin_->claim(o.name, 1, 60'000);
  ASSERT_TRUE(lost.ok() && lost->has_value());
  Agent agent(o, factory(), builtin_executors(1.0));
  ASSERT_TRUE(agent.start().ok());
  ASSERT_TRUE(wait_for([&] { return trial(t.id).state == trials::TrialState::kCompleted; },
                       std::chrono::seconds(20)));
  auto done = trial(t.id);
  EXPECT_EQ(done.attempt, 1);
  EXPECT_EQ(done.released, 1);
  auto attempts = admin_->get_attempts(t.id);
  ASSERT_EQ(attempts->size(), 2u);
  EXPECT_EQ((*attempts)[0].outcome, "released");
  EXPECT_NE((*attempts)[0].error.find("lost claim reply"), std::string::npos);
  agent.stop();
}

}  // namespace
}  // namespace hpo::workers
