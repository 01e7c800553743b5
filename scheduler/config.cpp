#include "scheduler/config.hpp"

#include "trials/artifact_dir.hpp"
#include "trials/data_roots.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include "core/local_state.hpp"
#include "core/settings.hpp"
#include "trials/redis/redis_client.hpp"

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
  --artifacts DIR        keep trials' artifacts (models, checkpoints, predictions)
                         as files in DIR, a folder every worker mounts (NFS,
                         Lustre, a bucket); Redis keeps only references. Workers
                         without --artifacts use it at the same path [HPO_ARTIFACTS]
  --tls-cert FILE        serve the API and dashboard over HTTPS with this PEM
                         certificate chain (the server's first) [HPO_TLS_CERT]
  --tls-key FILE         ... and this PEM private key (mode 0600) [HPO_TLS_KEY]
  --auth-reads           reads need the token too (default: only mutating calls on
                         loopback; reads too when listening beyond it) [HPO_AUTH_READS=1]
  --public-reads         beyond loopback, let reads go without the token
                         [HPO_PUBLIC_READS=1]
  --static-dir DIR       dashboard files [HPO_STATIC_DIR]
  --threads N            HTTP handler threads [HPO_HANDLER_THREADS] (4)
  --controller-threads N threads that step sweeps' controllers, each with a Redis
                         connection; a sweep holds one only while it steps, so
                         parked and idle sweeps cost none [HPO_CONTROLLER_THREADS] (8)
  --worker-threads N     threads of the worker endpoint (/api/worker/redis, for
                         workers started with a worker token); a worker waiting
                         for work holds one for up to 5 s [HPO_WORKER_THREADS] (32)
  --max-report-mb MB     the most stored reports one trial may hold, in MiB; later
                         ones are counted (reports_dropped), not stored
                         [HPO_MAX_REPORT_MB] (16; 0: no cap)
  --max-releases N       a trial given back more than N times (drains, preemptions
                         faster than it checkpoints) fails, saying so
                         [HPO_MAX_RELEASES] (20; 0: no bound)
  --max-event-kb KB      the most data one event of the stream carries (a larger
                         one is replaced by its size) [HPO_MAX_EVENT_KB] (4)
  --max-events N         the most events the stream keeps (older ones are
                         trimmed) [HPO_MAX_EVENTS] (100000)
  --project-store-mb MB  what a project may keep in Redis (specs, reports, results,
                         logs, artifacts kept there), unless an admin gave it its
                         own max_store_bytes [HPO_PROJECT_STORE_MB] (1024; 0: none)
  --project-file-gb GB   what a project's artifact files may take in the --artifacts
                         folder, unless it has its own max_file_bytes
                         [HPO_PROJECT_FILE_GB] (100; 0: none)
  --sse-queue-mb MB      how far a dashboard's event stream may fall behind before
                         it is dropped (it reconnects and replays) [HPO_SSE_QUEUE_MB] (4)
  --ensemble-memory-mb MB  the most memory combining an ensemble may take (the
                         validation predictions it holds, counted before any is
                         read, and the blocks test and out-of-bag predictions
                         stream through); past it the sweep fails saying so
                         [HPO_ENSEMBLE_MEMORY_MB] (2048)
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

using Config = SchedulerConfig;
using S = Setting<Config>;

const std::vector<S>& settings() {
  static const std::vector<S> kSettings = {
      {"--listen", "HPO_LISTEN", "listen", SettingKind::kValue,
       [](Config& c, const std::string& origin, const std::string& v) {
         return parse_host_port(v, origin, c.listen_host, c.listen_port);
       }},
      text_setting<Config>("--redis", "HPO_REDIS", "redis", &Config::redis_url),
      text_setting<Config>("--data-dir", "HPO_DATA_DIR", "data_dir", &Config::data_dir),
      text_setting<Config>("--prefix", "HPO_PREFIX", "prefix", &Config::prefix),
      text_setting<Config>("--token", "HPO_TOKEN", "token", &Config::token),
      text_setting<Config>("--token-file", "HPO_TOKEN_FILE", "token_file", &Config::token_file),
      text_setting<Config>("--tls-cert", "HPO_TLS_CERT", "tls_cert", &Config::tls_cert_file),
      {"--artifacts", "HPO_ARTIFACTS", "artifacts", SettingKind::kValue,
       [](Config& c, const std::string& origin, const std::string& v) -> Status {
         if (auto st = trials::check_artifact_root(origin, v); !st) return st;
         c.artifacts = v;
         return {};
       }},
      text_setting<Config>("--tls-key", "HPO_TLS_KEY", "tls_key", &Config::tls_key_file),
      switch_setting<Config>("--auth-reads", "HPO_AUTH_READS", "auth_reads", &Config::auth_reads),
      switch_setting<Config>("--public-reads", "HPO_PUBLIC_READS", "public_reads",
                             &Config::public_reads),
      text_setting<Config>("--static-dir", "HPO_STATIC_DIR", "static_dir", &Config::static_dir),
      int_setting("--threads", "HPO_HANDLER_THREADS", "threads", &Config::handler_threads, 1, 256),
      int_setting("--controller-threads", "HPO_CONTROLLER_THREADS", "controller_threads",
                  &Config::controller_threads, 1, 256),
      int_setting("--worker-threads", "HPO_WORKER_THREADS", "worker_threads",
                  &Config::worker_threads, 1, 1024),
      {"--max-report-mb", "HPO_MAX_REPORT_MB", "max_report_mb", SettingKind::kValue,
       [](Config& c, const std::string& origin, const std::string& v) -> Status {
         std::int64_t mb = 0;
         if (auto st = parse_setting_int(origin, v, 0, 1 << 20, mb); !st) return st;
         c.max_report_bytes = mb << 20;
         return {};
       }},
      {"--ensemble-memory-mb", "HPO_ENSEMBLE_MEMORY_MB", "ensemble_memory_mb", SettingKind::kValue,
       [](Config& c, const std::string& origin, const std::string& v) -> Status {
         std::int64_t mb = 0;
         if (auto st = parse_setting_int(origin, v, 0, 1 << 24, mb); !st) return st;
         c.ensemble_memory_bytes = mb << 20;
         return {};
       }},
      {"--sse-queue-mb", "HPO_SSE_QUEUE_MB", "sse_queue_mb", SettingKind::kValue,
       [](Config& c, const std::string& origin, const std::string& v) -> Status {
         std::int64_t mb = 0;
         if (auto st = parse_setting_int(origin, v, 1, 1024, mb); !st) return st;
         c.sse_queue_bytes = mb << 20;
         return {};
       }},
      {"--max-releases", "HPO_MAX_RELEASES", "max_releases", SettingKind::kValue,
       [](Config& c, const std::string& origin, const std::string& v) -> Status {
         return parse_setting_int(origin, v, 0, 1'000'000, c.max_releases);
       }},
      {"--max-event-kb", "HPO_MAX_EVENT_KB", "max_event_kb", SettingKind::kValue,
       [](Config& c, const std::string& origin, const std::string& v) -> Status {
         std::int64_t kb = 0;
         if (auto st = parse_setting_int(origin, v, 1, 1024, kb); !st) return st;
         c.max_event_bytes = kb << 10;
         return {};
       }},
      {"--project-store-mb", "HPO_PROJECT_STORE_MB", "project_store_mb", SettingKind::kValue,
       [](Config& c, const std::string& origin, const std::string& v) -> Status {
         std::int64_t mb = 0;
         if (auto st = parse_setting_int(origin, v, 0, std::int64_t{1} << 30, mb); !st) return st;
         c.project_store_bytes = mb << 20;
         return {};
       }},
      {"--project-file-gb", "HPO_PROJECT_FILE_GB", "project_file_gb", SettingKind::kValue,
       [](Config& c, const std::string& origin, const std::string& v) -> Status {
         std::int64_t gb = 0;
         if (auto st = parse_setting_int(origin, v, 0, std::int64_t{1} << 30, gb); !st) return st;
         c.project_file_bytes = gb << 30;
         return {};
       }},
      {"--max-events", "HPO_MAX_EVENTS", "max_events", SettingKind::kValue,
       [](Config& c, const std::string& origin, const std::string& v) -> Status {
         return parse_setting_int(origin, v, 1000, 100'000'000, c.max_events);
       }},
      {"--reaper-ms", "HPO_REAPER_MS", "reaper_ms", SettingKind::kValue,
       [](Config& c, const std::string& origin, const std::string& v) -> Status {
         std::int64_t n = 0;
         if (auto st = parse_setting_int(origin, v, 10, 3'600'000, n); !st) return st;
         c.reaper_period = std::chrono::milliseconds(n);
         return {};
       }},
      {"--retention-days", "HPO_RETENTION_DAYS", "retention_days", SettingKind::kValue,
       [](Config& c, const std::string& origin, const std::string& v) {
         return parse_setting_number(origin, v, 0, 36500, c.retention_days);
       }},
      {"--data-root", "HPO_DATA_ROOTS", "data_root", SettingKind::kList,
       [](Config& c, const std::string& origin, const std::string& root) -> Status {
         if (root.empty() || root.front() != '/')
           return Error::invalid(origin, fmt::format("\"{}\" is not an absolute folder", root));
         c.data_roots.push_back(root);
         return {};
       },
       [](Config& c) { c.data_roots.clear(); }, ':'},
      {"--allowed-host", "HPO_ALLOWED_HOSTS", "allowed_host", SettingKind::kList,
       [](Config& c, const std::string& origin, const std::string& name) -> Status {
         if (name.empty() || name.find_first_of(" /:[]") != std::string::npos)
           return Error::invalid(origin, fmt::format("\"{}\" is not a host name", name));
         c.allowed_hosts.push_back(name);
         return {};
       },
       [](Config& c) { c.allowed_hosts.clear(); }, ','},
      switch_setting<Config>("--allow-volatile-redis", "HPO_ALLOW_VOLATILE_REDIS",
                             "allow_volatile_redis", &Config::allow_volatile_redis),
  };
  return kSettings;
}

}  // namespace

Result<SchedulerConfig> load_scheduler_config(int argc, char** argv) {
  SchedulerConfig c;
  const std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  if (auto st = load_settings(
          settings(), args, [](const char* name) { return std::getenv(name); },
          /*accepts_config_file=*/true, c, c.help);
      !st)
    return st.error();
  if (c.help) return c;
  c.redis_password_on_command_line = trials::redis::password_in_args(args);
  c.token_on_command_line = std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a == "--token" || a.rfind("--token=", 0) == 0;
  });
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
  // Users and tokens live under the prefix with "-access:" for its last ':'
  // (trials/redis/functions/14_access.lua), which a worker's key pattern
  // (prefix*) must not cover.
  if (c.prefix.empty() || c.prefix.back() != ':')
    return Error::invalid("--prefix", "'" + c.prefix + "': expected a prefix ending in ':' (hpo:)");
  if (c.data_dir.empty()) c.data_dir = hpo_home() + "/data";
  if (c.tls_cert_file.empty() != c.tls_key_file.empty())
    return Error::invalid(c.tls_cert_file.empty() ? "--tls-cert" : "--tls-key",
                          "HTTPS needs both --tls-cert and --tls-key");
  if (!c.tls_key_file.empty())
    if (auto st = check_private_file("--tls-key", c.tls_key_file, true); !st) return st.error();
  if (!c.token_file.empty() && c.token.empty()) {
    auto token = read_private_file("--token-file", c.token_file);
    if (!token) return token.error();
    c.token = std::move(*token);
  }
  return c;
}

}  // namespace hpo::scheduler
