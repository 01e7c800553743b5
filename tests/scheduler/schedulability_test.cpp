// SchedulabilityWatch against the memory store: the verdict, the parking of a
// sweep no registered worker can run, and its return once one can.
#include "scheduler/schedulability.hpp"

#include <gtest/gtest.h>

#include "trials/memory/memory_store.hpp"

namespace hpo::scheduler {
namespace {

trials::WorkerInfo worker(const std::string& name, int slots) {
  trials::WorkerInfo w;
  w.name = name;
  w.slots = slots;
  return w;
}

TEST(Schedulability, ReasonNamesTheNeedAndTheLargestWorker) {
  EXPECT_EQ(unschedulable_reason(4, {}), "");  // no pool yet: no verdict
  EXPECT_EQ(unschedulable_reason(2, {worker("a", 1), worker("b", 2)}), "");
  auto r = unschedulable_reason(4, {worker("a", 1), worker("b", 2)});
  EXPECT_NE(r.find("needs 4 slots"), std::string::npos) << r;
  EXPECT_NE(r.find("(b) has 2"), std::string::npos) << r;
  EXPECT_NE(r.find("2 registered workers"), std::string::npos) << r;
}

TEST(Schedulability, ParksASweepUntilABigEnoughWorkerRegisters) {
  trials::memory::MemoryStore store;
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
  EXPECT_NE(store.get_sweep(*id)->unschedulable.find("needs 3 slots"), std::string::npos);
  EXPECT_FALSE(store.claim("small", 8, 1000)->has_value());
  ASSERT_TRUE(store.put_worker(worker("big", 4), 60'000).ok());
  watch.run_once(store, store);
  EXPECT_EQ(store.get_sweep(*id)->unschedulable, "");
  EXPECT_TRUE(store.claim("big", 4, 1000)->has_value());
}

}  // namespace
}  // namespace hpo::scheduler
