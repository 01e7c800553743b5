// Projects on one pool, in the claim Function itself (a real redis-server):
// a project at its max_slots gets no more however many workers claim, free
// slots go to projects by weight (1 and 3 hold a saturated pool 1:3), a
// project alone takes the whole pool, a project at its max_gpus gets no more
// GPU slots (its CPU trials still run), and submits past max_active_sweeps or
// max_queued_trials are refused naming the limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "tests/support/test_store.hpp"
#include "trials/access.hpp"
#include "trials/store.hpp"

namespace hpo::trials {
namespace {

constexpr std::int64_t kLeaseMs = 60'000;

class ProjectShare : public ::testing::Test {
 protected:
  hpo::testing::TestStore db;
  redis::RedisStore& store = db.store;

  void project(const std::string& name, double weight, ProjectLimits limits = {}) {
    ProjectRecord p{name, weight, 0, limits, {}};
    ASSERT_TRUE(store.create_project(p).ok());
  }
  // A running sweep of `project` with `n` queued trials of `slots` slots,
  // asking a worker for `needs`.
  std::string sweep(const std::string& project, int n, int slots = 1, ResourceRequest needs = {}) {
    NewSweep s{"s", "{}", false};
    s.project = project;
    s.needs = std::move(needs);
    auto id = store.create_sweep(s);
    EXPECT_TRUE(id.ok()) << id.error().message;
    std::vector<NewTrial> batch;
    for (int i = 0; i < n; ++i) {
      NewTrial t;
      t.sweep_id = *id;
      t.number = i;
      t.limit = 100000;
      t.params = {{"x", search::Value(static_cast<double>(i))}};
      t.slots = slots;
      batch.push_back(t);
    }
    EXPECT_TRUE(store.create_trials(batch).ok());
    project_of_[*id] = project;
    return *id;
  }
  // Claims for `worker` until it gets nothing: the claims.
  std::vector<Claim> fill(const std::string& worker, int slots) {
    std::vector<Claim> got;
    auto r = store.claim_batch(worker, slots, slots, kLeaseMs);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    if (r.ok()) got = r->claims;
    return got;
  }
  ProjectUse use_of(const std::string& project) {
    auto all = store.list_projects();
    EXPECT_TRUE(all.ok());
    for (const auto& p : *all)
      if (p.name == project) return p.use;
    ADD_FAILURE() << "no project " << project;
    return {};
  }
  std::int64_t used(const std::string& project) { return use_of(project).slots; }
  // Running slots of a project's sweeps, counted from the trials themselves.
  std::int64_t running_slots(const std::string& project) {
    std::int64_t n = 0;
    for (const auto& [sid, p] : project_of_) {
      if (p != project) continue;
      auto page = store.list_trials(sid, TrialRole::kTrial, 0, kAll);
      EXPECT_TRUE(page.ok());
      for (const auto& t : page->trials)
        if (t.state == TrialState::kRunning) n += t.slots;
    }
    return n;
  }
  std::map<std::string, std::string> project_of_;
};

struct Running {
  std::string id, worker, project;
  int attempt = 0;
  int slots = 1;
};

TEST_F(ProjectShare, AProjectAtItsSlotLimitGetsNoMoreWhateverTheWorkers) {
  project("small", 1, {3, 0, 0});
  project("big", 1);
  sweep("small", 12);
  sweep("small", 6, 2);  // two-slot trials: one fits only when 2 of the 3 are free
  sweep("big", 30);
  std::deque<Running> running;
  int checks = 0, small_done = 0;
  for (int step = 0; step < 200 && (small_done < 18 || !running.empty()); ++step) {
    for (int w = 0; w < 4; ++w) {
      const std::string worker = "w" + std::to_string(w);
      int busy = 0;
      for (const auto& r : running) busy += r.worker == worker ? r.slots : 0;
      for (const auto& c : fill(worker, 4 - busy)) {
        const std::string sid = c.trial.sweep_id;
        running.push_back({c.trial.id, worker, project_of_[sid], c.trial.attempt, c.trial.slots});
      }
      // After every claim, the limit holds, in the counter and in the trials.
      ASSERT_LE(used("small"), 3);
      ASSERT_LE(running_slots("small"), 3);
      EXPECT_EQ(used("small"), running_slots("small"));
      ++checks;
    }
    // The oldest running trial ends.
    if (running.empty()) break;
    const Running done = running.front();
    running.pop_front();
    TrialResult result;
    result.value = 1;
    ASSERT_TRUE(store.complete(done.id, done.attempt, done.worker, result).ok());
    small_done += done.project == "small";
  }
  EXPECT_EQ(small_done, 18);  // every trial of the small project ran, three slots at a time
  EXPECT_GT(checks, 50);
  EXPECT_EQ(used("small"), 0);
  // Raised, the limit lets more in at once.
  ProjectRecord p{"small", 1, 0, {6, 0, 0}, {}};
  ASSERT_TRUE(store.update_project(p).ok());
  sweep("small", 10);
  fill("w9", 10);
  EXPECT_EQ(used("small"), 6);
}

// A saturated pool of 8 slots; every trial lasts one step. Projects of
// weight 1 and 3 hold it 2:6 step after step.
TEST_F(ProjectShare, WeightsOneAndThreeShareASaturatedPoolOneToThree) {
  project("one", 1);
  project("three", 3);
  sweep("one", 400);
  sweep("one", 400);
  sweep("three", 800);
  std::map<std::string, std::int64_t> slot_steps;
  std::deque<Running> running;
  for (int step = 0; step < 150; ++step) {
    for (const std::string worker : {"a", "b"}) {
      int busy = 0;
      for (const auto& r : running) busy += r.worker == worker ? r.slots : 0;
      for (const auto& c : fill(worker, 4 - busy))
        running.push_back(
            {c.trial.id, worker, project_of_[c.trial.sweep_id], c.trial.attempt, c.trial.slots});
    }
    ASSERT_EQ(running.size(), 8u);
    for (const auto& r : running) slot_steps[r.project] += r.slots;
    // A random-ish quarter of the running trials end (not only one project's).
    for (int k = 0; k < 2; ++k) {
      auto it = running.begin() + ((step * 5 + k * 3) % static_cast<int>(running.size()));
      TrialResult result;
      result.value = 1;
      ASSERT_TRUE(store.complete(it->id, it->attempt, it->worker, result).ok());
      running.erase(it);
    }
  }
  const double ratio = static_cast<double>(slot_steps["three"]) / slot_steps["one"];
  std::printf("slot-steps: weight 1 %lld, weight 3 %lld (ratio %.3f)\n",
              static_cast<long long>(slot_steps["one"]),
              static_cast<long long>(slot_steps["three"]), ratio);
  EXPECT_NEAR(ratio, 3.0, 0.3);
}

TEST_F(ProjectShare, AProjectAloneTakesTheWholePool) {
  project("one", 1);
  project("three", 3);
  const std::string one = sweep("one", 20);
  EXPECT_EQ(fill("a", 4).size(), 4u);
  EXPECT_EQ(fill("b", 4).size(), 4u);
  EXPECT_EQ(used("one"), 8);
  // Work of the heavier project now gets the slots that free up first.
  sweep("three", 20);
  auto first = store.list_trials(one, TrialRole::kTrial, 0, 2);
  ASSERT_TRUE(first.ok());
  for (const auto& t : first->trials) {
    TrialResult result;
    result.value = 1;
    ASSERT_TRUE(store.complete(t.id, t.attempt, t.worker, result).ok());
  }
  auto got = fill("a", 2);
  ASSERT_EQ(got.size(), 2u);
  for (const auto& c : got) EXPECT_EQ(project_of_[c.trial.sweep_id], "three");
}

// Eight slots, the first four with a GPU. Project "g" may hold two GPUs: its
// GPU trials take two of them and wait, its CPU trials take the rest of the
// worker, and the count of GPUs held is right in the counter, after trials
// end, and when a (restarted) scheduler recounts it.
TEST_F(ProjectShare, AProjectAtItsGpuLimitGetsNoMoreGpusButItsCpuTrialsRun) {
  project("g", 1, {0, 0, 0, 2});
  ResourceRequest gpu;
  gpu.gpus = 1;
  const std::string on_gpus = sweep("g", 5, 1, gpu);
  const std::string on_cpus = sweep("g", 5);
  Offer o;
  o.slots = o.total_slots = 8;
  o.free = {0, 1, 2, 3, 4, 5, 6, 7};
  o.gpus = o.all_gpus = std::vector<GpuDevice>(4, GpuDevice{"NVIDIA A100", 81920});
  o.torch = o.cuda = true;
  auto got = store.claim_batch("w", o, 8, kLeaseMs);
  ASSERT_TRUE(got.ok()) << got.error().message;
  std::map<std::string, std::vector<Claim>> by_sweep;
  for (const auto& c : got->claims) by_sweep[c.trial.sweep_id].push_back(c);
  EXPECT_EQ(by_sweep[on_gpus].size(), 2u);
  EXPECT_EQ(by_sweep[on_cpus].size(), 5u);
  for (const auto& c : by_sweep[on_gpus]) EXPECT_LT(c.slots.at(0), 4) << "not a GPU slot";
  EXPECT_EQ(use_of("g").gpus, 2);
  EXPECT_EQ(use_of("g").slots, 7);

  // One GPU trial ends: one more (and only one) takes its GPU.
  TrialResult result;
  result.value = 1;
  const Claim& first = by_sweep[on_gpus][0];
  ASSERT_TRUE(store.complete(first.trial.id, first.trial.attempt, "w", result).ok());
  EXPECT_EQ(use_of("g").gpus, 1);
  Offer one_free = o;
  one_free.slots = 1;
  one_free.free = {first.slots.at(0)};
  one_free.gpus = {o.all_gpus[0]};
  got = store.claim_batch("w", one_free, 8, kLeaseMs);
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(got->claims.size(), 1u);
  EXPECT_EQ(got->claims[0].trial.sweep_id, on_gpus);
  EXPECT_EQ(use_of("g").gpus, 2);
  got = store.claim_batch("w2", o, 8, kLeaseMs);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_TRUE(got->claims.empty()) << "past the GPU limit";

  // A scheduler's start recounts what each project holds from the leases.
  auto digest = token_digest("hpo_restart");
  ASSERT_TRUE(store.bootstrap("admin", digest, "default").ok());
  EXPECT_EQ(use_of("g").gpus, 2);
  EXPECT_EQ(use_of("g").slots, 7);
}

TEST_F(ProjectShare, WithinAProjectTheHighestPrioritySweepIsServedFirst) {
  project("p", 1);
  project("q", 1);
  const std::string low = sweep("p", 10);
  const std::string high = sweep("p", 3);
  const std::string other = sweep("q", 10);
  ASSERT_TRUE(store.set_priority(high, 5).ok());
  // Eight slots: q's weight still gets it half of them; p's half goes to its
  // high-priority sweep while that has trials, then to the other.
  std::map<std::string, int> got;
  for (const auto& c : fill("a", 8)) ++got[c.trial.sweep_id];
  EXPECT_EQ(got[other], 4);
  EXPECT_EQ(got[high], 3);
  EXPECT_EQ(got[low], 1);
  // Priority read back with the sweep.
  auto s = store.get_sweep(high);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->priority, 5);
}

TEST_F(ProjectShare, SubmitsPastAProjectsLimitsAreRefusedNamingTheLimit) {
  project("tight", 1, {0, 5, 2});
  const std::string first = sweep("tight", 0);
  sweep("tight", 5);
  NewSweep s{"third", "{}", false};
  s.project = "tight";
  auto third = store.create_sweep(s);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().code, ErrorCode::kQuotaExceeded);
  EXPECT_NE(third.error().message.find("max_active_sweeps is 2"), std::string::npos)
      << third.error().message;
  ASSERT_TRUE(store.cancel_sweep(first).ok());
  // One sweep runs now, but five trials are queued.
  auto fourth = store.create_sweep(s);
  ASSERT_FALSE(fourth.ok());
  EXPECT_NE(fourth.error().message.find("max_queued_trials is 5"), std::string::npos)
      << fourth.error().message;
  fill("a", 1);  // one leaves the queue
  EXPECT_TRUE(store.create_sweep(s).ok());
}

// max_queued_trials holds where trials are made, not only at submit: a
// running sweep's controller gets the first trials the project has room for,
// then a refusal naming the limit, and room again as trials leave the queue.
TEST_F(ProjectShare, MaxQueuedTrialsHoldsWhereTrialsAreCreated) {
  project("tight", 1, {0, 4, 0});
  const std::string sid = sweep("tight", 3);  // three queued: room for one more
  auto batch = [&](std::int64_t first, int n) {
    std::vector<NewTrial> out;
    for (int i = 0; i < n; ++i) {
      NewTrial t;
      t.sweep_id = sid;
      t.number = first + i;
      t.limit = 100000;
      t.params = {{"x", search::Value(static_cast<double>(first + i))}};
      out.push_back(t);
    }
    return out;
  };
  auto made = store.create_trials(batch(3, 5));
  ASSERT_TRUE(made.ok()) << made.error().message;
  ASSERT_EQ(made->size(), 1u);
  EXPECT_EQ(made->front().number, 3);
  EXPECT_EQ(use_of("tight").queued_trials, 4);
  auto full = store.create_trials(batch(4, 2));
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().code, ErrorCode::kQuotaExceeded);
  EXPECT_NE(full.error().message.find("max_queued_trials is 4"), std::string::npos)
      << full.error().message;
  ASSERT_EQ(fill("w", 2).size(), 2u);  // two leave the queue
  made = store.create_trials(batch(4, 5));
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(made->size(), 2u);
  EXPECT_EQ(use_of("tight").queued_trials, 4);
}

// A worker bound to one project (hpo-worker --project: its trials run as
// itself) never claims another project's trial, however the queue is
// ordered or weighted, and leaves them to a worker that takes every project's.
TEST_F(ProjectShare, AWorkerBoundToAProjectClaimsOnlyThatProjectsTrials) {
  project("mine", 1);
  project("theirs", 10);  // weighted to come first
  const std::string theirs = sweep("theirs", 6);
  const std::string mine = sweep("mine", 3);
  Offer bound = slots_only_offer(8);
  bound.project = "mine";
  auto got = store.claim_batch("bound", bound, 8, kLeaseMs);
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(got->claims.size(), 3u);
  for (const auto& c : got->claims) EXPECT_EQ(c.trial.sweep_id, mine);
  // Nothing more for it, though six trials wait.
  Offer again = slots_only_offer(5);
  again.project = "mine";
  got = store.claim_batch("bound", again, 5, kLeaseMs);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->claims.empty());
  EXPECT_EQ(used("theirs"), 0);
  // A worker of every project's takes them.
  auto open = fill("open", 6);
  ASSERT_EQ(open.size(), 6u);
  for (const auto& c : open) EXPECT_EQ(c.trial.sweep_id, theirs);
}

}  // namespace
}  // namespace hpo::trials
