// The worker's slot book (workers/agent/slot_book.hpp): which slots an
// attempt takes, what a claim's offer then says, and that the book takes the
// slots the store's offer arithmetic (trials::take) counted.
#include "workers/agent/slot_book.hpp"

#include <gtest/gtest.h>

#include <random>

namespace hpo::workers::agent {
namespace {

const trials::GpuSlot kA100{"NVIDIA A100-SXM4-80GB", 81920};
const trials::GpuSlot kT4{"Tesla T4", 15360};

trials::ResourceRequest cpu(int slots) {
  trials::ResourceRequest r;
  r.slots = slots;
  return r;
}

trials::ResourceRequest gpu(int slots, std::string model = "") {
  trials::ResourceRequest r;
  r.slots = r.gpus = slots;
  r.gpu_model = std::move(model);
  return r;
}

TEST(SlotBook, CpuTrialsTakeCpuSlotsFirstThenTheHighestGpuSlots) {
  SlotBook book(4, {kA100, kA100});  // slots 0-1 own a GPU, 2-3 are CPU slots
  std::vector<int> got;
  ASSERT_TRUE(book.reserve(cpu(3), got));
  EXPECT_EQ(got, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(book.free_count(), 1);
  ASSERT_TRUE(book.reserve(cpu(1), got));
  EXPECT_EQ(got, (std::vector<int>{0}));
  EXPECT_FALSE(book.reserve(cpu(1), got));
  EXPECT_TRUE(got.empty());
}

TEST(SlotBook, GpuTrialsTakeTheLowestMatchingGpuSlots) {
  SlotBook book(4, {kT4, kA100, kA100});  // slot 3 is a CPU slot
  std::vector<int> got;
  ASSERT_TRUE(book.reserve(gpu(1, "a100"), got));
  EXPECT_EQ(got, (std::vector<int>{1}));
  EXPECT_FALSE(book.reserve(gpu(2, "a100"), got)) << "only one A100 slot is left";
  EXPECT_EQ(book.free_count(), 3) << "a refused reservation takes nothing";
  ASSERT_TRUE(book.reserve(gpu(2), got));
  EXPECT_EQ(got, (std::vector<int>{0, 2}));
  EXPECT_FALSE(book.reserve(gpu(1), got)) << "a CPU slot serves no GPU request";
}

TEST(SlotBook, FreedSlotsAreOfferedAgain) {
  SlotBook book(3, {kA100, kT4});
  std::vector<int> held;
  ASSERT_TRUE(book.reserve(gpu(2), held));
  trials::Offer o;
  book.offer(o);
  EXPECT_EQ(o.total_slots, 3);
  EXPECT_EQ(o.slots, 1);
  EXPECT_TRUE(o.gpus.empty());
  EXPECT_EQ(o.all_gpus, (std::vector<trials::GpuSlot>{kA100, kT4}));
  EXPECT_EQ(book.busy_count(), 2);
  book.free(held);
  book.offer(o);
  EXPECT_EQ(o.slots, 3);
  EXPECT_EQ(o.gpus, (std::vector<trials::GpuSlot>{kA100, kT4}));
}

// Whatever is reserved, in any order, the book's offer afterwards is what
// the store's take() left of the offer before: the store and the worker
// agree on which slots a claim took.
TEST(SlotBook, TakesTheSlotsTheStoresOfferArithmeticCounted) {
  std::mt19937 rng(7);
  const std::vector<trials::GpuSlot> gpus{kT4, kA100, kT4, kA100};
  for (int round = 0; round < 200; ++round) {
    SlotBook book(6, gpus);  // four GPU slots, two CPU slots
    std::vector<std::vector<int>> held;
    for (int step = 0; step < 8; ++step) {
      if (!held.empty() && rng() % 3 == 0) {
        const auto i = rng() % held.size();
        book.free(held[i]);
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      trials::ResourceRequest r =
          rng() % 2 ? cpu(1 + static_cast<int>(rng() % 3))
                    : gpu(1 + static_cast<int>(rng() % 2), rng() % 2 ? "a100" : "");
      trials::Offer before;
      book.offer(before);
      trials::Offer expected = before;
      const bool fits = trials::take(r, expected);
      std::vector<int> got;
      ASSERT_EQ(book.reserve(r, got), fits) << "round " << round << " step " << step;
      if (!fits) continue;
      held.push_back(got);
      trials::Offer after;
      book.offer(after);
      EXPECT_EQ(after.slots, expected.slots) << "round " << round << " step " << step;
      EXPECT_EQ(after.gpus, expected.gpus) << "round " << round << " step " << step;
    }
  }
}

}  // namespace
}  // namespace hpo::workers::agent
