// The pool as separate hosts on one machine (tests/support/hosts.hpp): Redis
// and hpo-scheduler on the control host, each hpo-worker on a host of its own,
// reaching Redis only over the test bridge. Skipped, with the reason, where
// network namespaces cannot be made.
//
// What must hold across hosts: trials land only on the host whose worker fits
// their request, a request no host can meet is reported with each worker's
// reason, and a trial whose host gets its termination notice moves to another
// host, resumes from its checkpoint and ends exactly as an uninterrupted run.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/http_client.hpp"
#include "tests/e2e/preemption_check.hpp"
#include "tests/support/cluster.hpp"
#include "tests/support/hosts.hpp"
#include "tests/support/process.hpp"
#include "tests/support/tabular.hpp"

namespace hpo::e2e {
namespace {

using Json = nlohmann::json;
using hpo::testing::Hosts;
using hpo::testing::Process;
using hpo::testing::read_file;
using hpo::testing::wait_for;
using namespace std::chrono_literals;

const std::string kBin = HPO_BINARY_DIR;
constexpr int kRedisPort = 6390;
constexpr char kPassword[] = "test-bridge-secret";
constexpr char kDatasets[] = "/usr/share/datasets";  // Debian's dataset packages

// Redis and the scheduler on the control host (this thread goes there too),
// workers on hosts of their own, each with its own HPO_HOME as on a machine
// of its own; the rest is the one-host Cluster.
class HostPool {
 public:
  explicit HostPool(int workers) : hosts_(workers) {}
  ~HostPool() {
    cluster_.reset();  // workers and the scheduler before Redis, and all before leaving the host
    redis_.reset();
    control_.reset();
  }

  hpo::testing::Cluster& cluster() { return *cluster_; }
  std::string redis_url() const {
    return fmt::format("redis://:{}@{}:{}", kPassword, hosts_.address(0), kRedisPort);
  }

  void start() {
    ASSERT_TRUE(hosts_.ok()) << "could not build the test hosts";
    control_ = std::make_unique<Hosts::ControlThread>(hosts_);
    ASSERT_TRUE(control_->ok()) << "cannot enter the control host";
    cluster_ = std::make_unique<hpo::testing::Cluster>();
    const std::string home = cluster_->home();
    // The password in a file and in HPO_REDIS, never on a command line: every
    // process on this machine reads those (a trust-boundary test running beside
    // this one looks for exactly that).
    const std::string conf = home + "/redis-bridge.conf";
    std::ofstream(conf) << "requirepass " << kPassword << "\n";
    std::filesystem::permissions(
        conf, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    redis_ = std::make_unique<Process>(
        std::vector<std::string>{"/usr/bin/redis-server", conf, "--bind", hosts_.address(0),
                                 "--port", std::to_string(kRedisPort), "--appendonly", "yes",
                                 "--appendfsync", "always", "--save", "", "--dir", home},
        std::vector<std::pair<std::string, std::string>>{}, home + "/redis.log");
    ASSERT_TRUE(wait_for(
        [&] { return read_file(home + "/redis.log").find("Ready to accept") != std::string::npos; },
        30s))
        << read_file(home + "/redis.log");
    ASSERT_NO_FATAL_FAILURE(
        cluster_->start_scheduler({"--data-root", kDatasets}, {{"HPO_REDIS", redis_url()}}));
  }

  Process& start_worker(int host, const std::string& name, int slots,
                        std::vector<std::string> extra = {}) {
    const std::string host_home = fmt::format("{}/host{}", cluster_->home(), host);
    std::filesystem::create_directories(host_home);
    extra.insert(extra.begin(), {"--data-root", kDatasets});
    return cluster_->start_worker(name, slots, 3000, extra, hosts_.on(host),
                                  {{"HPO_HOME", host_home}, {"HPO_REDIS", redis_url()}});
  }

 private:
  Hosts hosts_;
  std::unique_ptr<Hosts::ControlThread> control_;
  std::unique_ptr<Process> redis_;
  std::unique_ptr<hpo::testing::Cluster> cluster_;
};

#define SKIP_WITHOUT_NAMESPACES()                      \
  if (auto why = Hosts::unavailable(); !why.empty()) { \
    GTEST_SKIP() << why;                               \
  }

Json toy_spec(int trials, const Json& resources) {
  return {{"name", "hosts toy"},
          {"objective", {{"metric", "value"}, {"mode", "min"}}},
          {"parameters",
           {{"x", {{"type", "float"}, {"min", -3.0}, {"max", 3.0}}},
            {"y", {{"type", "int"}, {"min", -4}, {"max", 2}}}}},
          {"search", {{"algorithm", "random"}, {"max_trials", trials}, {"max_concurrent", 4}}},
          {"trial",
           {{"kind", "command"},
            {"argv", {kBin + "/tests/e2e/toy_trial", "--x={x}", "--y={y}", "--sleep-ms=20"}},
            {"max_attempts", 3},
            {"resources", resources}}}};
}

TEST(HostsEndToEnd, TrialsLandOnTheHostThatFitsAndAnUnmeetableRequestIsReported) {
  SKIP_WITHOUT_NAMESPACES();
  HostPool pool(2);
  ASSERT_NO_FATAL_FAILURE(pool.start());
  pool.start_worker(
      1, "gpu-host", 2,
      {"--fake-gpus", "NVIDIA A100-SXM4-80GB:80,NVIDIA A100-SXM4-80GB:80", "--label", "zone=a"});
  pool.start_worker(2, "cpu-host", 2, {"--label", "zone=b"});
  auto& c = pool.cluster();

  const std::string gpu = c.submit(toy_spec(6, {{"gpus", 1}, {"gpu_model", "A100"}}));
  const std::string zoned = c.submit(toy_spec(6, {{"labels", {"zone=b"}}}));
  const std::string never = c.submit(toy_spec(2, {{"labels", {"zone=c"}}}));
  for (const auto& [id, host] : {std::pair{gpu, "gpu-host"}, std::pair{zoned, "cpu-host"}}) {
    Json sweep = c.wait_finished(id, 120s);
    ASSERT_EQ(sweep.value("state", ""), "finished") << sweep.dump(2) << c.logs();
    EXPECT_EQ(sweep["counts"]["completed"].get<int>(), 6);
    for (const auto& t : c.get("/api/sweeps/" + id + "/trials?limit=100")["trials"])
      EXPECT_EQ(t["worker"], host) << t.dump();
  }
  Json unmet = c.wait_unschedulable(never, 60s);
  ASSERT_FALSE(unmet.value("unschedulable", "").empty()) << unmet.dump() << c.logs();
  const std::string why = unmet["unschedulable"].get<std::string>();
  EXPECT_NE(why.find("gpu-host: a trial needs label 'zone=c'"), std::string::npos) << why;
  EXPECT_NE(why.find("cpu-host: a trial needs label 'zone=c'"), std::string::npos) << why;
}

// Preemption across hosts (tests/e2e/preemption_check.hpp has what must
// hold): the trial moves from host 1, whose notice appears, to host 2.
TEST(HostsEndToEnd, APreemptedTrialMovesToAnotherHostAndEndsAsIfUninterrupted) {
  SKIP_WITHOUT_NAMESPACES();
  HostPool pool(2);
  ASSERT_NO_FATAL_FAILURE(pool.start());
  auto& c = pool.cluster();
  const std::string notice = c.home() + "/host1-notice";
  auto& spot = pool.start_worker(1, "spot", 1, {"--threads", "1", "--notice-file", notice});
  const double s = check_preempted_trial_resumes(
      c, [&] { std::ofstream(notice) << "terminate\n"; }, spot,
      [&] {
        pool.start_worker(2, "steady", 1, {"--threads", "1"});
      });
  std::printf("preemption across hosts: notice on host 1 to the first report on host 2 in %.1f s\n",
              s);
}

const std::string kFashion = "/usr/share/datasets/fashion-mnist/";

// A torch trial of `replicas` ranks on Fashion-MNIST (12,000 training images,
// a quarter of them for validation); per_host 2 puts two on each host (a
// gang of 4 over 2 hosts x 2 slots).
Json gang_spec(const std::string& name, int replicas, const std::string& mode, int epochs,
               int per_host = 2) {
  Json spec = {{"name", name},
               {"objective", {{"metric", "val_accuracy"}, {"mode", "max"}}},
               {"parameters", {{"lr", {{"type", "categorical"}, {"values", {0.003}}}}}},
               {"search", {{"algorithm", "grid"}, {"max_trials", 1}}},
               {"trial",
                {{"kind", "torch"},
                 {"task", "classification"},
                 {"model", {{"type", "mlp"}, {"hidden", 64}, {"depth", 1}}},
                 {"data",
                  {{"format", "idx"},
                   {"train_images", kFashion + "train-images-idx3-ubyte.gz"},
                   {"train_labels", kFashion + "train-labels-idx1-ubyte.gz"},
                   {"subset", 12000},
                   {"validation_fraction", 0.25}}},
                 {"optimizer", {{"type", "adam"}, {"lr", "{lr}"}}},
                 {"batch_size", 64},
                 {"epochs", epochs},
                 {"timeout_s", 600},
                 {"max_attempts", 3}}}};
  if (replicas > 1)
    spec["trial"]["data_parallel"] = {
        {"replicas", replicas}, {"per_host", per_host}, {"mode", mode}, {"average_every", 4}};
  return spec;
}

#define SKIP_WITHOUT_FASHION_MNIST()                                       \
  if (!std::filesystem::exists(kFashion + "train-images-idx3-ubyte.gz")) { \
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";              \
  }

// Where the attempt's ranks ran: "worker:count" by worker name, joined by
// spaces, after the world size ("4 = left:2 right:2"); the ranks must be
// numbered from 0 without a gap, the lease holder's first.
std::string layout_of(const Json& trial) {
  if (!trial.contains("gang") || !trial["gang"].is_object()) return "no gang";
  const Json& g = trial["gang"];
  std::map<std::string, int> parts;
  int next = 0;
  for (const auto& p : g["ranks"]) {
    if (p["first"].get<int>() != next) return "ranks out of order: " + g.dump();
    next += p["count"].get<int>();
    parts[p["worker"].get<std::string>()] = p["count"].get<int>();
  }
  if (g["ranks"].empty() || g["ranks"][0]["worker"] != trial["worker"])
    return "rank 0 is not on the lease holder: " + trial.dump();
  std::string out = std::to_string(g["world"].get<int>()) + " =";
  for (const auto& [w, n] : parts) out += fmt::format(" {}:{}", w, n);
  return out;
}

// A gang across hosts: 4 ranks, 2 on each host, rendezvous through rank 0's
// TCPStore (its address published in Redis), Gloo over the bridge. Both modes
// reach the accuracy one rank reaches on the same data, within a point.
TEST(HostsEndToEnd, AFourRankGangOverTwoHostsTrainsAsOneRankDoesInBothModes) {
  SKIP_WITHOUT_NAMESPACES();
  SKIP_WITHOUT_FASHION_MNIST();
  HostPool pool(2);
  ASSERT_NO_FATAL_FAILURE(pool.start());
  pool.start_worker(1, "left", 2, {"--threads", "1"});
  pool.start_worker(2, "right", 2, {"--threads", "1"});
  auto& c = pool.cluster();

  auto run = [&](const Json& spec) {
    const std::string id = c.submit(spec);
    Json sweep = c.wait_finished(id, 300s);
    EXPECT_EQ(sweep.value("state", ""), "finished") << sweep.dump(2) << c.logs();
    Json t = c.get("/api/trials/" + id + "-0");
    EXPECT_EQ(t.value("state", ""), "completed") << t.dump(2) << c.logs();
    return t;
  };
  const Json one = run(gang_spec("one rank", 1, "allreduce", 4));
  const double want = one["metrics"].value("val_accuracy", 0.0);
  EXPECT_GT(want, 0.75) << one.dump(2);  // chance: 0.1
  for (const char* mode : {"allreduce", "average"}) {
    const Json t = run(gang_spec(std::string("gang ") + mode, 4, mode, 4));
    EXPECT_EQ(layout_of(t), "4 = left:2 right:2") << t.dump(2);
    EXPECT_EQ(t["attempt"].get<int>(), 0) << t.dump(2);
    const double got = t["metrics"].value("val_accuracy", 0.0);
    EXPECT_NEAR(got, want, 0.01) << mode << "\n" << t.dump(2);
    std::printf("gang over 2 hosts, %s: val_accuracy %.4f (1 rank %.4f), %.0f samples/s\n", mode,
                got, want, t["metrics"].value("train_samples_per_s", 0.0));
  }
  // One rank on each host: the figures for 1, 2 and 4 ranks (all on this machine's cores).
  const Json two = run(gang_spec("gang of 2", 2, "allreduce", 4, 1));
  EXPECT_EQ(layout_of(two), "2 = left:1 right:1") << two.dump(2);
  EXPECT_NEAR(two["metrics"].value("val_accuracy", 0.0), want, 0.01) << two.dump(2);
  std::printf("samples/s, allreduce: 1 rank %.0f; 2 ranks over 2 hosts %.0f\n",
              one["metrics"].value("train_samples_per_s", 0.0),
              two["metrics"].value("train_samples_per_s", 0.0));
}

// Waits (bounded) until the trial has reported three epochs; `detail` is its last read.
bool running_past_two_epochs(hpo::testing::Cluster& c, const std::string& trial, Json& detail) {
  return wait_for(
      [&] {
        detail = c.get("/api/trials/" + trial);
        return detail.is_object() && detail["reports"].size() > 2;
      },
      180s);
}

// The gang's retry once host 2 has a worker again ("right-again"): placed
// over both hosts, it resumes from the epoch checkpoint (its first report,
// the one after the `before` the first attempt made, is past epoch 1) and
// completes. Returns the trial's detail.
Json retry_resumes(HostPool& pool, const std::string& id, std::size_t before) {
  auto& c = pool.cluster();
  pool.start_worker(2, "right-again", 2, {"--threads", "1"});
  Json sweep = c.wait_finished(id, 300s);
  EXPECT_EQ(sweep.value("state", ""), "finished") << sweep.dump(2) << c.logs();
  Json detail = c.get("/api/trials/" + id + "-0");
  EXPECT_EQ(detail["state"], "completed") << detail.dump(2);
  EXPECT_EQ(layout_of(detail), "4 = left:2 right-again:2") << detail.dump(2);
  EXPECT_NE(detail.value("log_tail", "").find("resuming from a checkpoint"), std::string::npos)
      << detail["log_tail"];
  EXPECT_GT(detail["reports"].size(), before) << detail.dump(2);
  if (detail["reports"].size() > before) {
    EXPECT_GT(detail["reports"][before].value("step", 0), 1) << detail.dump(2);
  }
  EXPECT_GT(detail["metrics"].value("val_accuracy", 0.0), 0.75) << detail.dump(2);
  return detail;
}

// kill -9 of one host's worker mid-trial: its ranks die with it, the attempt
// stops on every rank (rank 0's collective fails at once, the rank lease
// would lapse otherwise), and the retry, placed on the hosts live then,
// resumes from the epoch checkpoint and completes.
TEST(HostsEndToEnd, KillingOneHostsWorkerStopsTheGangAndTheRetryResumesFromItsCheckpoint) {
  SKIP_WITHOUT_NAMESPACES();
  SKIP_WITHOUT_FASHION_MNIST();
  HostPool pool(2);
  ASSERT_NO_FATAL_FAILURE(pool.start());
  pool.start_worker(1, "left", 2, {"--threads", "1"});
  auto& right = pool.start_worker(2, "right", 2, {"--threads", "1"});
  auto& c = pool.cluster();
  const std::string id = c.submit(gang_spec("gang killed", 4, "allreduce", 12));
  const std::string trial = id + "-0";
  Json detail;
  ASSERT_TRUE(running_past_two_epochs(c, trial, detail)) << c.logs();
  EXPECT_EQ(layout_of(detail), "4 = left:2 right:2") << detail.dump(2);
  right.kill(SIGKILL);
  ASSERT_TRUE(wait_for(
      [&] {
        detail = c.get("/api/trials/" + trial);
        return detail.is_object() && detail.value("attempt", 0) >= 1;
      },
      120s))
      << c.logs();
  ASSERT_NO_FATAL_FAILURE(detail = retry_resumes(pool, id, detail["reports"].size()));
  EXPECT_EQ(detail["attempt"].get<int>(), 1) << detail.dump(2);
  ASSERT_GE(detail["attempts"].size(), 2u) << detail.dump(2);
  EXPECT_NE(detail["attempts"][0]["outcome"], "completed") << detail.dump(2);
  std::printf("gang attempt 0 ended: %s\n", detail["attempts"][0].dump().c_str());
}

// A termination notice on a follower's host: the follower asks the leader to
// release the attempt, the gang stops together, the trial goes back to the
// queue without a failure counted (outcome "released"), and the retry on the
// hosts live then resumes from the epoch checkpoint and completes.
TEST(HostsEndToEnd, ANoticeOnAFollowersHostReleasesTheGangWithoutAFailure) {
  SKIP_WITHOUT_NAMESPACES();
  SKIP_WITHOUT_FASHION_MNIST();
  HostPool pool(2);
  ASSERT_NO_FATAL_FAILURE(pool.start());
  auto& c = pool.cluster();
  const std::string notice = c.home() + "/right-notice";
  pool.start_worker(1, "left", 2, {"--threads", "1"});
  auto& right = pool.start_worker(2, "right", 2, {"--threads", "1", "--notice-file", notice});
  const std::string id = c.submit(gang_spec("gang noticed", 4, "allreduce", 12));
  const std::string trial = id + "-0";
  Json detail;
  ASSERT_TRUE(running_past_two_epochs(c, trial, detail)) << c.logs();
  EXPECT_EQ(layout_of(detail), "4 = left:2 right:2") << detail.dump(2);
  std::ofstream(notice) << "terminate\n";
  EXPECT_EQ(right.wait(120s), 0) << c.logs();
  detail = c.get("/api/trials/" + trial);
  EXPECT_EQ(detail["state"], "queued") << detail.dump(2);  // left alone cannot hold 4 ranks
  ASSERT_EQ(detail["attempts"].size(), 1u) << detail.dump(2);
  EXPECT_EQ(detail["attempts"][0]["outcome"], "released") << detail.dump(2);
  ASSERT_NO_FATAL_FAILURE(detail = retry_resumes(pool, id, detail["reports"].size()));
  for (const auto& a : detail["attempts"]) EXPECT_NE(a["outcome"], "failed") << detail.dump(2);
}

}  // namespace
}  // namespace hpo::e2e
