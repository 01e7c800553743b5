// The conformance suite against MemoryStore, with a clock the tests move.
#include "trials/memory/memory_store.hpp"

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "tests/trials/store_conformance.hpp"

namespace hpo::trials::conformance {
namespace {

struct MemoryEnv {
  static constexpr std::int64_t kLeaseMs = 150;
  std::atomic<std::int64_t> clock_ms{1'700'000'000'000};
  memory::MemoryStore memory{[this] { return clock_ms.load(); }};
  AllRoles& store() { return memory; }
  void advance(std::int64_t ms) { clock_ms += ms; }
  void pass(std::int64_t ms) { clock_ms += ms; }
};

using Envs = ::testing::Types<MemoryEnv>;
INSTANTIATE_TYPED_TEST_SUITE_P(Memory, StoreConformance, Envs);

TEST(MemoryStore, ConcurrentClaimsNeverShareATrial) {
  memory::MemoryStore store;  // one instance shared by every thread
  auto sweep = store.create_sweep(NewSweep{"race", "{}", false});
  ASSERT_TRUE(sweep.ok());
  constexpr int kTrials = 200, kThreads = 4;
  for (int i = 0; i < kTrials; ++i) {
    NewTrial nt;
    nt.sweep_id = *sweep;
    nt.number = i;
    nt.limit = kTrials;
    ASSERT_TRUE(store.create_trial(nt).ok());
  }
  std::mutex mu;
  std::map<std::string, int> claimed;
  std::vector<std::thread> threads;
  for (int w = 0; w < kThreads; ++w) {
    threads.emplace_back([&, w] {
      std::string name = "w" + std::to_string(w);
      for (;;) {
        auto c = store.claim(name, 1, 60'000);
        if (!c.ok() || !c->has_value()) return;
        {
          std::lock_guard lock(mu);
          ++claimed[(*c)->trial.id];
        }
        (void)store.complete((*c)->trial.id, 0, name, TrialResult{});
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(claimed.size(), static_cast<size_t>(kTrials));
  for (const auto& [id, n] : claimed) EXPECT_EQ(n, 1) << id;
  EXPECT_EQ(store.get_sweep(*sweep)->counts.completed, kTrials);
}

TEST(MemoryStore, BlockingReadWakesOnNewEvent) {
  memory::MemoryStore store;
  std::atomic<bool> got{false};
  std::thread reader([&] {
    auto ev = store.read_events("$", 10, 10'000);
    got = ev.ok() && !ev->empty() && (*ev)[0].type == "sweep.created";
  });
  // The reader may start before or after the sweep is created; "$" means only
  // events after the call, so create sweeps until the reader has seen one.
  ASSERT_TRUE(hpo::testing::wait_for([&] {
    (void)store.create_sweep(NewSweep{"s", "{}", false});
    return got.load();
  }));
  reader.join();
}

}  // namespace
}  // namespace hpo::trials::conformance
