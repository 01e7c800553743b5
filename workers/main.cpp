// hpo-worker: the worker agent's thin main — configuration, the Redis
// connection factory, the executors per trial kind, signals.
//
// SIGTERM/SIGINT are blocked in every thread and taken with sigwait here, so
// no handler runs in the middle of the agent's work. On either (or when the
// --notice-file appears, or the --notice-url says the host is going): the agent stops claiming and
// drains — trials that checkpoint (torch) stop at once with a checkpoint and are released; the
// others may finish for --drain-grace-s (a second signal ends that at once),
// then are told to stop (command trials get SIGTERM, then SIGKILL after
// --kill-grace-s) and released back to the queue without counting a failed
// attempt — and the process exits 0.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/http_client.hpp"
#include "core/local_state.hpp"
#include "core/log.hpp"
#include "trials/data_roots.hpp"
#include "trials/redis/redis_store.hpp"
#include "workers/agent/agent.hpp"
#include "workers/config.hpp"
#include "workers/executor.hpp"
#include "workers/gpu_inventory.hpp"
#include "workers/host_address.hpp"
#include "workers/termination_notice.hpp"
#include "workers/trial_sandbox.hpp"

#ifdef HPO_WITH_TORCH
#include "workers/torch/blas_core.hpp"
#include "workers/torch/torch_executor.hpp"
#include "workers/torch/trainer.hpp"
#endif

namespace {

using hpo::workers::WorkerConfig;

// --exit-when-idle-s: done() once the agent has been idle, and the store has
// named no running sweep, for the whole period. A store it cannot reach is not
// idleness (an outage must not end the pool's workers).
class IdleExit {
 public:
  IdleExit(double seconds, hpo::trials::StoreFactory connect)
      : period_(static_cast<std::int64_t>(seconds * 1000)), connect_(std::move(connect)) {}

  bool done(bool busy) {
    if (period_.count() <= 0) return false;
    const auto now = std::chrono::steady_clock::now();
    if (busy || !nothing_running()) {
      since_.reset();
      return false;
    }
    if (!since_) since_ = now;
    return now - *since_ >= period_;
  }

 private:
  bool nothing_running() {
    if (!store_) {
      auto made = connect_();
      if (!made) return false;
      store_ = std::move(*made);
    }
    auto active = store_->sweeps().active_sweeps();
    if (!active) {
      store_.reset();
      return false;
    }
    return active->empty();
  }

  std::chrono::milliseconds period_;
  hpo::trials::StoreFactory connect_;
  std::unique_ptr<hpo::trials::Store> store_;
  std::optional<std::chrono::steady_clock::time_point> since_;
};

// Waits up to `ms` for SIGTERM/SIGINT; returns the signal or 0.
int wait_signal(const sigset_t& set, long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000};
  int sig = ::sigtimedwait(&set, nullptr, &ts);
  return sig > 0 ? sig : 0;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return "localhost";
  return buf;
}

// Without --redis: the URL a local hpo-scheduler wrote, waiting for it (the
// scheduler and the worker are often started together). Empty: gave up (then
// `signalled` says whether SIGTERM/SIGINT ended the wait).
std::string wait_for_local_scheduler(const WorkerConfig& config, const sigset_t& signals,
                                     bool& signalled) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<long>(config.wait_scheduler_s * 1000));
  bool told = false;
  for (;;) {
    auto state = hpo::read_local_state();
    // A killed scheduler leaves its file behind: only trust a live pid.
    bool alive =
        state && !state->redis.empty() &&
        (state->pid <= 0 || ::kill(static_cast<pid_t>(state->pid), 0) == 0 || errno == EPERM);
    if (alive) return state->redis;
    if (std::chrono::steady_clock::now() >= deadline) {
      std::fprintf(stderr,
                   "hpo-worker: no local hpo-scheduler found after %.0f s (%s). Start "
                   "hpo-scheduler, or pass --redis URL.\n",
                   config.wait_scheduler_s, hpo::local_state_path().c_str());
      return "";
    }
    if (!told) {
      std::fprintf(stderr, "hpo-worker: waiting up to %.0f s for a local hpo-scheduler (%s)...\n",
                   config.wait_scheduler_s, hpo::local_state_path().c_str());
      told = true;
    }
    if (wait_signal(signals, 250)) {
      signalled = true;
      return "";
    }
  }
}

// The signals main() waits for (see the top of this file), blocked before
// any thread starts.
sigset_t block_stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  ::pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // inherited by every thread made below
  ::signal(SIGPIPE, SIG_IGN);                       // a closed socket is an error value, not death
  return signals;
}

// What this worker offers (its GPUs, slots, threads, cores, memory, labels,
// address) and its timing, from the flags and the host.
void describe_host(const WorkerConfig& config, const hpo::workers::GpuInventory& gpus,
                   const hpo::trials::redis::RedisUrl& url, hpo::workers::AgentOptions& options) {
  if (config.fake_gpus.empty()) {
    for (const auto& g : gpus.snapshot()) {
      options.gpus.push_back({g.name, g.memory_total_mb, g.uuid});  // trials see it by UUID
      options.gpu_files.push_back(gpus.device_files(g.index));
    }
  } else {
    for (const auto& g : config.fake_gpus)
      options.gpus.push_back({g.model, static_cast<std::int64_t>(g.memory_gb * 1024), {}});
  }
  const int gpu_count = static_cast<int>(options.gpus.size());
  options.host = host_name();
  // A worker token names one worker: by default this host's name.
  options.name = !config.name.empty()            ? config.name
                 : !config.scheduler_url.empty() ? options.host
                                                 : options.host + "-" + std::to_string(::getpid());
  options.slots = config.slots.value_or(std::max(1, gpu_count));
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  options.threads_per_slot = config.threads.value_or(std::max(1, cores / options.slots));
  options.cpus = config.cpus.value_or(cores);
  {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    const double host_gb = pages > 0 && page > 0
                               ? static_cast<double>(pages) * static_cast<double>(page) / (1 << 30)
                               : 0;
    options.memory_gb = config.memory_gb.value_or(host_gb);
  }
  options.labels = config.labels;
  options.address = config.address;
  if (options.address.empty() && url.unix_path.empty()) {
    auto scheduler = hpo::parse_http_url(url.gateway);  // the worker endpoint's, else Redis's
    options.address = scheduler ? hpo::workers::address_towards(scheduler->host, scheduler->port)
                                : hpo::workers::address_towards(url.host, url.port);
  }
  options.lease_ms = config.lease_ms;
  auto ms = [](double s) { return std::chrono::milliseconds(static_cast<std::int64_t>(s * 1000)); };
  options.drain_grace = ms(config.drain_grace_s);
  options.outage_grace = ms(config.outage_grace_s);
}

// What of this worker no confined trial may see: its home (scheduler.json,
// its decoded datasets), every attempt folder but the trial's own, its token,
// the artifact folder, its notice file.
std::vector<std::string> worker_paths(const WorkerConfig& config) {
  // Every work root a worker may choose is among them (open_sandbox): --work-dir,
  // the shared one, or its HPO_HOME's.
  std::vector<std::string> paths = {hpo::hpo_home(), hpo::workers::kSharedWorkRoot};
  paths.back().pop_back();  // its trailing slash
  for (const std::string* p : {&config.work_dir, &config.worker_token_file, &config.artifacts,
                               &config.dataset_cache, &config.notice_file})
    if (!p->empty() && p->front() == '/') paths.push_back(*p);
  return paths;
}

// The trust boundary: whom trials run as, and what holds their processes.
// Sets options.sandbox and options.work_root; the exit code when it cannot.
std::optional<int> open_sandbox(const WorkerConfig& config, hpo::workers::AgentOptions& options) {
  hpo::workers::SandboxOptions sandbox_options;
  sandbox_options.trial_user = config.trial_user;
  sandbox_options.first_uid = static_cast<uid_t>(config.trial_uid_first);
  sandbox_options.last_uid = static_cast<uid_t>(config.trial_uid_last);
  sandbox_options.uid_lock_dir = config.trial_uid_locks;
  sandbox_options.cgroups = config.trial_cgroups;
  sandbox_options.pids_max = config.trial_pids_max;
  sandbox_options.worker_name = options.name;
  sandbox_options.slots = options.slots;
  sandbox_options.namespaces.mode = config.trial_namespaces;
  sandbox_options.namespaces.hidden = worker_paths(config);
  auto sandbox = hpo::workers::TrialSandbox::open(sandbox_options);
  if (!sandbox) {
    std::fprintf(stderr, "hpo-worker: %s\n", sandbox.error().message.c_str());
    return 2;
  }
  options.sandbox = std::move(*sandbox);
  const bool switches = options.sandbox->identity(0).has_value();
  // Attempt directories must be reachable by the trial users: $HPO_HOME (a
  // home folder, 0700) is not, and must not be.
  options.work_root = !config.work_dir.empty() ? config.work_dir
                      : switches               ? hpo::workers::kSharedWorkRoot + options.name
                                               : hpo::hpo_home() + "/work/" + options.name;
  if (switches) {
    if (auto st = hpo::workers::TrialSandbox::prepare_work_root(options.work_root,
                                                                *options.sandbox->identity(0));
        !st) {
      std::fprintf(stderr, "hpo-worker: %s\n", st.error().message.c_str());
      return 2;
    }
  }
  // Trials that run as the worker share its uid: without namespaces of their
  // own they read its environment (the Redis credential) and files, and
  // signal each other. Such a worker takes one project's trials, unless told
  // loudly to take every project's.
  const bool confined = options.sandbox->namespaces().on();
  if (!switches && !confined && config.project.empty() && !config.any_project_as_worker) {
    std::fprintf(stderr,
                 "hpo-worker: trials would run as this worker (%s): they could read its Redis "
                 "credential and files and each other's, across projects. Run it as root (trials "
                 "then run as uids of their own), or where unprivileged user namespaces are "
                 "allowed, or give --project NAME to take one project's trials only, or "
                 "--any-project-as-worker to accept that (not for teams)\n",
                 options.sandbox->describe().c_str());
    return 2;
  }
  options.project = config.project;
  if (!switches && !confined && config.project.empty())
    hpo::log_warn(
        "trials of every project run as this worker (--any-project-as-worker): they "
        "can read its Redis credential and each other's files",
        {{"worker", options.name}});
  if ((switches || confined) && options.sandbox->cgroups())
    hpo::log_info("trial sandbox",
                  {{"worker", options.name}, {"trials", options.sandbox->describe()}});
  else
    hpo::log_warn("trials are not fully isolated from this worker",
                  {{"worker", options.name}, {"trials", options.sandbox->describe()}});
  return std::nullopt;
}

// Artifact files go where --artifacts says, else where the scheduler
// announced (asked again on every new connection: the scheduler may start
// later); no confined trial sees that folder.
hpo::trials::StoreFactory store_factory(const hpo::trials::redis::RedisUrl& url,
                                        const WorkerConfig& config,
                                        std::shared_ptr<const hpo::workers::TrialSandbox> sandbox) {
  hpo::trials::redis::RedisStoreConfig store;
  store.url = url;
  store.prefix = config.prefix;
  store.artifact_dir = config.artifacts;
  return [store, sandbox]() -> hpo::Result<std::unique_ptr<hpo::trials::Store>> {
    auto made = std::make_unique<hpo::trials::redis::RedisStore>(store);
    if (auto st = made->adopt_pool_artifact_dir(store.artifact_dir); !st) return st.error();
    if (auto announced = made->announced_artifact_dir(); announced && sandbox)
      sandbox->namespaces().hide(*announced);
    return std::unique_ptr<hpo::trials::Store>(std::move(made));
  };
}

// Where the store is: Redis (--redis, else the local scheduler's), or the
// scheduler's worker endpoint with a worker token (--scheduler). nullopt with
// `exit_code` set when the worker must stop.
std::optional<hpo::trials::redis::RedisUrl> store_url(const WorkerConfig& config,
                                                      const sigset_t& signals, int& exit_code) {
  exit_code = 2;
  if (!config.scheduler_url.empty()) {  // checked by load_config, token included
    hpo::trials::redis::RedisUrl url;
    url.gateway = config.scheduler_url;
    url.password = config.worker_token;
    return url;
  }
  std::string url = config.redis_url;
  if (url.empty()) {
    bool signalled = false;
    url = wait_for_local_scheduler(config, signals, signalled);
    if (url.empty()) {
      exit_code = signalled ? 0 : 1;
      return std::nullopt;
    }
  }
  auto parsed = hpo::trials::redis::RedisUrl::parse(url);
  if (!parsed) {
    std::fprintf(stderr, "hpo-worker: --redis: %s\n", parsed.error().message.c_str());
    return std::nullopt;
  }
  return *parsed;
}

#ifdef HPO_WITH_TORCH
// The torch executor, with what its trials share in this process: the
// dataset cache, the BLAS kernels, the standby ranks.
void add_torch_executor(const WorkerConfig& config, const std::vector<std::string>& data_roots,
                        hpo::workers::AgentOptions& options,
                        hpo::workers::ExecutorRegistry& executors) {
  // One dataset cache per process: every slot's trials read a file once.
  // Decoded tables also go to disk, where the trials' rank processes (and the
  // next worker process on this host) read them instead of decoding again.
  auto cache = std::make_shared<hpo::workers::torch_trainer::DatasetCache>(
      8, config.dataset_cache.empty()     ? hpo::hpo_home() + "/dataset-cache"
         : config.dataset_cache == "none" ? std::string()
                                          : config.dataset_cache);
  hpo::workers::TorchExecutorOptions torch_options;
  torch_options.data_roots = data_roots;
  {  // OpenBLAS's kernels for the trials' processes (blas_core.hpp)
    torch_options.blas_core = hpo::workers::trial_blas_core();
    if (!torch_options.blas_core.empty())
      hpo::log_info("OpenBLAS chose generic kernels for this CPU; trials get others",
                    {{"loaded", hpo::workers::loaded_blas_core()},
                     {"OPENBLAS_CORETYPE", torch_options.blas_core}});
  }
  // One training process per slot started ahead of its trial (LibTorch loads in ~0.75 s), once
  // the first torch trial has come: a worker that runs only other kinds never spends the CPU
  // and memory of a LibTorch process per slot (at start, 16 of them took its first seconds'
  // CPU from 5,000 cheap synthetic trials: 1,690 trials/s instead of ~8,000).
  torch_options.standby = std::make_shared<hpo::workers::StandbyRanks>(
      static_cast<std::size_t>(options.slots), options.threads_per_slot);
  // Torch trials' ranks run as the trial users too, where those can run the
  // rank program (an installed hpo; a build under a private home folder is not).
  if (auto who = options.sandbox->identity(0)) {
    auto program = hpo::workers::TorchExecutor(cache, torch_options).rank_program();
    auto reachable = program ? hpo::workers::TrialSandbox::can_run(*program, *who)
                             : hpo::Status(program.error());
    if (!reachable) {
      torch_options.ranks_as_trial_user = false;
      hpo::log_warn("torch trials run as this worker: the trial users cannot run the rank program",
                    {{"worker", options.name}, {"reason", reachable.error().message}});
    }
  }
  executors[hpo::trials::TrialKind::kTorch] = [cache, torch_options] {
    return std::make_unique<hpo::workers::TorchExecutor>(cache, torch_options);
  };
  // Torch trials on GPUs need real devices: fake ones are for other kinds' placement.
  options.cuda = hpo::workers::torch_trainer::cuda_available() && config.fake_gpus.empty();
  // They run in this process (or its rank processes) and address a device by
  // its CUDA ordinal, which a MIG instance has not: a MIG host takes none.
  const bool mig = std::any_of(options.gpus.begin(), options.gpus.end(),
                               [](const auto& g) { return g.id.rfind("MIG-", 0) == 0; });
  if (options.cuda && mig) {
    options.cuda = false;
    hpo::log_warn("torch trials on GPUs are not taken here: this host's GPUs are MIG instances",
                  {{"worker", options.name},
                   {"instead",
                    "command trials (CUDA_VISIBLE_DEVICES names the instance), or a "
                    "worker on GPUs without MIG"}});
  }
}
#endif

// Runs until a stop: a signal, the termination notice, --exit-when-idle-s or
// the agent's own fatal error. Returns what stopped it, for the log.
std::string wait_for_stop(const WorkerConfig& config, const sigset_t& signals,
                          hpo::workers::Agent& agent, hpo::workers::TrialSandbox& sandbox,
                          hpo::workers::NoticeWatch& notice, IdleExit& idle) {
  int sig = 0;
  std::string noticed;
  // A file is cheap to look for (every 250 ms); a metadata URL is asked every --notice-poll-s.
  const auto url_period = std::chrono::milliseconds(
      std::max<std::int64_t>(10, static_cast<std::int64_t>(config.notice_poll_s * 1000)));
  const int period_ms = static_cast<int>(
      config.notice_file.empty() ? std::min<std::int64_t>(1000, url_period.count()) : 250);
  auto next_url_poll = std::chrono::steady_clock::now();
  bool went_idle = false;
  while (!(sig = wait_signal(signals, period_ms))) {
    // As subreaper (no cgroups) or PID 1, trials' orphans come here: reap the
    // dead (a trial's end kills the living, TrialBox).
    if (sandbox.reaps()) sandbox.reap_orphans(/*kill_live=*/false);
    if ((went_idle = idle.done(agent.busy()))) break;
    if (!agent.fatal_error().empty()) break;  // refused (registry, token): it stopped itself
    if (!notice.enabled()) continue;
    const bool ask_url = std::chrono::steady_clock::now() >= next_url_poll;
    if (ask_url) next_url_poll = std::chrono::steady_clock::now() + url_period;
    if (noticed = notice.check(ask_url); !noticed.empty()) break;
  }
  return went_idle ? fmt::format("idle for {} s: no sweep is running", config.exit_when_idle_s)
         : !noticed.empty()             ? noticed
         : !agent.fatal_error().empty() ? "refused: " + agent.fatal_error()
         : sig == SIGTERM               ? std::string("SIGTERM")
                                        : std::string("SIGINT");
}

}  // namespace

int main(int argc, char** argv) {
  // Not dumpable: a process of the same uid (a trial that runs as this worker,
  // with --trial-user none) can neither read /proc/<pid>/environ or mem nor ptrace it.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  const sigset_t signals = block_stop_signals();

  auto loaded = hpo::workers::load_config(std::vector<std::string>(argv + 1, argv + argc),
                                          [](const char* k) { return std::getenv(k); });
  if (!loaded) {
    std::fprintf(stderr, "hpo-worker: %s\n\n%s", loaded.error().message.c_str(),
                 hpo::workers::usage().c_str());
    return 2;
  }
  WorkerConfig config = std::move(loaded.value());
  if (config.help) {
    std::fputs(hpo::workers::usage().c_str(), stdout);
    return 0;
  }

  if (hpo::trials::redis::password_in_args(std::vector<std::string>(argv + 1, argv + argc)))
    hpo::log_warn(
        "--redis carries a password, visible to every local user in `ps` and /proc: pass "
        "HPO_REDIS in the environment (an EnvironmentFile, a Kubernetes secret) instead");
  int exit_code = 0;
  auto parsed_url = store_url(config, signals, exit_code);
  if (!parsed_url) return exit_code;

  hpo::workers::GpuInventory gpus;
  hpo::workers::AgentOptions options;
  describe_host(config, gpus, *parsed_url, options);
  // Through the scheduler, every request names this worker (what a token for
  // a prefix of names runs as).
  if (!parsed_url->gateway.empty()) parsed_url->user = options.name;
  if (auto failed = open_sandbox(config, options)) return *failed;

  hpo::trials::StoreFactory connect = store_factory(*parsed_url, config, options.sandbox);
  hpo::workers::CommandOptions command;
  command.kill_grace_s = config.kill_grace_s;
  command.checkpoint_grace_s = config.checkpoint_grace_s;
  command.max_output_folder_bytes = config.max_output_folder_mb << 20;
  command.python_lib = config.python_lib == "none" ? std::string()
                       : config.python_lib.empty() ? hpo::workers::find_python_lib()
                                                   : config.python_lib;
  auto executors = hpo::workers::builtin_executors(command);
  // Folders torch trials may read data from (logged even without LibTorch).
  std::vector<std::string> data_roots = config.data_roots;
  if (data_roots.empty()) data_roots = {hpo::trials::kDefaultDataRoot, options.work_root};
#ifdef HPO_WITH_TORCH
  add_torch_executor(config, data_roots, options, executors);
#endif

  hpo::log_info("worker configured",
                {{"worker", options.name},
                 {"redis", parsed_url->to_string()},
                 {"prefix", config.prefix},
                 {"work_dir", options.work_root},
                 {"data_roots", fmt::format("{}", fmt::join(data_roots, ":"))},
                 {"python_lib", command.python_lib.empty() ? "none" : command.python_lib}});
  hpo::workers::Agent agent(options, connect, std::move(executors),
                            config.fake_gpus.empty() ? &gpus : nullptr);
  if (auto st = agent.start(); !st) {
    std::fprintf(stderr, "hpo-worker: %s\n", st.error().message.c_str());
    return 1;
  }
  hpo::workers::NoticeWatch notice(config.notice_file, config.notice_url, config.notice_headers);
  IdleExit idle(config.exit_when_idle_s, connect);
  const std::string stopped_by =
      wait_for_stop(config, signals, agent, *options.sandbox, notice, idle);
  hpo::log_info("worker stopping", {{"worker", options.name}, {"signal", stopped_by}});
  agent.drain([&] { return wait_signal(signals, 0) != 0; });
  if (const std::string why = agent.fatal_error(); !why.empty()) {
    std::fprintf(stderr, "hpo-worker: %s\n", why.c_str());
    return 2;
  }
  return 0;
}
