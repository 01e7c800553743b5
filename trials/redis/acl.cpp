#include "trials/redis/acl.hpp"

#include <fmt/format.h>

namespace hpo::trials::redis {

std::string worker_acl_rules(const std::string& prefix) {
  // Connection: PING AUTH HELLO SELECT ROLE (Sentinel's primary check) WAIT
  // (acknowledged writes on replicas) READONLY. The store's own reads and its
  // Functions (FUNCTION LIST to check the loaded version; loading is the
  // scheduler's). Then every command the Functions use.
  return fmt::format(
      "resetkeys ~{}* resetchannels -@all "
      "+ping +auth +hello +select +role +wait +readonly "
      "+function|list +fcall +fcall_ro "
      "+get +hget +hgetall +hmget +hexists +hkeys +lindex +llen +lrange +smembers +exists "
      "+xread +xrange +xrevrange +zrange +zrangebyscore +zrevrange +time "
      "+del +hdel +hincrby +hset +incr +lmove +lpop +lpush +lrem +lset +ltrim +pexpire +rpush "
      "+sadd +set +srem +xadd +zadd +zrem",
      prefix);
}

std::string scheduler_acl_rules() {
  return "~* &* +@all";
}

std::string default_acl_rules() {
  return "off resetpass ~* &* +@all";
}

}  // namespace hpo::trials::redis
