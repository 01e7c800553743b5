// WorkerConfig: the typed configuration of hpo-worker.
//
// Sources, later wins (the one engine, core/settings.hpp): built-in defaults <
// environment (HPO_REDIS, HPO_WORKER_NAME, ...) < command-line flags. The environment is passed in
// as a lookup function so tests need not touch the process's own. Values that depend on the host
// (slots from the GPU count, threads from the core count, the name from the host name) are left
// unset here and resolved by main.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "core/settings.hpp"

namespace hpo::workers {

struct WorkerConfig {
  std::string redis_url;  // empty: from $HPO_HOME/scheduler.json
  // The scheduler's URL: the worker reaches the store only through its worker
  // endpoint, with the worker token in worker_token_file (or HPO_WORKER_TOKEN),
  // and holds no Redis credential (trials/redis/worker_channel.hpp).
  std::string scheduler_url;
  std::string worker_token_file;
  std::string worker_token;        // HPO_WORKER_TOKEN, else the file's (load_config reads it)
  std::optional<int> slots;        // unset: visible GPUs, else 1
  std::string name;                // empty: <host>-<pid>
  std::optional<int> threads;      // CPU threads per slot; unset: cores / slots
  std::int64_t lease_ms = 30000;   // lease length; heartbeats every lease/3
  std::string prefix = "hpo:";     // Redis key prefix
  double kill_grace_s = 5.0;       // SIGTERM -> SIGKILL grace for command trials
  double checkpoint_grace_s = 20;  // SIGUSR1 -> SIGKILL: a command trial checkpoints, then stops
  std::string python_lib;          // the hpo Python library's folder; empty: found; "none": off
  std::int64_t max_output_folder_mb =
      1024;                        // a subfolder of a command trial's outputs, kept as tar
  std::string work_dir;            // attempt directories; empty: $HPO_HOME/work/<name>
  std::string artifacts;           // artifact files' folder; empty: the scheduler's, if any
  std::string dataset_cache;       // decoded datasets; empty: $HPO_HOME/dataset-cache; "none": off
  double wait_scheduler_s = 60.0;  // how long to wait for a local scheduler's state file
  double drain_grace_s = 30.0;     // SIGTERM: how long running trials may still finish
  double outage_grace_s = 600.0;   // trials keep running while the store is unreachable
  // Folders torch trials may read data from (--data-root); empty: the Debian
  // dataset folder and the work dir (main fills them in).
  std::vector<std::string> data_roots;
  // Placement (trials/placement.hpp): labels trials may ask for, the cores and
  // memory the worker's trials' requests share (unset: the host's), and GPUs
  // to offer instead of NVML's (tests, hosts NVML cannot see).
  std::map<std::string, std::string> labels;
  std::optional<double> cpus;
  std::optional<double> memory_gb;
  struct FakeGpu {
    std::string model;
    double memory_gb = 0;
  };
  std::vector<FakeGpu> fake_gpus;
  // A termination notice: when this file appears (a cloud's preemption
  // notice, written by whatever watches for it) the worker drains as on SIGTERM.
  std::string notice_file;
  // Or a cloud's instance-metadata URL, polled (workers/termination_notice.hpp),
  // with the headers it needs.
  std::string notice_url;
  std::vector<std::pair<std::string, std::string>> notice_headers;
  double notice_poll_s = 1.0;  // between two polls of the URL
  // Exit (0) once the worker has run nothing and no sweep has been running
  // for this long: a batch job's worker ends when the work does. 0: never.
  double exit_when_idle_s = 0;
  // This host's address the pool's other hosts reach (a gang's ranks listen
  // there); empty: the local address of the route to Redis.
  std::string address;
  // The trust boundary (workers/trial_sandbox.hpp): the account whose group
  // trials run with ("none": as this worker), the uids they run as (one per
  // slot), where those uids' lock files live, cgroups ("auto" or "none") and
  // the processes and threads one trial may have.
  std::string trial_user = "hpo-trial";
  // The one project whose trials this worker takes ("": every project's). A
  // worker whose trials run as itself must name one, or accept every
  // project's with any_project_as_worker (their trials then share its identity).
  std::string project;
  bool any_project_as_worker = false;
  std::int64_t trial_uid_first = 400000;
  std::int64_t trial_uid_last = 400999;
  std::string trial_uid_locks = "/run/hpo/trial-uids";
  std::string trial_cgroups = "auto";
  std::string trial_namespaces = "auto";  // auto, on or off (workers/trial_sandbox.hpp)
  std::int64_t trial_pids_max = 4096;
  bool help = false;
};

using hpo::EnvLookup;

// Parses argv[1..] over the environment; kInvalidArgument names the flag or
// variable at fault.
Result<WorkerConfig> load_config(const std::vector<std::string>& args, const EnvLookup& env);

// The --help text: every flag, its environment variable and default.
std::string usage();

}  // namespace hpo::workers
