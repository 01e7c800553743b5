// SchedulabilityWatch against the real RedisStore (tests/support/test_store.hpp):
// the verdict, the parking of a sweep no registered worker can run, and its
// return once one can.
#include "scheduler/schedulability.hpp"

#include <gtest/gtest.h>

#include "tests/support/test_store.hpp"
#include "trials/redis/redis_store.hpp"

namespace hpo::scheduler {
namespace {

trials::WorkerInfo worker(const std::string& name, int slots) {
  trials::WorkerInfo w;
  w.name = name;
  w.slots = slots;
  return w;
}

TEST(Schedulability, AWorkerBoundToAnotherProjectCannotRunASweep) {
  trials::ResourceRequest theirs;
  theirs.project = "theirs";
  trials::WorkerInfo bound = worker("bound", 4);
  bound.project = "mine";
  auto r = unschedulable_reason(theirs, {bound});
  EXPECT_NE(r.find("bound: takes project 'mine' trials only (hpo-worker --project), this is "
                   "project 'theirs'"),
            std::string::npos)
      << r;
  theirs.project = "mine";
  EXPECT_EQ(unschedulable_reason(theirs, {bound}), "");
  trials::WorkerInfo open = worker("open", 1);
  theirs.project = "theirs";
  EXPECT_EQ(unschedulable_reason(theirs, {bound, open}), "");
}

TEST(Schedulability, ReasonNamesWhatEachWorkerLacks) {
  trials::ResourceRequest four;
  four.slots = 4;
  EXPECT_EQ(unschedulable_reason(four, {}), "");  // no pool yet: no verdict
  trials::ResourceRequest two;
  two.slots = 2;
  EXPECT_EQ(unschedulable_reason(two, {worker("a", 1), worker("b", 2)}), "");
  auto r = unschedulable_reason(four, {worker("a", 1), worker("b", 2)});
  EXPECT_NE(r.find("none of the 2 registered workers"), std::string::npos) << r;
  EXPECT_NE(r.find("b: a trial needs 4 slots"), std::string::npos) << r;
  EXPECT_NE(r.find("the worker has 2"), std::string::npos) << r;

  trials::ResourceRequest gpu;
  gpu.gpus = 1;
  gpu.gpu_model = "A100";
  trials::WorkerInfo t4 = worker("t4", 2);
  t4.gpus = {trials::GpuInfo{0, "Tesla T4", 15360, 0, 0}};
  trials::WorkerInfo zoned = worker("zoned", 8);
  zoned.labels = {{"zone", "b"}};
  r = unschedulable_reason(gpu, {t4, zoned});
  EXPECT_NE(r.find("t4: a trial needs 1 whole GPU of model 'A100'"), std::string::npos) << r;
  EXPECT_NE(r.find("the worker has Tesla T4 15 GB"), std::string::npos) << r;
  EXPECT_NE(r.find("zoned: a trial needs 1 whole GPU"), std::string::npos) << r;
  trials::ResourceRequest labelled;
  labelled.labels = {"zone=a"};
  r = unschedulable_reason(labelled, {zoned});
  EXPECT_NE(r.find("zoned: a trial needs label 'zone=a'"), std::string::npos) << r;
  zoned.labels["zone"] = "a";
  EXPECT_EQ(unschedulable_reason(labelled, {zoned}), "");
  trials::ResourceRequest torch;
  torch.torch = true;
  EXPECT_NE(unschedulable_reason(torch, {zoned}).find("runs no torch trials"), std::string::npos);
  zoned.torch = true;
  EXPECT_EQ(unschedulable_reason(torch, {zoned}), "");
}

// A data-parallel trial's ranks may span workers: 4 ranks fit two 2-slot
// workers; per_host 3 needs workers of 3 slots; the reason counts what fits.
TEST(Schedulability, AGangIsSchedulableWhenThePoolCanHoldItsRanks) {
  trials::ResourceRequest gang;
  gang.slots = 4;
  gang.ranks = 4;
  EXPECT_EQ(unschedulable_reason(gang, {worker("a", 2), worker("b", 2)}), "");
  auto r = unschedulable_reason(gang, {worker("a", 2), worker("b", 1)});
  EXPECT_NE(r.find("its 4 data-parallel ranks need 4 slots"), std::string::npos) << r;
  EXPECT_NE(r.find("have 3 (ranks that fit: a 2, b 1)"), std::string::npos) << r;
  gang.per_host = 2;
  EXPECT_EQ(unschedulable_reason(gang, {worker("a", 2), worker("b", 2)}), "");
  r = unschedulable_reason(gang, {worker("a", 2), worker("b", 1), worker("c", 1)});
  EXPECT_NE(r.find("need 2 workers with 2 free slots each"), std::string::npos) << r;
  EXPECT_NE(r.find("1 of the 3 registered workers have that"), std::string::npos) << r;
  gang.torch = true;  // what stops every rank is named per worker
  auto t = worker("a", 2);
  r = unschedulable_reason(gang, {t, worker("b", 2)});
  EXPECT_NE(r.find("a: runs no torch trials"), std::string::npos) << r;
}

TEST(Schedulability, ParksASweepUntilABigEnoughWorkerRegisters) {
  hpo::testing::TestStore db;
  trials::redis::RedisStore& store = db.store;
  const std::string spec = R"({"name": "big",
    "objective": {"metric": "value", "mode": "min"},
    "parameters": {"x1": {"type": "float", "min": 0, "max": 1}},
    "search": {"algorithm": "random", "max_trials": 2},
    "trial": {"kind": "synthetic", "function": "noop", "resources": {"gpus": 3}}})";
  auto id = store.create_sweep({"big", spec, false});
  ASSERT_TRUE(id.ok());
  trials::NewTrial t;
  t.sweep_id = *id;
  t.limit = 2;
  t.slots = 3;
  ASSERT_TRUE(store.create_trial(t).ok());
  SchedulabilityWatch watch([] { return Result<std::unique_ptr<trials::Store>>(nullptr); },
                            std::chrono::milliseconds(1000));
  watch.run_once(store, store);
  EXPECT_EQ(store.get_sweep(*id)->unschedulable, "");  // no worker: no verdict
  ASSERT_TRUE(store.put_worker(worker("small", 2), 60'000).ok());
  watch.run_once(store, store);
  EXPECT_NE(store.get_sweep(*id)->unschedulable.find("a trial needs 3 slots"), std::string::npos)
      << store.get_sweep(*id)->unschedulable;
  EXPECT_FALSE(store.claim("small", 8, 1000)->has_value());
  trials::WorkerInfo big = worker("big", 4);
  for (int i = 0; i < 4; ++i) big.gpus.push_back(trials::GpuInfo{i, "NVIDIA L4", 24576, 0, 0});
  ASSERT_TRUE(store.put_worker(big, 60'000).ok());
  watch.run_once(store, store);
  EXPECT_EQ(store.get_sweep(*id)->unschedulable, "");
  EXPECT_TRUE(store.claim("big", 4, 1000)->has_value());
}

}  // namespace
}  // namespace hpo::scheduler
