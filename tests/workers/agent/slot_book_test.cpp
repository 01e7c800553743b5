// The worker's slot book (workers/agent/slot_book.hpp): it takes exactly the
// slots a claim named and nothing it cannot, and its offer says which slots
// are free. Which slots a claim names is the store's decision
// (redis_store_test.cpp, AClaimNamesTheSlotsByTheRule).
#include "workers/agent/slot_book.hpp"

#include <gtest/gtest.h>

namespace hpo::workers::agent {
namespace {

const trials::GpuSlot kA100{"NVIDIA A100-SXM4-80GB", 81920};
const trials::GpuSlot kT4{"Tesla T4", 15360};

TEST(SlotBook, BooksExactlyTheSlotsAClaimNamed) {
  SlotBook book(4, {kA100, kA100});  // slots 0-1 own a GPU, 2-3 are CPU slots
  ASSERT_TRUE(book.book({1, 2, 3}));
  EXPECT_EQ(book.free_count(), 1);
  EXPECT_FALSE(book.book({0, 3})) << "slot 3 is taken";
  EXPECT_EQ(book.free_count(), 1) << "a refused booking takes nothing";
  EXPECT_FALSE(book.book({}));
  ASSERT_TRUE(book.book({0}));
  EXPECT_EQ(book.free_count(), 0);
  EXPECT_FALSE(book.book({0}));
}

TEST(SlotBook, RefusesSlotsOutOfRangeOrRepeated) {
  SlotBook book(3, {kT4});
  EXPECT_FALSE(book.book({3}));
  EXPECT_FALSE(book.book({-1}));
  EXPECT_FALSE(book.book({1, 1}));
  EXPECT_FALSE(book.book({2, 1})) << "a claim's slots are ascending";
  EXPECT_EQ(book.free_count(), 3);
}

TEST(SlotBook, FreedSlotsAreOfferedAgain) {
  SlotBook book(3, {kA100, kT4});
  const std::vector<int> held{0, 1};
  ASSERT_TRUE(book.book(held));
  trials::Offer o;
  book.offer(o);
  EXPECT_EQ(o.total_slots, 3);
  EXPECT_EQ(o.slots, 1);
  EXPECT_EQ(o.free, std::vector<int>{2});
  EXPECT_TRUE(o.gpus.empty());
  EXPECT_EQ(o.all_gpus, (std::vector<trials::GpuSlot>{kA100, kT4}));
  EXPECT_EQ(book.busy_count(), 2);
  book.free(held);
  book.offer(o);
  EXPECT_EQ(o.slots, 3);
  EXPECT_EQ(o.free, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(o.gpus, (std::vector<trials::GpuSlot>{kA100, kT4}));
}

}  // namespace
}  // namespace hpo::workers::agent
