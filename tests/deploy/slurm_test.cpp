// deploy/slurm/hpo-workers.sbatch on a real single-node Slurm cluster
// (slurmctld, slurmd and munged from Debian's slurm-wlm, started by the test):
// a sweep submitted to hpo completes on workers that Slurm started, which
// hold one worker token for their names and no Redis credential, and they
// exit by themselves once no sweep runs; the drain signal (what --signal
// sends before the time limit) releases a running trial without a failure,
// and a later job finishes it.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/cluster.hpp"
#include "tests/support/slurm_cluster.hpp"
#include "tests/support/toy_spec.hpp"

namespace hpo::deploy {
namespace {

using Json = nlohmann::json;
using hpo::testing::Cluster;
using hpo::testing::read_file;
using hpo::testing::SlurmCluster;
using hpo::testing::wait_for;
using namespace std::chrono_literals;

const std::string kBin = HPO_BINARY_DIR;
const std::string kScript = std::string(HPO_SOURCE_DIR) + "/deploy/slurm/hpo-workers.sbatch";

Json toy_spec(int trials, int sleep_ms, int concurrent) {
  Json spec = hpo::testing::toy_command_spec(trials, sleep_ms);
  spec["search"]["max_concurrent"] = concurrent;
  return spec;
}

// sbatch arguments for `tasks` array tasks of the shipped script on this
// 2-core node, as its header says: the scheduler's URL and a worker token for
// slurm-* in a 0600 file (made once over REST by the admin), this build's worker.
std::vector<std::string> job_args(SlurmCluster& slurm, Cluster& c, int tasks,
                                  const std::string& idle_s) {
  const std::string token_file = c.home() + "/slurm-worker-token";
  if (!std::filesystem::exists(token_file)) {
    auto made = c.api().post("/api/worker-tokens", R"({"host": "slurm-*"})");
    EXPECT_TRUE(made.ok() && made->status == 201) << (made.ok() ? made->body : "");
    if (!made.ok() || made->status != 201) return {};
    std::ofstream(token_file) << Json::parse(made->body)["token"].get<std::string>() << "\n";
    ::chmod(token_file.c_str(), 0600);
  }
  return {"--array=0-" + std::to_string(tasks - 1), "--cpus-per-task=1",
          "--output=" + slurm.dir() + "/jobs/hpo-worker-%A_%a.log",
          "--export=ALL,HPO_SCHEDULER=" + c.api_url() + ",HPO_WORKER_TOKEN_FILE=" + token_file +
              ",HPO_WORKER=" + kBin + "/workers/hpo-worker" + ",HPO_EXIT_WHEN_IDLE_S=" + idle_s +
              ",HPO_DRAIN_GRACE_S=1,HPO_HOME=" + c.home() + ",TMPDIR=" + slurm.dir() + "/jobs" +
              // The trials run the build's toy_trial, which a clone in a private
              // folder keeps from trial users (test_e2e_trust covers the switch).
              ",HPO_TRIAL_USER=none,HPO_PROJECT=default",
          kScript};
}

bool all_completed(SlurmCluster& slurm, const std::string& job, std::size_t tasks,
                   std::string& seen) {
  auto lines = slurm.show_job(job);
  seen.clear();
  std::size_t ok = 0;
  for (const auto& l : lines) {
    seen += l + "\n";
    ok += l.find("JobState=COMPLETED") != std::string::npos &&
          l.find("ExitCode=0:0") != std::string::npos;
  }
  return ok == tasks;
}

class Slurm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0)
      GTEST_SKIP() << "slurmd must run as root to start jobs; this test runs as uid "
                   << ::geteuid();
    slurm_ = std::make_unique<SlurmCluster>();
    ASSERT_TRUE(wait_for([&] { return slurm_->ready(); }, 60s)) << slurm_->logs();
  }
  std::unique_ptr<SlurmCluster> slurm_;
};

TEST_F(Slurm, ASweepCompletesOnWorkersSlurmStartedAndTheyExitWhenNoSweepRuns) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  const std::string id = c.submit(toy_spec(8, 300, 4));
  ASSERT_FALSE(id.empty());
  const std::string job = slurm_->sbatch(job_args(*slurm_, c, 2, "2"));
  ASSERT_FALSE(job.empty()) << slurm_->last_error();

  Json sweep = c.wait_finished(id, 180s);
  ASSERT_EQ(sweep.value("state", ""), "finished") << sweep.dump(2) << slurm_->logs() << c.logs();
  EXPECT_EQ(sweep["counts"]["completed"].get<int>(), 8);
  EXPECT_EQ(sweep["counts"]["failed"].get<int>(), 0);
  // Every trial ran on a worker of this job.
  Json page = c.get("/api/sweeps/" + id + "/trials?limit=100");
  std::set<std::string> workers;
  for (const auto& t : page["trials"]) {
    Json detail = c.get("/api/trials/" + t["id"].get<std::string>());
    for (const auto& a : detail["attempts"]) {
      const std::string w = a.value("worker", "");
      EXPECT_EQ(w.rfind("slurm-" + job + "_", 0), 0u) << w;
      workers.insert(w);
    }
  }
  EXPECT_GE(workers.size(), 1u);
  // No sweep runs: both tasks' workers leave, and Slurm records a clean exit.
  std::string seen;
  ASSERT_TRUE(wait_for([&] { return all_completed(*slurm_, job, 2, seen); }, 90s))
      << seen << slurm_->logs();
  std::size_t idle_exits = 0;
  for (const auto& e : std::filesystem::directory_iterator(slurm_->dir() + "/jobs"))
    if (e.path().extension() == ".log")
      idle_exits += read_file(e.path()).find("no sweep is running") != std::string::npos;
  EXPECT_EQ(idle_exits, 2u) << slurm_->logs();
  std::printf("slurm: job %s, 2 array tasks, 8 trials completed on %zu of its workers\n",
              job.c_str(), workers.size());
}

TEST_F(Slurm, TheDrainSignalReleasesARunningTrialAndALaterJobFinishesIt) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  const std::string id = c.submit(toy_spec(1, 4000, 1));
  ASSERT_FALSE(id.empty());
  const std::string first = slurm_->sbatch(job_args(*slurm_, c, 1, "60"));
  ASSERT_FALSE(first.empty()) << slurm_->last_error();
  const std::string trial = id + "-0";
  ASSERT_TRUE(
      wait_for([&] { return c.get("/api/trials/" + trial).value("state", "") == "running"; }, 60s))
      << slurm_->logs() << c.logs();
  // What `#SBATCH --signal=B:TERM@120` delivers before the time limit.
  auto sent = slurm_->command({"/usr/bin/scancel", "--signal=TERM", "--batch", first});
  ASSERT_EQ(sent.rc, 0) << sent.text;
  std::string seen;
  ASSERT_TRUE(wait_for([&] { return all_completed(*slurm_, first, 1, seen); }, 90s))
      << seen << slurm_->logs();
  Json detail = c.get("/api/trials/" + trial);
  ASSERT_EQ(detail["attempts"].size(), 1u) << detail.dump(2);
  EXPECT_EQ(detail["attempts"][0]["outcome"], "released") << detail.dump(2);
  EXPECT_EQ(detail.value("state", ""), "queued") << detail.dump(2);

  const std::string second = slurm_->sbatch(job_args(*slurm_, c, 1, "1"));
  ASSERT_FALSE(second.empty()) << slurm_->last_error();
  Json sweep = c.wait_finished(id, 120s);
  ASSERT_EQ(sweep.value("state", ""), "finished") << sweep.dump(2) << slurm_->logs();
  EXPECT_EQ(sweep["counts"]["completed"].get<int>(), 1);
  EXPECT_EQ(sweep["counts"]["failed"].get<int>(), 0);
  detail = c.get("/api/trials/" + trial);
  ASSERT_EQ(detail["attempts"].size(), 2u) << detail.dump(2);
  EXPECT_EQ(detail["attempts"][1]["outcome"], "completed") << detail.dump(2);
  EXPECT_EQ(detail["attempts"][1]["worker"].get<std::string>().rfind("slurm-" + second + "_", 0),
            0u);
  ASSERT_TRUE(wait_for([&] { return all_completed(*slurm_, second, 1, seen); }, 90s))
      << seen << slurm_->logs();
}

}  // namespace
}  // namespace hpo::deploy
