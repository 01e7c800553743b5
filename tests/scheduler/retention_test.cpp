// Retention against the memory store with a settable clock: ended sweeps past
// the age are deleted with their trials; recent and running ones stay.
#include "scheduler/retention.hpp"

#include <gtest/gtest.h>

#include "trials/memory/memory_store.hpp"

namespace hpo::scheduler {
namespace {

using namespace std::chrono_literals;

TEST(Retention, DeletesEndedSweepsPastTheAgeOnly) {
  std::int64_t now = 1'700'000'000'000;
  trials::memory::MemoryStore store([&] { return now; });
  auto make = [&](const std::string& name) {
    auto id = store.create_sweep({name, "{}", false});
    trials::NewTrial t;
    t.sweep_id = *id;
    t.limit = 1;
    EXPECT_TRUE(store.create_trial(t).ok());
    return *id;
  };
  const std::string old_done = make("old"), running = make("running");
  ASSERT_TRUE(store.cancel_sweep(old_done).ok());
  now += 3 * 24 * 3600 * 1000LL;  // three days later
  const std::string recent = make("recent");
  ASSERT_TRUE(store.cancel_sweep(recent).ok());

  auto stores = [] { return Result<std::unique_ptr<trials::Store>>(nullptr); };
  Retention keep_forever(stores, 0ms, 1min, [&] { return now; });
  EXPECT_EQ(keep_forever.run_once(store), 0);
  Retention two_days(stores, 48h, 1min, [&] { return now; });
  EXPECT_EQ(two_days.run_once(store), 1);
  EXPECT_EQ(store.get_sweep(old_done).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(store.get_trial(old_done + "-0").error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(store.get_sweep(recent).ok());
  EXPECT_TRUE(store.get_sweep(running).ok());  // old, but still running
  EXPECT_EQ(two_days.run_once(store), 0);
}

// Without a clock of its own, retention reads the store's (Redis TIME), the
// clock the end times were recorded on: a store whose clock is years behind
// this host's keeps its recent sweeps.
TEST(Retention, ComparesEndTimesWithTheStoresClock) {
  std::int64_t now = 946'684'800'000;  // 2000-01-01, far behind this host
  trials::memory::MemoryStore store([&] { return now; });
  auto old_done = store.create_sweep({"old", "{}", false});
  ASSERT_TRUE(store.cancel_sweep(*old_done).ok());
  now += 3 * 24 * 3600 * 1000LL;
  auto recent = store.create_sweep({"recent", "{}", false});
  ASSERT_TRUE(store.cancel_sweep(*recent).ok());
  auto stores = [] { return Result<std::unique_ptr<trials::Store>>(nullptr); };
  Retention two_days(stores, 48h);
  EXPECT_EQ(two_days.run_once(store), 1);
  EXPECT_FALSE(store.get_sweep(*old_done).ok());
  EXPECT_TRUE(store.get_sweep(*recent).ok());
}

}  // namespace
}  // namespace hpo::scheduler
