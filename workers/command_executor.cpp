// The command executor's loop, on the slot's thread:
//
//   spawn (own process group) -> poll the pipes every <= poll_ms
//     -> stdout `hpo-metric` lines become reports, other lines the log;
//        stderr lines go to the log and a 2 KB tail kept for the error
//     -> stop_reason() or the trial's timeout: SIGTERM to the group, and
//        SIGKILL kill_grace_s later if anything is still alive
//   -> the leader exits: the rest of its group is killed and the leader reaped
//      (ChildProcess), so no trial leaves a zombie or an orphan behind.
//
// The result follows issue 2: the objective metric of the final line, else its
// last reported value, else a failure saying so. A non-zero exit is a
// retryable failure carrying the stderr tail.
#include "workers/command_executor.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/child_process.hpp"
#include "core/install_dir.hpp"
#include "ensemble/bagging_json.hpp"
#include "search/rng.hpp"
#include "trials/artifacts.hpp"
#include "trials/json_limits.hpp"
#include "trials/trial_plan.hpp"
#include "workers/checkpoint_dir.hpp"
#include "workers/command_outputs.hpp"
#include "workers/control_dir.hpp"
#include "workers/outcome.hpp"
#include "workers/trial_sandbox.hpp"

extern char** environ;

namespace hpo::workers {
namespace {

constexpr std::size_t kStderrTail = 2048;

using Clock = std::chrono::steady_clock;

}  // namespace

std::vector<std::string> trial_environment(const std::vector<std::string>& worker_env) {
  static constexpr std::string_view kNames[] = {
      "PATH",     "HOME", "USER",   "LOGNAME", "SHELL",           "LANG",
      "LANGUAGE", "TZ",   "TMPDIR", "TERM",    "LD_LIBRARY_PATH", "VIRTUAL_ENV"};
  static constexpr std::string_view kPrefixes[] = {
      "LC_", "PYTHON", "CONDA_", "CUDA_", "NVIDIA_", "NCCL_", "OMP_", "MKL_", "OPENBLAS_"};
  std::vector<std::string> out;
  for (const auto& kv : worker_env) {
    const std::string_view name = std::string_view(kv).substr(0, kv.find('='));
    bool keep = std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
    for (auto p : kPrefixes) keep = keep || name.starts_with(p);
    if (keep) out.push_back(kv);
  }
  return out;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

std::string child_visible_devices(const std::vector<int>& gpus, const std::string& parent_visible,
                                  const std::vector<std::string>& ids) {
  std::vector<std::string> parent;
  std::size_t start = 0;
  while (!parent_visible.empty() && start <= parent_visible.size()) {
    auto comma = parent_visible.find(',', start);
    if (comma == std::string::npos) comma = parent_visible.size();
    parent.push_back(parent_visible.substr(start, comma - start));
    start = comma + 1;
  }
  std::string out;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const int g = gpus[i];
    if (!out.empty()) out += ',';
    if (i < ids.size() && !ids[i].empty()) {
      out += ids[i];
      continue;
    }
    bool mapped = g >= 0 && static_cast<std::size_t>(g) < parent.size();
    out += mapped ? parent[static_cast<std::size_t>(g)] : std::to_string(g);
  }
  return out;
}

CommandExecutor::CommandExecutor(CommandOptions options) : options_(std::move(options)) {
  if (options_.base_env.empty()) options_.base_env = trial_environment(current_environment());
  if (options_.poll_ms <= 0) options_.poll_ms = 50;
}

namespace {

constexpr std::string_view kCheckpointLine = "hpo-checkpoint";
constexpr std::string_view kCheckpointOnStopLine = "hpo-checkpoint-on-stop";

bool is_line(std::string_view line, std::string_view what) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  return line == what;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A folder packed by `pack` (pack_dir, tar_dir) and streamed into the
// artifact `name`; the store may call the producer again (a retry), so what
// was packed is what its last call packed. `unpackable`: the folder itself
// could not be packed (kInvalidArgument from `pack`), not the store failing.
struct PackedFolder {
  Status stored;
  bool unpackable = false;
  PackStats stats;
};

template <class Pack>
PackedFolder put_packed_folder(Reporter& reporter, const std::string& name, Pack pack) {
  PackedFolder r;
  r.stored = reporter.put_artifact_stream(name, [&](ByteSink& out) {
    r.stats = {};
    auto packed = pack(out);
    r.unpackable = !packed && packed.error().code == ErrorCode::kInvalidArgument;
    if (!packed) return Status(packed.error());
    r.stats = std::move(*packed);
    return Status{};
  });
  return r;
}

// The program says its checkpoint folder is complete: it becomes the trial's
// artifact "checkpoint" (fenced: a stale attempt's is refused), streamed from
// the folder. An error is returned: the attempt must not train on without
// the protection it asked for.
Status store_checkpoint_dir(const std::string& dir, Reporter& reporter) {
  const auto t0 = Clock::now();
  auto [st, unpackable, stats] = put_packed_folder(
      reporter, trials::artifact::kCheckpoint, [&](ByteSink& out) { return pack_dir(dir, out); });
  if (!st) return st;
  for (const auto& s : stats.skipped) reporter.log("[hpo] checkpoint leaves out " + s);
  reporter.log(fmt::format("[hpo] checkpoint stored: {} files, {} bytes in {:.2f} s", stats.files,
                           stats.bytes, seconds_since(t0)));
  return {};
}

// An earlier attempt's checkpoint, streamed into the (empty) folder; on any
// error the folder is emptied again and the attempt starts afresh, which is
// never wrong.
void restore_checkpoint(const std::string& dir, Reporter& reporter) {
  const auto t0 = Clock::now();
  DirUnpacker unpacker(dir);
  auto stored = reporter.read_artifact(trials::artifact::kCheckpoint, unpacker);
  if (stored && !*stored) return;
  Result<std::size_t> files = stored ? unpacker.finish() : Result<std::size_t>(stored.error());
  if (files) {
    reporter.log(fmt::format(
        "[hpo] resuming: {} files of the last checkpoint are in HPO_CHECKPOINT_DIR ({} bytes in "
        "{:.2f} s)",
        *files, unpacker.bytes(), seconds_since(t0)));
    return;
  }
  reporter.log("[hpo] the trial's checkpoint cannot be restored (" + files.error().message +
               "); HPO_CHECKPOINT_DIR starts empty");
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    std::filesystem::remove_all(e.path(), ec);
}

// Before the program starts: its folders, an earlier attempt's checkpoint and
// a member's bagging plan (into `plan`). nullopt: ready; else the attempt's result.
std::optional<trials::TrialResult> prepare_work_dir(const TrialTask& task, Reporter& reporter,
                                                    std::optional<ensemble::BaggingPlan>& plan) {
  const auto& recipe = task.spec->trial.command;
  std::error_code ec;
  std::filesystem::create_directories(output_dir(task.work_dir), ec);
  if (ec) return failed_result("could not create HPO_OUTPUT_DIR: " + ec.message(), true);
  std::filesystem::create_directories(checkpoint_dir(task.work_dir), ec);
  if (ec) return failed_result("could not create HPO_CHECKPOINT_DIR: " + ec.message(), true);
  // An earlier attempt's checkpoint: the program finds it where it left it.
  restore_checkpoint(checkpoint_dir(task.work_dir), reporter);
  if (task.trial.role == trials::TrialRole::kMember && recipe.data) {
    auto p = command_member_plan(task.trial, *recipe.data);
    if (!p) return failed_result(p.error().message, false);
    plan = std::move(*p);
    std::ofstream f(bagging_file(task.work_dir), std::ios::trunc);
    f << ensemble::bagging_file_json(*plan);
    if (!f.flush()) return failed_result("could not write HPO_BAGGING_FILE", true);
    reporter.log(fmt::format("[hpo] ensemble member {}: {} bootstrap rows, {} of {} features",
                             plan->member_index, plan->rows.size(), plan->features.size(),
                             plan->n_features));
  }
  return std::nullopt;
}

// `env`: the child's whole environment (CommandExecutor::child_env).
SpawnOptions spawn_options(const TrialTask& task, std::vector<std::string> env,
                           Reporter& reporter) {
  const auto& recipe = task.spec->trial.command;
  SpawnOptions spawn;
  spawn.argv = trials::render_argv(recipe.argv, task.trial.params);
  spawn.env = std::move(env);
  spawn.cwd = recipe.cwd;
  spawn.identity = task.identity;
  if (task.box) spawn.cgroup_procs = task.box->procs_files();
  if (task.confinement) {  // its own /tmp, the network its sweep asks for, what it names
    spawn.confinement = *task.confinement;
    if (!task.work_dir.empty()) spawn.confinement->tmp_dir = tmp_dir(task.work_dir);
    spawn.confinement->host_network = recipe.host_network;
    keep_named(*spawn.confinement, spawn.argv, spawn.cwd, spawn.env);
  }
  // A cgroup holds all the trial's processes together (its box set the
  // limit). Else a per-process data limit, not on GPU slots: the CUDA driver
  // maps device memory into the process.
  const bool held_by_cgroup = !spawn.cgroup_procs.empty();
  if (!held_by_cgroup && task.gpus.empty())
    spawn.memory_limit_bytes = memory_limit_bytes(task.spec->trial.memory_gb);
  else if (!held_by_cgroup && task.spec->trial.memory_gb > 0)
    reporter.log("[hpo] resources.memory_gb is not enforced on GPU slots without cgroups");
  return spawn;
}

// What the program said on its pipes, kept past its end for the result.
struct AttemptOutput {
  const TrialTask& task;
  Reporter& reporter;
  ChildProcess& child;                   // paused while its checkpoint is read
  ControlDir& control;                   // what the program is told
  trials::Metrics last;                  // last value of every metric seen
  std::optional<trials::Metrics> final;  // the final line's metrics
  std::int64_t next_step = 0;
  TailBuffer stderr_tail{kStderrTail};
  std::optional<Error> checkpoint_error;  // the attempt stops: it is not protected
  bool checkpoints_on_stop = false;       // it said `hpo-checkpoint-on-stop`
  int checkpoints = 0;                    // `hpo-checkpoint` lines dealt with

  void on_line(Stream stream, std::string_view line);
  // What the result carries: the final line's metrics, else the last seen.
  trials::Metrics metrics() const { return final ? *final : last; }
};

void AttemptOutput::on_line(Stream stream, std::string_view line) {
  if (stream == Stream::kStderr) {
    stderr_tail.add(line);
    reporter.log(line);
    return;
  }
  if (!task.work_dir.empty() && is_line(line, kCheckpointOnStopLine)) {
    if (!checkpoints_on_stop) reporter.log("[hpo] the program checkpoints when asked to stop");
    checkpoints_on_stop = true;
    reporter.checkpoints_on_stop();
    return;
  }
  if (!task.work_dir.empty() && is_line(line, kCheckpointLine)) {
    if (checkpoint_error) return;  // stopping already
    // The program is paused while its folder is read: a consistent
    // snapshot, even of a program that goes on writing there at once.
    child.signal_group(SIGSTOP);
    auto st = store_checkpoint_dir(checkpoint_dir(task.work_dir), reporter);
    child.signal_group(SIGCONT);
    control.write("checkpoint", fmt::format("{} {}\n", ++checkpoints, st ? "stored" : "failed"));
    if (!st) {
      checkpoint_error = st.error();
      reporter.log("[hpo] checkpoint not stored, the attempt stops: " + st.error().message);
    }
    return;
  }
  auto metric = parse_metric_line(line);
  if (!metric) {
    reporter.log(line);
    return;
  }
  if (!*metric) {
    reporter.log(fmt::format("[hpo] ignored malformed metric line: {}", metric->error().message));
    return;
  }
  auto& m = metric->value();
  for (const auto& [k, v] : m.metrics) last[k] = v;
  if (m.final) {
    final = m.metrics;
    return;
  }
  std::int64_t step = m.step ? *m.step : next_step;
  next_step = step + 1;
  reporter.report(step, m.metrics);
}

// Polls the program until it exits. A stop, the trial's timeout or a
// checkpoint not stored: the stop's word in control_dir(), then SIGTERM to its
// group and SIGKILL kill_grace_s later; a program that checkpoints on a stop
// and must run again elsewhere gets SIGUSR1 and checkpoint_grace_s instead.
// Returns the stop (kNone: the program ended by itself or for the checkpoint).
StopReason wait_for_exit(AttemptOutput& output, double timeout_s, const CommandOptions& options) {
  auto sink = [&output](Stream stream, std::string_view line) { output.on_line(stream, line); };
  auto start = Clock::now();
  std::optional<Clock::time_point> deadline;
  if (timeout_s > 0)
    deadline = start + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(timeout_s));
  auto grace = [](double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  StopReason stop = StopReason::kNone;
  std::optional<Clock::time_point> kill_at;
  bool killed = false;

  while (!output.child.poll(options.poll_ms, sink)) {
    auto now = Clock::now();
    if (!kill_at) {
      stop = output.reporter.stop_reason();
      if (stop == StopReason::kNone && deadline && now >= *deadline) stop = StopReason::kTimeout;
      if (stop != StopReason::kNone || output.checkpoint_error) {
        const bool checkpoint = output.checkpoints_on_stop && checkpoint_stop(stop);
        output.control.write(
            "stop_reason",
            std::string(stop == StopReason::kNone ? "error" : stop_word(stop)) + "\n");
        const double grace_s = checkpoint ? options.checkpoint_grace_s : options.kill_grace_s;
        // A wrapper (a shell script, a launcher) may die of SIGUSR1 while the
        // program under it saves: its group lives on for the grace.
        if (checkpoint) output.child.linger_for(static_cast<long>(grace_s * 1000));
        output.child.signal_group(checkpoint ? SIGUSR1 : SIGTERM);
        kill_at = now + grace(grace_s);
      }
    } else if (!killed && now >= *kill_at) {
      output.child.signal_group(SIGKILL);
      killed = true;
    }
  }
  return stop;
}

trials::TrialResult checkpoint_failure(const Error& error, const trials::Metrics& last) {
  // Too large for a store without an artifact folder stays too large;
  // anything else (a full disk, an outage) another attempt may get past.
  const bool too_large = error.code == ErrorCode::kPayloadTooLarge;
  auto result = failed_result(
      "the checkpoint could not be stored (" + error.message + ")" +
          (too_large ? "; a pool with an artifact folder (hpo-scheduler --artifacts DIR) "
                       "stores checkpoints of any size"
                     : ""),
      store_failure_retryable(error));
  result.metrics = last;
  return result;
}

// A non-zero exit or a signal: retryable, with the end of its stderr.
trials::TrialResult exit_failure(int status, double memory_gb, const std::string& memory_note,
                                 const AttemptOutput& output) {
  std::string tail = output.stderr_tail.tail();
  std::string why = describe_exit(status, memory_gb);
  if (!memory_note.empty()) why += " (" + memory_note + ")";
  auto result = failed_result(tail.empty() ? why : fmt::format("{}: {}", why, tail), true);
  result.metrics = output.last;
  return result;
}

// nullopt: every output stored; else the attempt's result.
std::optional<trials::TrialResult> store_outputs(const TrialTask& task,
                                                 const ensemble::BaggingPlan* plan,
                                                 const AttemptOutput& output, Reporter& reporter,
                                                 std::int64_t max_folder_bytes) {
  const auto& recipe = task.spec->trial.command;
  auto outputs =
      collect_outputs(output_dir(task.work_dir), recipe.data ? &*recipe.data : nullptr, plan);
  if (!outputs) {
    auto failed = failed_result(outputs.error().message, false);
    failed.metrics = output.metrics();
    return failed;
  }
  for (const auto& note : outputs->notes) reporter.log(note);
  for (const auto& [name, bytes] : outputs->artifacts)
    if (auto st = reporter.put_artifact(name, bytes); !st)
      return failed_result(fmt::format("storing {} failed: {}", name, st.error().message),
                           store_failure_retryable(st.error()));
  // A subfolder (a TensorBoard run) whole, as a tar archive, streamed; one
  // that cannot be packed (too many files, a path too long) is left out, said in the log.
  for (const auto& folder : outputs->folders) {
    const std::string name = trials::artifact::kOutputPrefix + folder + ".tar";
    const std::string what = "HPO_OUTPUT_DIR/" + folder;
    auto [st, unpackable, stats] = put_packed_folder(reporter, name, [&](ByteSink& out) {
      return tar_dir(output_dir(task.work_dir) + "/" + folder, out, what.c_str(), max_folder_bytes,
                     "hpo-worker --max-output-folder-mb");
    });
    if (!st && unpackable) {
      reporter.log(fmt::format("[hpo] output {} not kept: {}", folder, st.error().message));
      continue;
    }
    if (!st)
      return failed_result(fmt::format("storing {} failed: {}", name, st.error().message),
                           store_failure_retryable(st.error()));
    for (const auto& s : stats.skipped) reporter.log("[hpo] " + name + " leaves out " + s);
    reporter.log(fmt::format("[hpo] output {} kept as {}: {} files", folder, name, stats.files));
  }
  return std::nullopt;
}

}  // namespace

std::string output_dir(const std::string& work_dir) {
  return (std::filesystem::path(work_dir) / "output").string();
}
std::string checkpoint_dir(const std::string& work_dir) {
  return (std::filesystem::path(work_dir) / "checkpoint").string();
}
std::string tmp_dir(const std::string& work_dir) {
  return (std::filesystem::path(work_dir) / "tmp").string();
}
std::string bagging_file(const std::string& work_dir) {
  return (std::filesystem::path(work_dir) / "bagging.json").string();
}
std::string find_python_lib() {
  return find_beside_binary({"python", "share/hpo/python"}, "hpo/__init__.py");
}

// A trial's seed (HPO_SEED, 0 to 2^31 - 1: what numpy, torch and Python's
// random all take): from the sweep's search.seed and the trial's role and
// number, so every attempt of a trial (a retry) and the same spec submitted
// again draw the same (a Hyperband promotion or a PBT interval is a trial of
// its own, with its own seed); an ensemble member's comes from its member
// seed (each member differs).
std::uint64_t trial_seed(const TrialTask& task) {
  const auto& t = task.trial;
  std::uint64_t key = 0;
  if (t.role == trials::TrialRole::kMember && t.plan.member) {
    key = search::splitmix64(t.plan.member->seed);
  } else {
    const std::uint64_t base = task.spec ? task.spec->search.sampler.seed : 0;
    key = search::hash_key(
        base, static_cast<std::uint64_t>(t.number),
        t.role == trials::TrialRole::kMember ? 0x4D454D424552ULL : 0x545249414CULL);
  }
  return key >> 33;
}

std::vector<std::string> CommandExecutor::child_env(const TrialTask& task) const {
  std::vector<std::pair<std::string, std::string>> vars;
  auto set = [&vars](const std::string& key, std::string value) {
    for (auto& kv : vars)
      if (kv.first == key) {
        kv.second = std::move(value);
        return;
      }
    vars.emplace_back(key, std::move(value));
  };
  std::string parent_visible;
  for (const auto& kv : options_.base_env) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    set(kv.substr(0, eq), kv.substr(eq + 1));
    if (kv.compare(0, eq, "CUDA_VISIBLE_DEVICES") == 0) parent_visible = kv.substr(eq + 1);
  }
  // Python trials deliver each report as they print it, flush or not (the
  // pruner needs them while the trial runs); a spec's own env may say otherwise.
  set("PYTHONUNBUFFERED", "1");
  if (task.spec)
    for (const auto& [k, v] : task.spec->trial.command.env) set(k, v);
  // The hpo library after the user's own folders: a copy of their own wins.
  if (!options_.python_lib.empty()) {
    std::string path = options_.python_lib;
    for (const auto& kv : vars)
      if (kv.first == "PYTHONPATH" && !kv.second.empty()) path = kv.second + ":" + path;
    set("PYTHONPATH", path);
  }
  const auto& t = task.trial;
  set("HPO_PARAMS", trials::params_to_json(t.params));
  set("HPO_TRIAL_ID", t.id);
  set("HPO_SWEEP_ID", t.sweep_id);
  set("HPO_TRIAL_NUMBER", std::to_string(t.number));
  set("HPO_ATTEMPT", std::to_string(t.attempt));
  set("HPO_SEED", std::to_string(trial_seed(task)));
  set("HPO_THREADS", std::to_string(task.threads));
  if (task.identity) {
    // The trial user's own: no home of the worker's, a temporary folder no
    // other trial shares (/tmp is everybody's).
    set("USER", task.identity->user);
    set("LOGNAME", task.identity->user);
    set("HOME", task.work_dir.empty() ? "/" : task.work_dir);
    if (!task.work_dir.empty()) set("TMPDIR", tmp_dir(task.work_dir));
  }
  if (!task.work_dir.empty()) {
    set("HPO_WORK_DIR", task.work_dir);
    set("HPO_OUTPUT_DIR", output_dir(task.work_dir));
    set("HPO_CHECKPOINT_DIR", checkpoint_dir(task.work_dir));
    set("HPO_CONTROL_DIR", control_dir(task.work_dir));
  }
  // A multi-fidelity trial: its rung's budget of the spec's resource (its
  // checkpoint folder holds the rung below's checkpoint when it is a promotion).
  if (const auto& rung = t.plan.lineage; rung && t.role == trials::TrialRole::kTrial) {
    set("HPO_BUDGET", trials::budget_text(rung->budget));
    set("HPO_BUDGET_RESOURCE", rung->resource);
    set("HPO_RUNG", std::to_string(rung->rung));
    if (rung->resume >= 0) set("HPO_RESUME_FROM", trials::resumed_trial_id(t.sweep_id, t.plan));
  }
  if (t.role == trials::TrialRole::kMember && !task.work_dir.empty()) {
    set("HPO_BAGGING_FILE", bagging_file(task.work_dir));
    if (const auto& spec = t.plan.member)
      set("HPO_MEMBER_INDEX", std::to_string(spec->member_index));
  }
  // No devices (a CPU host, or a CPU-only trial): hide every GPU so a trial
  // never lands on a device another attempt holds.
  set("CUDA_VISIBLE_DEVICES", child_visible_devices(task.gpus, parent_visible, task.gpu_ids));
  std::vector<std::string> env;
  env.reserve(vars.size());
  for (auto& [k, v] : vars) env.push_back(k + "=" + v);
  return env;
}

trials::TrialResult CommandExecutor::run(const TrialTask& task, Reporter& reporter) {
  if (!task.spec) return failed_result("no sweep spec", false);
  const std::string& objective = task.spec->objective.metric;
  const double timeout_s = task.spec->trial.timeout_s;

  // The output folder, and a member's bagging plan for the program to read.
  std::optional<ensemble::BaggingPlan> plan;
  if (!task.work_dir.empty()) {
    if (auto failed = prepare_work_dir(task, reporter, plan)) return std::move(*failed);
  }

  // The attempt's folder becomes the trial user's, and only theirs; its own
  // temporary folder is its /tmp when it is confined.
  if ((task.identity || task.confinement) && !task.work_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(tmp_dir(task.work_dir), ec);
    if (auto st = TrialSandbox::hand_over(task.work_dir, task.identity); !st)
      return failed_result(st.error().message, true);
  }

  // The stop's word goes here: a folder of the worker's, made after the
  // hand-over (the program cannot write there) and held open from now on.
  ControlDir control(task.work_dir);
  std::vector<std::string> env = child_env(task);
  if (!control.open())  // no folder, no receipts: a library must not wait for them
    std::erase_if(env, [](const std::string& kv) { return kv.starts_with("HPO_CONTROL_DIR="); });

  SpawnOptions spawn = spawn_options(task, std::move(env), reporter);
  auto child = ChildProcess::spawn(spawn);
  if (!child)
    return failed_result(child.error().message, false);  // a missing program stays missing
  reporter.program_started(child->pid());                // its own process group

  AttemptOutput output{task, reporter, *child, control};
  const StopReason stop = wait_for_exit(output, timeout_s, options_);
  int status = child->exit_status().value_or(0);
  // The trial is over: whatever it left running (a setsid() daemon) ends now,
  // before its outputs are read, so nothing of it can change them meanwhile.
  std::string memory_note;
  if (task.box) {
    task.box->end_all();
    memory_note = task.box->memory_note();
  }

  const auto& last = output.last;
  const auto& final = output.final;
  if (output.checkpoint_error && stop == StopReason::kNone)
    return checkpoint_failure(*output.checkpoint_error, last);
  if (stop != StopReason::kNone) {
    auto result = stopped_result(stop, timeout_s);
    result.metrics = output.metrics();
    if (auto it = last.find(objective); it != last.end()) result.value = it->second;
    return result;
  }
  if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
    return exit_failure(status, task.spec->trial.memory_gb, memory_note, output);
  std::optional<double> value;
  if (final && final->count(objective)) {
    value = final->at(objective);
  } else if (auto it = last.find(objective); it != last.end()) {
    value = it->second;
  } else {
    return failed_result(fmt::format("trial reported no value for metric {}", objective), false);
  }
  // What it wrote: predictions checked against trial.data, other files kept.
  if (!task.work_dir.empty()) {
    if (auto failed = store_outputs(task, plan ? &*plan : nullptr, output, reporter,
                                    options_.max_output_folder_bytes))
      return std::move(*failed);
  }
  trials::TrialResult result;
  result.outcome = trials::TrialState::kCompleted;
  result.value = value;
  result.metrics = output.metrics();
  return result;
}

}  // namespace hpo::workers
