#include "web/event_hub.hpp"

#include <gtest/gtest.h>

namespace hpo::web {
namespace {

TEST(EventHub, FormatsFramesWithIdTypeAndDataLines) {
  EXPECT_EQ(format_sse_frame({"5-1", "trial.finished", "s", "{\"a\":1}"}),
            "id: 5-1\nevent: trial.finished\ndata: {\"a\":1}\n\n");
  EXPECT_EQ(format_sse_frame({"", "", "", "x\ny"}), "data: x\ndata: y\n\n");
}

TEST(EventHub, StreamIdsCompareNumerically) {
  EXPECT_TRUE(stream_id_less("9-0", "10-0"));
  EXPECT_TRUE(stream_id_less("10-2", "10-10"));
  EXPECT_FALSE(stream_id_less("10-10", "10-10"));
  EXPECT_TRUE(stream_id_less("", "0-1"));
}

TEST(EventHub, FansOutAndNotifiesOncePerBatch) {
  EventHub hub;
  auto a = hub.subscribe();
  auto b = hub.subscribe();
  int notified = 0;
  a->set_notify([&] { ++notified; });
  hub.publish({"1-0", "t", "s", "{}"});
  hub.publish({"2-0", "t", "s", "{}"});
  EXPECT_EQ(notified, 1);  // the connection drains everything at once
  auto batch = a->take();
  EXPECT_NE(batch.frames.find("id: 1-0"), std::string::npos);
  EXPECT_NE(batch.frames.find("id: 2-0"), std::string::npos);
  EXPECT_FALSE(batch.closed);
  hub.publish({"3-0", "t", "s", "{}"});
  EXPECT_EQ(notified, 2);
  EXPECT_NE(b->take().frames.find("id: 3-0"), std::string::npos);
}

TEST(EventHub, FiltersBySweepAndSkipsReplayed) {
  EventHub hub;
  auto only_s1 = hub.subscribe("s1");
  hub.publish({"1-0", "t", "s1", "{}"});
  hub.publish({"2-0", "t", "s2", "{}"});
  only_s1->skip_through("1-0");  // replayed meanwhile: the queued copy goes too
  hub.publish({"3-0", "t", "s1", "{}"});
  auto frames = only_s1->take().frames;
  EXPECT_EQ(frames.find("id: 1-0"), std::string::npos);
  EXPECT_EQ(frames.find("id: 2-0"), std::string::npos);
  EXPECT_NE(frames.find("id: 3-0"), std::string::npos);
}

TEST(EventHub, SlowConsumerIsDroppedNotBuffered) {
  EventHub hub(4);
  auto slow = hub.subscribe();
  auto fast = hub.subscribe();
  for (int i = 1; i <= 10; ++i) {
    hub.publish({std::to_string(i) + "-0", "t", "", "{}"});
    fast->take();
  }
  EXPECT_TRUE(slow->closed());
  EXPECT_TRUE(slow->take().closed);
  EXPECT_FALSE(fast->closed());
  EXPECT_EQ(hub.subscriber_count(), 1u);
}

// Frames differ in size: a consumer behind by few but large frames is
// dropped by bytes, long before the frame count is reached.
TEST(EventHub, SlowConsumerIsDroppedByBytesToo) {
  HubLimits limits;
  limits.max_queue = 1024;
  limits.max_queue_bytes = 10'000;
  EventHub hub(limits);
  auto slow = hub.subscribe();
  auto fast = hub.subscribe();
  const std::string big = "{\"x\": \"" + std::string(3000, 'a') + "\"}";
  for (int i = 1; i <= 3; ++i) {
    hub.publish({std::to_string(i) + "-0", "t", "", big});
    fast->take();
  }
  EXPECT_FALSE(slow->closed());  // ~9 KB behind
  hub.publish({"4-0", "t", "", big});
  EXPECT_TRUE(slow->closed());
  EXPECT_FALSE(fast->closed());
}

TEST(EventHub, ForgetsSubscriptionsWhoseConnectionWentAway) {
  EventHub hub;
  { auto gone = hub.subscribe(); }
  auto kept = hub.subscribe();
  hub.publish({"1-0", "t", "", "{}"});
  EXPECT_EQ(hub.subscriber_count(), 1u);
  hub.close_all();
  EXPECT_TRUE(kept->closed());
}

// One client cannot hold every stream: past max_per_client its next subscribe
// is refused while others still get theirs, and past max_subscribers everyone
// is refused; a stream that ends gives its place back.
TEST(EventHub, LimitsStreamsPerClientAndInAll) {
  EventHub hub(HubLimits{16, 3, 2});
  auto a1 = hub.subscribe("", "10.0.0.1");
  auto a2 = hub.subscribe("", "10.0.0.1");
  ASSERT_TRUE(a1 && a2);
  EXPECT_EQ(hub.subscribe("", "10.0.0.1"), nullptr);  // its third
  auto b1 = hub.subscribe("", "10.0.0.2");
  ASSERT_TRUE(b1);
  EXPECT_EQ(hub.subscribe("", "10.0.0.3"), nullptr);  // three in all
  a1.reset();                                         // its connection went away
  auto c1 = hub.subscribe("", "10.0.0.3");
  EXPECT_NE(c1, nullptr);
  a2->close();  // dropped as a slow consumer
  auto a3 = hub.subscribe("", "10.0.0.1");
  EXPECT_NE(a3, nullptr);
  EXPECT_EQ(hub.subscriber_count(), 3u);
}

}  // namespace
}  // namespace hpo::web
