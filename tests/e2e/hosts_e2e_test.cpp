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

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/e2e/preemption_check.hpp"
#include "tests/support/cluster.hpp"
#include "tests/support/hosts.hpp"
#include "tests/support/process.hpp"
#include "web/http_client.hpp"

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
    redis_ = std::make_unique<Process>(
        std::vector<std::string>{"/usr/bin/redis-server", "--bind", hosts_.address(0), "--port",
                                 std::to_string(kRedisPort), "--requirepass", kPassword,
                                 "--appendonly", "yes", "--appendfsync", "always", "--save", "",
                                 "--dir", home},
        std::vector<std::pair<std::string, std::string>>{}, home + "/redis.log");
    ASSERT_TRUE(wait_for(
        [&] { return read_file(home + "/redis.log").find("Ready to accept") != std::string::npos; },
        30s))
        << read_file(home + "/redis.log");
    ASSERT_NO_FATAL_FAILURE(cluster_->start_scheduler({"--redis", redis_url()}));
  }

  Process& start_worker(int host, const std::string& name, int slots,
                        std::vector<std::string> extra = {}) {
    const std::string host_home = fmt::format("{}/host{}", cluster_->home(), host);
    std::filesystem::create_directories(host_home);
    extra.insert(extra.begin(), {"--redis", redis_url()});
    return cluster_->start_worker(name, slots, 3000, extra, hosts_.on(host),
                                  {{"HPO_HOME", host_home}});
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
  const double s = check_preempted_trial_resumes(c, notice, spot, [&] {
    pool.start_worker(2, "steady", 1, {"--threads", "1"});
  });
  std::printf("preemption across hosts: notice on host 1 to the first report on host 2 in %.1f s\n",
              s);
}

}  // namespace
}  // namespace hpo::e2e
