// The conformance suite against MemoryStore, with a clock the tests move.
#include "trials/memory/memory_store.hpp"

#include <atomic>

#include "tests/trials/store_conformance.hpp"

namespace hpo::trials::conformance {
namespace {

struct MemoryEnv {
  static constexpr std::int64_t kLeaseMs = 150;
  std::atomic<std::int64_t> clock_ms{1'700'000'000'000};
  memory::MemoryStore memory{[this] { return clock_ms.load(); }};
  TrialStore& store() { return memory; }
  TrialQueue& queue() { return memory; }
  void advance(std::int64_t ms) { clock_ms += ms; }
};

using Envs = ::testing::Types<MemoryEnv>;
INSTANTIATE_TYPED_TEST_SUITE_P(Memory, StoreConformance, Envs);

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
