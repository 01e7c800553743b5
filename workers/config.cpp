#include "workers/config.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace hpo::workers {
namespace {

// One setting: its flag, its environment variable, and how to apply a value.
struct Setting {
  const char* flag;
  const char* env;
  const char* help;
  std::function<Status(WorkerConfig&, const std::string&, const std::string&)> apply;
};

Status parse_int(const std::string& where, const std::string& text, std::int64_t min,
                 std::int64_t& out) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size())
    return Error::invalid(where, fmt::format("expected an integer, got '{}'", text));
  if (v < min) return Error::invalid(where, fmt::format("must be at least {}", min));
  out = v;
  return {};
}

Status parse_seconds(const std::string& where, const std::string& text, double& out) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < 0)
    return Error::invalid(where,
                          fmt::format("expected a non-negative number of seconds, got '{}'", text));
  out = v;
  return {};
}

const std::vector<Setting>& settings() {
  static const std::vector<Setting> kSettings = {
      {"--redis", "HPO_REDIS",
       "URL of the Redis server (redis://host:port[/db]); default: the "
       "one a local hpo-scheduler wrote to $HPO_HOME/scheduler.json",
       [](WorkerConfig& c, const std::string&, const std::string& v) -> Status {
         c.redis_url = v;
         return {};
       }},
      {"--slots", "HPO_SLOTS", "trial slots; default: the number of visible GPUs, else 1",
       [](WorkerConfig& c, const std::string& w, const std::string& v) -> Status {
         std::int64_t n = 0;
         if (auto st = parse_int(w, v, 1, n); !st) return st;
         c.slots = static_cast<int>(n);
         return {};
       }},
      {"--name", "HPO_WORKER_NAME", "worker name, unique in the cluster; default: <host>-<pid>",
       [](WorkerConfig& c, const std::string& w, const std::string& v) -> Status {
         if (v.empty()) return Error::invalid(w, "must not be empty");
         c.name = v;
         return {};
       }},
      {"--threads", "HPO_THREADS",
       "CPU threads per slot; default: the cores divided among the slots",
       [](WorkerConfig& c, const std::string& w, const std::string& v) -> Status {
         std::int64_t n = 0;
         if (auto st = parse_int(w, v, 1, n); !st) return st;
         c.threads = static_cast<int>(n);
         return {};
       }},
      {"--lease-ms", "HPO_LEASE_MS", "trial lease in ms, heartbeats every lease/3 (default 30000)",
       [](WorkerConfig& c, const std::string& w, const std::string& v) -> Status {
         return parse_int(w, v, 30, c.lease_ms);
       }},
      {"--prefix", "HPO_PREFIX", "Redis key prefix (default hpo:)",
       [](WorkerConfig& c, const std::string&, const std::string& v) -> Status {
         c.prefix = v;
         return {};
       }},
      {"--kill-grace-s", "HPO_KILL_GRACE_S",
       "seconds between SIGTERM and SIGKILL when a command trial is stopped (default 5)",
       [](WorkerConfig& c, const std::string& w, const std::string& v) -> Status {
         return parse_seconds(w, v, c.kill_grace_s);
       }},
      {"--work-dir", "HPO_WORK_DIR", "where attempt directories go (default $HPO_HOME/work/<name>)",
       [](WorkerConfig& c, const std::string&, const std::string& v) -> Status {
         c.work_dir = v;
         return {};
       }},
      {"--wait-s", "HPO_WAIT_SCHEDULER_S",
       "without --redis: seconds to wait for a local scheduler to appear (default 60)",
       [](WorkerConfig& c, const std::string& w, const std::string& v) -> Status {
         return parse_seconds(w, v, c.wait_scheduler_s);
       }},
      {"--drain-grace-s", "HPO_DRAIN_GRACE_S",
       "SIGTERM: seconds running trials may still finish before they are stopped and released "
       "back to the queue, no attempt counted (default 30)",
       [](WorkerConfig& c, const std::string& w, const std::string& v) -> Status {
         return parse_seconds(w, v, c.drain_grace_s);
       }},
      {"--outage-grace-s", "HPO_OUTAGE_GRACE_S",
       "seconds running trials go on, and results are retried, while Redis is unreachable "
       "(default 600)",
       [](WorkerConfig& c, const std::string& w, const std::string& v) -> Status {
         return parse_seconds(w, v, c.outage_grace_s);
       }},
      {"--data-root", "HPO_DATA_ROOTS",
       "a folder dataset files of torch trials may come from; repeatable (env: colon-separated). "
       "Default: /usr/share/datasets and the work dir; `--data-root /` confines nothing",
       [](WorkerConfig& c, const std::string& w, const std::string& v) -> Status {
         std::size_t start = 0;
         while (start <= v.size()) {
           std::size_t colon = v.find(':', start);
           std::string root = v.substr(start, colon == std::string::npos ? colon : colon - start);
           if (root.empty() || root.front() != '/')
             return Error::invalid(w, fmt::format("'{}' is not an absolute folder", root));
           c.data_roots.push_back(root);
           if (colon == std::string::npos) break;
           start = colon + 1;
         }
         return {};
       }},
  };
  return kSettings;
}

}  // namespace

Result<WorkerConfig> load_config(const std::vector<std::string>& args, const EnvLookup& env) {
  WorkerConfig c;
  for (const auto& s : settings()) {
    const char* v = env ? env(s.env) : nullptr;
    if (v && *v)
      if (auto st = s.apply(c, s.env, v); !st) return st.error();
  }
  // A list from the flags replaces the environment's.
  if (std::any_of(args.begin(), args.end(),
                  [](const std::string& a) { return a.rfind("--data-root", 0) == 0; }))
    c.data_roots.clear();
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      c.help = true;
      continue;
    }
    std::string flag = a, value;
    bool inline_value = false;
    if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      flag = a.substr(0, eq);
      value = a.substr(eq + 1);
      inline_value = true;
    }
    const Setting* found = nullptr;
    for (const auto& s : settings())
      if (flag == s.flag) found = &s;
    if (!found) return Error::invalid(a, "unknown argument (see --help)");
    if (!inline_value) {
      if (i + 1 >= args.size()) return Error::invalid(flag, "needs a value");
      value = args[++i];
    }
    if (auto st = found->apply(c, flag, value); !st) return st.error();
  }
  return c;
}

std::string usage() {
  std::string out =
      "usage: hpo-worker [--redis URL] [--slots N] [--name NAME] [--threads T] [--lease-ms L]\n"
      "                  [--prefix P] [--kill-grace-s S] [--work-dir DIR] [--wait-s S]\n"
      "                  [--drain-grace-s S] [--outage-grace-s S] [--data-root DIR]... [--help]\n\n"
      "Runs trials of hpo sweeps: claims them from the Redis queue, runs them, reports results.\n"
      "SIGTERM/SIGINT: stops claiming, lets running trials finish for --drain-grace-s, then\n"
      "stops the rest and releases them to the queue (no attempt is counted) and exits 0.\n"
      "A second signal ends the grace at once.\n\n";
  for (const auto& s : settings())
    out += fmt::format("  {:<16} {:<22} {}\n", s.flag, s.env, s.help);
  out += fmt::format("  {:<16} {:<22} {}\n", "--help", "", "this text");
  out += "\nHPO_HOME (default $HOME/.hpo) is where a local hpo-scheduler writes scheduler.json.\n";
  return out;
}

}  // namespace hpo::workers
