// The trust boundary from a hostile trial's side (tests/e2e/hostile_trial.py):
// the real scheduler (embedded Redis) and a real worker started the
// documented way — as root, with HPO_REDIS in its environment and an
// HPO_HOME holding scheduler.json — run two trials at once that look for
// secrets in /proc, HPO_HOME and their environment, write to every inherited
// descriptor, try Redis without a credential, read each other's attempt
// directory and signal each other, and leave a setsid() child behind; then
// one trial of eight processes that together exceed its memory_gb. Also: the
// worker's Redis user is refused the commands only an operator may run.
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/cluster.hpp"
#include "trials/redis/redis_client.hpp"

namespace {

using hpo::testing::Cluster;
using hpo::testing::process_gone;
using hpo::testing::read_file;
using hpo::testing::wait_for;
using Json = nlohmann::json;
using namespace std::chrono_literals;

// A folder a trial user may read (the program) and a 1777 one it may write
// (its findings): the test's own HPO_HOME is the worker's, 0700.
class Exchange {
 public:
  Exchange() {
    char tmpl[] = "/tmp/hpo-trust-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    ::chmod(root_.c_str(), 0755);
    std::filesystem::create_directories(drop());
    ::chmod(drop().c_str(), 01777);
    std::filesystem::copy_file(std::string(HPO_SOURCE_DIR) + "/tests/e2e/hostile_trial.py",
                               program());
    ::chmod(program().c_str(), 0644);
  }
  ~Exchange() { std::filesystem::remove_all(root_); }
  const std::string& root() const { return root_; }
  std::string program() const { return root_ + "/hostile_trial.py"; }
  // The rank program where a trial user may run it (a build folder inside a
  // private clone may not be reachable).
  std::string rank_program() const {
    const std::string to = root_ + "/hpo-train-rank";
    if (!std::filesystem::exists(to)) {
      std::filesystem::copy_file(std::string(HPO_BINARY_DIR) + "/workers/hpo-train-rank", to);
      ::chmod(to.c_str(), 0755);
    }
    return to;
  }
  // A small two-class table for a torch trial, readable by everybody.
  std::string table() const {
    const std::string path = root_ + "/table.csv";
    std::ofstream out(path);
    out << "a,b,c,y\n";
    for (int i = 0; i < 400; ++i) {
      const double a = (i % 17) / 17.0, b = (i % 5) / 5.0, c = (i % 11) / 11.0;
      out << a << ',' << b << ',' << c << ',' << (a + b > 0.9 ? 1 : 0) << '\n';
    }
    out.close();
    ::chmod(path.c_str(), 0644);
    return path;
  }
  std::string drop() const { return root_ + "/drop"; }
  Json found(int number) const {
    return Json::parse(read_file(drop() + "/" + std::to_string(number) + ".json"), nullptr, false);
  }

 private:
  std::string root_;
};

Json hostile_spec(const Exchange& x, const std::string& mode, const Cluster& c, int port,
                  int trials, double memory_gb) {
  Json spec = {
      {"name", "hostile " + mode},
      {"objective", {{"metric", "score"}, {"mode", "max"}}},
      {"parameters", {{"a", {{"type", "int"}, {"min", 0}, {"max", 9}}}}},
      {"search",
       {{"algorithm", "random"}, {"max_trials", trials}, {"max_concurrent", 2}, {"seed", 3}}},
      {"trial",
       {{"kind", "command"},
        {"argv", {"/usr/bin/python3", x.program(), mode, x.drop()}},
        {"env", {{"GUESS_HPO_HOME", c.home()}, {"GUESS_REDIS_PORT", std::to_string(port)}}},
        {"max_attempts", 1},
        {"timeout_s", 300}}}};
  if (memory_gb > 0) spec["trial"]["resources"] = {{"memory_gb", memory_gb}};
  return spec;
}

class TrustBoundary : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the user switch needs a root worker";
    ASSERT_NE(::getpwnam("hpo-trial"), nullptr)
        << "no user hpo-trial: scripts/install-deps.sh creates it";
    c_.start_scheduler({"--data-root", x_.root()});
    auto state = Json::parse(read_file(c_.home() + "/scheduler.json"));
    worker_url_ = state["redis"].get<std::string>();
    auto url = hpo::trials::redis::RedisUrl::parse(worker_url_);
    ASSERT_TRUE(url.ok());
    port_ = url->port;
    password_ = url->password;
    ASSERT_GE(password_.size(), 32u);
    // The documented way: the URL in the environment, scheduler.json in HPO_HOME, root.
    std::vector<std::pair<std::string, std::string>> env = {{"HPO_REDIS", worker_url_}};
    if (torch()) env.emplace_back("HPO_TRAIN_RANK", x_.rank_program());
    std::vector<std::string> flags = {"--trial-user", "hpo-trial", "--data-root", x_.root()};
    flags.insert(flags.end(), {"--trial-namespaces", namespaces() ? "on" : "off"});
    worker_ = &c_.start_worker("trust-" + std::to_string(::getpid()), 2, 3000, flags, {}, env);
  }
  // Whether command trials run in namespaces of their own (the default).
  virtual bool namespaces() const { return true; }
  // The hostile probe's findings, judged (below).
  void probe_two_trials();

  static bool torch() {
    return std::filesystem::exists(std::string(HPO_BINARY_DIR) + "/workers/hpo-train-rank");
  }

  Exchange x_;
  Cluster c_;
  hpo::testing::Process* worker_ = nullptr;
  std::string worker_url_, password_;
  int port_ = 0;
};

// The uids of the worker's hpo-train-rank children (its trials' ranks and
// the ones it starts ahead for them).
std::vector<long> rank_uids(pid_t worker) {
  std::vector<long> uids;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string dir = e.path().string();
    const std::string stat = read_file(dir + "/stat");
    const auto open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    if (stat.substr(open + 1, close - open - 1) != "hpo-train-rank") continue;
    if (std::atol(stat.c_str() + close + 4) != static_cast<long>(worker)) continue;
    std::istringstream status(read_file(dir + "/status"));
    std::string line;
    while (std::getline(status, line))
      if (line.rfind("Uid:", 0) == 0) uids.push_back(std::atol(line.c_str() + 4));
  }
  return uids;
}

// The same worker with --trial-namespaces off: uids of their own, cgroups,
// and nothing more (a kernel without namespaces).
class TrustBoundaryWithoutNamespaces : public TrustBoundary {
 protected:
  bool namespaces() const override { return false; }
};

// Not done: a refusal of any kind (no permission, or nothing there to find).
bool refused(const Json& finding) {
  return finding.is_string() && finding.get<std::string>().rfind("ok: ", 0) != 0;
}

void TrustBoundary::probe_two_trials() {
  const std::string id = c_.submit(hostile_spec(x_, "probe", c_, port_, 2, 0));
  ASSERT_FALSE(id.empty());
  Json sweep = c_.wait_finished(id, 300s);
  ASSERT_EQ(sweep.value("state", ""), "finished") << sweep.dump(2) << c_.logs();
  EXPECT_EQ(sweep["counts"]["completed"].get<int>(), 2) << sweep.dump(2) << c_.logs();

  Json a = x_.found(0), b = x_.found(1);
  ASSERT_TRUE(a.is_object() && b.is_object()) << c_.logs();
  // Not root, and not each other.
  EXPECT_NE(a["uid"].get<int>(), 0);
  EXPECT_NE(a["uid"], b["uid"]);
  EXPECT_EQ(a["gid"].get<unsigned>(), ::getpwnam("hpo-trial")->pw_gid);
  for (const Json& f : {a, b}) {
    const std::string all = f.dump();
    SCOPED_TRACE(all.substr(0, 4000));
    // No secret anywhere it looked: /proc of every process, HPO_HOME, its environment.
    EXPECT_EQ(all.find(password_), std::string::npos);
    EXPECT_EQ(f["proc_leaks"].size(), 0u);
    EXPECT_FALSE(f["env"].contains("HPO_REDIS"));
    EXPECT_EQ(f["parent_environ"], "PermissionError");
    EXPECT_EQ(f["parent_mem"], "PermissionError");
    // The worker's files: not readable, or (confined) not there at all.
    const std::string gone = namespaces() ? "FileNotFoundError" : "PermissionError";
    EXPECT_EQ(f["scheduler_json"], gone);
    EXPECT_EQ(f["hpo_home_list"], gone);
    EXPECT_EQ(f["redis_conf"], gone);
    EXPECT_EQ(f["control_plant"], "PermissionError");
    EXPECT_EQ(f["control_write"], "PermissionError");
    // Nothing inherited but stdin, stdout and stderr.
    EXPECT_EQ(f["fds"], Json::array({0, 1, 2}));
    // Redis without the credential: refused; confined, its port is not even reached.
    if (namespaces())
      EXPECT_EQ(f["redis_set"], "ConnectionRefusedError");
    else
      EXPECT_EQ(f["redis_set"].get<std::string>().rfind("ok: -NOAUTH", 0), 0u);
    // The other trial: neither its folder nor its process.
    EXPECT_EQ(f["other_list"], gone);
    EXPECT_EQ(f["other_secret"], gone);
    EXPECT_TRUE(refused(f["other_kill"])) << f["other_kill"];
    EXPECT_TRUE(refused(f["other_environ"])) << f["other_environ"];
    if (namespaces()) {
      // Confined: it sees its own processes only (and its namespace's init),
      // and none of what the other trial left in /tmp, /var/tmp or /dev/shm.
      EXPECT_TRUE(f["foreign"].empty() || f["foreign"] == Json::array({1})) << f["foreign"];
      EXPECT_EQ(f["other_plants"], Json::array());
    }
    // Its session-leading child ended with it (confined, its pid is of the
    // trial's namespace, which ends with the trial: tests/core/confinement_test.cpp).
    const pid_t orphan = f["orphan"].get<pid_t>();
    if (!namespaces()) EXPECT_TRUE(wait_for([&] { return process_gone(orphan); }, 30s)) << orphan;
  }
  hpo::trials::redis::RedisClient redis(*hpo::trials::redis::RedisUrl::parse(worker_url_));
  auto pwned = redis.command({"GET", "hpo:pwned"});
  ASSERT_TRUE(pwned.ok());
  EXPECT_TRUE(pwned->is_nil()) << pwned->str;
}

TEST_F(TrustBoundary, AHostileTrialFindsNoSecretNoSocketNoRedisAndNoOtherTrial) {
  probe_two_trials();
}

TEST_F(TrustBoundaryWithoutNamespaces, AHostileTrialFindsNoSecretNoRedisAndNoOtherTrial) {
  probe_two_trials();
}

// resources.memory_gb holds all of a trial's processes together: eight of
// 96 MiB do not fit in 0.25 GiB (each would alone, as a per-process limit let them).
TEST_F(TrustBoundary, ATrialOfEightProcessesIsHeldToItsMemoryInAll) {
  const std::string id = c_.submit(hostile_spec(x_, "memory", c_, port_, 1, 0.25));
  ASSERT_FALSE(id.empty());
  Json sweep = c_.wait_finished(id, 300s);
  ASSERT_NE(sweep.value("state", ""), "running") << c_.logs();
  Json page = c_.get("/api/sweeps/" + id + "/trials?limit=10");
  ASSERT_EQ(page["trials"].size(), 1u) << page.dump(2);
  const Json& t = page["trials"][0];
  EXPECT_EQ(t["state"], "failed") << t.dump(2);
  Json found = x_.found(0);
  ASSERT_TRUE(found.is_object()) << c_.logs();
  EXPECT_GT(found["killed"].get<int>(), 0);
  EXPECT_NE(t.value("error", "").find("resources.memory_gb"), std::string::npos) << t.dump(2);
}

// A torch trial's rank processes run as the trial user too (hpo's trainer,
// started for the trial or ahead of it), and the trial completes.
TEST_F(TrustBoundary, ATorchTrialsRanksRunAsTheTrialUser) {
  if (!torch()) GTEST_SKIP() << "built without LibTorch";
  Json spec = {
      {"name", "torch as the trial user"},
      {"objective", {{"metric", "val_accuracy"}, {"mode", "max"}}},
      {"parameters", {{"lr", {{"type", "float"}, {"min", 0.001}, {"max", 0.01}, {"log", true}}}}},
      {"search", {{"algorithm", "random"}, {"max_trials", 2}, {"max_concurrent", 1}, {"seed", 5}}},
      {"trial",
       {{"kind", "torch"},
        {"task", "classification"},
        {"model", {{"type", "mlp"}, {"hidden", 16}, {"depth", 1}}},
        {"data",
         {{"format", "csv"}, {"train", x_.table()}, {"target", "y"}, {"validation_fraction", 0.2}}},
        {"optimizer", {{"type", "adam"}, {"lr", "{lr}"}}},
        {"batch_size", 16},
        {"epochs", 40},
        {"timeout_s", 300},
        {"max_attempts", 1}}}};
  const std::string id = c_.submit(spec);
  ASSERT_FALSE(id.empty());
  std::vector<long> seen;
  ASSERT_TRUE(wait_for(
      [&] {
        seen = rank_uids(worker_->pid());
        return !seen.empty();
      },
      120s))
      << c_.logs();
  for (long uid : seen) {
    EXPECT_GE(uid, 400000) << "a rank process runs as uid " << uid;
    EXPECT_LE(uid, 400999) << "a rank process runs as uid " << uid;
  }
  Json sweep = c_.wait_finished(id, 300s);
  ASSERT_EQ(sweep.value("state", ""), "finished") << sweep.dump(2) << c_.logs();
  EXPECT_EQ(sweep["counts"]["completed"].get<int>(), 2) << sweep.dump(2) << c_.logs();
  EXPECT_EQ(c_.logs().find("torch trials run as this worker"), std::string::npos);
  for (long uid : rank_uids(worker_->pid())) EXPECT_GE(uid, 400000);  // the ones started ahead
}

// The worker's Redis user can do what workers do (the sweep above ran through
// it) and nothing an operator alone may do.
TEST_F(TrustBoundary, TheWorkersRedisUserIsRefusedTheOperatorsCommands) {
  hpo::trials::redis::RedisClient redis(*hpo::trials::redis::RedisUrl::parse(worker_url_));
  const std::vector<std::vector<std::string>> refused = {
      {"FLUSHALL"},
      {"FLUSHDB"},
      {"CONFIG", "GET", "requirepass"},
      {"CONFIG", "SET", "appendonly", "no"},
      {"DEBUG", "SLEEP", "0"},
      {"MODULE", "LIST"},
      {"SHUTDOWN", "NOSAVE"},
      {"SCRIPT", "FLUSH"},
      {"EVAL", "return 1", "0"},
      {"FUNCTION", "FLUSH"},
      {"FUNCTION", "DELETE", "hpo_v1"},
      {"FUNCTION", "LOAD", "REPLACE",
       "#!lua name=hpo\nredis.register_function('x', function() end)"},
      {"KEYS", "*"},
      {"SCAN", "0"},
      {"ACL", "LIST"},
      {"MONITOR"},
      {"REPLICAOF", "127.0.0.1", "1"},
      {"SET", "other-app:key", "1"},
      {"GET", "other-app:key"},
  };
  auto admin_url = hpo::trials::redis::RedisUrl::parse(c_.admin_redis_url());
  ASSERT_TRUE(admin_url.ok());
  hpo::trials::redis::RedisClient admin(*admin_url);
  for (const auto& cmd : refused) {
    const std::string what = cmd[0] + (cmd.size() > 1 ? " " + cmd[1] : "");
    // The ACL itself says no (DEBUG, for one, is also off in any Redis 7)...
    std::vector<std::string> dry = {"ACL", "DRYRUN", "hpo-worker"};
    dry.insert(dry.end(), cmd.begin(), cmd.end());
    auto verdict = admin.command(dry);
    ASSERT_TRUE(verdict.ok()) << what << ": " << verdict.error().message;
    EXPECT_NE(verdict->str.find("no permissions"), std::string::npos)
        << what << ": " << verdict->str;
    // ... and the worker's connection is refused.
    auto r = redis.command(cmd);
    ASSERT_TRUE(r.ok()) << what << ": " << r.error().message;
    EXPECT_TRUE(r->is_error()) << what << ": " << r->str;
  }
  // Who may do what is out of its reach: the access keys lie outside its key
  // pattern, and Redis checks a Function's commands against its caller, so
  // it can neither mint a user, a token or a role nor read a token's digest.
  for (const std::vector<std::string>& cmd :
       {std::vector<std::string>{"FCALL", "hpo_create_user", "0", "hpo:", "mallory", "1"},
        std::vector<std::string>{"FCALL", "hpo_add_token", "0", "hpo:", "admin", "m1", "d1", ""},
        std::vector<std::string>{"FCALL", "hpo_set_member", "0", "hpo:", "default", "admin",
                                 "viewer"},
        std::vector<std::string>{"FCALL", "hpo_resolve_token", "0", "hpo:", "d1"},
        std::vector<std::string>{"FCALL", "hpo_access_bootstrap", "0", "hpo:", "m", "d", "p"},
        std::vector<std::string>{"HGETALL", "hpo-access:token_ids"}}) {
    auto r = redis.command(cmd);
    ASSERT_TRUE(r.ok()) << cmd[1] << ": " << r.error().message;
    EXPECT_TRUE(r->is_error()) << cmd[1] << ": " << r->str;
  }
  auto users = admin.command({"SMEMBERS", "hpo-access:users"});
  ASSERT_TRUE(users.ok());
  for (const auto& u : users->elements) EXPECT_NE(u.str, "mallory");
  // What workers do is allowed.
  for (const std::vector<std::string>& cmd :
       {std::vector<std::string>{"FCALL", "hpo_claim_batch", "0", "hpo:"},
        std::vector<std::string>{"HSET", "hpo:x", "f", "1"},
        std::vector<std::string>{"FUNCTION", "LIST"}}) {
    std::vector<std::string> dry = {"ACL", "DRYRUN", "hpo-worker"};
    dry.insert(dry.end(), cmd.begin(), cmd.end());
    auto verdict = admin.command(dry);
    ASSERT_TRUE(verdict.ok());
    EXPECT_EQ(verdict->str, "OK") << cmd[0] << ": " << verdict->str;
  }
  auto ping = redis.command({"PING"});
  ASSERT_TRUE(ping.ok());
  EXPECT_EQ(ping->str, "PONG");
  // The Functions are still there (FUNCTION FLUSH above was refused).
  auto list = admin.command({"FUNCTION", "LIST", "LIBRARYNAME", "hpo_v1"});
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->elements.size(), 1u);
}

// A worker that is not root (uid 65534, no capabilities, no cgroup of its
// own), started with its Redis URL in its environment and its own HPO_HOME
// holding what a worker keeps there: its trials run as it, in namespaces of
// their own (an unprivileged user namespace), so it takes every project's
// trials; the hostile probe finds none of its files, no process but its own,
// not the Redis port, and nothing the other trial left in /tmp, /var/tmp or
// /dev/shm.
TEST(TrustBoundaryNonRootWorker, ItsConfinedTrialsFindNothingOfItsOrEachOthers) {
  if (::geteuid() != 0) GTEST_SKIP() << "starting a worker as another uid needs root";
  Exchange x;
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler({"--data-root", x.root()}));
  const std::string url = Json::parse(read_file(c.home() + "/scheduler.json"))["redis"];
  const int port = hpo::trials::redis::RedisUrl::parse(url)->port;
  // The worker's own home, with a copy of what it would find there, and its binary
  // where uid 65534 may run it (a build inside a private clone may not be reachable).
  const std::string home = x.root() + "/worker-home", bin = x.root() + "/hpo-worker";
  std::filesystem::create_directories(home);
  std::ofstream(home + "/scheduler.json") << Json{{"redis", url}}.dump();
  ::chmod((home + "/scheduler.json").c_str(), 0600);
  ::chown(home.c_str(), 65534, 65534);
  ::chown((home + "/scheduler.json").c_str(), 65534, 65534);
  std::filesystem::copy_file(std::string(HPO_BINARY_DIR) + "/workers/hpo-worker", bin);
  ::chmod(bin.c_str(), 0755);
  const std::vector<std::string> as_nobody = {"/usr/bin/setpriv", "--reuid=65534",
                                              "--regid=65534",    "--clear-groups",
                                              "--inh-caps=-all",  bin};
  // Cluster::start_worker's program is the build's: this one runs the copy.
  std::vector<std::string> argv = as_nobody;
  argv.insert(argv.end(),
              {"--name", "nobody", "--slots", "2", "--lease-ms", "3000", "--trial-namespaces", "on",
               "--trial-cgroups", "none", "--work-dir", home + "/work"});
  hpo::testing::Process worker(argv, {{"HPO_HOME", home}, {"HPO_REDIS", url}},
                               x.root() + "/worker.log");
  Json spec = hostile_spec(x, "probe", c, port, 2, 0);
  spec["trial"]["env"]["GUESS_HPO_HOME"] = home;
  const std::string id = c.submit(spec);
  ASSERT_FALSE(id.empty());
  Json sweep = c.wait_finished(id, 300s);
  ASSERT_EQ(sweep.value("state", ""), "finished")
      << sweep.dump(2) << c.logs() << read_file(x.root() + "/worker.log");
  Json a = x.found(0), b = x.found(1);
  ASSERT_TRUE(a.is_object() && b.is_object()) << read_file(x.root() + "/worker.log");
  for (const Json& f : {a, b}) {
    const std::string all = f.dump();
    SCOPED_TRACE(all.substr(0, 4000));
    EXPECT_EQ(f["uid"], 65534);  // the worker's own uid...
    // ... whose helpers in its namespace (copies of the worker) it cannot read
    EXPECT_EQ(f["parent_environ"], "PermissionError");
    EXPECT_EQ(f["parent_mem"], "PermissionError");
    EXPECT_EQ(f["scheduler_json"], "FileNotFoundError");  // ... but none of its files
    EXPECT_EQ(all.find(url), std::string::npos);
    EXPECT_FALSE(f["env"].contains("HPO_REDIS"));
    EXPECT_EQ(f["proc_leaks"].size(), 0u);
    EXPECT_EQ(f["redis_set"], "ConnectionRefusedError");
    EXPECT_EQ(f["other_list"], "FileNotFoundError");
    EXPECT_EQ(f["other_secret"], "FileNotFoundError");
    EXPECT_TRUE(f["foreign"].empty() || f["foreign"] == Json::array({1})) << f["foreign"];
    EXPECT_EQ(f["other_plants"], Json::array());
    EXPECT_EQ(f["fds"], Json::array({0, 1, 2}));
  }
}

}  // namespace
