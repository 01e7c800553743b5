// No secret on a command line or in a world-readable place (issue 38, "a
// trial is untrusted code"): every file under deploy/ is read as what it
// becomes — a Kubernetes object's command, args and values (the pod's spec:
// whoever may read the pod reads them, `ps` on the node too), the sbatch
// script's lines, the systemd units' lines (installed 0644, and `systemctl
// show` prints them to anyone), the Dockerfile's instructions (kept in the
// image's history) — and any of them that carries a secret fails: a Redis URL
// with credentials, --requirepass or --masterauth, --token with a value,
// --redis with a variable (the URL holds the password), redis-cli -a, a
// password variable interpolated. Passwords go in environment files, Secrets
// (secretKeyRef, read-only volumes) and the submitter's environment. The
// shipped examples of the 0640 configuration files hold none either (every
// installation would share it), and a file of a kind this test does not read
// fails it, so that a new deployment file is not skipped silently.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace hpo::deploy {
namespace {

namespace fs = std::filesystem;

const fs::path kDeploy = fs::path(HPO_SOURCE_DIR) / "deploy";

// What in `text` (one line, or one argument list joined by spaces) carries a
// secret, one description per finding; empty: nothing.
std::vector<std::string> secrets_in(const std::string& text) {
  // An option starts the text or follows a separator (not `--token-file`'s dash).
  static const std::string kStart = R"((^|[\s"'=(\[,]))";
  static const std::vector<std::pair<std::regex, std::string>> kRules = {
      {std::regex(R"((redis|rediss|redis-sentinel)://[^\s/@"']*@)", std::regex::icase),
       "a Redis URL with credentials"},
      {std::regex(kStart + R"(--(requirepass|masterauth)\b)"), "a Redis password option"},
      {std::regex(kStart + R"(--token(=|\s+)\S)"), "--token with its value (use --token-file)"},
      {std::regex(kStart + R"(--redis(=|\s+)["']?\$)"),
       "--redis with a variable: the URL holds the password (use HPO_REDIS)"},
      {std::regex(R"(\bredis-cli\b.*\s(-a|--pass)\s+\S)"), "redis-cli's password argument"},
      {std::regex(R"(\$[({]?[A-Za-z0-9_]*(PASSWORD|PASSWD))", std::regex::icase),
       "a password variable interpolated"},
  };
  std::vector<std::string> found;
  for (const auto& [rule, what] : kRules)
    if (std::regex_search(text, rule)) found.push_back(what);
  return found;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The file's lines, those ending in a backslash joined with the next (shell,
// Dockerfile, systemd all continue a line so).
std::vector<std::string> logical_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line, pending;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\\') {
      pending += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    out.push_back(pending + line);
    pending.clear();
  }
  if (!pending.empty()) out.push_back(pending);
  return out;
}

bool is_comment(const std::string& line) {
  const auto first = line.find_first_not_of(" \t");
  return first != std::string::npos && (line[first] == '#' || line[first] == ';');
}

struct Finding {
  std::string where, what, text;
};

void check(std::vector<Finding>& out, const std::string& where, const std::string& text) {
  for (auto& what : secrets_in(text)) out.push_back({where, what, text});
}

// Every value of a Kubernetes object: a list of plain values as one argument
// list (so that `--redis` and the value after it are seen together), any other
// value by itself.
void check_yaml(std::vector<Finding>& out, const std::string& where, const YAML::Node& n) {
  if (n.IsScalar()) {
    check(out, where, n.as<std::string>());
  } else if (n.IsSequence()) {
    std::string joined;
    bool plain = true;
    for (const auto& e : n) plain = plain && e.IsScalar();
    if (plain) {
      for (const auto& e : n) joined += (joined.empty() ? "" : " ") + e.as<std::string>();
      check(out, where, joined);
    } else {
      for (const auto& e : n) check_yaml(out, where, e);
    }
  } else if (n.IsMap()) {
    for (const auto& kv : n) check_yaml(out, where + "." + kv.first.as<std::string>(), kv.second);
  }
}

// What every file under deploy/ passes or shows, checked as the kind of file it is.
std::vector<Finding> findings_in_deploy(std::vector<std::string>& read) {
  std::vector<Finding> out;
  for (const auto& e : fs::recursive_directory_iterator(kDeploy)) {
    if (!e.is_regular_file()) continue;
    const fs::path& p = e.path();
    const std::string name = fs::relative(p, kDeploy).string();
    const std::string ext = p.extension().string();
    read.push_back(name);
    if (ext == ".yaml" || ext == ".yml") {
      // A Secret is where the passwords go; every other object is read by
      // whoever may read the workload.
      for (const auto& doc : YAML::LoadAllFromFile(p.string())) {
        if (!doc || doc.IsNull() || doc["kind"].as<std::string>("") == "Secret") continue;
        const std::string object =
            doc["kind"].as<std::string>("") + "/" +
            (doc["metadata"] ? doc["metadata"]["name"].as<std::string>("") : std::string());
        check_yaml(out, name + ": " + object, doc);
      }
    } else if (ext == ".sbatch" || ext == ".sh" || ext == ".service" ||
               p.filename() == "Dockerfile") {
      // Command lines and unit settings; a comment is documentation, except
      // sbatch's directives (sbatch's own arguments).
      for (const auto& line : logical_lines(read_file(p)))
        if (!is_comment(line) || line.starts_with("#SBATCH")) check(out, name, line);
    } else if (ext == ".env" || ext == ".json") {
      // Configuration examples (installed 0640): a real credential in them
      // would be every installation's.
      for (const auto& line : logical_lines(read_file(p)))
        if (!is_comment(line)) check(out, name, line);
    } else {
      ADD_FAILURE() << "deploy/" << name
                    << ": a kind of file this test does not read; teach it where its "
                       "command lines are";
    }
  }
  return out;
}

TEST(DeploySecrets, NoDeploymentFilePassesASecretOnACommandLineOrShowsIt) {
  std::vector<std::string> read;
  for (const auto& f : findings_in_deploy(read))
    ADD_FAILURE() << "deploy/" << f.where << ": " << f.what << " in\n  " << f.text;
  // The files the layout has (a rename must not leave one unchecked).
  for (const char* expected :
       {"k8s/redis.yaml", "k8s/scheduler.yaml", "k8s/worker.yaml", "k8s/secret.yaml",
        "slurm/hpo-workers.sbatch", "systemd/hpo-scheduler.service", "systemd/hpo-worker@.service",
        "systemd/worker.env", "docker/Dockerfile"})
    EXPECT_NE(std::find(read.begin(), read.end(), expected), read.end()) << expected;
}

// The check finds what the deployment files passed before issue 38 (their own
// lines), and leaves what they pass now.
TEST(DeploySecrets, TheCheckFindsTheSecretsTheOldFilesPassed) {
  for (const std::string old :
       {// k8s/redis.yaml's redis-server
        "--appendonly yes --appendfsync always --dir /data --requirepass $(REDIS_PASSWORD)",
        // k8s/scheduler.yaml's hpo-scheduler
        "--listen 0.0.0.0:8080 --redis redis://:$(REDIS_PASSWORD)@hpo-redis:6379 "
        "--allowed-host hpo-scheduler",
        // k8s/worker.yaml's HPO_REDIS value
        "redis://:$(REDIS_PASSWORD)@hpo-redis:6379",
        // slurm/hpo-workers.sbatch's arguments
        R"(args=(--redis "$HPO_REDIS" --name "$name")",
        // and their likes
        "/usr/bin/hpo-worker --redis redis://hpo-worker:secret@redis-host:6379",
        "redis-sentinel://:secret@s1:26379,s2/hpo-primary", "rediss://secret@redis-host",
        "ExecStart=/usr/local/bin/hpo-scheduler --token 0123abcd", "--token=0123abcd",
        "redis-server --masterauth secret", "redis-cli -a secret PING", R"(--redis "${HPO_REDIS}")",
        "--redis=$HPO_REDIS", R"(AUTH="${REDIS_PASSWORD}")"})
    EXPECT_FALSE(secrets_in(old).empty()) << old;
  for (const std::string now :
       {"/usr/bin/tini -- /usr/bin/hpo-worker",
        "--aclfile /etc/redis/users.acl --appendonly yes --appendfsync always --dir /data",
        "ExecStart=/usr/local/bin/hpo-scheduler --config /etc/hpo/scheduler.json "
        "--token-file /etc/hpo/token",
        R"(if [[ -z "${HPO_SCHEDULER:-}" && -z "${HPO_REDIS:-}" ]]; then)",
        "--redis redis://hpo-redis:6379", "HPO_WORKER_TOKEN_FILE=~/.hpo/slurm-worker-token",
        "redis-sentinel://s1:26379,s2/hpo-primary", "EnvironmentFile=-/etc/hpo/worker.env",
        "HPO_DRAIN_GRACE_S=30", "#SBATCH --signal=B:TERM@120"})
    EXPECT_TRUE(secrets_in(now).empty()) << now << ": " << secrets_in(now).front();
}

}  // namespace
}  // namespace hpo::deploy
