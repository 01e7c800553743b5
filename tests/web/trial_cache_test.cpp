// TrialCache against the real RedisStore (tests/support/test_store.hpp: one
// redis-server for this executable, a key prefix per test): finished trials
// are read once, the rest on every load, in contiguous ranges.
#include "web/trial_cache.hpp"

#include <gtest/gtest.h>

#include "tests/support/test_store.hpp"
#include "trials/redis/redis_store.hpp"

namespace hpo::web {
namespace {

// The RedisStore `s`'s trials as the cache reads them, recording the ranges
// list_trials is asked for (RedisStore is final: a wrapper, not a subclass).
class SpyStore final : public trials::TrialStore {
 public:
  explicit SpyStore(trials::redis::RedisStore& s) : s_(s) {}

  Result<trials::TrialPage> list_trials(const std::string& sweep_id, trials::TrialRole role,
                                        std::int64_t offset, std::int64_t limit) override {
    ranges.emplace_back(offset, limit);
    return s_.list_trials(sweep_id, role, offset, limit);
  }
  Result<std::vector<trials::Trial>> create_trials(
      const std::vector<trials::NewTrial>& made) override {
    return s_.create_trials(made);
  }
  Result<trials::Trial> get_trial(const std::string& trial_id) override {
    return s_.get_trial(trial_id);
  }
  Result<std::vector<trials::Trial>> get_trials(
      const std::vector<std::string>& trial_ids) override {
    return s_.get_trials(trial_ids);
  }
  Result<trials::ReportPage> get_reports(const std::string& trial_id, std::int64_t offset,
                                         std::int64_t limit) override {
    return s_.get_reports(trial_id, offset, limit);
  }
  Result<std::vector<trials::AttemptRecord>> get_attempts(const std::string& trial_id) override {
    return s_.get_attempts(trial_id);
  }
  Status set_control(const std::string& trial_id, trials::Control control) override {
    return s_.set_control(trial_id, control);
  }

  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;

 private:
  trials::redis::RedisStore& s_;
};

class TrialCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto id = store_.create_sweep({"s", "{}", false});
    ASSERT_TRUE(id.ok());
    sweep_ = *id;
    for (int i = 0; i < 6; ++i) {
      trials::NewTrial t;
      t.sweep_id = sweep_;
      t.number = i;
      t.limit = 100;
      t.params = {{"x", double(i)}};
      ASSERT_TRUE(store_.create_trial(t).ok());
    }
  }
  // Claims the next queued trial and completes it with `value`.
  void finish_next(double value) {
    auto c = store_.claim("w", 1, 60000);
    ASSERT_TRUE(c.ok() && c->has_value());
    trials::TrialResult r;
    r.value = value;
    ASSERT_TRUE(store_.complete((*c)->trial.id, (*c)->trial.attempt, "w", r).ok());
  }
  hpo::testing::TestStore test_store_;
  trials::redis::RedisStore& store_ = test_store_.store;  // makes and finishes the trials
  SpyStore spy_{store_};                                  // what the cache reads
  std::string sweep_;
  TrialCache cache_;
};

TEST_F(TrialCacheTest, FinishedTrialsAreReadOnce) {
  finish_next(1);  // 0
  finish_next(2);  // 1
  auto first = cache_.load(store_, spy_, sweep_, hpo::trials::TrialRole::kTrial);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 6u);
  EXPECT_EQ(cache_.cached_trials(sweep_, hpo::trials::TrialRole::kTrial), 2u);
  spy_.ranges.clear();
  finish_next(3);  // 2
  auto second = cache_.load(store_, spy_, sweep_, hpo::trials::TrialRole::kTrial);
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->size(), 6u);
  // Only numbers 2..5 were read again, as one range.
  ASSERT_EQ(spy_.ranges.size(), 1u);
  EXPECT_EQ(spy_.ranges[0], std::make_pair(std::int64_t{2}, std::int64_t{4}));
  EXPECT_EQ((*second)[2]->state, trials::TrialState::kCompleted);
  EXPECT_EQ((*second)[2]->value, 3.0);
  EXPECT_EQ((*second)[5]->state, trials::TrialState::kQueued);
  EXPECT_EQ(cache_.cached_trials(sweep_, hpo::trials::TrialRole::kTrial), 3u);
}

TEST_F(TrialCacheTest, EverythingFinishedNeedsNoTrialReads) {
  for (int i = 0; i < 6; ++i) finish_next(i);
  ASSERT_TRUE(cache_.load(store_, spy_, sweep_, hpo::trials::TrialRole::kTrial).ok());
  spy_.ranges.clear();
  auto again = cache_.load(store_, spy_, sweep_, hpo::trials::TrialRole::kTrial);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->size(), 6u);
  EXPECT_TRUE(spy_.ranges.empty());
}

// A page by number reads its own range only, and of it only what was not
// finished last time; the total is the sweep's.
TEST_F(TrialCacheTest, APageReadsOnlyItsRange) {
  for (int i = 0; i < 4; ++i) finish_next(i);  // 0..3 finished, 4 and 5 queued
  std::int64_t total = 0;
  auto page = cache_.load(store_, spy_, sweep_, hpo::trials::TrialRole::kTrial, 2, 3, &total);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(total, 6);
  ASSERT_EQ(page->size(), 3u);
  EXPECT_EQ((*page)[0]->number, 2);
  EXPECT_EQ((*page)[2]->number, 4);
  ASSERT_EQ(spy_.ranges.size(), 1u);
  EXPECT_EQ(spy_.ranges[0], std::make_pair(std::int64_t{2}, std::int64_t{3}));
  spy_.ranges.clear();
  auto again = cache_.load(store_, spy_, sweep_, hpo::trials::TrialRole::kTrial, 2, 3);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(spy_.ranges.size(), 1u);  // only number 4, still queued
  EXPECT_EQ(spy_.ranges[0], std::make_pair(std::int64_t{4}, std::int64_t{1}));
  EXPECT_EQ((*again)[1]->value, 3.0);
  // Past the end: an empty page, the total still told.
  auto past = cache_.load(store_, spy_, sweep_, hpo::trials::TrialRole::kTrial, 10, 5, &total);
  ASSERT_TRUE(past.ok());
  EXPECT_TRUE(past->empty());
  EXPECT_EQ(total, 6);
}

TEST_F(TrialCacheTest, UnknownSweepIsNotFound) {
  auto r = cache_.load(store_, spy_, "nope", hpo::trials::TrialRole::kTrial);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
}

TEST_F(TrialCacheTest, OldSweepsAreEvicted) {
  TrialCache small(1);
  finish_next(1);
  ASSERT_TRUE(small.load(store_, spy_, sweep_, hpo::trials::TrialRole::kTrial).ok());
  EXPECT_EQ(small.cached_trials(sweep_, hpo::trials::TrialRole::kTrial), 1u);
  auto other = store_.create_sweep({"t", "{}", false});
  ASSERT_TRUE(small.load(store_, spy_, *other, hpo::trials::TrialRole::kTrial).ok());
  EXPECT_EQ(small.cached_trials(sweep_, hpo::trials::TrialRole::kTrial), 0u);
}

}  // namespace
}  // namespace hpo::web
