// ControllerLoop against a real redis-server: controllers step on a bounded
// pool, so one that is stuck (a sampler or a stage that takes hours) does not
// stall the others, and thousands of idle sweeps cost no thread and no
// connection.
#include "scheduler/controller_loop.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>

#include "tests/support/redis_server.hpp"
#include "trials/redis/redis_store.hpp"

namespace hpo::scheduler {
namespace {

using hpo::testing::RedisServer;
using hpo::testing::wait_for;
using namespace std::chrono_literals;

// The test's own loop plays the workers, so no trial is ever really run: a
// torch recipe (for the ensemble section) needs no data here.
std::string synthetic_spec(const std::string& name, int trials, bool ensemble) {
  std::string s = R"({"name": ")" + name + R"(",
    "objective": {"metric": "value", "mode": "min"},
    "parameters": {"x1": {"type": "float", "min": 0, "max": 1}},
    "search": {"algorithm": "random", "max_trials": )" +
                  std::to_string(trials) + R"(, "max_concurrent": 2},)";
  if (ensemble)
    s +=
        R"("trial": {"kind": "torch", "data": {"format": "csv", "train": "/none.csv", "target": "y"}},
            "ensemble": {"members": 2, "base": "best"})";
  else
    s += R"("trial": {"kind": "synthetic", "function": "noop"})";
  return s + "}";
}

StoreFactory stores_for(const std::string& url) {
  return [url]() -> Result<std::unique_ptr<trials::Store>> {
    auto s = trials::redis::RedisStore::open(url);
    if (!s) return s.error();
    return std::unique_ptr<trials::Store>(std::move(*s));
  };
}

// A stage whose step blocks until released: a poison sweep's controller.
class StuckStage : public Stage {
 public:
  StuckStage(std::atomic<bool>& entered, std::atomic<bool>& release)
      : entered_(entered), release_(release) {}
  Result<bool> step(SweepRoles, const trials::Sweep&) override {
    entered_ = true;
    wait_for([&] { return release_.load(); }, 60s);
    return true;
  }

 private:
  std::atomic<bool>& entered_;
  std::atomic<bool>& release_;
};

TEST(ControllerLoop, AStuckSweepDoesNotStallTheOthers) {
  RedisServer server;
  const std::string url = server.url();
  StoreFactory stores = stores_for(url);
  auto admin = std::move(trials::redis::RedisStore::open(url).value());
  std::atomic<bool> entered{false}, release{false};
  ControllerLoopOptions options;
  options.rescan = 300ms;
  options.event_wait = 50ms;
  ControllerLoop loop(stores, options,
                      [&](const std::string&, const trials::SweepSpec&) -> std::unique_ptr<Stage> {
                        return std::make_unique<StuckStage>(entered, release);
                      });
  auto stuck = admin->create_sweep({"stuck", synthetic_spec("stuck", 1, true), false});
  ASSERT_TRUE(stuck.ok());
  loop.start();
  // A worker for both sweeps, as the test's own loop.
  auto work = [&] {
    auto c = admin->claim("w", 1, 60'000);
    if (c.ok() && c->has_value()) {
      trials::TrialResult r;
      r.outcome = trials::TrialState::kCompleted;
      r.value = 1;
      (void)admin->complete((*c)->trial.id, (*c)->trial.attempt, "w", r);
    }
  };
  ASSERT_TRUE(wait_for([&] { return work(), entered.load(); }, 30s));
  // Submitted while the stuck sweep's controller is blocked: it still runs to its end.
  auto other = admin->create_sweep({"other", synthetic_spec("other", 4, false), false});
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(wait_for(
      [&] {
        work();
        auto s = admin->get_sweep(*other);
        return s.ok() && s->state == trials::SweepState::kFinished;
      },
      30s));
  EXPECT_EQ(admin->get_sweep(*other)->counts.completed, 4);
  EXPECT_EQ(admin->get_sweep(*stuck)->state, trials::SweepState::kRunning);
  release = true;
  EXPECT_TRUE(wait_for(
      [&] { return admin->get_sweep(*stuck)->state == trials::SweepState::kFinished; }, 30s));
  loop.stop();
}

int process_threads() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task"))
    n += !e.path().empty();
  return n;
}

// 300 sweeps nobody works (parked: their trials wait in the queue) and one
// that runs: the process gains the pool's threads and no more, Redis sees
// the pool's connections and no more, and the running sweep ends.
TEST(ControllerLoop, ParkedSweepsCostNoThreadAndNoConnection) {
  RedisServer server;
  const std::string url = server.url();
  StoreFactory stores = stores_for(url);
  auto admin = std::move(trials::redis::RedisStore::open(url).value());
  constexpr int kParked = 300;
  // Each asks for 4 GPUs, which the test's worker never offers.
  std::string parked = synthetic_spec("parked", 1, false);
  parked.replace(parked.find(R"("function": "noop")"), 18,
                 R"("function": "noop", "resources": {"gpus": 4})");
  for (int i = 0; i < kParked; ++i)
    ASSERT_TRUE(admin->create_sweep({"parked", parked, false}).ok());
  const int threads_before = process_threads();
  auto clients = [&] {
    auto r = admin->client().command({"INFO", "clients"});
    const auto at = r->str.find("connected_clients:");
    return std::stoi(r->str.substr(at + 18));
  };
  const int clients_before = clients();
  ControllerLoopOptions options;
  options.rescan = 300ms;
  options.event_wait = 50ms;
  options.threads = 4;
  ControllerLoop loop(stores, options);
  loop.start();
  ASSERT_TRUE(wait_for([&] { return loop.sweeps() == kParked; }, 60s)) << loop.sweeps();
  auto running = admin->create_sweep({"running", synthetic_spec("running", 6, false), false});
  ASSERT_TRUE(running.ok());
  // Plays the worker of the running sweep only.
  EXPECT_TRUE(wait_for(
      [&] {
        auto c = admin->claim("w", 1, 60'000);
        if (c.ok() && c->has_value()) {
          EXPECT_EQ((*c)->trial.sweep_id, *running);
          trials::TrialResult r;
          r.outcome = trials::TrialState::kCompleted;
          r.value = 1;
          (void)admin->complete((*c)->trial.id, (*c)->trial.attempt, "w", r);
        }
        auto s = admin->get_sweep(*running);
        return s.ok() && s->state == trials::SweepState::kFinished;
      },
      60s));
  EXPECT_EQ(loop.threads(), 4);
  // The pool, the loop's own thread, and nothing per sweep.
  EXPECT_LE(process_threads(), threads_before + options.threads + 1);
  // The pool's connections and the loop's, and nothing per sweep.
  EXPECT_LE(clients(), clients_before + options.threads + 1);
  loop.stop();
}

}  // namespace
}  // namespace hpo::scheduler
