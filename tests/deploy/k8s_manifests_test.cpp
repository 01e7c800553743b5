// The Kubernetes manifests (deploy/k8s/), read as YAML offline (no cluster in
// CI) and checked for what makes them work once applied: every object in the
// namespace; selectors that select; Services whose targets are named ports of
// what they select; every secret reference defined; every $(VAR) defined
// before its use; probes on /healthz at the port the scheduler listens on;
// the worker's grace above its drain, under an init; Redis with AOF on its
// volume and reached through its Service; Redis's users from the Secret, read
// only by Redis, and exactly the lines docs/operations.md gives ("Redis users
// (least privilege)") and the code makes (trials/redis/acl.hpp), each
// program's URL with its own user — and every flag and HPO_* variable a
// container passes to hpo-scheduler or hpo-worker is one the real binary's
// --help lists.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/cluster.hpp"
#include "tests/support/process.hpp"
#include "trials/redis/acl.hpp"

namespace hpo::deploy {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::string kK8s = std::string(HPO_SOURCE_DIR) + "/deploy/k8s";
const std::string kOperations = std::string(HPO_SOURCE_DIR) + "/docs/operations.md";
const std::set<std::string> kWorkloads = {"Deployment", "StatefulSet", "DaemonSet"};

struct Object {
  YAML::Node node;
  std::string file;
  std::string kind, name;
};

std::vector<Object> load_manifests() {
  std::vector<Object> out;
  for (const auto& e : fs::directory_iterator(kK8s)) {
    if (e.path().extension() != ".yaml") continue;
    for (const auto& doc : YAML::LoadAllFromFile(e.path().string())) {
      if (!doc || doc.IsNull()) continue;
      out.push_back({doc, e.path().filename().string(), doc["kind"].as<std::string>(""),
                     doc["metadata"]["name"].as<std::string>("")});
    }
  }
  return out;
}

// What the binary's --help lists.
std::string help_of(const std::string& binary) {
  const std::string log =
      ::testing::TempDir() + "/" + fs::path(binary).filename().string() + ".help";
  fs::remove(log);
  hpo::testing::Process p({binary, "--help"}, {}, log);
  EXPECT_EQ(p.wait(30s), 0) << binary;
  return hpo::testing::read_file(log);
}

// Every container of every workload, with its workload.
struct Container {
  const Object* workload;
  YAML::Node node;
};
std::vector<Container> containers(const std::vector<Object>& all) {
  std::vector<Container> out;
  for (const auto& o : all)
    if (kWorkloads.count(o.kind))
      for (const auto& c : o.node["spec"]["template"]["spec"]["containers"]) out.push_back({&o, c});
  return out;
}

std::vector<std::string> args_of(const YAML::Node& c) {
  std::vector<std::string> out;
  for (const char* key : {"command", "args"})
    for (const auto& a : c[key]) out.push_back(a.as<std::string>());
  return out;
}

// The value after `flag` in the container's arguments ("" if absent).
std::string arg_after(const YAML::Node& c, const std::string& flag) {
  auto args = args_of(c);
  for (std::size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == flag) return args[i + 1];
  return "";
}

std::string env_value(const YAML::Node& c, const std::string& name) {
  for (const auto& e : c["env"])
    if (e["name"].as<std::string>() == name && e["value"]) return e["value"].as<std::string>();
  return "";
}

// A key of a Secret of the manifests, as written under stringData ("" if absent).
std::string secret_value(const std::vector<Object>& all, const std::string& secret,
                         const std::string& key) {
  for (const auto& o : all)
    if (o.kind == "Secret" && o.name == secret && o.node["stringData"] && o.node["stringData"][key])
      return o.node["stringData"][key].as<std::string>();
  return "";
}

// What the container's variable holds: its value, or the Secret's key it refers to.
std::string env_text(const std::vector<Object>& all, const YAML::Node& c, const std::string& name) {
  for (const auto& e : c["env"]) {
    if (e["name"].as<std::string>() != name) continue;
    if (e["value"]) return e["value"].as<std::string>();
    if (e["valueFrom"] && e["valueFrom"]["secretKeyRef"]) {
      auto ref = e["valueFrom"]["secretKeyRef"];
      return secret_value(all, ref["name"].as<std::string>(), ref["key"].as<std::string>());
    }
  }
  return "";
}

// The program a container runs: its command's first word, or what an init
// (tini, which reaps orphans as PID 1) starts after its "--".
std::vector<std::string> program_of(const YAML::Node& c) {
  auto args = args_of(c);
  if (!args.empty() && fs::path(args[0]).filename() == "tini") {
    auto dashes = std::find(args.begin(), args.end(), "--");
    args.erase(args.begin(), dashes == args.end() ? args.begin() + 1 : dashes + 1);
  }
  return args;  // the binary, then its arguments
}

const Container* container_running(const std::vector<Container>& all, const std::string& binary) {
  for (const auto& c : all) {
    auto program = program_of(c.node);
    if (!program.empty() && fs::path(program[0]).filename() == binary) return &c;
  }
  return nullptr;
}

// A file mode as Kubernetes reads it from YAML (0440: octal).
int file_mode(const YAML::Node& n) {
  return std::stoi(n.as<std::string>(), nullptr, 0);
}

TEST(KubernetesManifests, EveryObjectIsNamedInTheNamespaceAndEverySelectorSelects) {
  const auto all = load_manifests();
  ASSERT_GE(all.size(), 7u);
  bool has_namespace = false;
  std::vector<YAML::Node> pod_labels;
  for (const auto& o : all) {
    ASSERT_FALSE(o.kind.empty()) << o.file;
    ASSERT_FALSE(o.name.empty()) << o.file;
    EXPECT_TRUE(o.node["apiVersion"]) << o.file << " " << o.name;
    if (o.kind == "Namespace") {
      has_namespace = has_namespace || o.name == "hpo";
      continue;
    }
    EXPECT_EQ(o.node["metadata"]["namespace"].as<std::string>(""), "hpo")
        << o.file << " " << o.name;
    if (!kWorkloads.count(o.kind)) continue;
    auto labels = o.node["spec"]["template"]["metadata"]["labels"];
    for (const auto& kv : o.node["spec"]["selector"]["matchLabels"])
      EXPECT_EQ(labels[kv.first.as<std::string>()].as<std::string>(""), kv.second.as<std::string>())
          << o.name << ": its selector does not select its own pods";
    pod_labels.push_back(labels);
  }
  EXPECT_TRUE(has_namespace) << "no Namespace hpo";

  // A Service selects some workload's pods and targets one of their named ports.
  for (const auto& svc : all) {
    if (svc.kind != "Service") continue;
    const Container* target = nullptr;
    for (const auto& c : containers(all)) {
      auto labels = c.workload->node["spec"]["template"]["metadata"]["labels"];
      bool match = true;
      for (const auto& kv : svc.node["spec"]["selector"])
        match = match && labels[kv.first.as<std::string>()].as<std::string>("") ==
                             kv.second.as<std::string>();
      if (match) target = &c;
    }
    ASSERT_NE(target, nullptr) << "Service " << svc.name << " selects no pods";
    for (const auto& p : svc.node["spec"]["ports"]) {
      const std::string port = p["targetPort"].as<std::string>();
      bool named = false;
      for (const auto& cp : target->node["ports"])
        named = named || cp["name"].as<std::string>("") == port;
      EXPECT_TRUE(named) << "Service " << svc.name << " targets port " << port << ", not a port of "
                         << target->workload->name;
    }
  }
}

TEST(KubernetesManifests, SecretsAndVariablesAreDefinedBeforeTheyAreUsed) {
  const auto all = load_manifests();
  std::set<std::pair<std::string, std::string>> keys;
  for (const auto& o : all)
    if (o.kind == "Secret")
      for (const char* field : {"stringData", "data"})
        for (const auto& kv : o.node[field]) keys.insert({o.name, kv.first.as<std::string>()});
  const std::regex var(R"(\$\(([A-Za-z_][A-Za-z0-9_]*)\))");
  for (const auto& c : containers(all)) {
    const std::string where = c.workload->name + "/" + c.node["name"].as<std::string>();
    std::set<std::string> defined;
    auto check_refs = [&](const std::string& text) {
      for (std::sregex_iterator it(text.begin(), text.end(), var), end; it != end; ++it)
        EXPECT_TRUE(defined.count((*it)[1].str()))
            << where << ": $(" << (*it)[1] << ") is not defined before it is used in " << text;
    };
    for (const auto& e : c.node["env"]) {
      if (e["valueFrom"] && e["valueFrom"]["secretKeyRef"]) {
        auto ref = e["valueFrom"]["secretKeyRef"];
        EXPECT_TRUE(keys.count({ref["name"].as<std::string>(), ref["key"].as<std::string>()}))
            << where << ": secret " << ref["name"] << " has no key " << ref["key"];
      }
      if (e["value"]) check_refs(e["value"].as<std::string>());
      defined.insert(e["name"].as<std::string>());
    }
    for (const auto& a : args_of(c.node)) check_refs(a);
  }
  // Secrets mounted as files: the Secret and every key taken from it exist.
  for (const auto& o : all) {
    if (!kWorkloads.count(o.kind)) continue;
    for (const auto& v : o.node["spec"]["template"]["spec"]["volumes"]) {
      auto secret = v["secret"];
      if (!secret) continue;
      const std::string name = secret["secretName"].as<std::string>("");
      bool exists = false;
      for (const auto& k : keys) exists = exists || k.first == name;
      EXPECT_TRUE(exists) << o.name << ": volume " << v["name"] << " mounts no Secret " << name;
      for (const auto& item : secret["items"])
        EXPECT_TRUE(keys.count({name, item["key"].as<std::string>()}))
            << o.name << ": secret " << name << " has no key " << item["key"];
    }
  }
}

TEST(KubernetesManifests, TheContainersPassOnlyWhatTheBinariesAccept) {
  const auto all = load_manifests();
  const auto cs = containers(all);
  const std::map<std::string, std::string> binaries = {
      {"hpo-scheduler", hpo::testing::kBinaryDir + "/scheduler/hpo-scheduler"},
      {"hpo-worker", hpo::testing::kBinaryDir + "/workers/hpo-worker"}};
  for (const auto& [name, path] : binaries) {
    const Container* c = container_running(cs, name);
    ASSERT_NE(c, nullptr) << "no container runs " << name;
    const std::string help = help_of(path);
    ASSERT_FALSE(help.empty());
    for (const auto& a : program_of(c->node)) {
      if (!a.starts_with("--")) continue;
      const std::string flag = a.substr(0, a.find('='));
      EXPECT_NE(help.find(flag + " "), std::string::npos) << name << " does not know " << flag;
    }
    for (const auto& e : c->node["env"]) {
      const std::string var = e["name"].as<std::string>();
      if (var.starts_with("HPO_")) {
        EXPECT_NE(help.find(var), std::string::npos) << name << " does not read " << var;
      }
    }
  }
}

TEST(KubernetesManifests, ProbesGracesAndTheStoreFitTheService) {
  const auto all = load_manifests();
  const auto cs = containers(all);
  // The scheduler: probed on /healthz at the port it listens on.
  const Container* s = container_running(cs, "hpo-scheduler");
  ASSERT_NE(s, nullptr);
  const std::string listen = arg_after(s->node, "--listen");
  ASSERT_FALSE(listen.empty());
  const int port = std::stoi(listen.substr(listen.rfind(':') + 1));
  for (const char* probe : {"readinessProbe", "livenessProbe"}) {
    auto get = s->node[probe]["httpGet"];
    ASSERT_TRUE(get) << probe;
    EXPECT_EQ(get["path"].as<std::string>(), "/healthz") << probe;
    int probed = -1;
    for (const auto& p : s->node["ports"])
      if (p["name"].as<std::string>("") == get["port"].as<std::string>() ||
          p["containerPort"].as<std::string>() == get["port"].as<std::string>())
        probed = p["containerPort"].as<int>();
    EXPECT_EQ(probed, port) << probe << " is not on the port of --listen " << listen;
  }

  // The worker: on GPU nodes, its grace above the drain's.
  const Container* w = container_running(cs, "hpo-worker");
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->node["resources"]["limits"]["nvidia.com/gpu"]);
  const double drain = std::stod(env_value(w->node, "HPO_DRAIN_GRACE_S").empty()
                                     ? "30"
                                     : env_value(w->node, "HPO_DRAIN_GRACE_S"));
  const double kill = std::stod(env_value(w->node, "HPO_KILL_GRACE_S").empty()
                                    ? "5"
                                    : env_value(w->node, "HPO_KILL_GRACE_S"));
  EXPECT_GT(
      w->workload->node["spec"]["template"]["spec"]["terminationGracePeriodSeconds"].as<int>(0),
      drain + kill);

  // Redis: AOF with every write fsynced, its --dir on the claimed volume, and
  // the host the scheduler is given is its Service, on its port; the workers'
  // scheduler is the scheduler's Service, on its port.
  const Container* redis = nullptr;
  for (const auto& c : cs)
    if (c.workload->kind == "StatefulSet") redis = &c;
  ASSERT_NE(redis, nullptr);
  EXPECT_EQ(arg_after(redis->node, "--appendonly"), "yes");
  EXPECT_EQ(arg_after(redis->node, "--appendfsync"), "always");
  const std::string dir = arg_after(redis->node, "--dir");
  std::set<std::string> claimed;
  for (const auto& t : redis->workload->node["spec"]["volumeClaimTemplates"])
    claimed.insert(t["metadata"]["name"].as<std::string>());
  bool on_volume = false;
  for (const auto& m : redis->node["volumeMounts"])
    on_volume = on_volume || (m["mountPath"].as<std::string>() == dir &&
                              claimed.count(m["name"].as<std::string>()));
  EXPECT_TRUE(on_volume) << "Redis's --dir " << dir << " is not a persistent volume";
  const std::regex url(R"((?:redis://[^@]*@|http://)([^:/]+):(\d+))");
  for (const std::string& given :
       {env_text(all, s->node, "HPO_REDIS"), env_text(all, w->node, "HPO_SCHEDULER")}) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(given, m, url)) << given;
    bool served = false;
    for (const auto& o : all)
      if (o.kind == "Service" && o.name == m[1].str())
        for (const auto& p : o.node["spec"]["ports"])
          served = served || p["port"].as<std::string>() == m[2].str();
    EXPECT_TRUE(served) << given << ": no Service " << m[1] << " on port " << m[2];
  }
}

// The worker runs trials as another user (it starts as root for that) and
// is not PID 1: an init reaps the trials' orphans and passes it SIGTERM.
TEST(KubernetesManifests, TheWorkerRunsUnderAnInit) {
  const auto all = load_manifests();
  const auto cs = containers(all);  // kept: the pointer below points into it
  const Container* w = container_running(cs, "hpo-worker");
  ASSERT_NE(w, nullptr);
  auto cmd = args_of(w->node);
  ASSERT_FALSE(cmd.empty());
  EXPECT_EQ(fs::path(cmd[0]).filename().string(), "tini") << "hpo-worker would be PID 1";
  auto security = w->node["securityContext"];
  EXPECT_TRUE(security && !security["allowPrivilegeEscalation"].as<bool>(true))
      << "allowPrivilegeEscalation: a trial could regain root through a setuid binary";
}

// No pod gets a Kubernetes API token: none of hpo's programs talks to the
// API, and a token mounted in the worker's pod would be readable by trials.
TEST(KubernetesManifests, NoPodMountsAServiceAccountToken) {
  int pods = 0;
  for (const auto& o : load_manifests()) {
    if (!kWorkloads.count(o.kind)) continue;
    ++pods;
    const auto spec = o.node["spec"]["template"]["spec"];
    EXPECT_TRUE(spec["automountServiceAccountToken"] &&
                !spec["automountServiceAccountToken"].as<bool>(true))
        << o.file << ": " << o.kind << " " << o.name
        << " mounts the service-account token (automountServiceAccountToken: false)";
  }
  EXPECT_GE(pods, 3);
}

// Redis's users: the ACL file from the Secret (never a password on redis-server's
// command line), readable by Redis alone; each program's URL names its own user
// with the password its line gives; the lines are docs/operations.md's.
TEST(KubernetesManifests, RedisUsersComeFromTheSecretAsTheOperationsGuideGivesThem) {
  namespace users = ::hpo::trials::redis;
  const auto all = load_manifests();
  const auto cs = containers(all);
  const Container* redis = nullptr;
  for (const auto& c : cs)
    if (c.workload->kind == "StatefulSet") redis = &c;
  ASSERT_NE(redis, nullptr);
  for (const auto& a : args_of(redis->node)) EXPECT_NE(a, "--requirepass");
  const fs::path aclfile = arg_after(redis->node, "--aclfile");
  ASSERT_FALSE(aclfile.empty()) << "redis-server is not given its users' file";

  // The file: a key of a Secret, on a read-only mount, not readable by others.
  const auto pod = redis->workload->node["spec"]["template"]["spec"];
  std::string mounted;
  for (const auto& m : redis->node["volumeMounts"]) {
    if (fs::path(m["mountPath"].as<std::string>()) != aclfile.parent_path()) continue;
    EXPECT_TRUE(m["readOnly"].as<bool>(false)) << aclfile;
    for (const auto& v : pod["volumes"]) {
      auto secret = v["secret"];
      if (v["name"].as<std::string>() != m["name"].as<std::string>() || !secret) continue;
      int mode = secret["defaultMode"] ? file_mode(secret["defaultMode"]) : 0644;
      std::string key = aclfile.filename().string();
      for (const auto& item : secret["items"])
        if (item["path"].as<std::string>() == aclfile.filename().string()) {
          key = item["key"].as<std::string>();
          if (item["mode"]) mode = file_mode(item["mode"]);
        }
      EXPECT_EQ(mode & 0027, 0) << aclfile << ": mode 0" << std::oct << mode
                                << " lets others read it or its group write it";
      mounted = secret_value(all, secret["secretName"].as<std::string>(), key);
    }
  }
  ASSERT_FALSE(mounted.empty()) << aclfile << " is not a key of a Secret mounted there";
  // redis-server drops to the image's user redis: the file's group (fsGroup) lets it read.
  EXPECT_TRUE(pod["securityContext"] && pod["securityContext"]["fsGroup"])
      << "redis-server cannot read " << aclfile;
  std::vector<std::string> acl;
  std::istringstream lines(mounted);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) acl.push_back(line);
  EXPECT_NE(std::find(acl.begin(), acl.end(),
                      "user default " + ::hpo::trials::redis::default_acl_rules()),
            acl.end())
      << mounted;

  // The guide's lines, with the passwords as placeholders.
  std::ifstream guide(kOperations);
  std::map<std::string, std::string> documented;  // user -> its line
  for (std::string line; std::getline(guide, line);)
    for (const char* user : {"hpo-scheduler", "hpo-worker"})
      if (line.starts_with(std::string("user ") + user + " on >") && !documented.count(user))
        documented[user] = line;
  ASSERT_EQ(documented.size(), 2u) << kOperations << " gives no user lines";
  // ... which are the rules hpo gives its own embedded Redis (default prefix hpo:).
  EXPECT_EQ(documented[users::kSchedulerUser], std::string("user ") + users::kSchedulerUser +
                                                   " on >SCHEDULER_PASSWORD " +
                                                   users::scheduler_acl_rules());
  EXPECT_EQ(documented[users::kWorkerUser], std::string("user ") + users::kWorkerUser +
                                                " on >WORKER_PASSWORD " +
                                                users::worker_acl_rules("hpo:"));

  // The scheduler connects as its user, with the password of that user's line.
  const std::regex url(R"(redis://([^:@/]+):([^@/]+)@)");
  const Container* scheduler = container_running(cs, "hpo-scheduler");
  ASSERT_NE(scheduler, nullptr);
  const std::string given = env_text(all, scheduler->node, "HPO_REDIS");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(given, m, url)) << given;
  EXPECT_EQ(m[1].str(), users::kSchedulerUser) << "the scheduler connects as another user";
  std::string expected = documented[users::kSchedulerUser];
  const auto at = expected.find("SCHEDULER_PASSWORD");
  ASSERT_NE(at, std::string::npos) << kOperations << ": " << expected;
  expected.replace(at, std::string("SCHEDULER_PASSWORD").size(), m[2].str());
  EXPECT_NE(std::find(acl.begin(), acl.end(), expected), acl.end())
      << aclfile << " has not the guide's line for the scheduler with its password:\n  " << expected
      << "\n"
      << mounted;
  // The workers hold no Redis credential at all, and Redis knows no user for
  // them: they reach the store through the scheduler with a worker token for
  // their names (each pod's under the token's prefix).
  const Container* worker = container_running(cs, "hpo-worker");
  ASSERT_NE(worker, nullptr);
  EXPECT_TRUE(env_text(all, worker->node, "HPO_REDIS").empty());
  for (const auto& line : acl) EXPECT_EQ(line.find(users::kWorkerUser), std::string::npos) << line;
  EXPECT_EQ(env_text(all, worker->node, "HPO_SCHEDULER"), "http://hpo-scheduler:8080");
  bool token_from_secret = false;
  for (const auto& e : worker->node["env"])
    token_from_secret = token_from_secret || (e["name"].as<std::string>() == "HPO_WORKER_TOKEN" &&
                                              e["valueFrom"] && e["valueFrom"]["secretKeyRef"]);
  EXPECT_TRUE(token_from_secret) << "the worker token is not taken from a Secret";
  EXPECT_EQ(env_text(all, worker->node, "HPO_WORKER_NAME"), "k8s-$(NODE_NAME)");
}

// The shipped Secret holds placeholders only, every one marked for the operator.
TEST(KubernetesManifests, TheSecretShipsOnlyPlaceholders) {
  for (const auto& o : load_manifests()) {
    if (o.kind != "Secret") continue;
    EXPECT_FALSE(o.node["data"]) << o.name << ": data a reader cannot see is a placeholder";
    for (const auto& kv : o.node["stringData"])
      EXPECT_NE(kv.second.as<std::string>().find("CHANGE-ME"), std::string::npos)
          << o.name << ": " << kv.first << " is not marked CHANGE-ME";
  }
}

}  // namespace
}  // namespace hpo::deploy
