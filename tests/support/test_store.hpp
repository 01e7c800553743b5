// The store for tests of the components built on it (controllers, retention,
// the worker agent, the REST handlers, the HTTP fuzzer): the real RedisStore,
// so every transition a test drives runs the one Functions library
// (trials/redis/functions/), on one redis-server per test executable. Each
// store gets a key prefix of its own, so tests never see each other's records;
// stores opened with the same prefix (another connection, another thread) see
// the same records. The server runs without AOF: these tests do not restart it.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "core/result.hpp"
#include "tests/support/redis_server.hpp"
#include "trials/redis/redis_store.hpp"

namespace hpo::testing {

inline RedisServer& test_store_server() {
  static RedisServer server({"--appendonly", "no"});
  return server;
}

// A prefix no other store of this executable has.
inline std::string fresh_store_prefix() {
  static std::atomic<int> n{0};
  return "ts" + std::to_string(n++) + ":";
}

// A connection to the test server under `prefix`.
inline std::unique_ptr<trials::redis::RedisStore> open_test_store(const std::string& prefix) {
  trials::redis::RedisStoreConfig c;
  c.url = *trials::redis::RedisUrl::parse(test_store_server().url());
  c.prefix = prefix;
  c.command_timeout = std::chrono::milliseconds(5000);
  return std::make_unique<trials::redis::RedisStore>(std::move(c));
}

// One prefix: `store` is this test's own connection, `factory()` opens more
// (for components that own their connections, one per thread).
struct TestStore {
  std::string prefix = fresh_store_prefix();
  std::unique_ptr<trials::redis::RedisStore> connection = open_test_store(prefix);
  trials::redis::RedisStore& store = *connection;

  std::function<Result<std::unique_ptr<trials::Store>>()> factory() const {
    return [p = prefix]() -> Result<std::unique_ptr<trials::Store>> {
      return std::unique_ptr<trials::Store>(open_test_store(p));
    };
  }
};

}  // namespace hpo::testing
