#include "core/backoff.hpp"

#include <gtest/gtest.h>

namespace hpo {
namespace {

using std::chrono::milliseconds;

TEST(Backoff, DoublesUpToTheCapAndStartsAgainAfterASuccess) {
  Backoff b(milliseconds(50), milliseconds(300));
  EXPECT_TRUE(b.fresh());
  EXPECT_EQ(b.next(), milliseconds(50));
  EXPECT_FALSE(b.fresh());
  EXPECT_EQ(b.next(), milliseconds(100));
  EXPECT_EQ(b.next(), milliseconds(200));
  EXPECT_EQ(b.next(), milliseconds(300));
  EXPECT_EQ(b.next(), milliseconds(300));
  b.reset();
  EXPECT_TRUE(b.fresh());
  EXPECT_EQ(b.next(), milliseconds(50));
}

// A constant back-off (first == max) still tells a failure from a success
// (the Redis client logs a lost connection once, and its return).
TEST(Backoff, AConstantBackoffStillKnowsItFailed) {
  Backoff b(milliseconds(100), milliseconds(100));
  EXPECT_TRUE(b.fresh());
  EXPECT_EQ(b.next(), milliseconds(100));
  EXPECT_FALSE(b.fresh());
  EXPECT_EQ(b.next(), milliseconds(100));
  b.reset();
  EXPECT_TRUE(b.fresh());
}

}  // namespace
}  // namespace hpo
