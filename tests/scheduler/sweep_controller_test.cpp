// SweepController against the real RedisStore (tests/support/test_store.hpp,
// through the sweep fixture): the controller keeps max_concurrent trials in
// flight, ends with exactly max_trials, resumes after a "restart" (a fresh
// controller) without repeating a trial number, stops a grid when it runs out,
// fails a sweep whose every trial failed, and prunes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "scheduler/sweep_controller.hpp"
#include "scheduler/sweep_roles.hpp"
#include "search/test_functions.hpp"
#include "tests/scheduler/sweep_fixture.hpp"
#include "tests/support/test_store.hpp"
#include "trials/redis/redis_store.hpp"
#include "trials/trial_plan.hpp"

namespace hpo::scheduler {
namespace {

using Json = nlohmann::ordered_json;

Json base_spec() {
  return Json::parse(R"({
    "name": "t",
    "objective": {"metric": "value", "mode": "min"},
    "parameters": {"x1": {"type": "float", "min": -5, "max": 10},
                   "x2": {"type": "float", "min": 0, "max": 15}},
    "search": {"algorithm": "random", "max_trials": 10, "max_concurrent": 3, "seed": 1},
    "trial": {"kind": "synthetic", "function": "branin", "max_attempts": 2}
  })");
}

struct Fixture : testing::SweepFixture {
  explicit Fixture(const Json& j) : SweepFixture(j.dump()) {}
};

double value_of(const trials::Trial& t) {
  double x1 = std::get<double>(t.params.at("x1")), x2 = std::get<double>(t.params.at("x2"));
  return x1 * x1 + x2;
}

trials::TrialResult completed(const trials::Trial& t) {
  trials::TrialResult r;
  r.outcome = trials::TrialState::kCompleted;
  r.value = value_of(t);
  r.metrics["value"] = *r.value;
  return r;
}

// Steps the controller until it ends, finishing one trial per round so that
// it has to top the queue up; `check` sees the sweep after each step and the
// trial that round finishes.
void finish_one_per_round(
    Fixture& f, SweepController& c,
    const std::function<void(const trials::Sweep&, const trials::Trial&)>& check) {
  for (int rounds = 1;; ++rounds) {
    auto alive = c.step(f.store);
    ASSERT_TRUE(alive.ok()) << alive.error().message;
    if (!*alive) return;
    const trials::Sweep s = f.sweep();
    auto claim = f.store.claim("w", 1, 10'000);
    ASSERT_TRUE(claim.ok() && *claim);
    const auto& t = (*claim)->trial;
    check(s, t);
    ASSERT_TRUE(f.store.complete(t.id, t.attempt, "w", completed(t)).ok());
    c.mark_dirty(t.id);
    ASSERT_LT(rounds, 100);
  }
}

TEST(SweepController, KeepsConcurrencyAndEndsWithExactlyMaxTrials) {
  Fixture f(base_spec());
  SweepController c(f.sweep_id, f.spec);
  ASSERT_NO_FATAL_FAILURE(
      finish_one_per_round(f, c, [](const trials::Sweep& s, const trials::Trial&) {
        EXPECT_LE(s.counts.active(), 3);
        EXPECT_GT(s.counts.active(), 0);
      }));
  auto s = f.sweep();
  EXPECT_EQ(s.state, trials::SweepState::kFinished);
  EXPECT_EQ(s.counts.completed, 10);
  EXPECT_EQ(s.next_number, 10);
  auto page = f.store.list_trials(f.sweep_id, hpo::trials::TrialRole::kTrial, 0, trials::kAll);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->trials.size(), 10u);
  const trials::Trial* best = nullptr;
  for (const auto& t : page->trials)
    if (!best || *t.value < *best->value) best = &t;
  ASSERT_TRUE(s.best);
  EXPECT_EQ(s.best->trial_id, best->id);
  EXPECT_DOUBLE_EQ(s.best->value, *best->value);
}

// The project's max_queued_trials below the sweep's max_concurrent: the
// controller queues what the project has room for, waits while it is full,
// and still ends with exactly max_trials, none repeated.
TEST(SweepController, AFullProjectQueueMakesItWaitNotFail) {
  Fixture f(base_spec());
  ASSERT_TRUE(f.store.update_project({"default", 1, 0, {0, 2, 0, 0}, {}}).ok());
  SweepController c(f.sweep_id, f.spec);
  std::set<std::string> seen;
  ASSERT_NO_FATAL_FAILURE(
      finish_one_per_round(f, c, [&](const trials::Sweep& s, const trials::Trial& t) {
        EXPECT_LE(s.counts.queued, 2);
        EXPECT_GT(s.counts.queued, 0);
        EXPECT_TRUE(seen.insert(t.id).second);
      }));
  auto s = f.sweep();
  EXPECT_EQ(s.state, trials::SweepState::kFinished);
  EXPECT_EQ(s.counts.completed, 10);
  EXPECT_EQ(seen.size(), 10u);
}

TEST(SweepController, FreshControllerResumesWithoutRepeatingTrials) {
  Fixture f(base_spec());
  {
    SweepController first(f.sweep_id, f.spec);
    ASSERT_TRUE(first.step(f.store).ok());
    f.work_all(completed);
    ASSERT_TRUE(first.step(f.store).ok());  // queues 3 more, then "crashes"
  }
  EXPECT_EQ(f.sweep().next_number, 6);
  SweepController second(f.sweep_id, f.spec);
  for (int i = 0; i < 20; ++i) {
    auto alive = second.step(f.store);
    ASSERT_TRUE(alive.ok());
    if (!*alive) break;
    f.work_all(completed);
    second.mark_resync();
  }
  auto s = f.sweep();
  EXPECT_EQ(s.state, trials::SweepState::kFinished);
  EXPECT_EQ(s.counts.completed, 10);
  auto page = f.store.list_trials(f.sweep_id, hpo::trials::TrialRole::kTrial, 0, trials::kAll);
  std::set<std::int64_t> numbers;
  for (const auto& t : page->trials) numbers.insert(t.number);
  EXPECT_EQ(numbers.size(), 10u);
  EXPECT_EQ(*numbers.rbegin(), 9);
}

TEST(SweepController, GridEndsWhenExhausted) {
  auto j = base_spec();
  j["parameters"] = Json::parse(R"({"a": {"type": "int", "min": 1, "max": 2},
                                    "b": {"type": "categorical", "values": ["p", "q"]}})");
  j["search"] = Json::parse(R"({"algorithm": "grid", "max_trials": 10, "max_concurrent": 10})");
  j["trial"] = Json::parse(R"({"kind": "command", "argv": ["run", "{a}", "{b}"]})");
  Fixture f(j);
  SweepController c(f.sweep_id, f.spec);
  for (int i = 0; i < 10; ++i) {
    auto alive = c.step(f.store);
    ASSERT_TRUE(alive.ok());
    if (!*alive) break;
    f.work_all([](const trials::Trial&) {
      trials::TrialResult r;
      r.value = 1;
      return r;
    });
    c.mark_resync();
  }
  auto s = f.sweep();
  EXPECT_EQ(s.state, trials::SweepState::kFinished);
  EXPECT_EQ(s.counts.completed, 4);
}

TEST(SweepController, SweepFailsWhenEveryTrialFailed) {
  auto j = base_spec();
  j["search"]["max_trials"] = 4;
  Fixture f(j);
  SweepController c(f.sweep_id, f.spec);
  for (int i = 0; i < 20; ++i) {
    auto alive = c.step(f.store);
    ASSERT_TRUE(alive.ok());
    if (!*alive) break;
    f.work_all([](const trials::Trial&) {
      trials::TrialResult r;
      r.outcome = trials::TrialState::kFailed;
      r.error = "boom";
      r.retryable = false;
      return r;
    });
    c.mark_resync();
  }
  auto s = f.sweep();
  EXPECT_EQ(s.state, trials::SweepState::kFailed);
  EXPECT_NE(s.error.find("all 4 trials failed"), std::string::npos) << s.error;
}

TEST(SweepController, CancelledSweepStopsTheController) {
  Fixture f(base_spec());
  SweepController c(f.sweep_id, f.spec);
  ASSERT_TRUE(*c.step(f.store));
  ASSERT_TRUE(f.store.cancel_sweep(f.sweep_id).ok());
  auto alive = c.step(f.store);
  ASSERT_TRUE(alive.ok());
  EXPECT_FALSE(*alive);
  EXPECT_EQ(f.sweep().counts.queued, 0);
}

TEST(SweepController, MedianPrunerFlagsAHopelessRunningTrial) {
  auto j = base_spec();
  j["search"]["max_trials"] = 8;
  j["search"]["max_concurrent"] = 8;
  j["early_stopping"] = Json::parse(R"({"type": "median", "warmup_steps": 0, "min_trials": 3})");
  Fixture f(j);
  SweepController c(f.sweep_id, f.spec);
  ASSERT_TRUE(*c.step(f.store));
  // Four trials finish with good curves; a fifth runs with a bad one.
  for (int i = 0; i < 4; ++i) {
    auto claim = f.store.claim("w", 1, 10'000);
    const auto& t = (*claim)->trial;
    for (int s = 1; s <= 3; ++s)
      ASSERT_TRUE(f.store.report(t.id, t.attempt, "w", {s, {{"value", 1.0 / s}}, 0}).ok());
    trials::TrialResult r;
    r.value = 0.3;
    ASSERT_TRUE(f.store.complete(t.id, t.attempt, "w", r).ok());
    c.mark_dirty(t.id);
  }
  auto claim = f.store.claim("w", 1, 10'000);
  const auto& bad = (*claim)->trial;
  ASSERT_TRUE(f.store.report(bad.id, bad.attempt, "w", {1, {{"value", 50.0}}, 0}).ok());
  ASSERT_TRUE(f.store.report(bad.id, bad.attempt, "w", {2, {{"value", 49.0}}, 0}).ok());
  c.mark_dirty(bad.id);
  ASSERT_TRUE(c.step(f.store).ok());
  EXPECT_EQ(f.store.get_trial(bad.id)->control, trials::Control::kPrune);
  // The worker's next heartbeat hears about it.
  auto hb = f.store.heartbeat(bad.id, bad.attempt, "w", 10'000);
  ASSERT_TRUE(hb.ok());
  EXPECT_EQ(*hb, trials::Control::kPrune);
}

// A trial that reports a flood: each step reads only the reports stored since
// the last one (not the whole history again), and the pruner still sees the
// whole curve: the hopeless trial is stopped once its curve says so.
TEST(SweepController, CurvesGrowByTheNewReportsOnly) {
  // The store's trial role as the controller sees it, counting the reports it
  // reads; everything else goes to the RedisStore as it is.
  struct CountingTrials : trials::TrialStore {
    explicit CountingTrials(trials::TrialStore& to) : inner(to) {}
    trials::TrialStore& inner;
    std::int64_t read = 0;
    Result<std::vector<trials::Trial>> create_trials(
        const std::vector<trials::NewTrial>& batch) override {
      return inner.create_trials(batch);
    }
    Result<trials::Trial> get_trial(const std::string& id) override { return inner.get_trial(id); }
    Result<std::vector<trials::Trial>> get_trials(const std::vector<std::string>& ids) override {
      return inner.get_trials(ids);
    }
    Result<trials::TrialPage> list_trials(const std::string& sweep_id, trials::TrialRole role,
                                          std::int64_t offset, std::int64_t limit) override {
      return inner.list_trials(sweep_id, role, offset, limit);
    }
    Result<trials::ReportPage> get_reports(const std::string& id, std::int64_t offset,
                                           std::int64_t limit) override {
      auto page = inner.get_reports(id, offset, limit);
      if (page) read += static_cast<std::int64_t>(page->reports.size());
      return page;
    }
    Result<std::vector<trials::AttemptRecord>> get_attempts(const std::string& id) override {
      return inner.get_attempts(id);
    }
    Status set_control(const std::string& id, trials::Control control) override {
      return inner.set_control(id, control);
    }
  };
  auto j = base_spec();
  j["search"]["max_trials"] = 8;
  j["search"]["max_concurrent"] = 8;
  j["early_stopping"] = Json::parse(R"({"type": "median", "warmup_steps": 0, "min_trials": 3})");
  hpo::testing::TestStore db;
  trials::redis::RedisStore& store = db.store;
  CountingTrials counting(store);
  const SweepRoles roles(store, counting, store);  // what the controller reads through
  auto spec = trials::parse_spec(j.dump());
  ASSERT_TRUE(spec.ok());
  trials::NewSweep ns{"t", j.dump(), false};
  auto sweep_id = store.create_sweep(ns);
  ASSERT_TRUE(sweep_id.ok());
  SweepController c(*sweep_id, *spec);
  ASSERT_TRUE(*c.step(roles));
  for (int i = 0; i < 3; ++i) {  // three good curves, finished
    const auto t = (*store.claim("w", 1, 10'000))->trial;
    for (int s = 1; s <= 1000; ++s)
      ASSERT_TRUE(store.report(t.id, t.attempt, "w", {s, {{"value", 1.0 / s}}, 0}).ok());
    trials::TrialResult r;
    r.value = 0.001;
    ASSERT_TRUE(store.complete(t.id, t.attempt, "w", r).ok());
    c.mark_dirty(t.id);
  }
  ASSERT_TRUE(c.step(roles).ok());
  const std::int64_t before = counting.read;
  EXPECT_EQ(before, 3000);
  const auto bad = (*store.claim("w", 1, 10'000))->trial;
  int steps = 0;
  for (int round = 0; round < 10; ++round) {  // 100 reports per controller step
    for (int k = 0; k < 100; ++k, ++steps)
      // 0.002 is as good as the others' best (1/step) until step 500, worse after.
      ASSERT_TRUE(store.report(bad.id, bad.attempt, "w", {steps, {{"value", 0.002}}, 0}).ok());
    c.mark_dirty(bad.id);
    ASSERT_TRUE(c.step(roles).ok());
    if (store.get_trial(bad.id)->control == trials::Control::kPrune) break;
  }
  EXPECT_EQ(store.get_trial(bad.id)->control, trials::Control::kPrune);
  EXPECT_GT(steps, 500);
  EXPECT_EQ(counting.read - before, steps);  // each report read once, not once per step
}

}  // namespace
}  // namespace hpo::scheduler

namespace hpo::scheduler {
namespace {

// A scheduler restart in the middle of a Bayesian sweep: the fresh controller
// rebuilds the GP from the stored history and continues; no trial number is
// created twice and no suggestion repeats an earlier one.
TEST(SweepController, BayesianSweepContinuesAfterARestartWithoutRepeatingTrials) {
  auto j = base_spec();
  j["search"] =
      Json::parse(R"({"algorithm": "bayesian", "max_trials": 14, "max_concurrent": 2, "seed": 5})");
  Fixture f(j);
  auto branin = [](const trials::Trial& t) {
    trials::TrialResult r;
    double x1 = std::get<double>(t.params.at("x1")), x2 = std::get<double>(t.params.at("x2"));
    double a = x2 - 5.1 / (4 * M_PI * M_PI) * x1 * x1 + 5 / M_PI * x1 - 6;
    r.value = a * a + 10 * (1 - 1 / (8 * M_PI)) * std::cos(x1) + 10;
    return r;
  };
  auto run = [&](SweepController& c, int steps) {
    for (int i = 0; i < steps; ++i) {
      auto alive = c.step(f.store);
      ASSERT_TRUE(alive.ok()) << alive.error().message;
      if (!*alive) return;
      f.work_all(branin);
      c.mark_resync();
    }
  };
  {
    SweepController first(f.sweep_id, f.spec);
    run(first, 4);  // the initial design and a few GP suggestions, then a "crash"
  }
  auto before = f.sweep().next_number;
  EXPECT_GT(before, 6);  // past the initial quasi-random design of max(5, d + 1) points
  EXPECT_LT(before, 14);
  SweepController second(f.sweep_id, f.spec);
  run(second, 30);
  auto s = f.sweep();
  EXPECT_EQ(s.state, trials::SweepState::kFinished);
  EXPECT_EQ(s.counts.completed, 14);
  auto page = f.store.list_trials(f.sweep_id, hpo::trials::TrialRole::kTrial, 0, trials::kAll);
  ASSERT_EQ(page->trials.size(), 14u);
  std::set<std::int64_t> numbers;
  std::set<search::Params> params;
  for (const auto& t : page->trials) {
    numbers.insert(t.number);
    params.insert(t.params);
  }
  EXPECT_EQ(numbers.size(), 14u);
  EXPECT_EQ(params.size(), 14u);  // no suggestion repeated across the restart
}

}  // namespace
}  // namespace hpo::scheduler

namespace hpo::scheduler {
namespace {

// search.pbt against the RedisStore: each interval is a trial; a fake
// worker steps the noisy quadratic from the checkpoint its trial resumes
// (its own, else the one it goes on from) and stores its own. A fresh
// controller halfway (a restart) goes on where the first stopped.
TEST(SweepController, PbtRunsEveryIntervalOnceAndGoesOnFromCheckpoints) {
  Fixture f(Json::parse(R"({
    "name": "pbt",
    "objective": {"metric": "value", "mode": "min"},
    "parameters": {"lr": {"type": "float", "min": 0.001, "max": 0.5, "log": true}},
    "search": {"algorithm": "random", "max_trials": 100, "max_concurrent": 2, "seed": 3,
               "pbt": {"population": 4, "resource": "steps", "interval": 5, "max": 20}},
    "trial": {"kind": "synthetic", "function": "noisy_quadratic"}
  })"));
  auto run = [&](const trials::Trial& t) {
    const auto& rung = t.plan.lineage;
    EXPECT_TRUE(rung) << t.plan.error;
    if (!rung) return trials::TrialResult{};
    double v = 1;
    int from = 0;
    if (const auto resumed = trials::resumed_trial_id(t.sweep_id, t.plan); !resumed.empty()) {
      auto got = f.store.get_artifact(resumed, "checkpoint");
      EXPECT_TRUE(got && *got) << t.id << " resumes " << resumed;
      if (got && *got) std::sscanf((*got)->c_str(), "step %d %lf", &from, &v);
    }
    const double lr = std::get<double>(t.params.at("lr"));
    for (int s = from; s < static_cast<int>(rung->budget); ++s)
      v = search::noisy_quadratic_step(v, lr);
    EXPECT_TRUE(f.store
                    .put_artifact(t.id, t.attempt, "w", "checkpoint",
                                  fmt::format("step {} {:.17g}", rung->budget, v))
                    .ok());
    trials::TrialResult r;
    r.value = v;
    r.metrics["value"] = v;
    return r;
  };
  auto drive = [&](SweepController& c, int rounds) {
    for (int i = 0; i < rounds; ++i) {
      auto alive = c.step(f.store);
      EXPECT_TRUE(alive.ok()) << alive.error().message;
      if (!alive.ok() || !*alive) return false;
      if (f.work_one(run)) c.mark_resync();
    }
    return true;
  };
  {
    SweepController first(f.sweep_id, f.spec);
    ASSERT_TRUE(drive(first, 7));
  }
  SweepController second(f.sweep_id, f.spec);
  EXPECT_FALSE(drive(second, 200));
  auto s = f.sweep();
  EXPECT_EQ(s.state, trials::SweepState::kFinished);
  EXPECT_EQ(s.counts.completed, 16);
  auto page = f.store.list_trials(f.sweep_id, trials::TrialRole::kTrial, 0, trials::kAll);
  ASSERT_TRUE(page.ok());
  std::set<std::pair<int, int>> intervals;
  int exploits = 0;
  for (const auto& t : page->trials) {
    const auto& rung = t.plan.lineage;
    ASSERT_TRUE(rung) << t.plan.error;
    EXPECT_TRUE(intervals.insert({rung->member, rung->generation()}).second) << t.id;
    exploits += rung->exploited;
  }
  EXPECT_EQ(intervals.size(), 16u);
  EXPECT_GT(exploits, 0);
}

}  // namespace
}  // namespace hpo::scheduler
