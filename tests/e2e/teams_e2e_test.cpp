// Teams on one pool, with the real hpo-scheduler, hpo-worker and trial
// programs: a project's slot limit holds while its trials run, across a
// kill -9 of the scheduler, while another project uses the rest of the pool;
// both projects' sweeps end with every trial completed. The limit is checked
// two ways: the project's own count, sampled continuously, and afterwards
// every attempt of its trials, whose start and end Redis stamps in the same
// function that moves the count (so the overlap is exact, where summing the
// sweeps' running counts over separate reads is not).
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/cluster.hpp"
#include "tests/support/toy_spec.hpp"

namespace {

using Json = nlohmann::json;
using hpo::testing::Cluster;
using hpo::testing::wait_for;
using namespace std::chrono_literals;

std::string submit_to(Cluster& c, const std::string& project, int trials) {
  Json spec = hpo::testing::toy_command_spec(trials, 400);
  spec["search"]["max_concurrent"] = 6;
  auto r = c.api().post("/api/sweeps?project=" + project, spec.dump());
  EXPECT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : r.error().message);
  return r.ok() && r->status == 201 ? Json::parse(r->body).value("id", "") : "";
}

TEST(TeamsEndToEnd, AProjectsSlotLimitHoldsWhileItsTrialsRunAndAcrossASchedulerKill) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  auto made = c.api().post("/api/projects", R"({"name": "capped", "max_slots": 2})");
  ASSERT_TRUE(made.ok() && made->status == 201) << (made.ok() ? made->body : "");
  made = c.api().post("/api/projects", R"({"name": "free"})");
  ASSERT_TRUE(made.ok() && made->status == 201);
  c.start_worker("a", 4);
  c.start_worker("b", 4);
  const std::vector<std::string> capped = {submit_to(c, "capped", 10), submit_to(c, "capped", 10)};
  const std::string free = submit_to(c, "free", 24);
  ASSERT_FALSE(capped[0].empty() || capped[1].empty() || free.empty());

  int most_capped = 0, most_free = 0, samples = 0, finished = 0;
  bool killed = false;
  // One sample: the project's own count and its sweeps' running trials.
  auto sample = [&] {
    Json projects = c.get("/api/projects");
    if (!projects.is_object()) return;  // the scheduler is restarting
    for (const auto& p : projects["projects"]) {
      const int slots = p["use"]["slots"].get<int>();
      if (p["name"] == "capped") {
        EXPECT_LE(slots, 2) << projects.dump();
        most_capped = std::max(most_capped, slots);
      }
      if (p["name"] == "free") most_free = std::max(most_free, slots);
    }
    finished = 0;
    for (const auto& id : capped) {
      Json s = c.get("/api/sweeps/" + id);
      if (!s.is_object()) return;
      finished += s["state"] != "running";
    }
    ++samples;
  };
  const auto deadline = std::chrono::steady_clock::now() + 240s;
  while (finished < 2 && std::chrono::steady_clock::now() < deadline) {
    sample();
    if (!killed) {
      Json s = c.get("/api/sweeps/" + capped[0]);
      if (s.is_object() && s["counts"]["completed"].get<int>() >= 3) {
        c.scheduler().kill(SIGKILL);
        // Its embedded Redis goes down with it; the workers keep their trials.
        ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
        killed = true;
      }
    }
  }
  ASSERT_TRUE(killed) << c.logs();
  EXPECT_EQ(finished, 2) << c.logs();
  EXPECT_GT(samples, 20);
  EXPECT_EQ(most_capped, 2);  // it did use its share
  EXPECT_GE(most_free, 4);    // and the other project the rest of the pool
  for (const auto& id : {capped[0], capped[1], free}) {
    Json s = c.wait_finished(id, 240s);
    ASSERT_EQ(s.value("state", ""), "finished") << s.dump(2) << c.logs();
    EXPECT_EQ(s["counts"]["completed"].get<int>(), s["max_trials"].get<int>());
  }
  EXPECT_EQ(hpo::testing::most_attempts_at_once(c, capped), 2) << c.logs();
}

}  // namespace
