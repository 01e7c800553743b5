// RedisStore behind a real Redis Sentinel deployment (tests/support/
// redis_sentinel.hpp): the store finds the primary through the Sentinels,
// follows a failover (kill -9, or a Sentinel-ordered switch that demotes the
// node it is connected to) by itself, and acknowledges a write only once a
// replica holds it.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/redis_sentinel.hpp"
#include "tests/support/redis_server.hpp"
#include "trials/redis/redis_store.hpp"

namespace hpo::trials::redis {
namespace {

using hpo::testing::RedisServer;
using hpo::testing::SentinelCluster;
using hpo::testing::wait_for;
using namespace std::chrono_literals;

RedisStoreConfig config_for(const std::string& url) {
  RedisStoreConfig c;
  c.url = RedisUrl::parse(url).value();
  c.command_timeout = 2000ms;
  return c;
}

std::string port_of(const RedisServer& n) {
  return "127.0.0.1:" + std::to_string(n.port());
}

// missing_replicas=pause: a write no replica confirmed is not acknowledged.
TEST(RedisSentinel, AWriteNoReplicaConfirmedIsNotAcknowledgedAndARetryMakesNoSecondSweep) {
  RedisServer alone;
  RedisStore store(
      config_for(alone.url() + "?replicas=1&replica_timeout_ms=100&missing_replicas=pause"));
  NewSweep sweep{"s", R"({"k":1})", true};
  sweep.idempotency_key = "key-1";
  auto r = store.create_sweep(sweep);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(r.error().message.find("only 0 of 1 replicas confirmed it within 100 ms"),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find(port_of(alone)), std::string::npos) << r.error().message;

  // The write is on the primary: a replica that attaches now gets it, and the
  // retry with the same key is acknowledged with the same sweep.
  RedisServer replica({"--replicaof", "127.0.0.1", std::to_string(alone.port())});
  ASSERT_TRUE(wait_for([&] {
    auto info = hpo::testing::redis_query(replica.port(), {"INFO", "replication"});
    return info && info->find("master_link_status:up") != std::string::npos;
  }));
  auto again = store.create_sweep(sweep);
  ASSERT_TRUE(again.ok()) << again.error().message;
  auto list = store.list_sweeps(0, 10);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].id, *again);
}

// The default (missing_replicas=continue): with fewer replicas connected than
// the rule wants (the one replica was just promoted), writes are acknowledged
// with those there are, and the store says it is degraded, and why; once a
// replica is back, it is not.
TEST(RedisSentinel, WithoutItsReplicasThePoolGoesOnDegradedAndSaysSo) {
  RedisServer alone;
  RedisStore store(config_for(alone.url() + "?replicas=1&replica_timeout_ms=100"));
  auto health = store.health();
  ASSERT_TRUE(health.ok()) << health.error().message;
  EXPECT_EQ(health->replicas_wanted, 1);
  EXPECT_EQ(health->replicas, 0);
  EXPECT_NE(health->degraded.find("0 of the 1 replicas"), std::string::npos) << health->degraded;
  EXPECT_NE(health->degraded.find("can lose"), std::string::npos) << health->degraded;
  auto id = store.create_sweep({"s", R"({"k":1})", true});
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_TRUE(store.create_sweep({"t", R"({"k":2})", true}).ok());

  RedisServer replica({"--replicaof", "127.0.0.1", std::to_string(alone.port())});
  ASSERT_TRUE(wait_for([&] {
    auto h = store.health();
    return h.ok() && h->replicas == 1 && h->degraded.empty();
  }));
  EXPECT_TRUE(store.create_sweep({"u", R"({"k":3})", true}).ok());
}

TEST(RedisSentinel, TheStoreFollowsAKillDashNineOfThePrimaryByItself) {
  SentinelCluster cluster;
  ASSERT_TRUE(wait_for([&] { return cluster.ready(); }, 60s)) << cluster.logs();
  RedisStore store(config_for(cluster.url()));
  auto id = store.create_sweep(NewSweep{"before", R"({"k":1})", true});
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(store.client().node(), port_of(cluster.node(0)));

  const int killed = cluster.kill_primary();
  auto down = store.get_sweep(*id);
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().code, ErrorCode::kUnavailable);
  // The acknowledged sweep is on the promoted replica, found by the same store.
  ASSERT_TRUE(wait_for([&] { return store.get_sweep(*id).ok(); }, 60s)) << cluster.logs();
  EXPECT_EQ(store.client().node(), port_of(cluster.node(1 - killed)));
  EXPECT_EQ(store.get_sweep(*id)->name, "before");

  // Alone, the new primary has no replica to confirm a write: the pool goes
  // on degraded (missing_replicas=continue, the default) and says so, rather
  // than stopping until someone rebuilds a replica.
  NewSweep after{"after", R"({"k":2})", true};
  after.idempotency_key = "after-1";
  auto lonely = store.create_sweep(after);
  ASSERT_TRUE(lonely.ok()) << lonely.error().message;
  auto health = store.health();
  ASSERT_TRUE(health.ok());
  EXPECT_NE(health->degraded.find("0 of the 1 replicas"), std::string::npos) << health->degraded;
  // The killed node comes back as the replica of the new primary: not degraded any more.
  cluster.node(killed).restart();
  ASSERT_TRUE(wait_for([&] { return cluster.ready(); }, 60s)) << cluster.logs();
  ASSERT_TRUE(wait_for([&] {
    auto h = store.health();
    return h.ok() && h->degraded.empty();
  }));
  auto acked = store.create_sweep(after);  // the same key: the same sweep
  ASSERT_TRUE(acked.ok()) << acked.error().message;
  EXPECT_EQ(*acked, *lonely);
  auto list = store.list_sweeps(0, 10);
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 2u);
}

TEST(RedisSentinel, ANodeDemotedUnderAnOpenConnectionIsLeftForTheNewPrimary) {
  SentinelCluster cluster;
  ASSERT_TRUE(wait_for([&] { return cluster.ready(); }, 60s)) << cluster.logs();
  RedisStore store(config_for(cluster.url()));
  ASSERT_TRUE(store.create_sweep(NewSweep{"one", R"({"k":1})", true}).ok());
  ASSERT_EQ(store.client().node(), port_of(cluster.node(0)));
  // A switch the Sentinels order: node 0 lives on as a replica, the store's
  // connection to it stays open.
  auto ok = hpo::testing::redis_query(cluster.sentinel_port(0),
                                      {"SENTINEL", "FAILOVER", SentinelCluster::kName});
  ASSERT_TRUE(ok && *ok == "OK") << (ok ? *ok : "no answer");
  ASSERT_TRUE(wait_for([&] { return cluster.primary_index() == 1; }, 60s)) << cluster.logs();
  ASSERT_TRUE(wait_for(
      [&] {
        auto role = hpo::testing::redis_query(cluster.node(0).port(), {"ROLE"});
        return role && role->rfind("slave", 0) == 0;
      },
      60s));
  // Writes land on the new primary (a READONLY reply or a closed connection
  // from the demoted node only makes the store ask the Sentinels again).
  ASSERT_TRUE(wait_for(
      [&] {
        return store.create_sweep(NewSweep{"two", "{}", true}).ok();
      },
      60s))
      << cluster.logs();
  EXPECT_EQ(store.client().node(), port_of(cluster.node(1)));
  auto list = store.list_sweeps(0, 10);
  ASSERT_TRUE(list.ok());
  EXPECT_GE(list->size(), 2u);
}

TEST(RedisSentinel, SentinelsThatDoNotKnowThePrimaryAreNamedInTheError) {
  SentinelCluster cluster;
  auto url = cluster.url();
  url.replace(url.rfind('/') + 1, std::string::npos, "nobody");
  RedisStore store(config_for(url));
  auto r = store.get_sweep("x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(r.error().message.find("no Sentinel named the primary 'nobody'"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("127.0.0.1:" + std::to_string(cluster.sentinel_port(2))),
            std::string::npos)
      << r.error().message;
}

}  // namespace
}  // namespace hpo::trials::redis
