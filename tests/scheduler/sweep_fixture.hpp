// A sweep in the real RedisStore (tests/support/test_store.hpp: a key prefix of
// its own on the test executable's redis-server, on the server's clock), and a
// fake worker that claims queued trials and completes them with a given
// function: what the scheduler's tests build on.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "tests/support/test_store.hpp"
#include "trials/redis/redis_store.hpp"
#include "trials/spec/spec.hpp"

namespace hpo::scheduler::testing {

using TrialRun = std::function<trials::TrialResult(const trials::Trial&)>;

struct SweepFixture {
  // Declared before `store`, which refers into it.
  ::hpo::testing::TestStore db;
  trials::redis::RedisStore& store = db.store;
  std::string sweep_id;
  trials::SweepSpec spec;

  explicit SweepFixture(const std::string& spec_json) {
    auto parsed = trials::parse_spec(spec_json);
    EXPECT_TRUE(parsed.ok()) << parsed.error().message;
    if (parsed.ok()) spec = *parsed;
    auto id = store.create_sweep({spec.name, spec_json, spec.objective.maximize});
    EXPECT_TRUE(id.ok()) << id.error().message;
    if (id.ok()) sweep_id = *id;
  }

  trials::Sweep sweep() { return *store.get_sweep(sweep_id); }

  // Claims one queued trial and finishes it with `run`; false when none is queued.
  bool work_one(const TrialRun& run) {
    auto c = store.claim("w", 1, 10'000);
    EXPECT_TRUE(c.ok()) << c.error().message;
    if (!c.ok() || !*c) return false;
    const auto& t = (*c)->trial;
    EXPECT_TRUE(store.complete(t.id, t.attempt, "w", run(t)).ok());
    return true;
  }

  // Finishes every queued trial with `run`; returns how many.
  int work_all(const TrialRun& run) {
    int n = 0;
    while (work_one(run)) ++n;
    return n;
  }
};

}  // namespace hpo::scheduler::testing
