// Retention against the real RedisStore (tests/support/test_store.hpp): ended
// sweeps past the age are deleted with their trials; recent and running ones
// stay. Redis's clock (TIME) cannot be moved, so a sweep that ended days ago is
// made by writing its end time (the sweep hash's finished_ms) in Redis.
#include "scheduler/retention.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/test_store.hpp"
#include "trials/redis/redis_store.hpp"

namespace hpo::scheduler {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t kThreeDaysMs = 3 * 24 * 3600 * 1000LL;

// Sets a sweep's end time in Redis itself (the key schema is at the head of
// trials/redis/functions/00_schema.lua: P..'sweep:'<sid>, field finished_ms).
void set_finished_ms(trials::redis::RedisStore& store, const std::string& sweep_id,
                     std::int64_t finished_ms) {
  auto r = store.client().command(
      {"HSET", store.prefix() + "sweep:" + sweep_id, "finished_ms", std::to_string(finished_ms)});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_FALSE(r->is_error()) << r->str;
  ASSERT_EQ(r->integer, 0);  // the field was there (an ended sweep's) and is overwritten
  auto s = store.get_sweep(sweep_id);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(s->finished_ms, finished_ms);
}

TEST(Retention, DeletesEndedSweepsPastTheAgeOnly) {
  hpo::testing::TestStore db;
  trials::redis::RedisStore& store = db.store;
  auto make = [&](const std::string& name) {
    auto id = store.create_sweep({name, "{}", false});
    EXPECT_TRUE(id.ok()) << id.error().message;
    trials::NewTrial t;
    t.sweep_id = *id;
    t.limit = 1;
    EXPECT_TRUE(store.create_trial(t).ok());
    return *id;
  };
  const std::string old_done = make("old"), running = make("running");
  ASSERT_TRUE(store.cancel_sweep(old_done).ok());
  const std::string recent = make("recent");
  ASSERT_TRUE(store.cancel_sweep(recent).ok());
  // The old sweep ended three days before the recent one: this stands for a
  // sweep that ended three days ago (Redis's clock cannot be moved back).
  auto recent_sweep = store.get_sweep(recent);
  ASSERT_TRUE(recent_sweep.ok());
  ASSERT_GT(recent_sweep->finished_ms, 0);
  ASSERT_NO_FATAL_FAILURE(
      set_finished_ms(store, old_done, recent_sweep->finished_ms - kThreeDaysMs));
  // Retention's own clock: the store's now, read once (not before the recent end).
  auto store_now = store.now_ms();
  ASSERT_TRUE(store_now.ok()) << store_now.error().message;
  const std::int64_t now = *store_now;
  ASSERT_GE(now, recent_sweep->finished_ms);

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

// The sweep role of a store whose clock (now_ms, Redis TIME) is `behind_ms`
// behind this host's: every other call goes to the RedisStore as it is.
class ClockBehindTheHost : public trials::SweepStore {
 public:
  ClockBehindTheHost(trials::SweepStore& inner, std::int64_t behind_ms)
      : inner_(inner), behind_ms_(behind_ms) {}

  Result<std::int64_t> now_ms() override {
    auto t = inner_.now_ms();
    if (!t) return t;
    return *t - behind_ms_;
  }
  Result<std::string> create_sweep(const trials::NewSweep& sweep) override {
    return inner_.create_sweep(sweep);
  }
  Result<std::string> import_sweep(const trials::NewSweep& sweep,
                                   const std::vector<trials::ImportedTrial>& imported) override {
    return inner_.import_sweep(sweep, imported);
  }
  Result<trials::Sweep> get_sweep(const std::string& sweep_id) override {
    return inner_.get_sweep(sweep_id);
  }
  Result<std::vector<trials::Sweep>> list_sweeps(std::int64_t offset, std::int64_t limit) override {
    return inner_.list_sweeps(offset, limit);
  }
  Result<std::vector<trials::Sweep>> list_sweeps_in(const std::vector<std::string>& projects,
                                                    std::int64_t offset,
                                                    std::int64_t limit) override {
    return inner_.list_sweeps_in(projects, offset, limit);
  }
  Result<std::string> sweep_project(const std::string& sweep_id) override {
    return inner_.sweep_project(sweep_id);
  }
  Result<std::vector<std::string>> active_sweeps() override { return inner_.active_sweeps(); }
  Status finish_sweep(const std::string& sweep_id, trials::SweepState state,
                      const std::string& error) override {
    return inner_.finish_sweep(sweep_id, state, error);
  }
  Status cancel_sweep(const std::string& sweep_id) override {
    return inner_.cancel_sweep(sweep_id);
  }
  Status set_stage(const std::string& sweep_id, trials::SweepStage from,
                   trials::SweepStage to) override {
    return inner_.set_stage(sweep_id, from, to);
  }
  Status set_unschedulable(const std::string& sweep_id, const std::string& reason) override {
    return inner_.set_unschedulable(sweep_id, reason);
  }
  Status delete_sweep(const std::string& sweep_id) override {
    return inner_.delete_sweep(sweep_id);
  }
  Status annotate(const std::string& sweep_id, const std::string& trial_id,
                  const trials::Annotation& a) override {
    return inner_.annotate(sweep_id, trial_id, a);
  }
  Status set_priority(const std::string& sweep_id, std::int64_t priority) override {
    return inner_.set_priority(sweep_id, priority);
  }
  Result<std::map<std::string, trials::Annotation>> trial_annotations(
      const std::string& sweep_id) override {
    return inner_.trial_annotations(sweep_id);
  }

 private:
  trials::SweepStore& inner_;
  std::int64_t behind_ms_;
};

// Without a clock of its own, retention reads the store's (Redis TIME), the
// clock the end times were recorded on: a store whose clock is years behind
// this host's keeps its recent sweeps.
TEST(Retention, ComparesEndTimesWithTheStoresClock) {
  hpo::testing::TestStore db;
  constexpr std::int64_t kTenYearsMs = 10 * 365 * 24 * 3600 * 1000LL;
  ClockBehindTheHost store(db.store, kTenYearsMs);
  auto old_done = store.create_sweep({"old", "{}", false});
  ASSERT_TRUE(old_done.ok());
  ASSERT_TRUE(store.cancel_sweep(*old_done).ok());
  auto recent = store.create_sweep({"recent", "{}", false});
  ASSERT_TRUE(recent.ok());
  ASSERT_TRUE(store.cancel_sweep(*recent).ok());
  // End times on the store's (skewed) clock: the old sweep ended three days
  // ago, the recent one now. On this host's clock both ended ten years ago, so
  // a retention that read the host's clock would delete both.
  auto now = store.now_ms();
  ASSERT_TRUE(now.ok()) << now.error().message;
  ASSERT_NO_FATAL_FAILURE(set_finished_ms(db.store, *old_done, *now - kThreeDaysMs));
  ASSERT_NO_FATAL_FAILURE(set_finished_ms(db.store, *recent, *now));
  auto stores = [] { return Result<std::unique_ptr<trials::Store>>(nullptr); };
  Retention two_days(stores, 48h);
  EXPECT_EQ(two_days.run_once(store), 1);
  EXPECT_FALSE(store.get_sweep(*old_done).ok());
  EXPECT_TRUE(store.get_sweep(*recent).ok());
}

}  // namespace
}  // namespace hpo::scheduler
