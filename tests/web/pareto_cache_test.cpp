// ParetoCache (web/pareto_cache.hpp): one computation per version, however
// many requests ask for it at once; a new version computes again; at most
// max_sweeps sweeps kept.
#include "web/pareto_cache.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "tests/support/redis_server.hpp"

namespace hpo::web {
namespace {

using namespace std::chrono_literals;

TEST(ParetoCache, ConcurrentReadsOfOneVersionComputeOnce) {
  ParetoCache cache;
  std::atomic<bool> release{false};
  std::atomic<int> started{0};
  auto make = [&] {
    hpo::testing::wait_for([&] { return release.load(); }, 30s);
    return nlohmann::json{{"hypervolume", 1.5}};
  };
  std::vector<std::thread> readers;
  std::vector<nlohmann::json> docs(8);
  for (int i = 0; i < 8; ++i)
    readers.emplace_back([&, i] {
      ++started;
      docs[static_cast<std::size_t>(i)] = cache.get("s1", 4, make);
    });
  ASSERT_TRUE(hpo::testing::wait_for([&] { return started.load() == 8; }, 30s));
  release = true;
  for (auto& t : readers) t.join();
  for (const auto& d : docs) EXPECT_EQ(d["hypervolume"], 1.5);
  EXPECT_EQ(cache.computed(), 1);
  EXPECT_EQ(cache.get("s1", 4, make)["hypervolume"], 1.5);
  EXPECT_EQ(cache.computed(), 1);
  // A trial completed: version 5 is computed anew.
  EXPECT_EQ(cache.get("s1", 5,
                      [] {
                        return nlohmann::json{{"hypervolume", 2.0}};
                      })["hypervolume"],
            2.0);
  EXPECT_EQ(cache.computed(), 2);
}

TEST(ParetoCache, KeepsAtMostItsSweeps) {
  ParetoCache cache(2);
  auto make = [] { return nlohmann::json::object(); };
  cache.get("a", 1, make);
  cache.get("b", 1, make);
  cache.get("a", 1, make);  // a is the most recent: b goes next
  cache.get("c", 1, make);
  EXPECT_EQ(cache.computed(), 3);
  cache.get("a", 1, make);
  EXPECT_EQ(cache.computed(), 3);
  cache.get("b", 1, make);
  EXPECT_EQ(cache.computed(), 4);
}

}  // namespace
}  // namespace hpo::web
