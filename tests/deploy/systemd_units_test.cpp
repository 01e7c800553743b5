// The systemd units (deploy/systemd/) as scripts/install.sh installs them:
// staged into a temporary root (--destdir), their [Service] sections read,
// and the scheduler's and a worker's ExecStart run exactly as written (the
// specifiers %i and %H expanded, Environment= and EnvironmentFile= applied,
// the root's absolute paths under the staged root) — systemd itself is not
// PID 1 on a CI machine. With them a sweep runs to the end on two workers:
// one of the scheduler's own host (its scheduler.json) and one configured as
// worker.env shows for another host (HPO_SCHEDULER and a worker token for
// the host's names, no Redis credential); stopping a worker as `systemctl
// stop` does (SIGTERM to the main process, KillMode mixed) drains it and
// exits 0 well within TimeoutStopSec.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/http_client.hpp"
#include "tests/support/cluster.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"

namespace hpo::deploy {
namespace {

using namespace std::chrono_literals;
using hpo::testing::Process;
using hpo::testing::read_file;
using hpo::testing::wait_for;
using Json = nlohmann::json;
namespace fs = std::filesystem;

const std::string kSource = HPO_SOURCE_DIR;

// A unit file's [Service] settings, in order (a key may repeat).
std::vector<std::pair<std::string, std::string>> service_section(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::pair<std::string, std::string>> out;
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      section = line;
      continue;
    }
    auto eq = line.find('=');
    if (section == "[Service]" && eq != std::string::npos)
      out.emplace_back(line.substr(0, eq), line.substr(eq + 1));
  }
  return out;
}

std::string value_of(const std::vector<std::pair<std::string, std::string>>& s,
                     const std::string& key) {
  for (const auto& [k, v] : s)
    if (k == key) return v;
  return "";
}

// systemd's specifiers this project's units use.
std::string expand(std::string text, const std::string& instance) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%' || i + 1 == text.size()) {
      out += text[i];
      continue;
    }
    const char s = text[++i];
    if (s == 'i')
      out += instance;
    else if (s == 'H')
      out += host;
    else if (s == '%')
      out += '%';
    else
      ADD_FAILURE() << "unit uses specifier %" << s << " the test does not model: " << text;
  }
  return out;
}

// An absolute path of the installed system, under the staged root.
std::string rooted(const std::string& root, const std::string& word) {
  return !word.empty() && word[0] == '/' ? root + word : word;
}

struct Command {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
};

// What systemd would run for the unit: ExecStart split on spaces (the units
// quote nothing), Environment= and then each EnvironmentFile= ("-": may be
// missing) as KEY=VALUE lines; absolute paths under `root`.
Command command_of(const std::string& root, const std::string& unit, const std::string& instance) {
  Command c;
  for (const auto& [k, v] : service_section(root + "/etc/systemd/system/" + unit)) {
    if (k == "Environment") {
      const std::string kv = expand(v, instance);
      const auto eq = kv.find('=');
      c.env.emplace_back(kv.substr(0, eq), rooted(root, kv.substr(eq + 1)));
    } else if (k == "EnvironmentFile") {
      std::string path = expand(v, instance);
      const bool optional = path.starts_with('-');
      if (optional) path = path.substr(1);
      std::ifstream in(root + path);
      if (!in) {
        EXPECT_TRUE(optional) << "EnvironmentFile " << path << " is not installed";
        continue;
      }
      std::string line;
      while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        const auto eq = line.find('=');
        EXPECT_NE(eq, std::string::npos) << path << ": " << line;
        if (eq == std::string::npos) continue;
        c.env.emplace_back(line.substr(0, eq), line.substr(eq + 1));
      }
    } else if (k == "ExecStart") {
      std::istringstream words(expand(v, instance));
      std::string w;
      while (words >> w) c.argv.push_back(rooted(root, w));
    }
  }
  return c;
}

class SystemdUnits : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hpo-deploy-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    Process install({"/bin/bash", kSource + "/scripts/install.sh", "--destdir", root_, "--no-build",
                     "--no-user"},
                    {{"HPO_BUILD_DIR", hpo::testing::kBinaryDir}}, root_ + "/install.log");
    ASSERT_EQ(install.wait(120s), 0) << read_file(root_ + "/install.log");
  }
  void TearDown() override {
    if (!HasFailure())
      fs::remove_all(root_);
    else
      std::fprintf(stderr, "staged root kept in %s\n", root_.c_str());
  }
  std::string root_;
};

TEST_F(SystemdUnits, InstallStagesTheBinariesTheUnitsAndAConfigurationThatIsKept) {
  for (const char* bin : {"hpo", "hpo-scheduler", "hpo-worker"})
    EXPECT_EQ(::access((root_ + "/usr/local/bin/" + bin).c_str(), X_OK), 0) << bin;
  if (fs::exists(kSource + "/web/ui/dist/index.html")) {
    EXPECT_TRUE(fs::exists(root_ + "/usr/local/share/hpo/ui/index.html"));
  }
  // The Python library an installed worker finds beside its binary, readable by trial users.
  for (const char* py : {"hpo/__init__.py", "hpo/_trial.py", "hpo/integrations/xgboost.py"}) {
    struct stat lib {};
    ASSERT_EQ(::stat((root_ + "/usr/local/share/hpo/python/" + py).c_str(), &lib), 0) << py;
    EXPECT_EQ(lib.st_mode & 0444, 0444u) << py;
  }
  for (const char* unit : {"hpo-scheduler.service", "hpo-worker@.service"})
    EXPECT_TRUE(fs::exists(root_ + "/etc/systemd/system/" + unit)) << unit;
  struct stat st {};
  ASSERT_EQ(::stat((root_ + "/etc/hpo/token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);  // the scheduler refuses a token others may read
  EXPECT_EQ(read_file(root_ + "/etc/hpo/token").size(), 64u);

  // The service settings that make it behave: restarts, its own user, the
  // drain given its time.
  for (const char* unit : {"hpo-scheduler.service", "hpo-worker@.service"}) {
    auto s = service_section(root_ + "/etc/systemd/system/" + unit);
    EXPECT_EQ(value_of(s, "Restart"), "on-failure") << unit;
    EXPECT_EQ(value_of(s, "User"), "hpo") << unit;
    EXPECT_EQ(value_of(s, "Environment"), "HPO_HOME=/var/lib/hpo") << unit;
  }
  auto worker = service_section(root_ + "/etc/systemd/system/hpo-worker@.service");
  EXPECT_EQ(value_of(worker, "KillMode"), "mixed");  // SIGTERM to the agent alone: it drains
  Command w = command_of(root_, "hpo-worker@.service", "main");
  double drain = 30, kill = 5;
  for (const auto& [k, v] : w.env) {
    if (k == "HPO_DRAIN_GRACE_S") drain = std::stod(v);
    if (k == "HPO_KILL_GRACE_S") kill = std::stod(v);
  }
  const std::string stop = value_of(worker, "TimeoutStopSec");
  ASSERT_TRUE(stop.ends_with("s")) << stop;
  EXPECT_GT(std::stod(stop), drain + kill) << "TimeoutStopSec must outlast the drain";

  // A second install keeps what the operator changed (and the token).
  const std::string token = read_file(root_ + "/etc/hpo/token");
  std::ofstream(root_ + "/etc/hpo/scheduler.json") << R"({"listen": "127.0.0.1:9999"})";
  Process again(
      {"/bin/bash", kSource + "/scripts/install.sh", "--destdir", root_, "--no-build", "--no-user"},
      {{"HPO_BUILD_DIR", hpo::testing::kBinaryDir}}, root_ + "/install-2.log");
  ASSERT_EQ(again.wait(120s), 0) << read_file(root_ + "/install-2.log");
  EXPECT_EQ(read_file(root_ + "/etc/hpo/scheduler.json"), R"({"listen": "127.0.0.1:9999"})");
  EXPECT_EQ(read_file(root_ + "/etc/hpo/token"), token);
}

// systemd's own reading of the units: unknown keys, bad values, a
// specifier or path it refuses (scripts/install-deps.sh installs the
// package; PID 1 need not be systemd for this).
TEST_F(SystemdUnits, SystemdAnalyzeFindsNothingWrongWithTheUnits) {
  if (::access("/usr/bin/systemd-analyze", X_OK) != 0)
    GTEST_SKIP() << "systemd-analyze is not installed (Debian package systemd)";
  fs::create_directories(root_ + "/verify");
  const std::vector<std::pair<std::string, std::string>> units = {
      {"hpo-scheduler.service", "hpo-scheduler.service"},
      {"hpo-worker@.service", "hpo-worker@main.service"}};
  for (const auto& [unit, as] : units) {
    // The binaries where the staged root has them (verify checks they are executable).
    std::string text = read_file(root_ + "/etc/systemd/system/" + unit);
    for (std::size_t at = 0; (at = text.find("/usr/local/bin/", at)) != std::string::npos;
         at += root_.size() + 1)
      text.insert(at, root_);
    const std::string path = root_ + "/verify/" + as;
    std::ofstream(path) << text;
    const std::string log = root_ + "/verify-" + as + ".log";
    Process verify({"/usr/bin/systemd-analyze", "verify", path}, {}, log);
    EXPECT_EQ(verify.wait(60s), 0) << read_file(log);
    EXPECT_EQ(read_file(log).find(as), std::string::npos) << read_file(log);
  }
}

TEST_F(SystemdUnits, TheUnitsCommandLinesRunASweepAndAStopDrainsTheWorker) {
  // The operator's one edit for a test host: a free port.
  const int port = hpo::testing::free_loopback_port();
  Json config = Json::parse(read_file(root_ + "/etc/hpo/scheduler.json"));
  config["listen"] = "127.0.0.1:" + std::to_string(port);
  std::ofstream(root_ + "/etc/hpo/scheduler.json") << config.dump(2);
  // StateDirectory=hpo: systemd makes /var/lib/hpo before starting either unit.
  fs::create_directories(root_ + "/var/lib/hpo");

  Command s = command_of(root_, "hpo-scheduler.service", "");
  ASSERT_FALSE(s.argv.empty());
  EXPECT_EQ(s.argv[0], root_ + "/usr/local/bin/hpo-scheduler");
  Process scheduler(s.argv, s.env, root_ + "/scheduler.log");
  const std::string state = root_ + "/var/lib/hpo/scheduler.json";
  ASSERT_TRUE(wait_for([&] { return fs::exists(state); }, 60s))
      << read_file(root_ + "/scheduler.log");
  Json st = Json::parse(read_file(state));
  EXPECT_EQ(st["token"],
            read_file(root_ + "/etc/hpo/token"));  // the token file's, not a random one
  HttpClient api("127.0.0.1", port, 10s);
  api.set_token(st["token"].get<std::string>());
  auto health = api.get("/healthz");
  ASSERT_TRUE(health.ok() && health->status == 200);

  Command w = command_of(root_, "hpo-worker@.service", "main");
  Process worker(w.argv, w.env, root_ + "/worker.log");
  // Another host's worker, as worker.env says: the scheduler's URL and a token
  // an admin made for this host's names.
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  auto made = api.post("/api/worker-tokens", Json{{"host", std::string(host) + "-*"}}.dump());
  ASSERT_TRUE(made.ok() && made->status == 201) << (made.ok() ? made->body : "");
  std::ofstream(root_ + "/etc/hpo/worker-remote.env")
      << "HPO_SCHEDULER=http://127.0.0.1:" << port
      << "\nHPO_WORKER_TOKEN=" << Json::parse(made->body)["token"].get<std::string>() << "\n";
  Command rw = command_of(root_, "hpo-worker@.service", "remote");
  for (const auto& [name, value] : rw.env) EXPECT_NE(name, "HPO_REDIS") << value;
  Process remote(rw.argv, rw.env, root_ + "/worker-remote.log");
  auto logs = [&] {
    return read_file(root_ + "/scheduler.log") + read_file(root_ + "/worker.log") +
           read_file(root_ + "/worker-remote.log");
  };
  // Both register before the sweep: the remote one through the worker endpoint.
  ASSERT_TRUE(wait_for(
      [&] {
        auto g = api.get("/api/workers");
        return g.ok() && g->body.find(std::string(host) + "-main") != std::string::npos &&
               g->body.find(std::string(host) + "-remote") != std::string::npos;
      },
      60s))
      << logs();
  EXPECT_NE(read_file(root_ + "/worker-remote.log").find("worker endpoint"), std::string::npos)
      << read_file(root_ + "/worker-remote.log");

  auto r = api.post("/api/sweeps", R"({"name": "installed",
    "objective": {"metric": "value", "mode": "min"},
    "parameters": {"x": {"type": "int", "min": 1, "max": 8}},
    "search": {"algorithm": "grid", "max_trials": 8},
    "trial": {"kind": "synthetic", "function": "noop"}})");
  ASSERT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : r.error().message);
  const std::string id = Json::parse(r->body)["id"];
  Json sweep;
  ASSERT_TRUE(wait_for(
      [&] {
        auto g = api.get("/api/sweeps/" + id);
        if (!g.ok() || g->status != 200) return false;
        sweep = Json::parse(g->body, nullptr, false);
        return sweep.is_object() && sweep.value("state", "") != "running";
      },
      120s))
      << logs();
  EXPECT_EQ(sweep["state"], "finished") << sweep.dump(2);
  EXPECT_EQ(sweep["counts"]["completed"].get<int>(), 8) << sweep.dump(2);

  // The installed CLI finds the scheduler through HPO_HOME, as the unit's user would.
  Process cli({root_ + "/usr/local/bin/hpo", "status", id}, {{"HPO_HOME", root_ + "/var/lib/hpo"}},
              root_ + "/cli.log");
  EXPECT_EQ(cli.wait(60s), 0) << read_file(root_ + "/cli.log");
  EXPECT_NE(read_file(root_ + "/cli.log").find("finished"), std::string::npos)
      << read_file(root_ + "/cli.log");

  // systemctl stop: SIGTERM to each unit's main process.
  worker.kill(SIGTERM);
  EXPECT_EQ(worker.wait(90s), 0) << logs();
  remote.kill(SIGTERM);
  EXPECT_EQ(remote.wait(90s), 0) << logs();
  EXPECT_NE(read_file(root_ + "/worker.log").find("worker draining"), std::string::npos);
  scheduler.kill(SIGTERM);
  EXPECT_EQ(scheduler.wait(30s), 0) << logs();
}

}  // namespace
}  // namespace hpo::deploy
