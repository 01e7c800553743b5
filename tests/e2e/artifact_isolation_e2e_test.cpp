// A member's trial against the scheduler's artifact folder, through the real
// hpo-scheduler (--artifacts), hpo-worker and REST API, replaying the attack
// that once made a member service admin: the member's second trial swaps the
// first trial's stored output for a symbolic link to the scheduler's
// scheduler.json (its admin token), and the member downloads the first
// trial's output. Two worker modes:
// - trials run as the worker itself (`--trial-user none`, as a worker that is
//   not root runs them): the trial can swap the file; the download is refused
//   with a message that names the artifact and neither a path nor a size, and
//   the token never comes back;
// - a root worker with `--trial-user hpo-trial`: the trial cannot write the
//   folder at all, and the download serves the stored bytes;
// - trials run as the worker, confined (`--trial-namespaces on`): the folder is
//   hidden from them; the same.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/http_client.hpp"
#include "tests/support/cluster.hpp"

namespace {

using hpo::testing::Cluster;
using hpo::testing::read_file;
using Json = nlohmann::json;
using namespace std::chrono_literals;

// $1: the artifact folder, $2: the file to point the first output at. The
// first trial stores its output; the next finds it and swaps it for a link.
constexpr char kAttack[] = R"(#!/bin/sh
victim=$(ls "$1"/*/*/output.result.txt.* 2>/dev/null | head -n 1)
if [ -z "$victim" ]; then
  printf 'the first trial stored these bytes' > "$HPO_OUTPUT_DIR/result.txt"
  echo 'hpo-metric {"final": true, "swapped": 0}'
  exit 0
fi
if rm -f "$victim" 2>/dev/null && ln -s "$2" "$victim" 2>/dev/null; then s=1; else s=0; fi
echo "hpo-metric {\"final\": true, \"swapped\": $s}"
)";

class ArtifactIsolation : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hpo-artifact-attack-XXXXXX";
    exchange_ = ::mkdtemp(tmpl);
    ::chmod(exchange_.c_str(), 0755);  // the program, readable by a trial user
    artifacts_ = exchange_ + "/artifacts";
    std::filesystem::create_directories(artifacts_);
    program_ = exchange_ + "/attack.sh";
    std::ofstream(program_) << kAttack;
    ::chmod(program_.c_str(), 0755);
  }
  void TearDown() override { std::filesystem::remove_all(exchange_); }

  // The admin makes project "team" and its member mallory; mallory's token.
  std::string member() {
    auto made = c_.api().post("/api/projects", R"({"name": "team"})");
    EXPECT_TRUE(made.ok() && made->status == 201) << (made.ok() ? made->body : "");
    auto user = c_.api().post("/api/users", R"({"name": "mallory"})");
    EXPECT_TRUE(user.ok() && user->status == 201) << (user.ok() ? user->body : "");
    auto joined =
        c_.api().request("PUT", "/api/projects/team/members/mallory", R"({"role": "member"})");
    EXPECT_TRUE(joined.ok() && joined->status == 200) << (joined.ok() ? joined->body : "");
    return user.ok() ? Json::parse(user->body)["token"]["token"].get<std::string>() : "";
  }

  // Mallory's sweep of two trials, one at a time; its id once both ended.
  std::string run_attack(hpo::HttpClient& mallory) {
    Json spec = {{"name", "swap"},
                 {"objective", {{"metric", "swapped"}, {"mode", "max"}}},
                 {"parameters", {{"x", {{"type", "categorical"}, {"values", {0, 1}}}}}},
                 {"search", {{"algorithm", "grid"}, {"max_trials", 2}, {"max_concurrent", 1}}},
                 {"trial",
                  {{"kind", "command"},
                   {"argv", {program_, artifacts_, c_.home() + "/scheduler.json"}},
                   {"max_attempts", 1},
                   {"timeout_s", 60}}}};
    auto r = mallory.post("/api/sweeps?project=team", spec.dump());
    EXPECT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : r.error().message);
    const std::string id = r.ok() ? Json::parse(r->body).value("id", "") : "";
    Json s = c_.wait_finished(id, 120s);
    EXPECT_EQ(s.value("state", ""), "finished") << s.dump(2) << c_.logs();
    return id;
  }

  // The trial that stored the output and the one that went for it.
  std::pair<Json, Json> victim_and_attacker(const std::string& id) {
    Json first = c_.get("/api/trials/" + id + "-0"), second = c_.get("/api/trials/" + id + "-1");
    return first["started_ms"] <= second["started_ms"] ? std::pair{first, second}
                                                       : std::pair{second, first};
  }

  std::string token() { return Json::parse(read_file(c_.home() + "/scheduler.json"))["token"]; }

  // Mallory's attack, where the trial cannot change the folder: nothing is
  // swapped, and the first trial's output is served as stored.
  void expect_no_swap() {
    hpo::HttpClient mallory(*hpo::parse_http_url(c_.api_url()));
    mallory.set_token(member());
    const std::string id = run_attack(mallory);
    auto [victim, attacker] = victim_and_attacker(id);
    EXPECT_EQ(attacker["metrics"].value("swapped", -1.0), 0.0) << attacker.dump(2);
    auto got = mallory.get("/api/trials/" + victim["id"].get<std::string>() +
                           "/artifacts/output.result.txt");
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->status, 200) << got->body;
    EXPECT_EQ(got->body, "the first trial stored these bytes");
  }

  Cluster c_;
  std::string exchange_, artifacts_, program_;
};

TEST_F(ArtifactIsolation, ALinkPlantedByATrialRunningAsTheWorkerIsNeverServed) {
  ASSERT_NO_FATAL_FAILURE(c_.start_scheduler({"--artifacts", artifacts_}));
  c_.start_worker("as-itself", 1);
  hpo::HttpClient mallory(*hpo::parse_http_url(c_.api_url()));
  mallory.set_token(member());
  const std::string id = run_attack(mallory);
  auto [victim, attacker] = victim_and_attacker(id);
  ASSERT_EQ(attacker["metrics"].value("swapped", -1.0), 1.0)
      << "the attack was not carried out: " << attacker.dump(2) << c_.logs();
  const std::string victim_id = victim["id"];
  auto got = mallory.get("/api/trials/" + victim_id + "/artifacts/output.result.txt");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->status, 500) << got->body;
  EXPECT_EQ(got->body.find(token()), std::string::npos) << "the admin token was served";
  // The whole message: the artifact, neither the file's path nor its size.
  const Json error = Json::parse(got->body, nullptr, false);
  ASSERT_TRUE(error.is_object()) << got->body;
  EXPECT_EQ(error["error"].value("message", ""),
            "artifact output.result.txt of trial " + victim_id +
                " does not match what was stored (the log says why)")
      << got->body;
  // The same refusal for a range, and for the admin.
  auto part = mallory.request("GET", "/api/trials/" + victim_id + "/artifacts/output.result.txt",
                              "", {{"Range", "bytes=0-9"}});
  ASSERT_TRUE(part.ok());
  EXPECT_EQ(part->status, 500);
  EXPECT_EQ(part->body.find(token().substr(0, 10)), std::string::npos);
  auto as_admin = c_.api().get("/api/trials/" + victim_id + "/artifacts/output.result.txt");
  ASSERT_TRUE(as_admin.ok());
  EXPECT_EQ(as_admin->status, 500);
  EXPECT_NE(read_file(c_.home() + "/scheduler.log").find("an artifact file was refused"),
            std::string::npos);
}

TEST_F(ArtifactIsolation, ATrialOfARootWorkerCannotWriteTheArtifactFolder) {
  if (::geteuid() != 0) GTEST_SKIP() << "the user switch needs a root worker";
  ASSERT_NE(::getpwnam("hpo-trial"), nullptr) << "no user hpo-trial: scripts/install-deps.sh";
  ASSERT_NO_FATAL_FAILURE(c_.start_scheduler({"--artifacts", artifacts_}));
  c_.start_worker("root", 1, 1500, {"--trial-user", "hpo-trial", "--data-root", exchange_});
  expect_no_swap();
}

// Trials that run as the worker, confined (--trial-namespaces on): the folder
// the scheduler announced is hidden from them, even named by their command.
TEST_F(ArtifactIsolation, AConfinedTrialRunningAsTheWorkerCannotReachTheArtifactFolder) {
  ASSERT_NO_FATAL_FAILURE(c_.start_scheduler({"--artifacts", artifacts_}));
  c_.start_worker("confined", 1, 1500, {"--trial-namespaces", "on"});
  expect_no_swap();
}

}  // namespace
