// Packing trials onto shared GPUs, decided by the claim Function on a real
// redis-server and booked by the worker's SlotBook (trials/placement.hpp has
// the rules): four quarter-GPU trials share one device and a fifth waits,
// 30 GB requests on an 80 GB device run two at a time, a whole-GPU trial
// gets a device nobody shares, and a randomised pool of workers and requests
// never over-commits a device, checked after every claim.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "tests/support/test_store.hpp"
#include "trials/placement.hpp"
#include "trials/store.hpp"
#include "workers/agent/slot_book.hpp"

namespace hpo::workers::agent {
namespace {

using trials::Claim;
using trials::GpuDevice;
using trials::GpuRoom;
using trials::ResourceRequest;

constexpr std::int64_t kLeaseMs = 60'000;
const GpuDevice kH100{"NVIDIA H100 80GB HBM3", 81920, {}};
const GpuDevice kA10{"NVIDIA A10", 24576, {}};
const GpuDevice kT4{"Tesla T4", 15360, {}};

ResourceRequest share(double gpus, double gpu_memory_gb = 0) {
  ResourceRequest r;
  r.gpus = gpus;
  r.gpu_memory_gb = gpu_memory_gb;
  return r;
}

ResourceRequest whole(int n) {
  ResourceRequest r;
  r.slots = n;
  r.gpus = n;
  return r;
}

class GpuPacking : public ::testing::Test {
 protected:
  hpo::testing::TestStore db;
  trials::redis::RedisStore& store = db.store;
  std::map<std::string, ResourceRequest> needs_;

  std::string sweep(const ResourceRequest& needs, int n) {
    trials::NewSweep s{"packed", "{}", false};
    s.needs = needs;
    auto id = store.create_sweep(s);
    EXPECT_TRUE(id.ok()) << id.error().message;
    std::vector<trials::NewTrial> batch;
    for (int i = 0; i < n; ++i) {
      trials::NewTrial t;
      t.sweep_id = *id;
      t.number = i;
      t.limit = 1'000'000;
      t.params = {{"x", search::Value(static_cast<double>(i))}};
      t.slots = needs.slots;
      batch.push_back(t);
    }
    EXPECT_TRUE(store.create_trials(batch).ok());
    needs_[*id] = needs;
    return *id;
  }

  // One claim by `worker` out of what `book` offers; every attempt it got is
  // booked (a claim the book refuses would over-commit the worker: a failure).
  std::vector<Claim> claim(const std::string& worker, SlotBook& book, int max = 64) {
    trials::Offer o;
    book.offer(o);
    std::vector<Claim> got;
    if (o.slots == 0) return got;
    auto r = store.claim_batch(worker, o, max, kLeaseMs);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    if (!r.ok()) return got;
    for (auto& c : r->claims) {
      EXPECT_TRUE(c.devices_named) << "a claim of an offer with room names its devices";
      ResourceRequest need = needs_.at(c.trial.sweep_id);
      EXPECT_TRUE(book.book(c.slots, c.devices, need))
          << c.trial.id << " was placed where the worker has no room for it";
      got.push_back(std::move(c));
    }
    return got;
  }
};

TEST_F(GpuPacking, FourQuarterTrialsShareOneDeviceAndAFifthWaits) {
  SlotBook book(8, {kH100});
  sweep(share(0.25), 5);
  auto got = claim("w", book);
  ASSERT_EQ(got.size(), 4u);
  for (const auto& c : got) EXPECT_EQ(c.devices, std::vector<int>{0}) << c.trial.id;
  EXPECT_TRUE(claim("w", book).empty()) << "the device is full; the fifth waits";
  book.free(got[1].slots);
  auto fifth = claim("w", book);
  ASSERT_EQ(fifth.size(), 1u);
  EXPECT_EQ(fifth[0].devices, std::vector<int>{0});
}

TEST_F(GpuPacking, ThirtyGigabyteRequestsOnAnEightyGigabyteDeviceRunTwoAtATime) {
  SlotBook book(8, {kH100});
  sweep(share(0.1, 30), 3);
  auto got = claim("w", book);
  ASSERT_EQ(got.size(), 2u) << "30 + 30 GB fit 80 GB, a third 30 GB does not";
  EXPECT_TRUE(claim("w", book).empty());
  book.free(got[0].slots);
  EXPECT_EQ(claim("w", book).size(), 1u);
}

TEST_F(GpuPacking, SharesPackTheMostSharedDeviceAndAWholeTrialGetsOneNobodyShares) {
  SlotBook book(8, {kH100, kH100});
  const std::string half = sweep(share(0.5), 1);
  auto first = claim("w", book);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].devices, std::vector<int>{0});
  sweep(share(0.25), 1);
  auto second = claim("w", book);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].devices, std::vector<int>{0}) << "onto the device already shared";
  sweep(whole(1), 2);
  auto wholes = claim("w", book);
  ASSERT_EQ(wholes.size(), 1u) << "device 0 is shared: only device 1 is whole";
  EXPECT_EQ(wholes[0].devices, std::vector<int>{1});
  book.free(first[0].slots);
  EXPECT_TRUE(claim("w", book).empty()) << "a quarter still runs on device 0";
  book.free(second[0].slots);
  auto last = claim("w", book);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].devices, std::vector<int>{0});
}

// The claim and the worker's book round a share's memory alike (up, to whole
// MB): 0.3 GB is 308 MB to both, so a 615 MB device holds one such share, not
// two that the claim would place and the worker refuse.
TEST_F(GpuPacking, TheClaimAndTheBookRoundMemoryAlike) {
  SlotBook book(4, {GpuDevice{"small", 615, {}}});
  sweep(share(0.1, 0.3), 2);
  EXPECT_EQ(claim("w", book).size(), 1u);  // claim() fails the test on a refused booking
  EXPECT_TRUE(claim("w", book).empty());
}

TEST_F(GpuPacking, AShareLargerThanAnyDeviceIsNeverPlaced) {
  SlotBook book(4, {kT4});
  sweep(share(0.5, 20), 1);  // 20 GB on a 15 GB device
  EXPECT_TRUE(claim("w", book).empty());
  trials::Offer o;
  book.offer(o);
  EXPECT_FALSE(trials::fits_idle(share(0.5, 20), o));
  EXPECT_NE(trials::never_fits(share(0.5, 20), o).find("a 0.5 share of a GPU"), std::string::npos)
      << trials::never_fits(share(0.5, 20), o);
}

// Random workers, random requests, random ends: after every claim, no
// device holds more than its whole share or its memory, and a device with a
// whole-GPU attempt holds nothing else. An independent ledger kept here
// from the claims checks it, beside each worker's own book.
TEST_F(GpuPacking, RandomisedPlacementNeverOvercommits) {
  std::mt19937 rng(20261207);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const std::vector<GpuDevice> kinds{kH100, kA10, kT4};
  struct Worker {
    std::string name;
    std::vector<GpuDevice> gpus;
    std::unique_ptr<SlotBook> book;
    std::vector<Claim> running;
    std::vector<GpuRoom> used;  // the test's own ledger
    std::vector<int> wholes;    // whole attempts per device
  };
  std::vector<Worker> workers(5);
  for (std::size_t w = 0; w < workers.size(); ++w) {
    auto& k = workers[w];
    k.name = "w" + std::to_string(w);
    for (int d = pick(1, 3); d > 0; --d) k.gpus.push_back(kinds[pick(0, 2)]);
    k.book = std::make_unique<SlotBook>(pick(2, 8), k.gpus);
    k.used.assign(k.gpus.size(), GpuRoom{0, 0});
    k.wholes.assign(k.gpus.size(), 0);
  }
  const std::vector<ResourceRequest> requests{share(0.25),    share(0.5),  share(0.1, 30),
                                              share(0.3, 10), share(0.75), share(0.2, 4),
                                              whole(1),       whole(2),    ResourceRequest{}};
  for (const auto& r : requests) sweep(r, 60);
  int claims = 0;
  for (int step = 0; step < 400; ++step) {
    auto& k = workers[static_cast<std::size_t>(pick(0, static_cast<int>(workers.size()) - 1))];
    if (!k.running.empty() && pick(0, 2) == 0) {  // an attempt ends
      const auto at = static_cast<std::size_t>(pick(0, static_cast<int>(k.running.size()) - 1));
      const Claim c = k.running[at];
      k.running.erase(k.running.begin() + static_cast<long>(at));
      k.book->free(c.slots);
      const ResourceRequest& need = needs_.at(c.trial.sweep_id);
      for (int d : c.devices) {
        const GpuRoom t = trials::gpu_take(need, k.gpus[static_cast<std::size_t>(d)]);
        k.used[static_cast<std::size_t>(d)].share -= t.share;
        k.used[static_cast<std::size_t>(d)].mb -= t.mb;
        if (!need.shares_gpu()) --k.wholes[static_cast<std::size_t>(d)];
      }
      continue;
    }
    for (auto& c : claim(k.name, *k.book, pick(1, 4))) {
      ++claims;
      const ResourceRequest& need = needs_.at(c.trial.sweep_id);
      EXPECT_EQ(static_cast<int>(c.devices.size()),
                need.gpus <= 0 ? 0 : (need.shares_gpu() ? 1 : need.slots))
          << c.trial.id;
      for (int d : c.devices) {
        const auto i = static_cast<std::size_t>(d);
        ASSERT_LT(i, k.gpus.size());
        EXPECT_TRUE(trials::gpu_matches(need, k.gpus[i]));
        const GpuRoom t = trials::gpu_take(need, k.gpus[i]);
        k.used[i].share += t.share;
        k.used[i].mb += t.mb;
        if (!need.shares_gpu()) ++k.wholes[i];
        EXPECT_LE(k.used[i].share, trials::kWholeShare) << k.name << " device " << d;
        EXPECT_LE(k.used[i].mb, k.gpus[i].memory_mb) << k.name << " device " << d;
        EXPECT_TRUE(k.wholes[i] == 0 || k.used[i].share == trials::kWholeShare)
            << k.name << " device " << d << ": a whole-GPU attempt shares it";
      }
      k.running.push_back(std::move(c));
    }
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_GT(claims, 100) << "the pool ran too little to show anything";
}

}  // namespace
}  // namespace hpo::workers::agent
