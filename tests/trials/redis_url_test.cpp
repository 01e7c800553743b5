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
