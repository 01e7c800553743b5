#include "workers/config.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "core/http_client.hpp"
#include "core/settings.hpp"
#include "trials/artifact_dir.hpp"
#include "trials/placement.hpp"
#include "workers/termination_notice.hpp"

namespace hpo::workers {
namespace {

// One row per setting: the engine (core/settings.hpp) reads the environment
// then the flags; the help text goes with the row for usage().
struct Row {
  Setting<WorkerConfig> setting;
  const char* help;
};

Status parse_int(const std::string& where, const std::string& text, std::int64_t min,
                 std::int64_t& out) {
  return parse_setting_int(where, text, min, std::numeric_limits<int>::max(), out);
}

// The worker itself: its store, name and slots, its folders and how long it waits.
std::vector<Row> worker_rows() {
  return {
      {text_setting<WorkerConfig>("--redis", "HPO_REDIS", nullptr, &WorkerConfig::redis_url),
       "URL of the Redis server (redis://host:port[/db]); default: the "
       "one a local hpo-scheduler wrote to $HPO_HOME/scheduler.json"},
      {text_setting<WorkerConfig>("--scheduler", "HPO_SCHEDULER", nullptr,
                                  &WorkerConfig::scheduler_url),
       "instead of --redis: the scheduler's URL (http[s]://host:port); the worker holds no Redis "
       "credential and reaches the store through the scheduler with its worker token"},
      {text_setting<WorkerConfig>("--worker-token-file", "HPO_WORKER_TOKEN_FILE", nullptr,
                                  &WorkerConfig::worker_token_file),
       "with --scheduler: the file (mode 0600) holding this host's worker token (hpo worker-token "
       "create NAME); or HPO_WORKER_TOKEN"},
      {{"--slots", "HPO_SLOTS", nullptr, SettingKind::kValue,
        [](WorkerConfig& c, const std::string& w, const std::string& v) -> Status {
          std::int64_t n = 0;
          if (auto st = parse_int(w, v, 1, n); !st) return st;
          c.slots = static_cast<int>(n);
          return {};
        }},
       "trial slots; default: the number of visible GPUs, else 1"},
      {{"--name", "HPO_WORKER_NAME", nullptr, SettingKind::kValue,
        [](WorkerConfig& c, const std::string& w, const std::string& v) -> Status {
          if (v.empty()) return Error::invalid(w, "must not be empty");
          c.name = v;
          return {};
        }},
       "worker name, unique in the cluster; default: <host>-<pid>"},
      {{"--threads", "HPO_THREADS", nullptr, SettingKind::kValue,
        [](WorkerConfig& c, const std::string& w, const std::string& v) -> Status {
          std::int64_t n = 0;
          if (auto st = parse_int(w, v, 1, n); !st) return st;
          c.threads = static_cast<int>(n);
          return {};
        }},
       "CPU threads per slot; default: the cores divided among the slots"},
      {int_setting("--lease-ms", "HPO_LEASE_MS", nullptr, &WorkerConfig::lease_ms, 30,
                   std::numeric_limits<int>::max()),
       "trial lease in ms, heartbeats every lease/3 (default 30000)"},
      {text_setting<WorkerConfig>("--prefix", "HPO_PREFIX", nullptr, &WorkerConfig::prefix),
       "Redis key prefix (default hpo:)"},
      {seconds_setting<WorkerConfig>("--kill-grace-s", "HPO_KILL_GRACE_S", nullptr,
                                     &WorkerConfig::kill_grace_s),
       "seconds between SIGTERM and SIGKILL when a command trial is stopped (default 5)"},
      {seconds_setting<WorkerConfig>("--checkpoint-grace-s", "HPO_CHECKPOINT_GRACE_S", nullptr,
                                     &WorkerConfig::checkpoint_grace_s),
       "seconds a command trial that said hpo-checkpoint-on-stop has between SIGUSR1 (drain, "
       "preemption: checkpoint, then stop) and SIGKILL (default 20)"},
      {int_setting("--max-output-folder-mb", "HPO_MAX_OUTPUT_FOLDER_MB", nullptr,
                   &WorkerConfig::max_output_folder_mb, 1, std::int64_t{1} << 30),
       "the most MiB a subfolder of a command trial's HPO_OUTPUT_DIR may hold to be kept (as "
       "output.<name>.tar; default 1024)"},
      {text_setting<WorkerConfig>("--python-lib", "HPO_PYTHON_LIB", nullptr,
                                  &WorkerConfig::python_lib),
       "the folder holding the hpo Python library, put on every trial's PYTHONPATH (default: "
       "python/ or share/hpo/python beside the binary; none: not added)"},
      {text_setting<WorkerConfig>("--work-dir", "HPO_WORK_DIR", nullptr, &WorkerConfig::work_dir),
       "where attempt directories go (default $HPO_HOME/work/<name>)"},
      {{"--artifacts", "HPO_ARTIFACTS", nullptr, SettingKind::kValue,
        [](WorkerConfig& c, const std::string& w, const std::string& dir) -> Status {
          if (auto st = trials::check_artifact_root(w, dir); !st) return st;
          c.artifacts = dir;
          return {};
        }},
       "the shared folder for trials' artifacts as this host mounts it (default: the folder "
       "the scheduler's --artifacts names, at the same path; none: artifacts in Redis)"},
      {text_setting<WorkerConfig>("--dataset-cache", "HPO_DATASET_CACHE", nullptr,
                                  &WorkerConfig::dataset_cache),
       "where decoded datasets are kept for this host's trials (default $HPO_HOME/dataset-cache; "
       "none: off)"},
      {seconds_setting<WorkerConfig>("--wait-s", "HPO_WAIT_SCHEDULER_S", nullptr,
                                     &WorkerConfig::wait_scheduler_s),
       "without --redis: seconds to wait for a local scheduler to appear (default 60)"},
      {seconds_setting<WorkerConfig>("--drain-grace-s", "HPO_DRAIN_GRACE_S", nullptr,
                                     &WorkerConfig::drain_grace_s),
       "SIGTERM: seconds running trials may still finish before they are stopped and released "
       "back to the queue, no attempt counted (default 30)"},
      {seconds_setting<WorkerConfig>("--outage-grace-s", "HPO_OUTAGE_GRACE_S", nullptr,
                                     &WorkerConfig::outage_grace_s),
       "seconds running trials go on, and results are retried, while Redis is unreachable "
       "(default 600)"},
      {{"--data-root", "HPO_DATA_ROOTS", nullptr, SettingKind::kList,
        [](WorkerConfig& c, const std::string& w, const std::string& root) -> Status {
          if (root.empty() || root.front() != '/')
            return Error::invalid(w, fmt::format("'{}' is not an absolute folder", root));
          c.data_roots.push_back(root);
          return {};
        },
        [](WorkerConfig& c) { c.data_roots.clear(); }, ':'},
       "a folder dataset files of torch trials may come from; repeatable (env: colon-separated). "
       "Default: /usr/share/datasets and the work dir; `--data-root /` confines nothing"},
  };
}

// The host: what it offers trials (placement), what says it is going, where it is reached.
std::vector<Row> host_rows() {
  return {
      {{"--label", "HPO_LABELS", nullptr, SettingKind::kList,
        [](WorkerConfig& c, const std::string& w, const std::string& text) -> Status {
          auto label = trials::parse_label(text);
          if (!label) return Error::invalid(w, label.error().message);
          c.labels[label->first] = label->second;
          return {};
        },
        [](WorkerConfig& c) { c.labels.clear(); }, ','},
       "a label trials may ask for in resources.labels (key or key=value); repeatable (env: "
       "comma-separated)"},
      {{"--cpus", "HPO_CPUS", nullptr, SettingKind::kValue,
        [](WorkerConfig& c, const std::string& w, const std::string& v) -> Status {
          double n = 0;
          if (auto st = parse_setting_number(w, v, 0.01, 1e6, n); !st) return st;
          c.cpus = n;
          return {};
        }},
       "cores the trials' resources.cpus share; default: the host's"},
      {{"--memory-gb", "HPO_MEMORY_GB", nullptr, SettingKind::kValue,
        [](WorkerConfig& c, const std::string& w, const std::string& v) -> Status {
          double n = 0;
          if (auto st = parse_setting_number(w, v, 0.01, 1e9, n); !st) return st;
          c.memory_gb = n;
          return {};
        }},
       "memory (GB) the trials' resources.memory_gb share; default: the host's"},
      {text_setting<WorkerConfig>("--notice-file", "HPO_NOTICE_FILE", nullptr,
                                  &WorkerConfig::notice_file),
       "a termination notice: when this file appears the worker drains as on SIGTERM (trials "
       "that checkpoint stop at once and are released)"},
      {{"--notice-url", "HPO_NOTICE_URL", nullptr, SettingKind::kValue,
        [](WorkerConfig& c, const std::string& w, const std::string& v) -> Status {
          if (auto u = parse_notice_url(v); !u) return Error::invalid(w, u.error().message);
          c.notice_url = v;
          return {};
        }},
       "a termination notice polled every --notice-poll-s: a cloud's instance-metadata URL "
       "(http://...) "
       "whose 200 answer says the host is going (AWS spot instance-action, GCP preempted, "
       "Azure scheduledevents); the worker then drains as on SIGTERM"},
      {seconds_setting<WorkerConfig>("--notice-poll-s", "HPO_NOTICE_POLL_S", nullptr,
                                     &WorkerConfig::notice_poll_s),
       "seconds between two polls of --notice-url (default 1; the clouds give 30 s to 2 min)"},
      {{"--notice-header", "HPO_NOTICE_HEADERS", nullptr, SettingKind::kList,
        [](WorkerConfig& c, const std::string& w, const std::string& text) -> Status {
          auto h = parse_notice_header(text);
          if (!h) return Error::invalid(w, h.error().message);
          c.notice_headers.push_back(std::move(*h));
          return {};
        },
        [](WorkerConfig& c) { c.notice_headers.clear(); }, ','},
       "a header sent with each poll of --notice-url ('Metadata-Flavor: Google' on GCP, "
       "'Metadata: true' on Azure); repeatable (env: comma-separated)"},
      {seconds_setting<WorkerConfig>("--exit-when-idle-s", "HPO_EXIT_WHEN_IDLE_S", nullptr,
                                     &WorkerConfig::exit_when_idle_s),
       "exit (status 0) once this worker has run nothing and no sweep has been running for "
       "that many seconds, as a batch job's worker should (Slurm); default 0: never"},
      {text_setting<WorkerConfig>("--address", "HPO_WORKER_ADDRESS", nullptr,
                                  &WorkerConfig::address),
       "this host's address other hosts reach: the ranks of data-parallel trials that span "
       "workers listen there; default: the local address of the route to Redis"},
  };
}

// How trials run: as whom and contained how (the trust boundary), on which GPUs.
std::vector<Row> trial_rows() {
  return {
      {{"--trial-user", "HPO_TRIAL_USER", nullptr, SettingKind::kValue,
        [](WorkerConfig& c, const std::string& w, const std::string& v) -> Status {
          if (v.empty()) return Error::invalid(w, "must name a user, or be none");
          c.trial_user = v;
          return {};
        }},
       "the account whose group trials run with, each slot under a uid of its own from "
       "--trial-uids, when this worker is root or has CAP_SETUID and CAP_SETGID (default "
       "hpo-trial; none: trials run as this worker and can read everything it can)"},
      {{"--trial-uids", "HPO_TRIAL_UIDS", nullptr, SettingKind::kValue,
        [](WorkerConfig& c, const std::string& w, const std::string& v) -> Status {
          const auto dash = v.find('-');
          std::int64_t first = 0, last = 0;
          if (dash == std::string::npos ||
              !parse_setting_int(w, v.substr(0, dash), 1000, 4294967294LL, first) ||
              !parse_setting_int(w, v.substr(dash + 1), 1000, 4294967294LL, last) || last < first)
            return Error::invalid(
                w, fmt::format("'{}': expected FIRST-LAST, uids of no account, e.g. 400000-400999",
                               v));
          c.trial_uid_first = first;
          c.trial_uid_last = last;
          return {};
        }},
       "the uids trials run as, one per slot, claimed per host (default 400000-400999; no "
       "account may own them)"},
      {text_setting<WorkerConfig>("--project", "HPO_PROJECT", nullptr, &WorkerConfig::project),
       "take the trials of this project only (required where trials run as this worker: not root, "
       "or --trial-user none, unless --any-project-as-worker)"},
      {switch_setting<WorkerConfig>("--any-project-as-worker", "HPO_ANY_PROJECT_AS_WORKER", nullptr,
                                    &WorkerConfig::any_project_as_worker),
       "where trials run as this worker, take every project's anyway: they can read this "
       "worker's files, environment and Redis credential, and each other's (not for teams)"},
      {text_setting<WorkerConfig>("--trial-uid-locks", "HPO_TRIAL_UID_LOCKS", nullptr,
                                  &WorkerConfig::trial_uid_locks),
       "where this host's workers lock the trial uids they use (default /run/hpo/trial-uids)"},
      {{"--trial-cgroups", "HPO_TRIAL_CGROUPS", nullptr, SettingKind::kValue,
        [](WorkerConfig& c, const std::string& w, const std::string& v) -> Status {
          if (v != "auto" && v != "none")
            return Error::invalid(w, fmt::format("'{}': expected auto or none", v));
          c.trial_cgroups = v;
          return {};
        }},
       "auto (default): each trial in a cgroup of its own (v2 delegated to the worker, or v1 "
       "memory and pids): memory_gb holds all its processes, its end kills every one; none: "
       "per-process limits, and the worker reaps the trials' orphans"},
      {{"--trial-namespaces", "HPO_TRIAL_NAMESPACES", nullptr, SettingKind::kValue,
        [](WorkerConfig& c, const std::string& w, const std::string& v) -> Status {
          if (v != "auto" && v != "on" && v != "off")
            return Error::invalid(w, fmt::format("'{}': expected auto, on or off", v));
          c.trial_namespaces = v;
          return {};
        }},
       "auto (default): each command trial in namespaces of its own (its processes, /tmp, "
       "/dev/shm, IPC, /dev with only its GPUs, loopback-only network; a user namespace when "
       "the worker is not root) where the kernel allows it; on: refuse to start without them; "
       "off: never"},
      {int_setting("--trial-pids-max", "HPO_TRIAL_PIDS_MAX", nullptr, &WorkerConfig::trial_pids_max,
                   16, std::numeric_limits<int>::max()),
       "processes and threads one trial may have at once, with cgroups (default 4096)"},
      {{"--fake-gpus", "HPO_FAKE_GPUS", nullptr, SettingKind::kList,
        [](WorkerConfig& c, const std::string& w, const std::string& text) -> Status {
          auto colon = text.rfind(':');
          double gb = 0;
          if (colon == std::string::npos || colon == 0 ||
              !parse_setting_number(w, text.substr(colon + 1), 0.0625, 1e6, gb))
            return Error::invalid(w, fmt::format("'{}': expected MODEL:GB, e.g. A100:80", text));
          c.fake_gpus.push_back({text.substr(0, colon), gb});
          return {};
        },
        [](WorkerConfig& c) { c.fake_gpus.clear(); }, ','},
       "offer these GPUs instead of NVML's (MODEL:GB, comma-separated; for tests: trials see "
       "CUDA_VISIBLE_DEVICES of devices that do not exist)"},
  };
}

// Their order is the --help text's.
const std::vector<Row>& rows() {
  static const std::vector<Row> kRows = [] {
    std::vector<Row> all;
    for (const auto& group : {worker_rows(), host_rows(), trial_rows()})
      all.insert(all.end(), group.begin(), group.end());
    return all;
  }();
  return kRows;
}

}  // namespace

Result<WorkerConfig> load_config(const std::vector<std::string>& args, const EnvLookup& env) {
  std::vector<Setting<WorkerConfig>> table;
  for (const auto& r : rows()) table.push_back(r.setting);
  WorkerConfig c;
  if (auto st = load_settings(table, args, env, /*accepts_config_file=*/false, c, c.help); !st)
    return st.error();
  // The token never comes from a flag (every local user reads those in `ps`).
  if (const char* token = env("HPO_WORKER_TOKEN"); token && *token) {
    c.worker_token = token;
  } else if (!c.worker_token_file.empty()) {
    auto read = read_private_file("--worker-token-file", c.worker_token_file);
    if (!read) return read.error();
    c.worker_token = std::move(*read);
  }
  if (!c.scheduler_url.empty() && !c.redis_url.empty())
    return Error::invalid("--scheduler", "give --redis or --scheduler, not both");
  if (!c.scheduler_url.empty() && !parse_http_url(c.scheduler_url))
    return Error::invalid("--scheduler",
                          "'" + c.scheduler_url + "' is not http[s]://host[:port][/base]");
  if (!c.scheduler_url.empty() && c.worker_token.empty())
    return Error::invalid(
        "--scheduler",
        "needs this host's worker token: --worker-token-file FILE or "
        "HPO_WORKER_TOKEN (an admin makes one with hpo worker-token create NAME)");
  return c;
}

std::string usage() {
  std::string out =
      "usage: hpo-worker [--redis URL | --scheduler URL --worker-token-file F] [--slots N] [--name "
      "NAME] [--threads T] [--lease-ms L]\n"
      "                  [--prefix P] [--kill-grace-s S] [--checkpoint-grace-s S]\n"
      "                  [--python-lib DIR|none] [--max-output-folder-mb N]\n"
      "                  [--work-dir DIR] [--dataset-cache DIR]\n"
      "                  [--wait-s S]\n"
      "                  [--drain-grace-s S] [--outage-grace-s S] [--data-root DIR]...\n"
      "                  [--label K[=V]]... [--cpus N] [--memory-gb G] [--fake-gpus M:GB,...]\n"
      "                  [--notice-file PATH] [--notice-url URL] [--notice-poll-s S]\n"
      "                  [--notice-header H]...\n"
      "                  [--address HOST]\n"
      "                  [--trial-user USER] [--trial-uids FIRST-LAST] [--trial-cgroups "
      "auto|none]\n"
      "                  [--trial-pids-max N] [--trial-uid-locks DIR]\n"
      "                  [--trial-namespaces auto|on|off]\n"
      "                  [--project NAME | --any-project-as-worker]\n"
      "                  [--help]\n\n"
      "Runs trials of hpo sweeps: claims them from the Redis queue, runs them, reports results.\n"
      "SIGTERM/SIGINT: stops claiming, lets running trials finish for --drain-grace-s, then\n"
      "stops the rest and releases them to the queue (no attempt is counted) and exits 0.\n"
      "A second signal ends the grace at once.\n\n";
  for (const auto& r : rows())
    out += fmt::format("  {:<16} {:<22} {}\n", r.setting.flag, r.setting.env, r.help);
  out += fmt::format("  {:<16} {:<22} {}\n", "--help", "", "this text");
  out += "\nHPO_HOME (default $HOME/.hpo) is where a local hpo-scheduler writes scheduler.json.\n";
  return out;
}

}  // namespace hpo::workers
