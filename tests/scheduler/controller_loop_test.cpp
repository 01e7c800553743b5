// ControllerLoop against a real redis-server: every sweep's controller steps on
// a thread of its own, so one that is stuck (a sampler or a stage that takes
// hours) does not stall the others.
#include "scheduler/controller_loop.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

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

// A stage whose step blocks until released: a poison sweep's controller.
class StuckStage : public Stage {
 public:
  StuckStage(std::atomic<bool>& entered, std::atomic<bool>& release)
      : entered_(entered), release_(release) {}
  Result<bool> step(trials::Store&, const trials::Sweep&) override {
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
  StoreFactory stores = [url]() -> Result<std::unique_ptr<trials::Store>> {
    auto s = trials::redis::RedisStore::open(url);
    if (!s) return s.error();
    return std::unique_ptr<trials::Store>(std::move(*s));
  };
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

}  // namespace
}  // namespace hpo::scheduler
