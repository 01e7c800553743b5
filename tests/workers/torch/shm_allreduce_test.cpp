// The shared-memory all-reduce of data-parallel CPU ranks (shm_allreduce.hpp),
// its ranks as threads of this process on one file, as the rank processes
// share it.
#include "workers/torch/shm_allreduce.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "tests/workers/torch/test_files.hpp"

namespace hpo::workers::torch_trainer {
namespace {

using std::chrono::milliseconds;

// Runs fn(rank, shm) on `world` threads, each with its own mapping of `path`.
template <typename Fn>
void on_ranks(const std::string& path, int world, std::size_t capacity, Fn fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      auto shm = ShmAllreduce::open(path, r, world, capacity, milliseconds(20000));
      ASSERT_TRUE(shm.ok()) << shm.error().message;
      fn(r, **shm);
    });
  for (auto& t : threads) t.join();
}

TEST(ShmAllreduce, EveryRankGetsTheSumCallAfterCallInChunks) {
  testing::TempDir dir;
  constexpr int kWorld = 3, kCalls = 40;
  constexpr std::size_t kN = 13;  // three chunks of at most 5
  on_ranks(dir.file("sum.shm"), kWorld, 5, [&](int r, ShmAllreduce& shm) {
    for (int call = 0; call < kCalls; ++call) {
      std::vector<float> v(kN);
      for (std::size_t j = 0; j < kN; ++j) v[j] = static_cast<float>(100 * r + j + call);
      ASSERT_TRUE(shm.sum(v.data(), v.size()).ok());
      for (std::size_t j = 0; j < kN; ++j)
        ASSERT_EQ(v[j], static_cast<float>(300 + 3 * (j + call))) << "call " << call << " j " << j;
    }
  });
}

// Rounding depends on the order of a sum; every rank adds in rank order, so all get the same
// bits (here (1e8 + 1) - 1e8 = 0 in float, where another order gives 1).
TEST(ShmAllreduce, EveryRankGetsTheSameBits) {
  testing::TempDir dir;
  const float values[3] = {1e8f, 1.0f, -1e8f};
  std::vector<float> out(3);
  on_ranks(dir.file("bits.shm"), 3, 16, [&](int r, ShmAllreduce& shm) {
    float v[2] = {values[r], values[2 - r]};
    ASSERT_TRUE(shm.sum(v, 2).ok());
    out[static_cast<std::size_t>(r)] = v[0];
  });
  EXPECT_EQ(std::memcmp(&out[0], &out[1], sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(&out[0], &out[2], sizeof(float)), 0);
  EXPECT_EQ(out[0], 0.0f);
}

TEST(ShmAllreduce, ARankWhosePeerNeverComesFailsNamingIt) {
  testing::TempDir dir;
  auto shm = ShmAllreduce::open(dir.file("alone.shm"), 0, 2, 8, milliseconds(50));
  ASSERT_TRUE(shm.ok()) << shm.error().message;
  float v[4] = {1, 2, 3, 4};
  auto st = (*shm)->sum(v, 4);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("rank 1 did not reach the all-reduce"), std::string::npos)
      << st.error().message;
}

TEST(ShmAllreduce, BadRanksAndUnusablePathsAreRefused) {
  testing::TempDir dir;
  EXPECT_FALSE(ShmAllreduce::open(dir.file("x.shm"), 2, 2, 8, milliseconds(50)).ok());
  EXPECT_FALSE(ShmAllreduce::open(dir.file("x.shm"), 0, 2, 0, milliseconds(50)).ok());
  auto missing = ShmAllreduce::open(dir.file("no/such/dir/x.shm"), 0, 2, 8, milliseconds(50));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("no/such/dir/x.shm"), std::string::npos);
}

}  // namespace
}  // namespace hpo::workers::torch_trainer
