#include "scheduler/config.hpp"

#include "trials/data_roots.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/local_state.hpp"

namespace hpo::scheduler {

const char* scheduler_usage() {
  return R"(usage: hpo-scheduler [flags]

Runs the hpo scheduler: REST API and dashboard, one controller per sweep, the
lease reaper. Without --redis it starts its own redis-server (AOF on) under
--data-dir and stops it on exit.

flags (environment variable in brackets; flags win over the environment,
the environment over --config, --config over the defaults):
  --listen HOST:PORT     address of the API and dashboard [HPO_LISTEN] (127.0.0.1:8080)
  --redis URL            use this Redis (redis://[:password@]host:port[/db]) [HPO_REDIS]
  --data-dir DIR         embedded Redis data [HPO_DATA_DIR] ($HPO_HOME/data)
  --prefix P             Redis key prefix [HPO_PREFIX] (hpo:)
  --token T              bearer token for mutating API calls [HPO_TOKEN]
                         (visible in `ps`: prefer --token-file or HPO_TOKEN)
  --token-file FILE      read the token from FILE [HPO_TOKEN_FILE]
                         (no token given: a random one is generated and printed)
  --auth-reads           reads need the token too (default: only mutating calls on
                         loopback; reads too when listening beyond it) [HPO_AUTH_READS=1]
  --public-reads         beyond loopback, let reads go without the token
                         [HPO_PUBLIC_READS=1]
  --static-dir DIR       dashboard files [HPO_STATIC_DIR]
  --threads N            HTTP handler threads [HPO_HANDLER_THREADS] (4)
  --reaper-ms MS         lease reaper period [HPO_REAPER_MS] (1000)
  --retention-days D     delete ended sweeps (trials, reports, artifacts) D days
                         after they ended [HPO_RETENTION_DAYS] (0: keep forever)
  --data-root DIR        a folder dataset files of torch specs may come from;
                         repeatable [HPO_DATA_ROOTS, colon-separated]
                         (/usr/share/datasets; `--data-root /` confines nothing)
  --allowed-host NAME    a host name browsers may reach the API under (DNS rebinding
                         guard; IP addresses always pass); repeatable [HPO_ALLOWED_HOSTS,
                         comma-separated] (localhost and this host's name; * = any)
  --allow-volatile-redis accept an external Redis without appendonly yes; a Redis
                         crash may then lose acknowledged sweeps
                         [HPO_ALLOW_VOLATILE_REDIS=1]
  --config FILE          JSON file with the same keys (listen, redis, data_dir, ...)
  --help                 this text

$HPO_HOME (default ~/.hpo) holds scheduler.json, which tells a local hpo-worker
and the hpo client where the scheduler and its Redis are.
)";
}

Status parse_host_port(const std::string& text, const std::string& flag, std::string& host,
                       int& port) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return Error::invalid(flag, fmt::format("\"{}\" is not HOST:PORT", text));
  host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  std::string p = text.substr(colon + 1);
  char* end = nullptr;
  long v = std::strtol(p.c_str(), &end, 10);
  if (p.empty() || *end || v < 0 || v > 65535)
    return Error::invalid(flag, fmt::format("\"{}\" is not a port number (0-65535)", p));
  port = static_cast<int>(v);
  return {};
}

namespace {

Status set_int(const std::string& value, const std::string& flag, long lo, long hi, long& out) {
  char* end = nullptr;
  long v = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end || v < lo || v > hi)
    return Error::invalid(flag,
                          fmt::format("\"{}\" is not an integer from {} to {}", value, lo, hi));
  out = v;
  return {};
}

// Applies one key=value from any source (file, environment, flag).
Status apply(SchedulerConfig& c, const std::string& key, const std::string& value,
             const std::string& origin) {
  long n = 0;
  if (key == "listen") return parse_host_port(value, origin, c.listen_host, c.listen_port);
  if (key == "redis")
    c.redis_url = value;
  else if (key == "data_dir")
    c.data_dir = value;
  else if (key == "prefix")
    c.prefix = value;
  else if (key == "token")
    c.token = value;
  else if (key == "token_file")
    c.token_file = value;
  else if (key == "auth_reads")
    c.auth_reads = value == "1" || value == "true";
  else if (key == "public_reads")
    c.public_reads = value == "1" || value == "true";
  else if (key == "static_dir")
    c.static_dir = value;
  else if (key == "threads") {
    if (auto st = set_int(value, origin, 1, 256, n); !st) return st;
    c.handler_threads = static_cast<int>(n);
  } else if (key == "reaper_ms") {
    if (auto st = set_int(value, origin, 10, 3'600'000, n); !st) return st;
    c.reaper_period = std::chrono::milliseconds(n);
  } else if (key == "allow_volatile_redis") {
    c.allow_volatile_redis = value == "1" || value == "true";
  } else if (key == "data_root") {
    std::size_t start = 0;
    while (start <= value.size()) {  // HPO_DATA_ROOTS and the file may list several: a:b
      std::size_t colon = value.find(':', start);
      std::string root = value.substr(start, colon == std::string::npos ? colon : colon - start);
      if (root.empty() || root.front() != '/')
        return Error::invalid(origin, fmt::format("\"{}\" is not an absolute folder", root));
      c.data_roots.push_back(root);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  } else if (key == "allowed_host") {
    std::size_t start = 0;
    while (start <= value.size()) {
      std::size_t comma = value.find(',', start);
      std::string name = value.substr(start, comma == std::string::npos ? comma : comma - start);
      if (name.empty() || name.find_first_of(" /:[]") != std::string::npos)
        return Error::invalid(origin, fmt::format("\"{}\" is not a host name", name));
      c.allowed_hosts.push_back(name);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  } else if (key == "retention_days") {
    char* end = nullptr;
    double d = std::strtod(value.c_str(), &end);
    if (value.empty() || *end || !(d >= 0) || d > 36500)
      return Error::invalid(origin,
                            fmt::format("\"{}\" is not a number of days from 0 to 36500", value));
    c.retention_days = d;
  } else {
    return Error::invalid(origin, "unknown setting");
  }
  return {};
}

struct Setting {
  const char* key;
  const char* flag;
  const char* env;
  bool takes_value;
};

constexpr Setting kSettings[] = {
    {"listen", "--listen", "HPO_LISTEN", true},
    {"redis", "--redis", "HPO_REDIS", true},
    {"data_dir", "--data-dir", "HPO_DATA_DIR", true},
    {"prefix", "--prefix", "HPO_PREFIX", true},
    {"token", "--token", "HPO_TOKEN", true},
    {"token_file", "--token-file", "HPO_TOKEN_FILE", true},
    {"auth_reads", "--auth-reads", "HPO_AUTH_READS", false},
    {"public_reads", "--public-reads", "HPO_PUBLIC_READS", false},
    {"static_dir", "--static-dir", "HPO_STATIC_DIR", true},
    {"threads", "--threads", "HPO_HANDLER_THREADS", true},
    {"reaper_ms", "--reaper-ms", "HPO_REAPER_MS", true},
    {"retention_days", "--retention-days", "HPO_RETENTION_DAYS", true},
    {"data_root", "--data-root", "HPO_DATA_ROOTS", true},
    {"allowed_host", "--allowed-host", "HPO_ALLOWED_HOSTS", true},
    {"allow_volatile_redis", "--allow-volatile-redis", "HPO_ALLOW_VOLATILE_REDIS", false},
};

}  // namespace

Result<SchedulerConfig> load_scheduler_config(int argc, char** argv) {
  SchedulerConfig c;
  std::vector<std::pair<const Setting*, std::string>> flags;
  std::string config_file;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      c.help = true;
      return c;
    }
    std::string value;
    if (auto eq = arg.find('='); eq != std::string::npos && arg.rfind("--", 0) == 0) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else {
      value = "\x01";  // no inline value
    }
    if (arg == "--config") {
      if (value == "\x01") {
        if (i + 1 >= argc) return Error::invalid("--config", "needs a value");
        value = argv[++i];
      }
      config_file = value;
      continue;
    }
    const Setting* s = nullptr;
    for (const auto& k : kSettings)
      if (arg == k.flag) s = &k;
    if (!s) return Error::invalid(arg, "unknown flag (see --help)");
    if (value == "\x01") {
      if (!s->takes_value)
        value = "1";
      else if (i + 1 >= argc)
        return Error::invalid(arg, "needs a value");
      else
        value = argv[++i];
    }
    flags.emplace_back(s, value);
  }
  if (!config_file.empty()) {
    std::ifstream in(config_file);
    if (!in) return Error::invalid("--config", "cannot read " + config_file);
    std::stringstream ss;
    ss << in.rdbuf();
    auto j = nlohmann::json::parse(ss.str(), nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return Error::invalid("--config", config_file + " is not a JSON object");
    for (auto it = j.begin(); it != j.end(); ++it) {
      std::string v = it->is_string() ? it->get<std::string>() : it->dump();
      if (auto st = apply(c, it.key(), v, config_file + ": " + it.key()); !st) return st.error();
    }
  }
  // Lists (data roots) are replaced, not merged, by a later source.
  for (const auto& k : kSettings)
    if (const char* env = std::getenv(k.env); env && *env) {
      if (std::string_view(k.key) == "data_root") c.data_roots.clear();
      if (std::string_view(k.key) == "allowed_host") c.allowed_hosts.clear();
      if (auto st = apply(c, k.key, env, k.env); !st) return st.error();
    }
  if (std::any_of(flags.begin(), flags.end(),
                  [](const auto& f) { return std::string_view(f.first->key) == "data_root"; }))
    c.data_roots.clear();
  if (std::any_of(flags.begin(), flags.end(),
                  [](const auto& f) { return std::string_view(f.first->key) == "allowed_host"; }))
    c.allowed_hosts.clear();
  for (const auto& [s, v] : flags) {
    if (auto st = apply(c, s->key, v, s->flag); !st) return st.error();
    if (std::string_view(s->key) == "token") c.token_on_command_line = true;
  }
  // Beyond loopback the whole network can read sweeps unless told otherwise.
  const bool loopback = c.listen_host == "127.0.0.1" || c.listen_host == "::1" ||
                        c.listen_host == "localhost" || c.listen_host.rfind("127.", 0) == 0;
  if (!loopback && !c.public_reads) c.auth_reads = true;

  if (c.data_roots.empty()) c.data_roots = {trials::kDefaultDataRoot};
  if (std::find(c.allowed_hosts.begin(), c.allowed_hosts.end(), "*") != c.allowed_hosts.end()) {
    c.allowed_hosts.clear();  // no check
  } else {
    char name[256] = {};
    c.allowed_hosts.push_back("localhost");
    if (::gethostname(name, sizeof name - 1) == 0 && *name) c.allowed_hosts.push_back(name);
    c.allowed_hosts.push_back(c.listen_host);  // a name, or an IP (which passes anyway)
  }
  if (c.data_dir.empty()) c.data_dir = hpo_home() + "/data";
  if (!c.token_file.empty() && c.token.empty()) {
    struct stat st {};
    if (::stat(c.token_file.c_str(), &st) == 0 && (st.st_mode & 077) != 0)
      return Error::invalid("--token-file",
                            fmt::format("{} is readable by other users (mode {:o}); chmod 600 it",
                                        c.token_file, st.st_mode & 0777));
    std::ifstream in(c.token_file);
    if (!in || !std::getline(in, c.token) || c.token.empty())
      return Error::invalid("--token-file", "cannot read a token from " + c.token_file);
  }
  return c;
}

}  // namespace hpo::scheduler
