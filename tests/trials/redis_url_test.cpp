// RedisUrl parsing (pure, no server).
#include "trials/redis/redis_client.hpp"

#include <gtest/gtest.h>

namespace hpo::trials::redis {
namespace {

TEST(RedisUrl, HostPortDb) {
  auto u = RedisUrl::parse("redis://10.1.2.3:6380/2");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "10.1.2.3");
  EXPECT_EQ(u->port, 6380);
  EXPECT_EQ(u->db, 2);
  EXPECT_TRUE(u->password.empty());
  EXPECT_EQ(u->to_string(), "redis://10.1.2.3:6380/2");
}

TEST(RedisUrl, DefaultsAndAuth) {
  auto u = RedisUrl::parse("redis://alice:p%40ss:w@redis.local");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "redis.local");
  EXPECT_EQ(u->port, 6379);
  EXPECT_EQ(u->user, "alice");
  EXPECT_EQ(u->password, "p@ss:w");
  EXPECT_EQ(u->db, 0);
  EXPECT_EQ(u->to_string().find("p@ss"), std::string::npos);  // never print the password

  auto p = RedisUrl::parse("redis://:secret@[::1]:7000");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->host, "::1");
  EXPECT_EQ(p->port, 7000);
  EXPECT_EQ(p->user, "");
  EXPECT_EQ(p->password, "secret");
}

TEST(RedisUrl, UnixSocket) {
  auto u = RedisUrl::parse("unix:///run/hpo/redis.sock?db=3");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->unix_path, "/run/hpo/redis.sock");
  EXPECT_EQ(u->db, 3);
}

TEST(RedisUrl, SentinelsAndThePrimarysName) {
  auto u = RedisUrl::parse("redis-sentinel://:pw@10.0.0.1:26380,sentinel-b,[::1]:7000/mymaster/2");
  ASSERT_TRUE(u.ok()) << u.error().message;
  ASSERT_TRUE(u->sentinel());
  ASSERT_EQ(u->sentinels.size(), 3u);
  EXPECT_EQ(u->sentinels[0].host, "10.0.0.1");
  EXPECT_EQ(u->sentinels[0].port, 26380);
  EXPECT_EQ(u->sentinels[1].host, "sentinel-b");
  EXPECT_EQ(u->sentinels[1].port, 26379);  // Sentinel's default port
  EXPECT_EQ(u->sentinels[2].host, "::1");
  EXPECT_EQ(u->sentinels[2].port, 7000);
  EXPECT_EQ(u->primary_name, "mymaster");
  EXPECT_EQ(u->db, 2);
  EXPECT_EQ(u->password, "pw");
  EXPECT_EQ(u->wait_replicas, 1);  // acknowledged writes wait for a replica by default
  EXPECT_EQ(u->to_string(),
            "redis-sentinel://***@10.0.0.1:26380,sentinel-b:26379,[::1]:7000/mymaster/2");

  auto q = RedisUrl::parse("redis-sentinel://s1/mymaster?replicas=2&replica_timeout_ms=500");
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q->wait_replicas, 2);
  EXPECT_EQ(q->replica_timeout_ms, 500);
  auto off = RedisUrl::parse("redis-sentinel://s1/mymaster?replicas=0");
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->wait_replicas, 0);
  auto plain = RedisUrl::parse("redis://h:1/3?replicas=1");
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_FALSE(plain->sentinel());
  EXPECT_EQ(plain->db, 3);
  EXPECT_EQ(plain->wait_replicas, 1);
  EXPECT_EQ(RedisUrl::parse("redis://h")->wait_replicas, 0);
}

TEST(RedisUrl, ABadSentinelUrlSaysWhatIsWrong) {
  struct Case {
    const char* url;
    const char* says;
  };
  for (const Case& c : {Case{"redis-sentinel://s1:26379", "primary's name"},
                        Case{"redis-sentinel://s1,/m", "Sentinel 2: missing host"},
                        Case{"redis-sentinel://s1:0/m", "Sentinel 1: bad port '0'"},
                        Case{"redis-sentinel://s1/m/x", "database number"},
                        Case{"redis-sentinel://s1/m?replicas=-1", "replicas=-1"},
                        Case{"redis-sentinel://s1/m?wait=1", "wait=1"},
                        Case{"redis://h?replica_timeout_ms=0", "replica_timeout_ms=0"}}) {
    auto u = RedisUrl::parse(c.url);
    ASSERT_FALSE(u.ok()) << c.url;
    EXPECT_EQ(u.error().code, ErrorCode::kInvalidArgument) << c.url;
    EXPECT_NE(u.error().message.find(c.says), std::string::npos)
        << c.url << ": " << u.error().message;
  }
}

TEST(RedisUrl, RejectsGarbage) {
  for (const char* bad : {"", "http://x:1", "redis://", "redis://h:0", "redis://h:99999",
                          "redis://h:12x", "redis://h:1/abc", "unix://relative", "redis://[::1"}) {
    auto u = RedisUrl::parse(bad);
    EXPECT_FALSE(u.ok()) << bad;
    if (!u.ok()) {
      EXPECT_EQ(u.error().code, ErrorCode::kInvalidArgument) << bad;
    }
  }
}

TEST(RedisClient, UnreachableServerIsUnavailableNotAnException) {
  RedisUrl url;
  url.port = 1;  // nothing listens there
  RedisClient client(url, RedisClientOptions{.connect_timeout = std::chrono::milliseconds(200)});
  auto r = client.command({"PING"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  auto again = client.command({"PING"});  // inside the back-off window: fails fast
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace hpo::trials::redis
