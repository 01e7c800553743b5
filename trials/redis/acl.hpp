// The Redis users hpo's processes connect as (Redis 7 ACLs), so that a
// worker's credential can do only what workers do.
//
// Functions run with the caller's permissions, so a worker needs every
// command that the Functions it calls use (trials/redis/functions/*.lua),
// on every key under the prefix: key patterns cannot narrow it below the
// prefix. What the rule takes away is everything else: FLUSHALL/FLUSHDB,
// CONFIG, DEBUG, MODULE, SHUTDOWN, SCRIPT, EVAL, FUNCTION LOAD/DELETE/FLUSH/
// RESTORE, KEYS, SCAN, MONITOR, ACL, REPLICAOF, pub/sub channels, and any key
// outside the prefix. docs/operations.md says what a stolen worker credential
// can still do, and gives these lines for an external Redis.
#pragma once

#include <string>

namespace hpo::trials::redis {

inline constexpr const char* kSchedulerUser = "hpo-scheduler";
inline constexpr const char* kWorkerUser = "hpo-worker";

// The worker's ACL rules (what follows `ACL SETUSER hpo-worker on >PASSWORD`)
// for keys under `prefix`.
std::string worker_acl_rules(const std::string& prefix);
// The scheduler's: every command on every key (it loads the Functions, asks
// how Redis persists, and retention sweeps the prefix).
std::string scheduler_acl_rules();
// The default user's: nobody may log in as it (off, no password), but its
// rights stay whole: Redis replays its AOF (the Functions' writes as
// MULTI/EXEC) as that user, and a default user without rights loses them.
std::string default_acl_rules();

}  // namespace hpo::trials::redis
