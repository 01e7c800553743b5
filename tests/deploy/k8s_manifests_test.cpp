// The Kubernetes manifests (deploy/k8s/), read as YAML offline (no cluster in
// CI) and checked for what makes them work once applied: every object in the
// namespace; selectors that select; Services whose targets are named ports of
// what they select; every secret reference defined; every $(VAR) defined
// before its use; probes on /healthz at the port the scheduler listens on;
// the worker's grace above its drain; Redis with AOF on its volume and
// reached through its Service — and every flag and HPO_* variable a container
// passes to hpo-scheduler or hpo-worker is one the real binary's --help lists.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/support/cluster.hpp"
#include "tests/support/process.hpp"

namespace hpo::deploy {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::string kK8s = std::string(HPO_SOURCE_DIR) + "/deploy/k8s";
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

const Container* container_running(const std::vector<Container>& all, const std::string& binary) {
  for (const auto& c : all) {
    auto cmd = c.node["command"];
    if (cmd && cmd.size() > 0 && fs::path(cmd[0].as<std::string>()).filename() == binary) return &c;
  }
  return nullptr;
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
    for (const auto& a : args_of(c->node)) {
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
  // the host both binaries are given is its Service, on its port.
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
  const std::regex url(R"(redis://[^@]*@([^:/]+):(\d+))");
  for (const std::string& given :
       {arg_after(s->node, "--redis"), env_value(w->node, "HPO_REDIS")}) {
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

}  // namespace
}  // namespace hpo::deploy
