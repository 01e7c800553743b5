// The torch executor turns one trial into a training run and its outcome into
// a TrialResult. Everything a user can get wrong (a parameter value the recipe
// cannot use, a missing file, a model that does not fit the data, a diverging
// loss) fails the trial without a retry: the same attempt would fail again.
// Only a failure to store the artifacts (Redis away) or a lost data-parallel
// rank is retryable.
//
// Every trial runs in processes of its own: k rank processes of
// hpo-train-rank (rank_main.cpp) for trial.data_parallel.replicas = k, one for
// a single-replica trial, so a trial that exhausts memory (resources.memory_gb
// caps each process's address space) or aborts inside LibTorch fails alone,
// with the signal as its reason, and its co-running trials are untouched
// (TorchExecutorOptions::isolate = false trains on the slot's thread instead,
// for tests). Ranks run one per slot (GPU r of the slots on CUDA, the slots'
// threads divided among them on CPU); several rendezvous through a FileStore
// in the attempt directory and synchronise over c10d Gloo. This thread
// supervises them:
//   rank 0's stdout: `hpo-rank-report {json}` lines become reports, the rest the log;
//   the reporter says stop (pruned, cancelled, timeout, lease lost): SIGTERM to
//     every rank, whose trainers stop together at the next collective; SIGKILL
//     if they have not exited kStopGraceS later;
//   a rank dies (crash, OOM kill, kill -9): SIGKILL to the others at once and a
//     retryable failure naming the rank and its exit; no rank waits on a peer
//     that is gone, so no process group hangs;
//   rank 0 exits: the others get kStopGraceS to follow, then SIGKILL.
// Rank 0 leaves result.json and the artifacts' files in the attempt directory;
// this thread stores them through the reporter as a single-process trial would.
//
// The training's outcome (artifacts, rank 0's result and lines) is
// training_outcome.cpp's; starting the rank processes is rank_group.cpp's.
#include "workers/torch/torch_executor.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/child_process.hpp"
#include "core/log.hpp"
#include "trials/artifacts.hpp"
#include "trials/placement.hpp"
#include "workers/command_executor.hpp"
#include "workers/torch/rank_group.hpp"
#include "workers/torch/rank_job.hpp"
#include "workers/torch/training_outcome.hpp"
#include "workers/torch/trial_setup.hpp"
#include "workers/trial_sandbox.hpp"

namespace hpo::workers {
namespace {

namespace tt = torch_trainer;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using torch_exec::AttemptDir;
using torch_exec::base_job;
using torch_exec::CheckpointRefused;
using torch_exec::failed;
using torch_exec::finish;
using torch_exec::hand_over_ranks;
using torch_exec::in_memory;
using torch_exec::make_attempt_dir;
using torch_exec::rank_memory_limit;
using torch_exec::RankGroup;
using torch_exec::RankZeroResult;
using torch_exec::read_rank_zero_result;
using torch_exec::relay_rank0_line;
using torch_exec::store_checkpoint;
using torch_exec::stored_checkpoint;
using torch_exec::write_job;
using torch_exec::write_resume_file;

constexpr double kStopGraceS = 10;

// The ranks' files in `dir`: resume.pt from the stored checkpoint and
// job.json, then the folder handed to whom the ranks run as. An error is this
// host's (the caller retries the attempt); a checkpoint the store would not
// give only costs a fresh start.
Status write_rank_files(tt::RankJob& job, const fs::path& dir, const std::string& work_dir,
                        const std::optional<Identity>& who, Reporter& reporter) {
  bool disk_failed = false;
  auto read_checkpoint = [&](ByteSink& out) {
    return reporter.read_artifact(trials::artifact::kCheckpoint, out);
  };
  if (auto got = write_resume_file(job, dir, read_checkpoint, disk_failed); !got) {
    // This host's disk: retried, never a silent fresh start (a gang's
    // followers would resume where rank 0 did not).
    if (disk_failed) return got.error();
    reporter.log("torch: cannot read the trial's checkpoint (" + got.error().message +
                 "); starting from the first epoch");
  }
  if (auto st = write_job(job, dir / "job.json"); !st) return st;
  return hand_over_ranks(work_dir, dir, who);
}

// Starts rank r of a trial's `world` on `job_file`, logged: false when it
// could not start (the group's failure says why).
bool spawn_rank(RankGroup& ranks, Reporter& reporter, int r, int world, const fs::path& job_file) {
  auto pid = ranks.spawn(r, job_file);
  if (pid)
    reporter.log(
        fmt::format("torch: data-parallel rank {} of {} started (pid {})", r, world, *pid));
  return pid.has_value();
}

// A process started ahead becomes rank 0 of a single-rank trial: false when
// none waits or the one taken cannot take its job (then the caller starts one).
bool adopt_standby(StandbyRanks& standby, RankGroup& ranks, const std::optional<Identity>& who,
                   std::int64_t limit, TrialBox* box, const fs::path& job_file,
                   Reporter& reporter) {
  auto ready = standby.take(who);
  if (!ready) return false;
  auto given = ready->limit_memory(limit);
  if (given && box) given = box->adopt(ready->pid());
  if (given) given = ready->write_stdin(job_file.string() + " 0\n");
  if (given) {
    reporter.log(fmt::format("torch: training process started ahead (pid {})", ready->pid()));
    ranks.adopt(0, std::move(*ready));
    return true;
  }
  log_warn("torch: a standby training process could not take its job; starting one",
           {{"error", given.error().message}});
  return false;
}

// A gang's rank 0 is up and its store listens at `where`: the rendezvous is
// published for the other workers' ranks, and this worker's other k - 1
// ranks start on a job that names the store.
void start_gang_peers(const std::string& where, const tt::RankJob& job, const fs::path& dir,
                      int world, int k, RankGroup& ranks, Reporter& reporter) {
  if (auto st = reporter.publish_rendezvous(where); !st)
    return ranks.fail("publishing the rendezvous " + where + ": " + st.error().message);
  reporter.log(
      fmt::format("torch: gang of {} ranks ({} here): rank 0's store at {}", world, k, where));
  tt::RankJob peers = job;
  peers.store = "tcp://" + where;
  const fs::path peers_file = dir / "job-peers.json";
  if (auto st = write_job(peers, peers_file); !st) return ranks.fail(st.error().message);
  for (int r = 1; r < k && !ranks.failure; ++r) spawn_rank(ranks, reporter, r, world, peers_file);
}

// How the supervision of a trial's ranks ended.
struct Supervised {
  bool stop_sent = false;                    // the ranks were asked to stop
  std::optional<CheckpointRefused> refused;  // a checkpoint the store would not keep
};

// Until every rank has exited: rank 0's lines relayed (a gang's rank 0 first
// says where its store listens: then start_peers), a stop the reporter asks
// for passed on to the ranks, and SIGKILL kStopGraceS after a stop or after
// rank 0's exit for any rank still running.
Supervised supervise_ranks(RankGroup& ranks, Reporter& reporter, const fs::path& dir, int poll_ms,
                           bool gang, const std::function<void(const std::string&)>& start_peers) {
  bool stop_sent = false;
  std::optional<Clock::time_point> kill_at;
  auto grace = [] {
    return Clock::now() +
           std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kStopGraceS));
  };
  auto request_stop = [&] {
    if (stop_sent) return;
    stop_sent = true;
    // A drain asks for a checkpoint where the training stops (a single rank saves one).
    ranks.signal_all(checkpoint_stop(reporter.stop_reason()) ? SIGUSR1 : SIGTERM);
    kill_at = kill_at ? std::min(*kill_at, grace()) : grace();
  };
  std::optional<CheckpointRefused> refused;
  std::optional<std::string> store_at;
  bool peers_started = false;
  while (ranks.alive() > 0) {
    ranks.poll_round(
        poll_ms, stop_sent,
        [&](int r, std::string_view line) {
          if (r != 0) return;
          if (gang && !store_at && line.starts_with(kRankStorePrefix)) {
            store_at = std::string(line.substr(kRankStorePrefix.size()));
            return;
          }
          if (!relay_rank0_line(line, reporter, dir, refused)) request_stop();
          if (refused && !ranks.failure) ranks.fail(refused->error);
        },
        [&](int r, bool exited) {
          if (r != 0) return;
          if (store_at && !peers_started && !ranks.failure && !stop_sent) {
            peers_started = true;
            start_peers(*store_at);
          }
          // Rank 0 is the last to finish; the others follow at once.
          if (exited && !kill_at) kill_at = grace();
        });
    if (reporter.should_stop()) request_stop();
    if (kill_at && Clock::now() > *kill_at) ranks.kill_all();
  }
  return {stop_sent, std::move(refused)};
}

}  // namespace

TorchExecutor::TorchExecutor() : TorchExecutor(std::make_shared<tt::DatasetCache>()) {}
TorchExecutor::TorchExecutor(std::shared_ptr<tt::DatasetCache> cache, TorchExecutorOptions options)
    : cache_(std::move(cache)), options_(std::move(options)) {}

std::optional<Identity> TorchExecutor::ranks_identity(const std::optional<Identity>& trial) const {
  return options_.ranks_as_trial_user ? trial : std::nullopt;
}

Result<std::string> TorchExecutor::rank_program() const {
  if (!options_.rank_program.empty()) return options_.rank_program;
  if (const char* env = std::getenv("HPO_TRAIN_RANK"); env && *env) return std::string(env);
  std::error_code ec;
  auto self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && fs::exists(self.parent_path() / "hpo-train-rank", ec))
    return (self.parent_path() / "hpo-train-rank").string();
  const char* path = std::getenv("PATH");
  auto found = find_program("hpo-train-rank", path ? path : "");
  if (!found)
    return Error::unavailable(
        "data-parallel trials need hpo-train-rank: not beside this program, not on PATH "
        "(HPO_TRAIN_RANK names it)");
  return found;
}

trials::TrialResult TorchExecutor::run(const TrialTask& task, Reporter& reporter) {
  if (!task.spec || task.spec->trial.kind != trials::TrialKind::kTorch)
    return failed("torch executor: the trial's spec is not of kind torch");
  const auto& spec = *task.spec;
  // A model the store cannot keep (no artifact folder) is not trained: its
  // model.pt would be refused at the end, each attempt again.
  if (auto config = trials::resolve(spec.trial.torch, task.trial.params); config) {
    const double bytes = trials::hidden_parameters(config->model) * 4;
    const std::int64_t limit = reporter.inline_artifact_limit();
    if (limit > 0 && bytes > static_cast<double>(limit))
      return failed(fmt::format(
          "this trial's model weighs about {:.0f} MiB of float32; without an artifact folder the "
          "store keeps at most {} MiB per artifact: start hpo-scheduler with --artifacts DIR, or "
          "keep the swept sizes smaller",
          bytes / 1048576.0, limit >> 20));
  }
  if (spec.trial.data_parallel.replicas > 1 || options_.isolate)
    return run_parallel(task, reporter);

  auto setup =
      tt::setup_trial(spec, task.trial, task.threads, task.gpus.empty() ? -1 : task.gpus.front(),
                      *cache_, reporter, options_.data_roots);
  if (!setup) return failed(setup.error().message);
  reporter.log(fmt::format(
      "torch: {} train / {} validation / {} test rows, {} threads{}", setup->data.train.rows,
      setup->data.validation.rows, setup->data.test.rows, setup->options.threads,
      setup->options.gpu >= 0 ? fmt::format(", gpu {}", setup->options.gpu) : ""));
  if (auto checkpoint = stored_checkpoint(reporter)) setup->options.resume = std::move(*checkpoint);
  setup->options.checkpoint = [&reporter](const std::string& bytes, std::int64_t epoch,
                                          std::int64_t batch) {
    store_checkpoint(reporter, bytes, epoch, batch);
  };
  auto out = tt::train_model(setup->config, setup->data, setup->options, reporter);
  auto artifacts = out.end == tt::TrainOutput::End::kCompleted
                       ? tt::artifacts_of(out, setup->plan_summary)
                       : std::vector<std::pair<std::string, std::string>>{};
  return finish(spec, std::move(out), in_memory(std::move(artifacts)), /*failure_retryable=*/false,
                task.trial.started_ms, reporter);
}

trials::TrialResult TorchExecutor::run_parallel(const TrialTask& task, Reporter& reporter) {
  const auto& spec = *task.spec;
  // A gang (ranks on several workers): this worker runs ranks 0 .. n-1 of world.
  std::optional<trials::GangLayout> gang;
  if (!task.trial.gang.empty()) {
    auto g = trials::gang_from_json(task.trial.gang);
    if (!g) return failed("the claim's gang layout: " + g.error().message, true);
    gang = std::move(*g);
  }
  const int world = gang ? gang->world : spec.trial.data_parallel.replicas;
  const int k = gang ? gang->parts.front().count : world;  // the ranks that run here
  const std::string address = task.address.empty() ? "127.0.0.1" : task.address;
  if (spec.source.empty())
    return failed("data-parallel trial: the sweep spec's JSON text is not available");
  auto program = rank_program();
  if (!program) return failed(program.error().message, /*retryable=*/true);  // another worker may

  const fs::path base = task.work_dir.empty() ? fs::temp_directory_path() : fs::path(task.work_dir);
  const AttemptDir dir(
      base / fmt::format("ranks-{}-{}-{}", task.trial.id, task.trial.attempt, ::getpid()));
  if (auto st = make_attempt_dir(dir.path); !st) return failed(st.error().message, true);

  const std::optional<Identity> who = ranks_identity(task.identity);
  tt::RankJob job = base_job(spec, task.trial, world, std::max(1, task.threads / k), task.gpus,
                             dir.path, options_, *cache_, who);
  job.store = gang ? fmt::format("tcp://{}:0", address) : (dir.path / "c10d-store").string();
  if (gang) job.address = address;
  if (auto st = write_rank_files(job, dir.path, task.work_dir, who, reporter); !st)
    return failed(st.error().message, true);

  const std::vector<std::string> env = rank_environment(job.threads);
  // A single-rank trial takes a standby process when one with its threads waits.
  const bool standby = k == 1 && options_.standby && options_.standby->threads() == job.threads;
  // A cgroup holds all the ranks together (the box's limit); else a limit per
  // rank, not on GPU slots: the CUDA driver maps device memory into the process.
  const std::int64_t limit = rank_memory_limit(task.box, task.gpus, spec.trial.memory_gb / world);
  RankGroup ranks(*program, env, dir.path, limit, 0, k, world, spec.trial.memory_gb / world,
                  task.box, who);
  for (int r = 0; r < (gang ? 1 : k); ++r) {
    if (standby && adopt_standby(*options_.standby, ranks, who, limit, task.box,
                                 dir.path / "job.json", reporter))
      continue;
    if (!spawn_rank(ranks, reporter, r, world, dir.path / "job.json")) break;
  }

  // The next trial's process starts now, loading LibTorch while this one sets up: a slot's
  // next claim then finds it ready (one started when this trial ends would still be loading).
  if (standby) options_.standby->refill(*program, env, who);

  // A gang's rank 0 starts first: its peers here and on the other workers join
  // the store it opens, once its address is known (published for them).
  const Supervised s = supervise_ranks(
      ranks, reporter, dir.path, options_.poll_ms, gang.has_value(), [&](const std::string& where) {
        start_gang_peers(where, job, dir.path, world, k, ranks, reporter);
      });
  RankZeroResult r;
  if (ranks.failure) {
    r.out.end = tt::TrainOutput::End::kFailed;
    r.out.error = *ranks.failure;
    if (s.refused) r.retryable = s.refused->retryable;
  } else {
    r = read_rank_zero_result(dir.path, world, s.stop_sent);
  }
  return finish(spec, std::move(r.out), std::move(r.artifacts), r.retryable, task.trial.started_ms,
                reporter);
}

Status TorchExecutor::run_ranks(const RankTask& task, RankControl& control) {
  if (!task.spec || task.spec->source.empty())
    return Error::invalid("spec", "a gang's ranks need the sweep spec's JSON text");
  const auto& spec = *task.spec;
  auto program = rank_program();
  if (!program) return program.error();
  const std::string tag =
      fmt::format("ranks {}-{} of {}", task.first, task.first + task.count - 1, task.world);
  // The leader publishes its store's address once its rank 0 is up: a short
  // poll of one key (bounded by rank_timeout, and the share's stop flag).
  const auto rendezvous_by = Clock::now() + options_.rank_timeout;
  std::string where;
  for (;;) {
    if (control.should_stop()) return Error::lease_lost(tag + ": stopped before the rendezvous");
    auto got = control.rendezvous();
    if (got && *got) {
      where = **got;
      break;
    }
    if (Clock::now() > rendezvous_by)
      return Error::unavailable(tag + ": the leader published no rendezvous in time");
    std::this_thread::sleep_for(std::chrono::milliseconds(options_.poll_ms));
  }

  const fs::path base = task.work_dir.empty() ? fs::temp_directory_path() : fs::path(task.work_dir);
  const AttemptDir dir(base / fmt::format("gang-{}-{}-{}-{}", task.trial.id, task.trial.attempt,
                                          task.first, ::getpid()));
  if (auto st = make_attempt_dir(dir.path); !st) return st;

  const std::optional<Identity> who = ranks_identity(task.identity);
  tt::RankJob job =
      base_job(spec, task.trial, task.world, std::max(1, task.threads / std::max(1, task.count)),
               task.gpus, dir.path, options_, *cache_, who);
  job.first_rank = task.first;
  job.store = "tcp://" + where;
  job.address = task.address.empty() ? "127.0.0.1" : task.address;
  bool disk_failed = false;
  auto read_checkpoint = [&](ByteSink& out) {
    return control.read_artifact(trials::artifact::kCheckpoint, out);
  };
  if (auto got = write_resume_file(job, dir.path, read_checkpoint, disk_failed); !got) {
    // Rank 0 resumes from what it reads; a rank that started afresh would disagree.
    return Error::unavailable(tag + ": cannot read the trial's checkpoint: " + got.error().message);
  }
  if (auto st = write_job(job, dir.path / "job.json"); !st) return st;
  if (auto st = hand_over_ranks(task.work_dir, dir.path, who); !st) return st;

  const std::int64_t limit =
      rank_memory_limit(task.box, task.gpus, spec.trial.memory_gb / task.world);
  RankGroup ranks(*program, rank_environment(job.threads), dir.path, limit, task.first, task.count,
                  task.world, spec.trial.memory_gb / task.world, task.box, who);
  for (int i = 0; i < task.count; ++i) {
    auto pid = ranks.spawn(i, dir.path / "job.json");
    if (!pid) break;
    control.log(fmt::format("torch: data-parallel rank {} of {} started (pid {}), rendezvous {}",
                            task.first + i, task.world, *pid, where));
  }
  bool stop_sent = false;
  while (ranks.alive() > 0) {
    ranks.poll_round(
        options_.poll_ms, stop_sent, [](int, std::string_view) {}, [](int, bool) {});
    if (!stop_sent && control.should_stop()) {
      // Killed, not asked: a rank asked to stop would stop the whole gang as if
      // rank 0 had been pruned, while a lost peer fails the attempt, which is retried.
      stop_sent = true;
      ranks.kill_all();
    }
  }
  if (ranks.failure) return Error::unavailable(tag + ": " + *ranks.failure);
  if (stop_sent) return Error::lease_lost(tag + ": stopped");
  return Status{};
}

std::vector<std::string> TorchExecutor::rank_environment(int threads) const {
  std::vector<std::string> env;
  for (const auto& kv : trial_environment(current_environment()))
    if (!kv.starts_with("OMP_NUM_THREADS=") && !kv.starts_with("OPENBLAS_NUM_THREADS=") &&
        kv != "OPENBLAS_CORETYPE=")  // set but empty: no choice of the user's
      env.push_back(kv);
  env.push_back(fmt::format("OMP_NUM_THREADS={}", std::max(1, threads)));
  env.push_back("OPENBLAS_NUM_THREADS=1");
  if (!options_.blas_core.empty() &&
      std::none_of(env.begin(), env.end(),
                   [](const std::string& kv) { return kv.starts_with("OPENBLAS_CORETYPE="); }))
    env.push_back("OPENBLAS_CORETYPE=" + options_.blas_core);
  return env;
}

void TorchExecutor::prestart() {
  if (!options_.standby) return;
  auto program = rank_program();
  if (!program) return;
  options_.standby->refill(*program, rank_environment(options_.standby->threads()));
}

}  // namespace hpo::workers
