// The worker's slot book (workers/agent/slot_book.hpp): it takes exactly the
// slots and devices a claim named and nothing it cannot, never promises more
// of a device than it has, and its offer says what is free. Which slots and
// devices a claim names is the store's decision (redis_store_test.cpp,
// AClaimNamesTheSlotsByTheRule, GpuShares*).
#include "workers/agent/slot_book.hpp"

#include <gtest/gtest.h>

namespace hpo::workers::agent {
namespace {

const trials::GpuDevice kA100{"NVIDIA A100-SXM4-80GB", 81920, {}};
const trials::GpuDevice kT4{"Tesla T4", 15360, {}};

trials::ResourceRequest cpu() {
  return {};
}

trials::ResourceRequest whole(int n) {
  trials::ResourceRequest r;
  r.slots = n;
  r.gpus = n;
  return r;
}

trials::ResourceRequest share(double gpus, double gpu_memory_gb = 0) {
  trials::ResourceRequest r;
  r.gpus = gpus;
  r.gpu_memory_gb = gpu_memory_gb;
  return r;
}

TEST(SlotBook, BooksExactlyTheSlotsAClaimNamed) {
  SlotBook book(4, {kA100, kA100});
  ASSERT_TRUE(book.book({1, 2, 3}, {}, cpu()));
  EXPECT_EQ(book.free_count(), 1);
  EXPECT_FALSE(book.book({0, 3}, {}, cpu())) << "slot 3 is taken";
  EXPECT_EQ(book.free_count(), 1) << "a refused booking takes nothing";
  EXPECT_FALSE(book.book({}, {}, cpu()));
  ASSERT_TRUE(book.book({0}, {0}, whole(1)));
  EXPECT_EQ(book.free_count(), 0);
  EXPECT_FALSE(book.book({0}, {}, cpu()));
}

TEST(SlotBook, RefusesSlotsAndDevicesOutOfRangeOrRepeated) {
  SlotBook book(3, {kT4});
  EXPECT_FALSE(book.book({3}, {}, cpu()));
  EXPECT_FALSE(book.book({-1}, {}, cpu()));
  EXPECT_FALSE(book.book({1, 1}, {}, cpu()));
  EXPECT_FALSE(book.book({2, 1}, {}, cpu())) << "a claim's slots are ascending";
  EXPECT_FALSE(book.book({0}, {1}, whole(1))) << "there is no device 1";
  EXPECT_FALSE(book.book({0, 1}, {0, 0}, whole(2))) << "a device twice";
  EXPECT_EQ(book.free_count(), 3);
}

TEST(SlotBook, FreedSlotsAndDevicesAreOfferedAgain) {
  SlotBook book(3, {kA100, kT4});
  const std::vector<int> held{0, 1};
  ASSERT_TRUE(book.book(held, {0, 1}, whole(2)));
  trials::Offer o;
  book.offer(o);
  EXPECT_EQ(o.total_slots, 3);
  EXPECT_EQ(o.slots, 1);
  EXPECT_EQ(o.free, std::vector<int>{2});
  EXPECT_TRUE(o.gpus.empty());
  EXPECT_EQ(o.all_gpus, (std::vector<trials::GpuDevice>{kA100, kT4}));
  EXPECT_EQ(o.room, (std::vector<trials::GpuRoom>{{0, 0}, {0, 0}}));
  EXPECT_EQ(book.busy_count(), 2);
  book.free(held);
  book.offer(o);
  EXPECT_EQ(o.slots, 3);
  EXPECT_EQ(o.free, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(o.gpus, (std::vector<trials::GpuDevice>{kA100, kT4}));
  EXPECT_EQ(o.room, (std::vector<trials::GpuRoom>{{1000, 81920}, {1000, 15360}}));
}

TEST(SlotBook, SharesOfADeviceNeverAddUpToMoreThanIt) {
  SlotBook book(6, {kA100});
  for (int s = 0; s < 4; ++s) ASSERT_TRUE(book.book({s}, {0}, share(0.25))) << s;
  EXPECT_FALSE(book.book({4}, {0}, share(0.25))) << "four quarters fill the device";
  trials::Offer o;
  book.offer(o);
  EXPECT_EQ(o.room, (std::vector<trials::GpuRoom>{{0, 0}}));
  EXPECT_TRUE(o.gpus.empty());
  book.free({2});
  book.offer(o);
  EXPECT_EQ(o.room, (std::vector<trials::GpuRoom>{{250, 20480}}));
  EXPECT_FALSE(book.book({4}, {0}, whole(1))) << "a device partly shared is no whole device";
  ASSERT_TRUE(book.book({4}, {0}, share(0.25)));
}

TEST(SlotBook, MemoryRequestsNeverOvercommitADevice) {
  SlotBook book(4, {kA100});  // 80 GB
  ASSERT_TRUE(book.book({0}, {0}, share(0.1, 30)));
  ASSERT_TRUE(book.book({1}, {0}, share(0.1, 30)));
  EXPECT_FALSE(book.book({2}, {0}, share(0.1, 30))) << "90 GB on an 80 GB device";
  trials::Offer o;
  book.offer(o);
  EXPECT_EQ(o.room.at(0).share, 800);
  EXPECT_EQ(o.room.at(0).mb, 81920 - 2 * 30 * 1024);
  book.free({0});
  ASSERT_TRUE(book.book({2}, {0}, share(0.1, 30)));
}

}  // namespace
}  // namespace hpo::workers::agent
