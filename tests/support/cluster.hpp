// The real binaries as one local cluster for end-to-end tests: hpo-scheduler
// (embedded Redis; workers and the CLI find it through $HPO_HOME/scheduler.json),
// hpo-worker processes, and a REST client with the scheduler's token. Logs go
// to files in a temporary HPO_HOME, kept when a test failed.
#pragma once

#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/http_client.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "trials/redis/redis_client.hpp"

namespace hpo::testing {

inline const std::string kBinaryDir = HPO_BINARY_DIR;

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class Cluster {
 public:
  using Json = nlohmann::json;

  Cluster() {
    char tmpl[] = "/tmp/hpo-e2e-XXXXXX";
    home_ = ::mkdtemp(tmpl);
  }
  ~Cluster() {
    workers_.clear();
    if (scheduler_) {
      scheduler_->kill(SIGTERM);
      scheduler_->wait(std::chrono::seconds(15));
    }
    scheduler_.reset();
    if (!::testing::Test::HasFailure())
      std::filesystem::remove_all(home_);
    else
      std::fprintf(stderr, "e2e logs kept in %s\n", home_.c_str());
  }

  std::vector<std::pair<std::string, std::string>> env() const {
    return {{"HPO_HOME", home_}, {"HPO_LOG_LEVEL", "info"}};
  }

  // `extra` flags; `more_env` added to the cluster's environment (HPO_REDIS: an
  // external Redis instead of the embedded one, its password kept off the command line).
  void start_scheduler(const std::vector<std::string>& extra = {},
                       const std::vector<std::pair<std::string, std::string>>& more_env = {}) {
    std::filesystem::remove(home_ + "/scheduler.json");
    std::vector<std::string> argv{kBinaryDir + "/scheduler/hpo-scheduler",
                                  "--listen",
                                  "127.0.0.1:0",
                                  "--reaper-ms",
                                  "200",
                                  "--data-root",
                                  home_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto environment = env();
    environment.insert(environment.end(), more_env.begin(), more_env.end());
    scheduler_ = std::make_unique<Process>(argv, environment, home_ + "/scheduler.log");
    ASSERT_TRUE(wait_for([&] { return std::filesystem::exists(home_ + "/scheduler.json"); },
                         std::chrono::seconds(30)))
        << read_file(home_ + "/scheduler.log");
    auto state = Json::parse(read_file(home_ + "/scheduler.json"));
    auto url = parse_http_url(state["api"].get<std::string>());
    ASSERT_TRUE(url.ok());
    api_ = std::make_unique<HttpClient>(*url, std::chrono::seconds(10));
    api_->set_token(state["token"].get<std::string>());
    if (state.contains("ca_file")) api_->set_ca_file(state["ca_file"].get<std::string>());
  }

  // `prefix` runs it through another program (a test host: ip netns exec NS);
  // `more_env` overrides the cluster's environment (its own HPO_HOME).
  Process& start_worker(const std::string& name, int slots, int lease_ms = 1500,
                        const std::vector<std::string>& extra = {},
                        const std::vector<std::string>& prefix = {},
                        const std::vector<std::pair<std::string, std::string>>& more_env = {}) {
    std::vector<std::string> argv{
        kBinaryDir + "/workers/hpo-worker", "--name", name, "--slots", std::to_string(slots),
        "--lease-ms", std::to_string(lease_ms), "--kill-grace-s", "1", "--data-root", home_,
        // These suites' trials read and write the test's own
        // folders (its HPO_HOME, 0700): they run as the worker,
        // in its namespaces. The trust boundary's tests pass
        // --trial-user hpo-trial and --trial-namespaces auto
        // (later wins). Their projects' trials share the
        // worker's identity.
        "--trial-user", "none", "--any-project-as-worker", "--trial-namespaces", "off"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.begin(), prefix.begin(), prefix.end());
    auto environment = env();
    environment.insert(environment.end(), more_env.begin(), more_env.end());
    workers_.push_back(
        std::make_unique<Process>(argv, environment, home_ + "/worker-" + name + ".log"));
    return *workers_.back();
  }

  // The embedded Redis as its scheduler user (scheduler.json gives workers'
  // URLs only): for what a test inspects beyond the worker's commands.
  std::string admin_redis_url() const {
    auto state = Json::parse(read_file(home_ + "/scheduler.json"));
    auto url = trials::redis::RedisUrl::parse(state["redis"].get<std::string>());
    std::istringstream conf(read_file(home_ + "/data/redis.conf"));
    std::string line, password;
    while (std::getline(conf, line))
      if (line.rfind("user hpo-scheduler on >", 0) == 0)
        password = line.substr(23, line.find(' ', 23) - 23);
    return fmt::format("redis://hpo-scheduler:{}@127.0.0.1:{}", password, url ? url->port : 0);
  }

  HttpClient& api() { return *api_; }
  // Where the API listens (scheduler.json's "api").
  std::string api_url() const {
    return Json::parse(read_file(home_ + "/scheduler.json"))["api"].get<std::string>();
  }
  Process& scheduler() { return *scheduler_; }
  const std::string& home() const { return home_; }

  Json get(const std::string& path) {
    auto r = api_->get(path);
    if (!r.ok()) return Json();
    if (r->status != 200) return Json();
    return Json::parse(r->body, nullptr, false);
  }

  // Submits over REST (a failure is a test failure); the new sweep's id, "" when refused.
  std::string submit(const Json& spec) {
    auto r = api_->post("/api/sweeps", spec.dump());
    EXPECT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : r.error().message);
    return r.ok() && r->status == 201 ? Json::parse(r->body).value("id", "") : "";
  }

  // Waits until the scheduler has marked the sweep unschedulable; returns its
  // document (its "unschedulable" is empty when that did not happen in time).
  Json wait_unschedulable(const std::string& id, std::chrono::seconds timeout) {
    Json sweep;
    wait_for(
        [&] {
          sweep = get("/api/sweeps/" + id);
          return sweep.is_object() && !sweep.value("unschedulable", "").empty();
        },
        timeout);
    return sweep;
  }

  // Waits until the sweep leaves state running; returns its document.
  Json wait_finished(const std::string& id, std::chrono::seconds timeout) {
    Json sweep;
    wait_for(
        [&] {
          sweep = get("/api/sweeps/" + id);
          return sweep.is_object() && sweep.value("state", "") != "running";
        },
        timeout);
    return sweep;
  }

  std::string logs() const {
    std::string out = "--- scheduler ---\n" + read_file(home_ + "/scheduler.log");
    for (const auto& w : workers_) out += "--- " + w->log_path() + " ---\n" + w->log();
    return out;
  }

 private:
  std::string home_;
  std::unique_ptr<Process> scheduler_;
  std::vector<std::unique_ptr<Process>> workers_;
  std::unique_ptr<HttpClient> api_;
};

// The most attempts of these sweeps' trials that ever ran at once, from the
// starts and ends Redis stamped in the same function that moves the counts
// (an end before a start at the same millisecond: the claim that took a
// freed slot came after the release).
inline int most_attempts_at_once(Cluster& c, const std::vector<std::string>& sweeps) {
  std::vector<std::pair<long long, int>> edges;  // (ms, +1 start | -1 end)
  for (const auto& sid : sweeps) {
    nlohmann::json page = c.get("/api/sweeps/" + sid + "/trials?limit=1000");
    for (const auto& t : page["trials"]) {
      nlohmann::json one = c.get("/api/trials/" + t["id"].get<std::string>());
      for (const auto& a : one["attempts"]) {
        const long long start = a["started_ms"].get<long long>(),
                        end = a["ended_ms"].get<long long>();
        if (start == 0) continue;  // never placed
        EXPECT_GE(end, start) << one.dump();
        edges.emplace_back(start, +1);
        edges.emplace_back(end, -1);
      }
    }
  }
  std::sort(edges.begin(), edges.end());  // -1 sorts before +1 at a tie
  int now = 0, most = 0;
  for (const auto& e : edges) most = std::max(most, now += e.second);
  return most;
}

}  // namespace hpo::testing
