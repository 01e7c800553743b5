// Teams on one pool, with the real hpo-scheduler, hpo-worker and trial
// programs: a project's slot limit holds while its trials run, across a
// kill -9 of the scheduler, while another project uses the rest of the pool;
// both projects' sweeps end with every trial completed. The limit is checked
// two ways: the project's own count, sampled continuously, and afterwards
// every attempt of its trials, whose start and end Redis stamps in the same
// function that moves the count (so the overlap is exact, where summing the
// sweeps' running counts over separate reads is not). And a project's bytes:
// on the default layout (embedded Redis, no --artifacts) a trial whose outputs
// would pass its project's store limit fails at once naming the limit, the
// project holds no more than the limit, `hpo project list` shows it, and
// another project's same trial is kept whole.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <sstream>
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

// A sweep of one trial writing eight 1 MiB outputs, in `project`.
std::string submit_outputs(Cluster& c, const std::string& project) {
  Json spec = {{"name", "outputs"},
               {"objective", {{"metric", "value"}, {"mode", "min"}}},
               {"parameters", {{"x", {{"type", "float"}, {"min", 0.0}, {"max", 1.0}}}}},
               {"search", {{"algorithm", "random"}, {"max_trials", 1}, {"seed", 1}}},
               {"trial",
                {{"kind", "command"},
                 {"argv",
                  {"/bin/sh", "-c",
                   "for i in 1 2 3 4 5 6 7 8; do head -c 1048576 /dev/zero > "
                   "\"$HPO_OUTPUT_DIR/out$i\"; done; "
                   // (braces would be placeholders: octal escapes instead)
                   "printf 'hpo-metric \\173\"value\": 1\\175\\n'"}},
                 {"max_attempts", 3},
                 {"timeout_s", 60}}}};
  auto r = c.api().post("/api/sweeps?project=" + project, spec.dump());
  EXPECT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : r.error().message);
  return r.ok() && r->status == 201 ? Json::parse(r->body).value("id", "") : "";
}

Json project_doc(Cluster& c, const std::string& name) {
  const Json all = c.get("/api/projects");
  for (const auto& p : all["projects"])
    if (p["name"] == name) return p;
  return nullptr;
}

TEST(TeamsEndToEnd, AProjectsOutputsStopAtItsStoreBytesAndAnotherProjectsAreKept) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler({"--project-store-mb", "4"}));
  for (const char* body :
       {R"({"name": "flood"})", R"({"name": "roomy", "max_store_bytes": 67108864})"}) {
    auto made = c.api().post("/api/projects", body);
    ASSERT_TRUE(made.ok() && made->status == 201) << (made.ok() ? made->body : "");
  }
  c.start_worker("a", 2);
  const std::string flood = submit_outputs(c, "flood");
  const std::string roomy = submit_outputs(c, "roomy");
  ASSERT_FALSE(flood.empty() || roomy.empty());

  Json f = c.wait_finished(flood, 120s);
  EXPECT_EQ(f.value("state", ""), "failed") << f.dump(2) << c.logs();
  Json trial = c.get("/api/trials/" + flood + "-0");
  ASSERT_TRUE(trial.is_object()) << c.logs();
  EXPECT_EQ(trial.value("state", ""), "failed");
  const std::string error = trial.value("error", "");
  EXPECT_NE(error.find("max_store_bytes"), std::string::npos) << error;
  EXPECT_NE(error.find("flood"), std::string::npos) << error;
  // Not retried: the next attempt would meet the same limit.
  EXPECT_EQ(trial["attempts"].size(), 1u) << trial.dump(2);
  Json fp = project_doc(c, "flood");
  ASSERT_TRUE(fp.is_object() && fp["use"]["store_bytes"].is_number()) << fp.dump();
  EXPECT_LE(fp["use"]["store_bytes"].get<std::int64_t>(), 4 << 20) << fp.dump();
  EXPECT_GE(fp["use"]["store_bytes"].get<std::int64_t>(), 3 << 20) << fp.dump();
  EXPECT_EQ(fp["byte_limits"]["store_bytes"].get<std::int64_t>(), 4 << 20);

  Json r = c.wait_finished(roomy, 120s);
  EXPECT_EQ(r.value("state", ""), "finished") << r.dump(2) << c.logs();
  EXPECT_EQ(r["counts"]["completed"].get<int>(), 1);
  Json rp = project_doc(c, "roomy");
  ASSERT_TRUE(rp.is_object() && rp["use"]["store_bytes"].is_number()) << rp.dump();
  EXPECT_GE(rp["use"]["store_bytes"].get<std::int64_t>(), 8 << 20) << rp.dump();
  EXPECT_EQ(rp["byte_limits"]["store_bytes"].get<std::int64_t>(), 64 << 20);

  // hpo project list: what each holds, of its limit.
  hpo::testing::Process list({std::string(HPO_BINARY_DIR) + "/cli/hpo", "project", "list"}, c.env(),
                             c.home() + "/project-list.log");
  ASSERT_EQ(list.wait(30s), 0) << list.log();
  std::string flood_line;
  std::istringstream lines(list.log());
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("flood ", 0) == 0) flood_line = line;
  EXPECT_NE(flood_line.find("/4 MiB"), std::string::npos) << list.log();

  // hpo project set takes sizes as people write them; a size it cannot read changes nothing.
  const std::string hpo = std::string(HPO_BINARY_DIR) + "/cli/hpo";
  hpo::testing::Process set({hpo, "project", "set", "flood", "--max-store-bytes", "8MiB"}, c.env(),
                            c.home() + "/project-set.log");
  ASSERT_EQ(set.wait(30s), 0) << set.log();
  EXPECT_EQ(project_doc(c, "flood")["limits"]["max_store_bytes"].get<std::int64_t>(), 8 << 20);
  hpo::testing::Process bad({hpo, "project", "set", "flood", "--max-file-bytes", "8 parsecs"},
                            c.env(), c.home() + "/project-bad.log");
  EXPECT_EQ(bad.wait(30s), 2) << bad.log();
  EXPECT_NE(bad.log().find("--max-file-bytes"), std::string::npos) << bad.log();
  EXPECT_EQ(project_doc(c, "flood")["limits"]["max_file_bytes"].get<std::int64_t>(), 0);

  // Deleting the failed sweep gives its bytes back.
  auto del = c.api().request("DELETE", "/api/sweeps/" + flood);
  ASSERT_TRUE(del.ok() && del->status / 100 == 2) << (del.ok() ? del->body : "");
  EXPECT_EQ(project_doc(c, "flood")["use"]["store_bytes"].get<std::int64_t>(), 0);
}

}  // namespace
