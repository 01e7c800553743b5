// The store's contract (trials/store.hpp), one test per transition, run over
// each way the store may be set up (redis_store_test.cpp instantiates it:
// artifacts in Redis, artifacts in a folder). RedisStore and its Functions
// library are the one implementation of every transition; the tests that only
// a real server can show (and gangs) follow in redis_store_test.cpp.
//
// An Env provides: store() (every role, trials/store.hpp), advance(ms) (a
// point where a test lets store time run on: it polls while real time
// passes), pass(ms) (lets at least ms of store time go by: an outage of that
// length), and kLeaseMs, a lease short enough that tests can wait for it to
// lapse with bounded polling.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <string>

#include "tests/support/redis_server.hpp"
#include "trials/artifacts.hpp"
#include "trials/store.hpp"

namespace hpo::trials::conformance {

using hpo::testing::wait_for;

template <class Env>
class StoreConformance : public ::testing::Test {
 protected:
  Env env;
  AllRoles& store() { return env.store(); }
  TrialQueue& queue() { return env.store().queue(); }

  std::string new_sweep(bool maximize = false, const std::string& name = "s") {
    auto id = store().create_sweep(NewSweep{name, R"({"name":")" + name + R"("})", maximize});
    EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error().message);
    return id.ok() ? *id : "";
  }

  // The plan add_trial gives a trial: the store keeps it typed, through the
  // record's codec, and hands it back with every read and claim.
  static TrialPlan kept_plan(std::int64_t number) {
    TrialPlan plan;
    plan.member = MemberSpec{static_cast<int>(number), 7, false, 0.5, 0.25, 3, std::nullopt};
    plan.base_trial = "x-1";
    plan.base_rank = 1;
    return plan;
  }

  Trial add_trial(const std::string& sweep, std::int64_t number, int max_attempts = 1,
                  int slots = 1, TrialRole role = TrialRole::kTrial) {
    NewTrial nt;
    nt.sweep_id = sweep;
    nt.role = role;
    nt.number = number;
    nt.limit = 1000;
    nt.params = {
        {"x", static_cast<double>(number) + 0.5}, {"n", number}, {"opt", std::string("adam")}};
    nt.max_attempts = max_attempts;
    nt.slots = slots;
    nt.plan = kept_plan(number);
    auto t = store().create_trial(nt);
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
    return t.ok() ? *t : Trial{};
  }

  Claim must_claim(const std::string& worker, int slots = 1) {
    auto c = queue().claim(worker, slots, Env::kLeaseMs);
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message);
    EXPECT_TRUE(c.ok() && c->has_value()) << "nothing to claim";
    return c.ok() && c->has_value() ? **c : Claim{};
  }

  // Lets `n` leases lapse and be reaped (bounded polling; no sleeping for an outcome).
  void reap_expired(int n) {
    int handled = 0;
    bool ok = wait_for(
        [&] {
          env.advance(Env::kLeaseMs / 3);
          auto r = queue().reap(100, 0);
          if (r.ok()) handled += *r;
          return handled >= n;
        },
        std::chrono::seconds(5));
    ASSERT_TRUE(ok) << "reaped " << handled << " of " << n;
    ASSERT_EQ(handled, n);
  }

  TrialResult ok_result(double value) {
    TrialResult r;
    r.outcome = TrialState::kCompleted;
    r.value = value;
    r.metrics = {{"value", value}, {"accuracy", 0.875}};
    return r;
  }
};

TYPED_TEST_SUITE_P(StoreConformance);

TYPED_TEST_P(StoreConformance, CreateGetListSweeps) {
  std::string a = this->new_sweep(false, "alpha");
  std::string b = this->new_sweep(true, "beta");
  std::string c = this->new_sweep(false, "gamma");
  ASSERT_NE(a, b);
  for (char ch : a) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(ch))) << a;

  auto s = this->store().get_sweep(b);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->id, b);
  EXPECT_EQ(s->name, "beta");
  EXPECT_EQ(s->spec_json, R"({"name":"beta"})");
  EXPECT_TRUE(s->maximize);
  EXPECT_EQ(s->state, SweepState::kRunning);
  EXPECT_EQ(s->stage, SweepStage::kSearch);
  EXPECT_GT(s->created_ms, 0);
  EXPECT_EQ(s->next_number, 0);
  EXPECT_FALSE(s->best.has_value());

  auto all = this->store().list_sweeps(0, 10);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].id, c);  // newest first
  EXPECT_EQ((*all)[1].id, b);
  EXPECT_EQ((*all)[2].id, a);
  auto page = this->store().list_sweeps(1, 1);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 1u);
  EXPECT_EQ((*page)[0].id, b);

  auto active = this->store().active_sweeps();
  ASSERT_TRUE(active.ok());
  EXPECT_EQ(active->size(), 3u);

  EXPECT_EQ(this->store().get_sweep("nope").error().code, ErrorCode::kNotFound);
}

TYPED_TEST_P(StoreConformance, FinishSweepOnlyFromRunning) {
  std::string s = this->new_sweep();
  ASSERT_TRUE(this->store().finish_sweep(s, SweepState::kFinished, "").ok());
  auto sw = this->store().get_sweep(s);
  EXPECT_EQ(sw->state, SweepState::kFinished);
  EXPECT_GT(sw->finished_ms, 0);
  EXPECT_EQ(this->store().finish_sweep(s, SweepState::kFailed, "x").error().code,
            ErrorCode::kConflict);
  EXPECT_EQ(this->store().get_sweep(s)->state, SweepState::kFinished);
  EXPECT_TRUE(this->store().active_sweeps()->empty());
  EXPECT_EQ(this->store().finish_sweep("nope", SweepState::kFinished, "").error().code,
            ErrorCode::kNotFound);

  // Leftovers of a sweep that ends are stopped.
  std::string f = this->new_sweep();
  Trial running = this->add_trial(f, 0);
  Trial queued = this->add_trial(f, 1);
  this->must_claim("w1");
  ASSERT_TRUE(this->store().finish_sweep(f, SweepState::kFailed, "sampler crashed").ok());
  auto fs = this->store().get_sweep(f);
  EXPECT_EQ(fs->state, SweepState::kFailed);
  EXPECT_EQ(fs->error, "sampler crashed");
  EXPECT_EQ(fs->counts.cancelled, 1);
  auto q = this->store().get_trial(queued.id);
  EXPECT_EQ(q->state, TrialState::kCancelled);
  EXPECT_EQ(q->error, "sweep failed");
  EXPECT_EQ(*this->queue().heartbeat(running.id, 0, "w1", 1000), Control::kCancel);
}

TYPED_TEST_P(StoreConformance, CreateTrialIsCompareAndSetWithLimit) {
  std::string s = this->new_sweep();
  Trial t0 = this->add_trial(s, 0);
  EXPECT_EQ(t0.id, s + "-0");
  EXPECT_EQ(t0.state, TrialState::kQueued);
  EXPECT_EQ(t0.attempt, 0);
  EXPECT_EQ(std::get<double>(t0.params.at("x")), 0.5);
  EXPECT_EQ(std::get<std::int64_t>(t0.params.at("n")), 0);
  EXPECT_EQ(std::get<std::string>(t0.params.at("opt")), "adam");
  EXPECT_EQ(t0.plan, this->kept_plan(0));
  EXPECT_EQ(this->store().get_trial(t0.id)->plan, this->kept_plan(0));

  NewTrial again;
  again.sweep_id = s;
  again.number = 0;
  again.limit = 3;
  EXPECT_EQ(this->store().create_trial(again).error().code, ErrorCode::kConflict);  // twice
  again.number = 2;
  EXPECT_EQ(this->store().create_trial(again).error().code, ErrorCode::kConflict);  // gap
  again.number = 1;
  ASSERT_TRUE(this->store().create_trial(again).ok());
  again.number = 2;
  ASSERT_TRUE(this->store().create_trial(again).ok());
  again.number = 3;
  EXPECT_EQ(this->store().create_trial(again).error().code, ErrorCode::kConflict);  // limit

  Trial m0 = this->add_trial(s, 0, 1, 1, TrialRole::kMember);  // members count apart
  EXPECT_EQ(m0.id, s + "-m0");
  auto sw = this->store().get_sweep(s);
  EXPECT_EQ(sw->next_number, 3);
  EXPECT_EQ(sw->next_member, 1);
  EXPECT_EQ(sw->counts.queued, 3);
  EXPECT_EQ(sw->member_counts.queued, 1);

  auto page = this->store().list_trials(s, hpo::trials::TrialRole::kTrial, 1, 10);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->total, 3);
  ASSERT_EQ(page->trials.size(), 2u);
  EXPECT_EQ(page->trials[0].number, 1);
  EXPECT_EQ(page->trials[1].number, 2);

  again.sweep_id = "nope";
  again.number = 0;
  EXPECT_EQ(this->store().create_trial(again).error().code, ErrorCode::kNotFound);
  ASSERT_TRUE(this->store().finish_sweep(s, SweepState::kFinished, "").ok());
  again.sweep_id = s;
  again.number = 3;
  again.limit = 10;
  EXPECT_EQ(this->store().create_trial(again).error().code, ErrorCode::kConflict);
}

TYPED_TEST_P(StoreConformance, ClaimHeartbeatReportComplete) {
  std::string s = this->new_sweep();
  Trial t0 = this->add_trial(s, 0);
  Trial t1 = this->add_trial(s, 1);
  Claim c = this->must_claim("w1");
  EXPECT_EQ(c.trial.id, t0.id);  // oldest first
  EXPECT_EQ(c.trial.state, TrialState::kRunning);
  EXPECT_EQ(c.trial.worker, "w1");
  EXPECT_EQ(c.trial.attempt, 0);
  EXPECT_EQ(c.trial.plan, this->kept_plan(0));
  EXPECT_GE(c.trial.started_ms, t0.created_ms);
  EXPECT_EQ(c.lease_deadline_ms, c.trial.started_ms + TypeParam::kLeaseMs);
  EXPECT_EQ(this->store().get_sweep(s)->counts.running, 1);

  auto hb = this->queue().heartbeat(t0.id, 0, "w1", TypeParam::kLeaseMs);
  ASSERT_TRUE(hb.ok()) << hb.error().message;
  EXPECT_EQ(*hb, Control::kNone);

  auto rep = this->queue().report(t0.id, 0, "w1", StepReport{3, {{"loss", 0.1234567890123}}, 0});
  ASSERT_TRUE(rep.ok()) << rep.error().message;
  auto page = this->store().get_reports(t0.id, 0, kAll);
  ASSERT_TRUE(page.ok()) << page.error().message;
  const auto& reports = page->reports;
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(page->total, 1);
  EXPECT_EQ(reports[0].step, 3);
  EXPECT_EQ(reports[0].metrics.at("loss"), 0.1234567890123);
  EXPECT_GE(reports[0].time_ms, c.trial.started_ms);

  const double value = 0.1 + 0.2;  // not exactly representable in short decimal
  ASSERT_TRUE(this->queue().complete(t0.id, 0, "w1", this->ok_result(value)).ok());
  auto done = this->store().get_trial(t0.id);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state, TrialState::kCompleted);
  ASSERT_TRUE(done->value.has_value());
  EXPECT_EQ(*done->value, value);
  EXPECT_EQ(done->metrics.at("accuracy"), 0.875);
  EXPECT_GE(done->finished_ms, done->started_ms);

  auto attempts = this->store().get_attempts(t0.id);
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ((*attempts)[0].worker, "w1");
  EXPECT_EQ((*attempts)[0].outcome, "completed");
  EXPECT_GE((*attempts)[0].ended_ms, (*attempts)[0].started_ms);

  Claim c1 = this->must_claim("w2");
  EXPECT_EQ(c1.trial.id, t1.id);
  auto none = this->queue().claim("w3", 4, TypeParam::kLeaseMs);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  auto sw = this->store().get_sweep(s);
  EXPECT_EQ(sw->counts.completed, 1);
  EXPECT_EQ(sw->counts.running, 1);
  EXPECT_EQ(sw->counts.queued, 0);
}

TYPED_TEST_P(StoreConformance, ClaimTakesOnlyWhatFits) {
  std::string s = this->new_sweep();
  Trial big = this->add_trial(s, 0, 1, 4);
  Trial small = this->add_trial(s, 1, 1, 1);
  Claim c = this->must_claim("w1", 2);
  EXPECT_EQ(c.trial.id, small.id);  // the 4-slot trial does not fit in 2
  auto none = this->queue().claim("w1", 2, TypeParam::kLeaseMs);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  Claim c2 = this->must_claim("w2", 4);
  EXPECT_EQ(c2.trial.id, big.id);
  EXPECT_EQ(c2.trial.slots, 4);
}

// Placement: a claim takes only trials whose sweep's request the offer meets
// (GPU model and memory, torch, cores, labels), and GPU and CPU requests share
// one offer the way the agent then picks its slots.
TYPED_TEST_P(StoreConformance, ClaimsTakeOnlyTrialsTheOfferFits) {
  auto sweep_with = [&](const ResourceRequest& needs) {
    NewSweep ns{"placed", "{}", false};
    ns.needs = needs;
    auto id = this->store().create_sweep(ns);
    EXPECT_TRUE(id.ok());
    return id.ok() ? *id : "";
  };
  ResourceRequest a100;
  a100.slots = a100.gpus = 1;
  a100.gpu_model = "a100";
  a100.gpu_memory_gb = 40;
  ResourceRequest zoned;
  zoned.labels = {"zone=a"};
  zoned.cpus = 4;
  ResourceRequest torch;
  torch.torch = true;
  Trial g = this->add_trial(sweep_with(a100), 0);
  Trial z = this->add_trial(sweep_with(zoned), 0);
  Trial t = this->add_trial(sweep_with(torch), 0);

  Offer cpu_host;  // two CPU slots, no torch, zone b, 8 cores
  cpu_host.slots = cpu_host.total_slots = 2;
  cpu_host.cpus = cpu_host.total_cpus = 8;
  cpu_host.labels = {{"zone", "b"}};
  auto none = this->queue().claim_batch("cpu", cpu_host, 8, TypeParam::kLeaseMs);
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_TRUE(none->claims.empty());

  Offer t4_host = cpu_host;  // a T4 is not an A100
  t4_host.gpus = t4_host.all_gpus = {GpuDevice{"tesla t4", 15360}, GpuDevice{"tesla t4", 15360}};
  t4_host.labels = {{"zone", "a"}};
  t4_host.cpus = 3;  // 5 of its 8 cores promised to running trials
  EXPECT_TRUE(this->queue().claim_batch("t4", t4_host, 8, TypeParam::kLeaseMs)->claims.empty());
  t4_host.cpus = 4;
  t4_host.torch = true;
  auto got = this->queue().claim_batch("t4", t4_host, 8, TypeParam::kLeaseMs);
  ASSERT_TRUE(got.ok());
  std::set<std::string> ids;
  for (const auto& c : got->claims) ids.insert(c.trial.id);
  EXPECT_EQ(ids, (std::set<std::string>{z.id, t.id}));

  Offer a100_host;  // one A100 slot and one CPU slot
  a100_host.slots = a100_host.total_slots = 2;
  a100_host.gpus = a100_host.all_gpus = {GpuDevice{"nvidia a100-sxm4-80gb", 81920}};
  auto gpu = this->queue().claim_batch("a100", a100_host, 8, TypeParam::kLeaseMs);
  ASSERT_TRUE(gpu.ok());
  ASSERT_EQ(gpu->claims.size(), 1u);
  EXPECT_EQ(gpu->claims[0].trial.id, g.id);

  // A CPU trial first takes the CPU slot, so a GPU trial after it in the same
  // batch still finds the GPU; with only a GPU slot free it takes that one.
  std::string cpu_sweep = sweep_with(ResourceRequest{});
  std::string gpu_sweep = sweep_with(a100);
  this->add_trial(cpu_sweep, 0);
  this->add_trial(gpu_sweep, 0);
  auto both = this->queue().claim_batch("a100b", a100_host, 8, TypeParam::kLeaseMs);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->claims.size(), 2u);
  this->add_trial(cpu_sweep, 1);
  this->add_trial(gpu_sweep, 1);
  Offer one_gpu = a100_host;
  one_gpu.slots = 1;  // the CPU slot is busy
  auto one = this->queue().claim_batch("a100c", one_gpu, 8, TypeParam::kLeaseMs);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->claims.size(), 1u);  // whichever came first used the only slot
}

// A trial wider than the room a busy worker has is passed over while narrow
// ones fill the gap, but only a few times: then the worker reserves it, takes
// nothing else, and runs it as soon as its room frees. Another worker is not
// held up by that reservation.
TYPED_TEST_P(StoreConformance, AWideTrialPassedOverIsReservedAndNotStarved) {
  std::string wide_sweep = this->new_sweep(false, "wide");
  std::string narrow_sweep = this->new_sweep(false, "narrow");
  Trial wide = this->add_trial(wide_sweep, 0, 1, 2);
  for (int i = 0; i < 8; ++i) this->add_trial(narrow_sweep, i);
  Offer busy;  // 2 slots, one busy
  busy.total_slots = 2;
  busy.slots = 1;
  std::vector<std::string> taken;
  for (int round = 0; round < 4; ++round) {
    auto got = this->queue().claim_batch("w", busy, 1, TypeParam::kLeaseMs);
    ASSERT_TRUE(got.ok()) << got.error().message;
    for (const auto& c : got->claims) {
      taken.push_back(c.trial.sweep_id);
      EXPECT_EQ(c.trial.sweep_id, narrow_sweep);
    }
  }
  // Passed over twice (narrow trials filled the gap), reserved on the third.
  EXPECT_EQ(taken.size(), 2u);
  // Another worker with one slot in all cannot run the wide trial: it is not
  // held up by the reservation and takes narrow ones.
  auto other = this->queue().claim_batch("small", slots_only_offer(1), 1, TypeParam::kLeaseMs);
  ASSERT_TRUE(other.ok());
  ASSERT_EQ(other->claims.size(), 1u);
  EXPECT_EQ(other->claims[0].trial.sweep_id, narrow_sweep);
  // Room for it: the reserved trial comes first.
  Offer idle = busy;
  idle.slots = 2;
  auto got = this->queue().claim_batch("w", idle, 1, TypeParam::kLeaseMs);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->claims.size(), 1u);
  EXPECT_EQ(got->claims[0].trial.id, wide.id);
  // The reservation ended with the claim: narrow trials flow again.
  got = this->queue().claim_batch("w", busy, 1, TypeParam::kLeaseMs);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->claims.size(), 1u);
  EXPECT_EQ(got->claims[0].trial.sweep_id, narrow_sweep);
}

TYPED_TEST_P(StoreConformance, StaleAttemptIsFencedOff) {
  std::string s = this->new_sweep();
  Trial t = this->add_trial(s, 0, 3);
  this->must_claim("w1");
  this->reap_expired(1);  // w1 went silent: attempt 1 is queued
  auto requeued = this->store().get_trial(t.id);
  EXPECT_EQ(requeued->state, TrialState::kQueued);
  EXPECT_EQ(requeued->attempt, 1);

  // w1 comes back with attempt 0: every call is refused and changes nothing.
  EXPECT_EQ(this->queue().heartbeat(t.id, 0, "w1", 1000).error().code, ErrorCode::kLeaseLost);
  EXPECT_EQ(this->queue().report(t.id, 0, "w1", StepReport{1, {{"loss", 1}}, 0}).error().code,
            ErrorCode::kLeaseLost);
  EXPECT_EQ(this->queue().complete(t.id, 0, "w1", this->ok_result(1)).error().code,
            ErrorCode::kLeaseLost);
  auto after = this->store().get_trial(t.id);
  EXPECT_EQ(after->state, TrialState::kQueued);
  EXPECT_EQ(after->attempt, 1);
  EXPECT_FALSE(after->value.has_value());
  EXPECT_TRUE(this->store().get_reports(t.id, 0, kAll)->reports.empty());

  // w2 takes attempt 1; the stale w1 still cannot touch it, nor can w1 with w2's attempt.
  Claim c = this->must_claim("w2");
  EXPECT_EQ(c.trial.attempt, 1);
  EXPECT_EQ(this->queue().complete(t.id, 0, "w1", this->ok_result(1)).error().code,
            ErrorCode::kLeaseLost);
  EXPECT_EQ(this->queue().complete(t.id, 1, "w1", this->ok_result(1)).error().code,
            ErrorCode::kLeaseLost);
  EXPECT_EQ(this->store().get_trial(t.id)->state, TrialState::kRunning);
  ASSERT_TRUE(this->queue().complete(t.id, 1, "w2", this->ok_result(2)).ok());
  EXPECT_EQ(*this->store().get_trial(t.id)->value, 2);
  EXPECT_EQ(this->queue().heartbeat("nope", 0, "w1", 1000).error().code, ErrorCode::kNotFound);
}

TYPED_TEST_P(StoreConformance, CompleteIsAcceptedExactlyOnce) {
  std::string s = this->new_sweep();
  Trial t = this->add_trial(s, 0);
  this->must_claim("w1");
  ASSERT_TRUE(this->queue().complete(t.id, 0, "w1", this->ok_result(5)).ok());
  EXPECT_EQ(this->queue().complete(t.id, 0, "w1", this->ok_result(1)).error().code,
            ErrorCode::kLeaseLost);
  auto done = this->store().get_trial(t.id);
  EXPECT_EQ(*done->value, 5);
  auto sw = this->store().get_sweep(s);
  EXPECT_EQ(sw->counts.completed, 1);
  EXPECT_EQ(sw->counts.finished(), 1);
  EXPECT_EQ(sw->counts.active(), 0);
  // A finished trial is immutable: no control, no heartbeat.
  EXPECT_EQ(this->store().set_control(t.id, Control::kPrune).error().code, ErrorCode::kConflict);
  EXPECT_EQ(this->queue().heartbeat(t.id, 0, "w1", 1000).error().code, ErrorCode::kLeaseLost);
}

TYPED_TEST_P(StoreConformance, ReapRequeuesThenFailsAtMaxAttempts) {
  std::string s = this->new_sweep();
  Trial t = this->add_trial(s, 0, 2);
  this->must_claim("w1");
  // A heartbeat extends the lease: nothing to reap right after it.
  ASSERT_TRUE(this->queue().heartbeat(t.id, 0, "w1", 60'000).ok());
  this->env.advance(TypeParam::kLeaseMs * 2);
  EXPECT_EQ(*this->queue().reap(10, 0), 0);
  ASSERT_TRUE(this->queue().heartbeat(t.id, 0, "w1", TypeParam::kLeaseMs).ok());

  this->reap_expired(1);
  auto t1 = this->store().get_trial(t.id);
  EXPECT_EQ(t1->state, TrialState::kQueued);
  EXPECT_EQ(t1->attempt, 1);
  Claim c = this->must_claim("w2");
  EXPECT_EQ(c.trial.attempt, 1);
  this->reap_expired(1);
  auto t2 = this->store().get_trial(t.id);
  EXPECT_EQ(t2->state, TrialState::kFailed);
  EXPECT_EQ(t2->error, "lease expired after 2 attempts");
  auto attempts = this->store().get_attempts(t.id);
  ASSERT_EQ(attempts->size(), 2u);
  EXPECT_EQ((*attempts)[0].worker, "w1");
  EXPECT_EQ((*attempts)[0].outcome, "lease_expired");
  EXPECT_EQ((*attempts)[1].worker, "w2");
  EXPECT_EQ((*attempts)[1].outcome, "lease_expired");
  auto sw = this->store().get_sweep(s);
  EXPECT_EQ(sw->counts.failed, 1);
  EXPECT_EQ(sw->counts.active(), 0);
  EXPECT_EQ(*this->queue().reap(10, 0), 0);
}

TYPED_TEST_P(StoreConformance, ReapHonoursControlFlags) {
  std::string s = this->new_sweep();
  Trial pruned = this->add_trial(s, 0, 5);
  Trial cancelled = this->add_trial(s, 1, 5);
  this->must_claim("w1");
  this->must_claim("w2");
  ASSERT_TRUE(this->store().set_control(pruned.id, Control::kPrune).ok());
  ASSERT_TRUE(this->store().set_control(cancelled.id, Control::kCancel).ok());
  this->reap_expired(2);  // both workers died: no retry for what was being stopped
  EXPECT_EQ(this->store().get_trial(pruned.id)->state, TrialState::kPruned);
  EXPECT_EQ(this->store().get_trial(cancelled.id)->state, TrialState::kCancelled);
  auto sw = this->store().get_sweep(s);
  EXPECT_EQ(sw->counts.pruned, 1);
  EXPECT_EQ(sw->counts.cancelled, 1);
  EXPECT_EQ(sw->counts.active(), 0);
}

TYPED_TEST_P(StoreConformance, RetryableFailureRequeues) {
  std::string s = this->new_sweep();
  Trial t = this->add_trial(s, 0, 2);
  Trial u = this->add_trial(s, 1, 3);
  TrialResult failed;
  failed.outcome = TrialState::kFailed;
  failed.error = "exit code 1";
  failed.retryable = true;

  this->must_claim("w1");  // t, attempt 0
  ASSERT_TRUE(this->queue().complete(t.id, 0, "w1", failed).ok());
  EXPECT_EQ(this->store().get_trial(t.id)->state, TrialState::kQueued);
  EXPECT_EQ(this->store().get_trial(t.id)->attempt, 1);
  Claim cu = this->must_claim("w1");
  EXPECT_EQ(cu.trial.id, u.id);  // the retry went to the tail of the queue
  Claim ct = this->must_claim("w1");
  EXPECT_EQ(ct.trial.id, t.id);
  EXPECT_EQ(ct.trial.attempt, 1);
  ASSERT_TRUE(this->queue().complete(t.id, 1, "w1", failed).ok());  // last attempt
  auto tt = this->store().get_trial(t.id);
  EXPECT_EQ(tt->state, TrialState::kFailed);
  EXPECT_EQ(tt->error, "exit code 1");

  failed.retryable = false;  // attempts left, but not retryable
  ASSERT_TRUE(this->queue().complete(u.id, 0, "w1", failed).ok());
  EXPECT_EQ(this->store().get_trial(u.id)->state, TrialState::kFailed);
  EXPECT_EQ(this->store().get_sweep(s)->counts.failed, 2);
  EXPECT_EQ(this->store().get_attempts(t.id)->size(), 2u);
}

TYPED_TEST_P(StoreConformance, CancelSweep) {
  std::string s = this->new_sweep();
  Trial running = this->add_trial(s, 0);
  Trial queued = this->add_trial(s, 1);
  this->must_claim("w1");
  ASSERT_TRUE(this->store().cancel_sweep(s).ok());
  auto sw = this->store().get_sweep(s);
  EXPECT_EQ(sw->state, SweepState::kCancelled);
  EXPECT_EQ(sw->counts.cancelled, 1);
  EXPECT_EQ(sw->counts.running, 1);
  EXPECT_EQ(this->store().get_trial(queued.id)->state, TrialState::kCancelled);
  EXPECT_EQ(*this->queue().heartbeat(running.id, 0, "w1", 1000), Control::kCancel);
  auto none = this->queue().claim("w2", 1, TypeParam::kLeaseMs);
  EXPECT_FALSE(none->has_value());  // the cancelled trial is not handed out
  TrialResult r;
  r.outcome = TrialState::kCancelled;
  r.error = "cancelled";
  ASSERT_TRUE(this->queue().complete(running.id, 0, "w1", r).ok());
  EXPECT_EQ(this->store().get_sweep(s)->counts.cancelled, 2);
  EXPECT_TRUE(this->store().cancel_sweep(s).ok());  // idempotent
  EXPECT_TRUE(this->store().active_sweeps()->empty());
  NewTrial nt;
  nt.sweep_id = s;
  nt.number = 2;
  nt.limit = 10;
  EXPECT_EQ(this->store().create_trial(nt).error().code, ErrorCode::kConflict);
  EXPECT_EQ(this->store().cancel_sweep("nope").error().code, ErrorCode::kNotFound);
}

TYPED_TEST_P(StoreConformance, ControlAndStage) {
  std::string s = this->new_sweep();
  Trial t = this->add_trial(s, 0);
  Trial q = this->add_trial(s, 1);
  this->must_claim("w1");
  ASSERT_TRUE(this->store().set_control(t.id, Control::kPrune).ok());
  EXPECT_EQ(*this->queue().heartbeat(t.id, 0, "w1", 1000), Control::kPrune);
  EXPECT_EQ(*this->queue().report(t.id, 0, "w1", StepReport{1, {}, 0}), Control::kPrune);
  TrialResult pruned;
  pruned.outcome = TrialState::kPruned;
  ASSERT_TRUE(this->queue().complete(t.id, 0, "w1", pruned).ok());
  EXPECT_EQ(this->store().get_sweep(s)->counts.pruned, 1);
  ASSERT_TRUE(this->store().set_control(q.id, Control::kCancel).ok());  // queued: cancelled now
  EXPECT_EQ(this->store().get_trial(q.id)->state, TrialState::kCancelled);
  EXPECT_EQ(this->store().set_control("nope", Control::kPrune).error().code, ErrorCode::kNotFound);

  ASSERT_TRUE(this->store().set_stage(s, SweepStage::kSearch, SweepStage::kEnsemble).ok());
  EXPECT_EQ(this->store().set_stage(s, SweepStage::kSearch, SweepStage::kEnsemble).error().code,
            ErrorCode::kConflict);
  EXPECT_EQ(this->store().get_sweep(s)->stage, SweepStage::kEnsemble);
}

TYPED_TEST_P(StoreConformance, CountersAndBestTrialMinimize) {
  std::string s = this->new_sweep(false);
  for (int i = 0; i < 4; ++i) this->add_trial(s, i);
  const double values[] = {3.5, -1.25, 7.0, -1.0};
  for (int i = 0; i < 4; ++i) {
    Claim c = this->must_claim("w1");
    ASSERT_TRUE(this->queue().complete(c.trial.id, 0, "w1", this->ok_result(values[i])).ok());
  }
  auto sw = this->store().get_sweep(s);
  EXPECT_EQ(sw->counts.completed, 4);
  ASSERT_TRUE(sw->best.has_value());
  EXPECT_EQ(sw->best->trial_id, s + "-1");
  EXPECT_EQ(sw->best->number, 1);
  EXPECT_EQ(sw->best->value, -1.25);
  EXPECT_EQ(std::get<std::int64_t>(sw->best->params.at("n")), 1);
}

TYPED_TEST_P(StoreConformance, CountersAndBestTrialMaximize) {
  std::string s = this->new_sweep(true);
  for (int i = 0; i < 4; ++i) this->add_trial(s, i);
  this->add_trial(s, 0, 1, 1, TrialRole::kMember);
  const double values[] = {3.5, -1.25, 7.0, 6.0};
  for (int i = 0; i < 4; ++i) {
    Claim c = this->must_claim("w1");
    ASSERT_TRUE(this->queue().complete(c.trial.id, 0, "w1", this->ok_result(values[i])).ok());
  }
  Claim m = this->must_claim("w1");
  EXPECT_EQ(m.trial.role, TrialRole::kMember);
  ASSERT_TRUE(this->queue().complete(m.trial.id, 0, "w1", this->ok_result(100)).ok());
  auto sw = this->store().get_sweep(s);
  ASSERT_TRUE(sw->best.has_value());
  EXPECT_EQ(sw->best->trial_id, s + "-2");  // members never become the best trial
  EXPECT_EQ(sw->best->value, 7.0);
  EXPECT_EQ(sw->member_counts.completed, 1);
  EXPECT_EQ(sw->counts.completed, 4);
}

// constraints: a trial that breaks one (or does not report its metric) is
// never the best, one by one, in a batch, and in an import.
TYPED_TEST_P(StoreConformance, TheBestKeepsTheConstraints) {
  NewSweep n{"c", R"({"name":"c"})", false};
  n.constraints = {{"ms", 20.0, std::nullopt}, {"accuracy", std::nullopt, 0.5}};
  auto id = this->store().create_sweep(n);
  ASSERT_TRUE(id.ok()) << id.error().message;
  const std::string s = *id;
  auto result = [&](double value, std::optional<double> ms) {
    TrialResult r = this->ok_result(value);  // accuracy 0.875
    if (ms) r.metrics["ms"] = *ms;
    return r;
  };
  for (int i = 0; i < 6; ++i) this->add_trial(s, i);
  // 0: feasible; 1: better but too slow; 2: better, no "ms" reported.
  for (auto r : {result(3.0, 12.0), result(1.0, 25.0), result(0.5, std::nullopt)}) {
    Claim c = this->must_claim("w1");
    ASSERT_TRUE(this->queue().complete(c.trial.id, 0, "w1", r).ok());
  }
  auto sw = this->store().get_sweep(s);
  ASSERT_TRUE(sw->best.has_value());
  EXPECT_EQ(sw->best->number, 0);
  EXPECT_EQ(sw->counts.completed, 3);
  // A batch: 3 keeps both bounds exactly at their limits, 4 is too inaccurate.
  auto batch = this->queue().claim_batch("w1", 3, 3, TypeParam::kLeaseMs);
  ASSERT_EQ(batch->claims.size(), 3u);
  TrialResult inaccurate = result(0.1, 5.0);
  inaccurate.metrics["accuracy"] = 0.25;
  auto done =
      this->queue().complete_batch("w1", {{batch->claims[0].trial.id, 0, result(2.0, 20.0), ""},
                                          {batch->claims[1].trial.id, 0, inaccurate, ""},
                                          {batch->claims[2].trial.id, 0, result(2.5, 19.0), ""}});
  ASSERT_TRUE(done.ok());
  sw = this->store().get_sweep(s);
  EXPECT_EQ(sw->best->number, 3);
  EXPECT_EQ(sw->best->value, 2.0);

  // An import keeps them too.
  ImportedTrial fast, slow;
  fast.state = slow.state = TrialState::kCompleted;
  fast.params = slow.params = {{"x", 0.5}};
  fast.value = 4.0;
  fast.metrics = {{"value", 4.0}, {"ms", 3.0}, {"accuracy", 0.9}};
  slow.value = 1.0;
  slow.metrics = {{"value", 1.0}, {"ms", 30.0}, {"accuracy", 0.9}};
  NewSweep m{"ci", R"({"name":"ci"})", false};
  m.constraints = n.constraints;
  auto imported = this->store().import_sweep(m, {slow, fast});
  ASSERT_TRUE(imported.ok()) << imported.error().message;
  auto is = this->store().get_sweep(*imported);
  ASSERT_TRUE(is->best.has_value());
  EXPECT_EQ(is->best->number, 1);
}

TYPED_TEST_P(StoreConformance, EventsAppearInOrder) {
  std::string s = this->new_sweep();
  Trial t = this->add_trial(s, 0);
  this->must_claim("w1");
  ASSERT_TRUE(this->queue().complete(t.id, 0, "w1", this->ok_result(1.5)).ok());
  auto ev = this->store().read_events("0", 100, 0);
  ASSERT_TRUE(ev.ok());
  std::vector<std::string> types;
  for (const auto& e : *ev)
    if (e.sweep_id == s) types.push_back(e.type);
  EXPECT_EQ(types, (std::vector<std::string>{"sweep.created", "trial.queued", "trial.started",
                                             "trial.finished"}));
  EXPECT_EQ(ev->back().trial_id, t.id);
  EXPECT_NE(ev->back().data.find("\"value\":1.5"), std::string::npos) << ev->back().data;
  // Reading after the last id returns only what comes next.
  std::string last = ev->back().id;
  EXPECT_TRUE(this->store().read_events(last, 100, 0)->empty());
  ASSERT_TRUE(this->store().cancel_sweep(s).ok());
  auto next = this->store().read_events(last, 100, 0);
  ASSERT_EQ(next->size(), 1u);
  EXPECT_EQ((*next)[0].type, "sweep.finished");
  // A blocking read returns at once when there is something to read.
  auto blocked = this->store().read_events(last, 100, 5000);
  ASSERT_TRUE(blocked.ok());
  ASSERT_EQ(blocked->size(), 1u);
  EXPECT_EQ((*blocked)[0].type, "sweep.finished");
  EXPECT_EQ(this->store().read_events("0", 2, 0)->size(), 2u);  // max_count
}

TYPED_TEST_P(StoreConformance, WorkersRegistry) {
  WorkerInfo w;
  w.name = "gpu-host-1";
  w.host = "10.0.0.7";
  w.slots = 2;
  w.busy_slots = 1;
  w.trials = {"abc-1"};
  w.gpus = {GpuInfo{0, "H100", 81559, 1234, 87}};
  w.started_ms = 42;
  ASSERT_TRUE(this->store().put_worker(w, TypeParam::kLeaseMs).ok());
  ASSERT_TRUE(this->store().put_worker(w, TypeParam::kLeaseMs).ok());
  auto live = this->store().list_workers();
  ASSERT_TRUE(live.ok());
  ASSERT_EQ(live->size(), 1u);
  const WorkerInfo& got = (*live)[0];
  EXPECT_EQ(got.name, "gpu-host-1");
  EXPECT_EQ(got.host, "10.0.0.7");
  EXPECT_EQ(got.slots, 2);
  EXPECT_EQ(got.busy_slots, 1);
  EXPECT_EQ(got.trials, std::vector<std::string>{"abc-1"});
  ASSERT_EQ(got.gpus.size(), 1u);
  EXPECT_EQ(got.gpus[0].name, "H100");
  EXPECT_EQ(got.gpus[0].memory_total_mb, 81559);
  EXPECT_EQ(got.gpus[0].utilization_pct, 87);
  EXPECT_GT(got.last_heartbeat_ms, 0);
  EXPECT_EQ(got.started_ms, 42);
  int joined = 0;
  auto events = this->store().read_events("0", 100, 0);
  ASSERT_TRUE(events.ok());
  for (const auto& e : *events) joined += e.type == "worker.joined";
  EXPECT_EQ(joined, 1);  // only the first put
  ASSERT_TRUE(wait_for(
      [&] {
        this->env.advance(TypeParam::kLeaseMs / 3);
        auto l = this->store().list_workers();
        return l.ok() && l->empty();
      },
      std::chrono::seconds(5)));
}

TYPED_TEST_P(StoreConformance, ArtifactsAreBinarySafe) {
  std::string s = this->new_sweep();
  Trial t = this->add_trial(s, 0);
  this->must_claim("w1");
  std::string bytes("model\0\x01\xff\r\n%s%n", 14);
  ASSERT_TRUE(this->queue().put_artifact(t.id, 0, "w1", "model.pt", bytes).ok());
  auto got = this->store().get_artifact(t.id, "model.pt");
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, bytes);
  EXPECT_FALSE(this->store().get_artifact(t.id, "other")->has_value());
  EXPECT_EQ(this->store().put_record("nope", "x", "y").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(this->queue().put_artifact("nope", 0, "w1", "x", "y").error().code,
            ErrorCode::kNotFound);
}

// Every byte of a trial is fenced: only the attempt holding the lease writes.
TYPED_TEST_P(StoreConformance, ArtifactsAreFencedByAttemptAndWorker) {
  std::string s = this->new_sweep();
  Trial t = this->add_trial(s, 0, 3);
  this->must_claim("w1");
  ASSERT_TRUE(this->queue().release(t.id, 0, "w1", "test", true).ok());
  this->must_claim("w2");  // attempt 1
  ASSERT_TRUE(this->queue().put_artifact(t.id, 1, "w2", "model.pt", "accepted").ok());
  EXPECT_EQ(this->queue().put_artifact(t.id, 0, "w1", "model.pt", "stale").error().code,
            ErrorCode::kLeaseLost);
  EXPECT_EQ(this->queue().put_artifact(t.id, 1, "w1", "model.pt", "other").error().code,
            ErrorCode::kLeaseLost);
  ASSERT_TRUE(this->queue().complete(t.id, 1, "w2", this->ok_result(1)).ok());
  EXPECT_EQ(this->queue().put_artifact(t.id, 1, "w2", "model.pt", "late").error().code,
            ErrorCode::kLeaseLost);
  EXPECT_EQ(**this->store().get_artifact(t.id, "model.pt"), "accepted");
}

// A release gives the attempt back: the next attempt goes first and no failure is counted.
TYPED_TEST_P(StoreConformance, ReleaseRequeuesAtTheHeadWithoutCountingAFailure) {
  std::string s = this->new_sweep();
  Trial a = this->add_trial(s, 0, 1);
  Trial b = this->add_trial(s, 1, 1);
  EXPECT_EQ(this->must_claim("w1").trial.id, a.id);
  ASSERT_TRUE(this->queue().release(a.id, 0, "w1", "worker draining", true).ok());
  EXPECT_EQ(this->queue().release(a.id, 0, "w1", "again", true).error().code,
            ErrorCode::kLeaseLost);
  auto ta = this->store().get_trial(a.id);
  EXPECT_EQ(ta->state, TrialState::kQueued);
  EXPECT_EQ(ta->attempt, 1);
  EXPECT_EQ(ta->released, 1);
  Claim again = this->must_claim("w2");
  EXPECT_EQ(again.trial.id, a.id);  // before b, which waited behind it
  EXPECT_EQ(again.trial.attempt, 1);
  // max_attempts 1 and one real attempt so far: a retryable failure now ends it.
  TrialResult failed;
  failed.outcome = TrialState::kFailed;
  failed.error = "exit code 1";
  ASSERT_TRUE(this->queue().complete(a.id, 1, "w2", failed).ok());
  EXPECT_EQ(this->store().get_trial(a.id)->state, TrialState::kFailed);
  auto attempts = this->store().get_attempts(a.id);
  ASSERT_EQ(attempts->size(), 2u);
  EXPECT_EQ((*attempts)[0].outcome, "released");
  EXPECT_EQ((*attempts)[0].error, "worker draining");
  EXPECT_EQ((*attempts)[1].outcome, "failed");
  // A released trial whose sweep was cancelled meanwhile ends cancelled.
  EXPECT_EQ(this->must_claim("w1").trial.id, b.id);
  ASSERT_TRUE(this->store().cancel_sweep(s).ok());
  ASSERT_TRUE(this->queue().release(b.id, 0, "w1", "worker draining", true).ok());
  EXPECT_EQ(this->store().get_trial(b.id)->state, TrialState::kCancelled);
  EXPECT_EQ(this->store().get_sweep(s)->counts.active(), 0);
}

// A trial being cancelled or pruned is never run again, even when it fails retryably.
TYPED_TEST_P(StoreConformance, RetryableFailureOfAStoppedTrialIsNotRequeued) {
  std::string s = this->new_sweep();
  Trial p = this->add_trial(s, 0, 3);
  Trial c = this->add_trial(s, 1, 3);
  this->must_claim("w1");
  this->must_claim("w1");
  ASSERT_TRUE(this->store().set_control(p.id, Control::kPrune).ok());
  ASSERT_TRUE(this->store().set_control(c.id, Control::kCancel).ok());
  TrialResult failed;
  failed.outcome = TrialState::kFailed;
  failed.error = "killed by signal 15";
  failed.retryable = true;
  ASSERT_TRUE(this->queue().complete(p.id, 0, "w1", failed).ok());
  ASSERT_TRUE(this->queue().complete(c.id, 0, "w1", failed).ok());
  EXPECT_EQ(this->store().get_trial(p.id)->state, TrialState::kPruned);
  EXPECT_EQ(this->store().get_trial(c.id)->state, TrialState::kCancelled);
  EXPECT_EQ(this->store().get_trial(c.id)->attempt, 0);
  auto none = this->queue().claim("w2", 1, TypeParam::kLeaseMs);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TYPED_TEST_P(StoreConformance, WorkerLeasesListsWhatAWorkerHolds) {
  std::string s = this->new_sweep();
  Trial a = this->add_trial(s, 0);
  Trial b = this->add_trial(s, 1);
  this->add_trial(s, 2);
  this->must_claim("w1");
  this->must_claim("w2");
  auto held = this->queue().worker_leases("w1");
  ASSERT_TRUE(held.ok());
  ASSERT_EQ(held->size(), 1u);
  EXPECT_EQ((*held)[0].trial_id, a.id);
  EXPECT_EQ((*held)[0].attempt, 0);
  ASSERT_TRUE(this->queue().complete(a.id, 0, "w1", this->ok_result(1)).ok());
  EXPECT_TRUE(this->queue().worker_leases("w1")->empty());
  EXPECT_EQ((*this->queue().worker_leases("w2"))[0].trial_id, b.id);
  EXPECT_TRUE(this->queue().worker_leases("nobody")->empty());
}

// No lease expires for time during which nobody could renew it.
TYPED_TEST_P(StoreConformance, ReapAfterAnOutageExtendsLeasesInsteadOfExpiring) {
  std::string s = this->new_sweep();
  Trial t = this->add_trial(s, 0, 1);
  const std::int64_t lease = TypeParam::kLeaseMs;
  ASSERT_TRUE(this->queue().claim("w1", 1, lease).ok());
  ASSERT_TRUE(this->queue().reap(10, 0).ok());  // the reaper was here
  this->env.pass(3 * lease);                    // then nobody was, for three leases
  EXPECT_EQ(*this->queue().reap(10, lease), 0);
  EXPECT_EQ(this->store().get_trial(t.id)->state, TrialState::kRunning);
  // The worker renews as soon as it can: the same attempt, accepted.
  ASSERT_TRUE(this->queue().heartbeat(t.id, 0, "w1", lease).ok());
  // Without renewals the lease lapses as usual once the reaper is back, and
  // never twice in a row counts as an outage (a slow reaper still expires).
  this->env.pass(3 * lease);
  EXPECT_EQ(*this->queue().reap(10, lease), 1);
  EXPECT_EQ(this->store().get_trial(t.id)->state, TrialState::kFailed);
}

TYPED_TEST_P(StoreConformance, IdempotencyKeyReturnsTheFirstSweep) {
  NewSweep n{"s", R"({"name":"s"})", false};
  n.idempotency_key = "key-1";
  auto first = this->store().create_sweep(n);
  ASSERT_TRUE(first.ok());
  auto again = this->store().create_sweep(n);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *first);
  NewSweep other = n;
  other.spec_json = R"({"name":"t"})";
  EXPECT_EQ(this->store().create_sweep(other).error().code, ErrorCode::kConflict);
  n.idempotency_key = "key-2";
  EXPECT_NE(*this->store().create_sweep(n), *first);
  n.idempotency_key.clear();
  EXPECT_NE(*this->store().create_sweep(n), *this->store().create_sweep(n));
}

// Claims are fair across sweeps: an older sweep's queued trials do not all go
// before a newer sweep's first one.
TYPED_TEST_P(StoreConformance, ClaimsTakeTurnsAcrossSweeps) {
  std::string a = this->new_sweep();
  std::string b = this->new_sweep();
  std::vector<std::string> expect;
  Trial a0 = this->add_trial(a, 0), a1 = this->add_trial(a, 1), a2 = this->add_trial(a, 2);
  Trial b0 = this->add_trial(b, 0), b1 = this->add_trial(b, 1);
  std::vector<std::string> got;
  for (int i = 0; i < 5; ++i) got.push_back(this->must_claim("w1").trial.id);
  EXPECT_EQ(got, (std::vector<std::string>{a0.id, b0.id, a1.id, b1.id, a2.id}));
  auto none = this->queue().claim("w1", 1, TypeParam::kLeaseMs);
  EXPECT_FALSE(none->has_value());
}

// An unschedulable sweep's trials stand aside: others are claimed past them,
// and they come back, in order, once a worker can run them.
TYPED_TEST_P(StoreConformance, UnschedulableSweepsStandAside) {
  std::string big = this->new_sweep();
  std::string small = this->new_sweep();
  Trial b0 = this->add_trial(big, 0);
  Trial b1 = this->add_trial(big, 1);
  ASSERT_TRUE(this->store().set_unschedulable(big, "needs 4 slots; the largest worker has 2").ok());
  Trial b2 = this->add_trial(big, 2);  // created while parked: parked too
  Trial s0 = this->add_trial(small, 0);
  EXPECT_EQ(this->store().get_sweep(big)->unschedulable, "needs 4 slots; the largest worker has 2");
  EXPECT_EQ(this->must_claim("w1").trial.id, s0.id);
  auto none = this->queue().claim("w1", 8, TypeParam::kLeaseMs);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(this->store().get_trial(b0.id)->state, TrialState::kQueued);
  ASSERT_TRUE(this->store().set_unschedulable(big, "").ok());
  EXPECT_EQ(this->store().get_sweep(big)->unschedulable, "");
  EXPECT_EQ(this->must_claim("w1").trial.id, b0.id);
  EXPECT_EQ(this->must_claim("w1").trial.id, b1.id);
  EXPECT_EQ(this->must_claim("w1").trial.id, b2.id);
  // An ended sweep forgets it.
  ASSERT_TRUE(this->store().set_unschedulable(small, "x").ok());
  ASSERT_TRUE(this->store().cancel_sweep(small).ok());
  EXPECT_EQ(this->store().get_sweep(small)->unschedulable, "");
  EXPECT_EQ(this->store().set_unschedulable("nope", "x").error().code, ErrorCode::kNotFound);
}

TYPED_TEST_P(StoreConformance, DeleteSweepRemovesEverythingItOwns) {
  std::string s = this->new_sweep();
  std::string keep = this->new_sweep();
  Trial t = this->add_trial(s, 0);
  this->add_trial(s, 1);
  this->must_claim("w1");
  ASSERT_TRUE(this->queue().put_artifact(t.id, 0, "w1", "model.pt", "bytes").ok());
  EXPECT_EQ(this->store().delete_sweep(s).error().code, ErrorCode::kConflict);  // running
  ASSERT_TRUE(this->store().cancel_sweep(s).ok());
  // Ended, but one trial has not stopped yet: its worker still holds it.
  EXPECT_EQ(this->store().delete_sweep(s).error().code, ErrorCode::kConflict);
  ASSERT_TRUE(this->queue().complete(t.id, 0, "w1", this->ok_result(1)).ok());
  ASSERT_TRUE(this->store().delete_sweep(s).ok());
  EXPECT_EQ(this->store().get_sweep(s).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(this->store().get_trial(t.id).error().code, ErrorCode::kNotFound);
  EXPECT_FALSE(this->store().get_artifact(t.id, "model.pt")->has_value());
  EXPECT_EQ(this->store().delete_sweep(s).error().code, ErrorCode::kNotFound);
  auto list = this->store().list_sweeps(0, 10);
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].id, keep);
  auto none = this->queue().claim("w2", 1, TypeParam::kLeaseMs);
  EXPECT_FALSE(none->has_value());
}

TYPED_TEST_P(StoreConformance, ReportsArePagedInTheOrderStored) {
  std::string s = this->new_sweep();
  Trial t = this->add_trial(s, 0);
  this->must_claim("w1");
  for (int step = 0; step < 5; ++step)
    ASSERT_TRUE(this->queue()
                    .report(t.id, 0, "w1", StepReport{step, {{"loss", 1.0 / (step + 1)}}, 0})
                    .ok());
  auto steps = [&](std::int64_t offset, std::int64_t limit) {
    auto page = this->store().get_reports(t.id, offset, limit);
    EXPECT_TRUE(page.ok());
    EXPECT_EQ(page->total, 5);
    std::vector<std::int64_t> out;
    for (const auto& r : page->reports) out.push_back(r.step);
    return out;
  };
  EXPECT_EQ(steps(0, 2), (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(steps(3, kAll), (std::vector<std::int64_t>{3, 4}));  // what a follower reads next
  EXPECT_EQ(steps(4, 1), (std::vector<std::int64_t>{4}));
  EXPECT_TRUE(steps(5, 10).empty());
  EXPECT_TRUE(steps(0, 0).empty());
  auto none = this->store().get_reports("nope", 0, kAll);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->total, 0);
}

TYPED_TEST_P(StoreConformance, ABatchOfReportsIsStoredInOrderWithOneEvent) {
  std::string s = this->new_sweep();
  Trial t = this->add_trial(s, 0);
  this->must_claim("w1");
  auto before = this->store().read_events("0", 1000, 0);
  ASSERT_TRUE(before.ok());
  std::vector<StepReport> batch;
  for (int step = 0; step < 3; ++step) batch.push_back({step, {{"loss", 0.5 + step}}, 0});
  auto c = this->queue().report_batch(t.id, 0, "w1", batch);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(*c, Control::kNone);
  auto page = this->store().get_reports(t.id, 0, kAll);
  ASSERT_EQ(page->reports.size(), 3u);
  EXPECT_EQ(page->reports[2].step, 2);
  EXPECT_EQ(page->reports[2].metrics.at("loss"), 2.5);
  auto after = this->store().read_events(before->empty() ? "0" : before->back().id, 1000, 0);
  ASSERT_TRUE(after.ok());
  int reported = 0;
  for (const auto& e : *after)
    if (e.type == "trial.reported") {
      ++reported;
      EXPECT_NE(e.data.find("\"count\":3"), std::string::npos) << e.data;
    }
  EXPECT_EQ(reported, 1);
  // Fenced like a single report.
  EXPECT_EQ(this->queue().report_batch(t.id, 0, "w2", batch).error().code, ErrorCode::kLeaseLost);
  EXPECT_TRUE(this->queue().report_batch(t.id, 0, "w1", {}).ok());
}

// A batch of new trials is one compare-and-set: consecutive numbers from the
// sweep's next one, all or none.
TYPED_TEST_P(StoreConformance, CreateTrialsIsOneCompareAndSet) {
  std::string s = this->new_sweep();
  auto batch = [&](std::int64_t first, int n, std::int64_t limit) {
    std::vector<NewTrial> out;
    for (int i = 0; i < n; ++i) {
      NewTrial nt;
      nt.sweep_id = s;
      nt.number = first + i;
      nt.limit = limit;
      nt.params = {{"x", static_cast<double>(first + i)}};
      nt.max_attempts = 2;
      nt.plan.lineage = search::Lineage{9, 1, 2, -1, first + i - 1, false, "epochs"};
      out.push_back(nt);
    }
    return out;
  };
  auto made = this->store().create_trials(batch(0, 3, 10));
  ASSERT_TRUE(made.ok()) << made.error().message;
  ASSERT_EQ(made->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ((*made)[static_cast<std::size_t>(i)].number, i);
    auto stored = this->store().get_trial((*made)[static_cast<std::size_t>(i)].id);
    ASSERT_TRUE(stored.ok());
    EXPECT_EQ(stored->state, TrialState::kQueued);
    EXPECT_EQ(stored->params, (*made)[static_cast<std::size_t>(i)].params);
    EXPECT_EQ(stored->max_attempts, 2);
    EXPECT_EQ(stored->plan.lineage,
              (search::Lineage{9, 1, 2, -1, static_cast<std::int64_t>(i) - 1, false, "epochs"}));
    EXPECT_EQ(stored->created_ms, (*made)[static_cast<std::size_t>(i)].created_ms);
  }
  // Not the next number, or past the limit: nothing is created.
  EXPECT_EQ(this->store().create_trials(batch(2, 2, 10)).error().code, ErrorCode::kConflict);
  EXPECT_EQ(this->store().create_trials(batch(3, 3, 5)).error().code, ErrorCode::kConflict);
  auto sweep = this->store().get_sweep(s);
  EXPECT_EQ(sweep->next_number, 3);
  EXPECT_EQ(sweep->counts.queued, 3);
  EXPECT_EQ(this->store().list_trials(s, TrialRole::kTrial, 0, kAll)->total, 3);
  // Exactly up to the limit is fine.
  EXPECT_TRUE(this->store().create_trials(batch(3, 2, 5)).ok());
  EXPECT_EQ(this->store().get_sweep(s)->counts.queued, 5);
  // get_trials: in the order asked, unknown ids left out.
  auto got = this->store().get_trials({(*made)[2].id, "nope", (*made)[0].id});
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].id, (*made)[2].id);
  EXPECT_EQ((*got)[1].id, (*made)[0].id);
}

// One claim call takes several trials, within the free slots and the count
// asked, one per sweep per round.
TYPED_TEST_P(StoreConformance, ClaimBatchTakesWhatFitsRoundRobin) {
  std::string a = this->new_sweep();
  std::string b = this->new_sweep();
  Trial a0 = this->add_trial(a, 0), a1 = this->add_trial(a, 1, 1, 2), a2 = this->add_trial(a, 2);
  Trial b0 = this->add_trial(b, 0), b1 = this->add_trial(b, 1);
  auto got = this->queue().claim_batch("w1", 3, 10, TypeParam::kLeaseMs);
  ASSERT_TRUE(got.ok()) << got.error().message;
  std::vector<std::string> ids;
  int slots = 0;
  for (const auto& c : got->claims) {
    ids.push_back(c.trial.id);
    slots += c.trial.slots;
    EXPECT_EQ(c.trial.state, TrialState::kRunning);
    EXPECT_EQ(c.trial.worker, "w1");
    EXPECT_GT(c.lease_deadline_ms, 0);
    EXPECT_EQ(c.spec_json, this->store().get_sweep(c.trial.sweep_id)->spec_json);
  }
  // a0, b0, then a1 needs 2 of the 1 left: a2 instead (oldest that fits).
  EXPECT_EQ(ids, (std::vector<std::string>{a0.id, b0.id, a2.id}));
  EXPECT_LE(slots, 3);
  EXPECT_FALSE(got->wake_cursor.empty());  // fewer than asked
  EXPECT_EQ(this->store().get_sweep(a)->counts.running, 2);
  EXPECT_EQ(this->store().get_sweep(b)->counts.running, 1);
  // max_trials is a cap; a full batch has no cursor.
  auto one = this->queue().claim_batch("w2", 8, 1, TypeParam::kLeaseMs);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->claims.size(), 1u);
  EXPECT_TRUE(one->wake_cursor.empty());
  auto rest = this->queue().claim_batch("w2", 8, 8, TypeParam::kLeaseMs);
  ASSERT_EQ(rest->claims.size(), 1u);
  std::set<std::string> last{one->claims[0].trial.id, rest->claims[0].trial.id};
  EXPECT_EQ(last, (std::set<std::string>{a1.id, b1.id}));
  EXPECT_TRUE(this->queue().claim_batch("w2", 8, 8, TypeParam::kLeaseMs)->claims.empty());
}

// An idle worker waits from the cursor of its last claim: work queued after
// that claim wakes it (even work queued before it starts waiting); without
// new work it waits out its time.
TYPED_TEST_P(StoreConformance, WaitForWorkWakesOnWorkQueuedAfterTheClaim) {
  std::string s = this->new_sweep();
  auto empty = this->queue().claim_batch("w1", 4, 4, TypeParam::kLeaseMs);
  ASSERT_TRUE(empty.ok());
  ASSERT_TRUE(empty->claims.empty());
  auto idle = this->queue().wait_for_work(empty->wake_cursor, 1);
  ASSERT_TRUE(idle.ok()) << idle.error().message;
  EXPECT_FALSE(*idle);
  Trial t = this->add_trial(s, 0);
  auto woken = this->queue().wait_for_work(empty->wake_cursor, 60000);
  ASSERT_TRUE(woken.ok());
  EXPECT_TRUE(*woken);
  auto got = this->queue().claim_batch("w1", 4, 4, TypeParam::kLeaseMs);
  ASSERT_EQ(got->claims.size(), 1u);
  // A failure re-queued by complete is new work too.
  EXPECT_FALSE(*this->queue().wait_for_work(got->wake_cursor, 1));
  TrialResult failed;
  failed.outcome = TrialState::kFailed;
  failed.retryable = true;
  ASSERT_TRUE(this->queue().complete(t.id, 0, "w1", failed).ok());  // max_attempts 1: failed
  EXPECT_FALSE(*this->queue().wait_for_work(got->wake_cursor, 1));
  Trial u = this->add_trial(s, 1, 3);
  auto c = this->queue().claim_batch("w1", 4, 4, TypeParam::kLeaseMs);
  ASSERT_EQ(c->claims.size(), 1u);
  ASSERT_TRUE(this->queue().complete(u.id, 0, "w1", failed).ok());  // re-queued
  EXPECT_TRUE(*this->queue().wait_for_work(c->wake_cursor, 60000));
}

// Heartbeats and results of several attempts in one call, each fenced alone.
TYPED_TEST_P(StoreConformance, HeartbeatAndCompleteBatchesFenceEachItem) {
  std::string s = this->new_sweep();
  Trial t0 = this->add_trial(s, 0), t1 = this->add_trial(s, 1), t2 = this->add_trial(s, 2);
  auto got = this->queue().claim_batch("w1", 3, 3, TypeParam::kLeaseMs);
  ASSERT_EQ(got->claims.size(), 3u);
  // The running attempt is listed with its worker and start.
  auto running = this->store().get_attempts(t0.id);
  ASSERT_TRUE(running.ok()) << running.error().message;
  ASSERT_EQ(running->size(), 1u);
  EXPECT_EQ((*running)[0].outcome, "running");
  EXPECT_EQ((*running)[0].worker, "w1");
  EXPECT_EQ((*running)[0].attempt, 0);
  EXPECT_EQ((*running)[0].started_ms, this->store().get_trial(t0.id)->started_ms);
  ASSERT_TRUE(this->store().set_control(t1.id, Control::kPrune).ok());
  auto beats = this->queue().heartbeat_batch(
      "w1", {{t0.id, 0}, {t1.id, 0}, {t2.id, 7}, {"nope-1", 0}}, TypeParam::kLeaseMs);
  ASSERT_TRUE(beats.ok()) << beats.error().message;
  ASSERT_EQ(beats->size(), 4u);
  EXPECT_EQ(*(*beats)[0], Control::kNone);
  EXPECT_EQ(*(*beats)[1], Control::kPrune);
  EXPECT_EQ((*beats)[2].error().code, ErrorCode::kLeaseLost);
  EXPECT_EQ((*beats)[3].error().code, ErrorCode::kNotFound);

  std::vector<Completion> done{{t0.id, 0, this->ok_result(2.5), "line 1\nline 2\n"},
                               {t2.id, 1, this->ok_result(9), ""},  // stale attempt
                               {t1.id, 0, this->ok_result(1), ""}};
  done[2].result.outcome = TrialState::kPruned;
  auto r = this->queue().complete_batch("w1", done);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 3u);
  EXPECT_TRUE((*r)[0].ok());
  EXPECT_EQ((*r)[1].error().code, ErrorCode::kLeaseLost);
  EXPECT_TRUE((*r)[2].ok());
  auto a = this->store().get_trial(t0.id);
  EXPECT_EQ(a->state, TrialState::kCompleted);
  EXPECT_EQ(a->value, 2.5);
  EXPECT_EQ(a->metrics, this->ok_result(2.5).metrics);
  EXPECT_EQ(**this->store().get_artifact(t0.id, artifact::kLog), "line 1\nline 2\n");
  EXPECT_FALSE(this->store().get_artifact(t1.id, artifact::kLog)->has_value());
  EXPECT_EQ(this->store().get_trial(t1.id)->state, TrialState::kPruned);
  EXPECT_EQ(this->store().get_trial(t2.id)->state, TrialState::kRunning);
  auto attempts = this->store().get_attempts(t0.id);
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ((*attempts)[0].outcome, "completed");
  EXPECT_EQ((*attempts)[0].worker, "w1");
  EXPECT_GT((*attempts)[0].ended_ms, 0);
  auto sweep = this->store().get_sweep(s);
  EXPECT_EQ(sweep->counts.completed, 1);
  EXPECT_EQ(sweep->counts.pruned, 1);
  EXPECT_EQ(sweep->counts.running, 1);
  ASSERT_TRUE(sweep->best.has_value());
  EXPECT_EQ(sweep->best->trial_id, t0.id);
  // Sent again (a lost reply): each is refused, nothing changes.
  auto again = this->queue().complete_batch("w1", {done[0]});
  EXPECT_EQ((*again)[0].error().code, ErrorCode::kLeaseLost);
  EXPECT_EQ(this->store().get_sweep(s)->counts.completed, 1);
  // In one batch the best of the batch wins.
  Trial t3 = this->add_trial(s, 3), t4 = this->add_trial(s, 4);
  auto more = this->queue().claim_batch("w1", 2, 2, TypeParam::kLeaseMs);
  ASSERT_EQ(more->claims.size(), 2u);
  auto both = this->queue().complete_batch(
      "w1", {{t3.id, 0, this->ok_result(0.5), ""}, {t4.id, 0, this->ok_result(0.25), ""}});
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(this->store().get_sweep(s)->best->trial_id, t4.id);
  EXPECT_EQ(this->store().get_sweep(s)->counts.completed, 3);
}

// The event log's bounds: a reader knows where the stream starts and ends.
TYPED_TEST_P(StoreConformance, EventBoundsAreTheOldestAndNewestIds) {
  auto none = this->store().event_bounds();
  ASSERT_TRUE(none.ok());
  std::string s = this->new_sweep();
  this->add_trial(s, 0);
  auto all = this->store().read_events("0", 100, 0);
  ASSERT_TRUE(all.ok());
  ASSERT_GE(all->size(), 2u);
  auto b = this->store().event_bounds();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->first, all->front().id);
  EXPECT_EQ(b->last, all->back().id);
  EXPECT_TRUE(event_id_before(b->first, b->last));
  EXPECT_FALSE(event_id_before(b->last, b->first));
  EXPECT_TRUE(event_id_before("9-5", "10-0"));
  EXPECT_TRUE(event_id_before("10-2", "10-11"));
}

// An import stores an ended sweep with all its trials at once: counted, with
// its best, never queued; a retry with the same key is the same sweep.
TYPED_TEST_P(StoreConformance, ImportSweepStoresAnEndedSweepAtOnce) {
  auto imported = [](TrialState state, double x, std::optional<double> value) {
    ImportedTrial t;
    t.params = {{"x", x}, {"n", std::int64_t{2}}, {"opt", std::string("adam")}};
    t.state = state;
    t.value = value;
    if (value) t.metrics["value"] = *value;
    t.error = state == TrialState::kFailed ? "oom" : "";
    t.worker = "gpu-7";
    t.started_ms = 1000;
    t.finished_ms = 2500;
    return t;
  };
  const std::vector<ImportedTrial> rows{
      imported(TrialState::kCompleted, 0.5, 3.0), imported(TrialState::kFailed, 0.25, std::nullopt),
      imported(TrialState::kCompleted, 0.125, 1.5), imported(TrialState::kPruned, 0.75, 0.5)};
  NewSweep n{"old", R"({"name":"old"})", false};
  n.idempotency_key = "import-1";
  auto id = this->store().import_sweep(n, rows);
  ASSERT_TRUE(id.ok()) << id.error().message;

  auto s = this->store().get_sweep(*id);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->name, "old");
  EXPECT_EQ(s->state, SweepState::kFinished);
  EXPECT_EQ(s->stage, SweepStage::kDone);
  EXPECT_EQ(s->next_number, 4);
  EXPECT_EQ(s->counts.completed, 2);
  EXPECT_EQ(s->counts.failed, 1);
  EXPECT_EQ(s->counts.pruned, 1);
  EXPECT_EQ(s->counts.active(), 0);
  ASSERT_TRUE(s->best.has_value());  // the best completed trial, not the pruned 0.5
  EXPECT_EQ(s->best->number, 2);
  EXPECT_EQ(s->best->value, 1.5);
  EXPECT_EQ(s->best->params, rows[2].params);

  auto page = this->store().list_trials(*id, TrialRole::kTrial, 0, 10);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->total, 4);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE(i);
    const Trial& t = page->trials[i];
    EXPECT_EQ(t.number, static_cast<std::int64_t>(i));
    EXPECT_EQ(t.id, *id + "-" + std::to_string(i));
    EXPECT_EQ(t.state, rows[i].state);
    EXPECT_EQ(t.params, rows[i].params);
    EXPECT_EQ(t.value, rows[i].value);
    EXPECT_EQ(t.metrics, rows[i].metrics);
    EXPECT_EQ(t.error, rows[i].error);
    EXPECT_EQ(t.worker, "gpu-7");
    EXPECT_EQ(t.started_ms, 1000);
    EXPECT_EQ(t.finished_ms, 2500);
    auto attempts = this->store().get_attempts(t.id);
    ASSERT_TRUE(attempts.ok());
    ASSERT_EQ(attempts->size(), 1u);
    EXPECT_EQ((*attempts)[0].outcome, to_string(rows[i].state));
    EXPECT_EQ((*attempts)[0].ended_ms, 2500);
  }
  // Nothing of it is queued, and nothing keeps it active.
  auto none = this->queue().claim("w1", 8, TypeParam::kLeaseMs);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto active = this->store().active_sweeps();
  ASSERT_TRUE(active.ok());
  for (const auto& a : *active) EXPECT_NE(a, *id);

  // A retry is the same sweep; the same key with other rows is a conflict.
  auto again = this->store().import_sweep(n, rows);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *id);
  std::vector<ImportedTrial> other = rows;
  other[0].value = 2.0;
  EXPECT_EQ(this->store().import_sweep(n, other).error().code, ErrorCode::kConflict);
  // The key of a submitted sweep is not an import's, and the other way round.
  NewSweep submitted{"new", R"({"name":"new"})", false};
  submitted.idempotency_key = "import-1";
  EXPECT_EQ(this->store().create_sweep(submitted).error().code, ErrorCode::kConflict);

  // A trial that has not ended is refused, and nothing is stored.
  n.idempotency_key.clear();
  std::vector<ImportedTrial> running = rows;
  running[1].state = TrialState::kRunning;
  EXPECT_EQ(this->store().import_sweep(n, running).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(this->store().list_sweeps(0, 10)->size(), 1u);

  // An empty import is an ended sweep without a best; it deletes like any other.
  auto empty = this->store().import_sweep(n, {});
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(this->store().get_sweep(*empty)->best.has_value());
  ASSERT_TRUE(this->store().delete_sweep(*id).ok());
  EXPECT_EQ(this->store().get_trial(*id + "-0").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(this->store().list_sweeps(0, 10)->size(), 1u);
}

REGISTER_TYPED_TEST_SUITE_P(
    StoreConformance, CreateGetListSweeps, FinishSweepOnlyFromRunning,
    CreateTrialIsCompareAndSetWithLimit, ClaimHeartbeatReportComplete, ClaimTakesOnlyWhatFits,
    StaleAttemptIsFencedOff, CompleteIsAcceptedExactlyOnce, ReapRequeuesThenFailsAtMaxAttempts,
    ReapHonoursControlFlags, RetryableFailureRequeues, CancelSweep, ControlAndStage,
    CountersAndBestTrialMinimize, CountersAndBestTrialMaximize, EventsAppearInOrder,
    WorkersRegistry, ArtifactsAreBinarySafe, ArtifactsAreFencedByAttemptAndWorker,
    ReleaseRequeuesAtTheHeadWithoutCountingAFailure, RetryableFailureOfAStoppedTrialIsNotRequeued,
    WorkerLeasesListsWhatAWorkerHolds, ReapAfterAnOutageExtendsLeasesInsteadOfExpiring,
    IdempotencyKeyReturnsTheFirstSweep, DeleteSweepRemovesEverythingItOwns,
    UnschedulableSweepsStandAside, ClaimsTakeTurnsAcrossSweeps, ReportsArePagedInTheOrderStored,
    ABatchOfReportsIsStoredInOrderWithOneEvent, CreateTrialsIsOneCompareAndSet,
    ClaimBatchTakesWhatFitsRoundRobin, WaitForWorkWakesOnWorkQueuedAfterTheClaim,
    HeartbeatAndCompleteBatchesFenceEachItem, EventBoundsAreTheOldestAndNewestIds,
    ClaimsTakeOnlyTrialsTheOfferFits, AWideTrialPassedOverIsReservedAndNotStarved,
    ImportSweepStoresAnEndedSweepAtOnce, TheBestKeepsTheConstraints);

}  // namespace hpo::trials::conformance
