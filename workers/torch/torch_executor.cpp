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
#include "workers/torch/torch_executor.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/log.hpp"
#include "trials/artifacts.hpp"
#include "trials/json_limits.hpp"
#include "trials/placement.hpp"
#include "workers/child_process.hpp"
#include "workers/command_executor.hpp"
#include "workers/outcome.hpp"
#include "workers/torch/rank_job.hpp"
#include "workers/torch/trial_setup.hpp"
#include "workers/trial_files.hpp"
#include "workers/trial_sandbox.hpp"

namespace hpo::workers {
namespace {

namespace tt = torch_trainer;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

constexpr double kStopGraceS = 10;
constexpr std::size_t kStderrTail = 1024;

trials::TrialResult failed(std::string error, bool retryable = false) {
  return failed_result(std::move(error), retryable);
}

std::optional<std::string> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// An artifact a training leaves: its bytes (in-process training), or a file
// rank 0 wrote in `dir` (the ranks' folder, the trial user's: read the way
// trial_files.hpp reads, and streamed to the store).
struct TrainedArtifact {
  std::string name;
  std::string bytes;
  fs::path dir;
};

std::vector<TrainedArtifact> in_memory(std::vector<std::pair<std::string, std::string>> named) {
  std::vector<TrainedArtifact> out;
  for (auto& [name, bytes] : named) out.push_back({name, std::move(bytes), {}});
  return out;
}

// Streams the file `name` in `dir` (which the trial user owns) to the store.
Status put_file_artifact(Reporter& reporter, const std::string& name, const fs::path& dir,
                         const std::string& file) {
  return reporter.put_artifact_stream(name, [&](ByteSink& out) -> Status {
    auto opened = open_beneath(dir.string(), file);
    // Not kUnavailable: a link or a missing file is no outage to wait out.
    if (!opened) return Error::invalid((dir / file).string(), opened.error().message);
    auto n = copy_fd(opened->fd(), out, (dir / file).string());
    return n ? Status{} : Status(n.error());
  });
}

// The stored checkpoint streamed into dir/resume.pt for the ranks (false:
// there is none); a part written before an error is removed. `disk_failed`
// tells this host's disk failing (the attempt cannot go on: retried) from
// the store's answer failing (the attempt may start afresh).
Result<bool> write_resume_file(tt::RankJob& job, const fs::path& dir,
                               const std::function<Result<bool>(ByteSink&)>& read,
                               bool& disk_failed) {
  const fs::path path = dir / "resume.pt";
  disk_failed = false;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    disk_failed = true;
    return Error::internal("cannot write " + path.string() + ": " + std::strerror(errno));
  }
  // The file's own failures, told from the store's.
  struct Watched final : ByteSink {
    Watched(int fd, const std::string& what) : file(fd, what) {}
    Status write(std::string_view b) override {
      auto st = file.write(b);
      failed = failed || !st;
      return st;
    }
    FdSink file;
    bool failed = false;
  } out(fd, path.string());
  auto got = read(out);
  const bool closed = ::close(fd) == 0;
  if (!got || !*got || !closed) {
    ::unlink(path.c_str());
    disk_failed = out.failed || !closed;
    if (got && *got) return Error::internal("cannot write " + path.string());
    return got;
  }
  job.resume = path.string();
  return true;
}

// What rank 0 left in the attempt directory: result.json and the artifacts it lists.
struct RankZeroResult {
  tt::TrainOutput out;
  std::vector<TrainedArtifact> artifacts;
  bool retryable = true;
};

RankZeroResult read_rank_zero_result(const fs::path& dir, int k, bool stopped) {
  RankZeroResult r;
  auto text = read_file(dir / "result.json");
  auto result = text ? tt::decode_rank_result(*text) : Result<tt::RankResult>(Error::not_found(""));
  if (!result) {
    r.out.end = stopped ? tt::TrainOutput::End::kStopped : tt::TrainOutput::End::kFailed;
    r.out.error = fmt::format(
        "{} left no result{}",
        k > 1 ? fmt::format("data-parallel rank 0 of {}", k) : std::string("the training process"),
        stopped ? " (stopped)" : "");
    return r;
  }
  r.out.end = tt::end_from_string(result->end);
  r.out.error = result->error;
  if (r.out.end == tt::TrainOutput::End::kFailed && !r.out.error.empty() && k > 1)
    r.out.error = fmt::format("data-parallel rank 0 of {}: {}", k, r.out.error);
  r.retryable = result->retryable;
  r.out.metrics = result->metrics;
  for (const auto& name : result->artifacts) {
    std::error_code ec;
    if (!fs::exists(dir / name,
                    ec)) {  // listed but gone: fail rather than store a trial without it
      r.out.end = tt::TrainOutput::End::kFailed;
      r.out.error =
          fmt::format("data-parallel rank 0 of {} listed artifact {} but left no file", k, name);
      r.artifacts.clear();
      return r;
    }
    r.artifacts.push_back({name, {}, dir});
  }
  return r;
}

// first_step_ms: from the claim (the attempt's started_ms, the store's clock)
// to the trainer's first step (this host's clock; one clock on one host, and
// NTP-close across hosts), in place of the trainer's wall-clock stamp.
void first_step_from_claim(trials::Metrics& metrics, std::int64_t claimed_ms) {
  auto it = metrics.find(tt::kFirstStepUnixMs);
  if (it == metrics.end()) return;
  if (claimed_ms > 0)
    metrics["first_step_ms"] = std::max(0.0, it->second - static_cast<double>(claimed_ms));
  metrics.erase(it);
}

// The trial's result from a finished training and its artifacts.
trials::TrialResult finish(const trials::SweepSpec& spec, tt::TrainOutput out,
                           std::vector<TrainedArtifact> artifacts, bool failure_retryable,
                           std::int64_t claimed_ms, Reporter& reporter) {
  first_step_from_claim(out.metrics, claimed_ms);
  switch (out.end) {
    case tt::TrainOutput::End::kStopped: {
      auto reason = reporter.stop_reason();
      auto r = stopped_result(reason == StopReason::kNone ? StopReason::kPruned : reason,
                              spec.trial.timeout_s);
      r.metrics = out.metrics;
      return r;
    }
    case tt::TrainOutput::End::kDiverged:
    case tt::TrainOutput::End::kFailed: {
      auto r = failed(out.error, failure_retryable && out.end == tt::TrainOutput::End::kFailed);
      r.metrics = out.metrics;
      return r;
    }
    case tt::TrainOutput::End::kCompleted:
      break;
  }
  for (const auto& a : artifacts) {
    if (a.dir.empty() && a.bytes.empty()) continue;
    auto st = a.dir.empty() ? reporter.put_artifact(a.name, a.bytes)
                            : put_file_artifact(reporter, a.name, a.dir, a.name);
    // Too large for a store without an artifact folder stays too large.
    if (!st)
      return failed(fmt::format("storing artifact {}: {}", a.name, st.error().message),
                    /*retryable=*/st.error().code != ErrorCode::kPayloadTooLarge);
  }
  trials::TrialResult r;
  r.outcome = trials::TrialState::kCompleted;
  r.metrics = std::move(out.metrics);
  auto it = r.metrics.find(spec.objective.metric);
  if (it == r.metrics.end()) {
    std::string names;
    for (const auto& [name, v] : r.metrics) names += (names.empty() ? "" : ", ") + name;
    auto f = failed(fmt::format("the objective metric '{}' is not reported by kind torch ({})",
                                spec.objective.metric, names));
    f.metrics = std::move(r.metrics);
    return f;
  }
  r.value = it->second;
  return r;
}

struct RankState {
  std::optional<ChildProcess> process;
  bool done = false;
  TailBuffer stderr_tail{kStderrTail};
};

// The checkpoint an earlier attempt left (nullopt: none, or the store would
// not say: then the attempt starts afresh, which is never wrong).
std::optional<std::string> stored_checkpoint(Reporter& reporter) {
  auto got = reporter.get_artifact(trials::artifact::kCheckpoint);
  if (!got) {
    reporter.log("torch: cannot read the trial's checkpoint (" + got.error().message +
                 "); starting from the first epoch");
    return std::nullopt;
  }
  return std::move(*got);
}

void store_checkpoint(Reporter& reporter, const std::string& bytes, std::int64_t epoch,
                      std::int64_t batch) {
  auto st = reporter.put_artifact(trials::artifact::kCheckpoint, bytes);
  if (!st)
    reporter.log(fmt::format("torch: the checkpoint of epoch {} was not stored: {}", epoch + 1,
                             st.error().message));
  else if (batch > 0)
    reporter.log(fmt::format("torch: checkpoint stored at epoch {}, batch {} ({} bytes)", epoch + 1,
                             batch + 1, bytes.size()));
}

// A checkpoint the store refused: the attempt ends, failed with the reason,
// rather than training on unprotected (not retried when it is too large).
struct CheckpointRefused {
  std::string error;
  bool retryable = true;
};

// Rank 0's stdout line: a report, a checkpoint it left in `dir`, or a log
// line. Returns false when the trial must stop; `refused` is set when a
// checkpoint could not be stored.
bool relay_rank0_line(std::string_view line, Reporter& reporter, const fs::path& dir,
                      std::optional<CheckpointRefused>& refused) {
  if (line.starts_with(kRankCheckpointPrefix)) {
    std::int64_t epoch = 0, batch = 0;
    std::istringstream(std::string(line.substr(kRankCheckpointPrefix.size()))) >> epoch >> batch;
    auto st = put_file_artifact(reporter, trials::artifact::kCheckpoint, dir, kRankCheckpointFile);
    if (!st) {
      const bool too_large = st.error().code == ErrorCode::kPayloadTooLarge;
      refused = CheckpointRefused{
          fmt::format("the checkpoint of epoch {} could not be stored ({}){}", epoch + 1,
                      st.error().message,
                      too_large ? "; a pool with an artifact folder (hpo-scheduler --artifacts "
                                  "DIR) stores checkpoints of any size"
                                : ""),
          !too_large};
      reporter.log("torch: " + refused->error);
      return false;
    }
    if (batch > 0)
      reporter.log(
          fmt::format("torch: checkpoint stored at epoch {}, batch {}", epoch + 1, batch + 1));
    return true;
  }
  if (!line.starts_with(kRankReportPrefix)) {
    reporter.log(line);
    return true;
  }
  const auto body = line.substr(kRankReportPrefix.size());
  if (!trials::check_json_depth(body, "hpo-rank-report")) {
    reporter.log(line);
    return true;
  }
  auto j = Json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("step") || !j.contains("metrics")) {
    reporter.log(line);
    return true;
  }
  trials::Metrics metrics;
  for (auto it = j["metrics"].begin(); it != j["metrics"].end(); ++it)
    if (it->is_number()) metrics[it.key()] = it->get<double>();
  return reporter.report(j["step"].get<std::int64_t>(), metrics);
}

// The ranks' folder (with the job files the worker wrote) becomes the trial
// user's: the attempt's work directory, or the ranks' own folder without one.
Status hand_over_ranks(const std::string& work_dir, const fs::path& ranks_dir,
                       const std::optional<Identity>& who) {
  return TrialSandbox::hand_over(work_dir.empty() ? ranks_dir.string() : work_dir, who);
}

// RLIMIT_DATA of one rank: none where a cgroup holds the attempt (its box) or
// on GPU slots (the CUDA driver maps device memory into the process).
std::int64_t rank_memory_limit(const TrialBox* box, const std::vector<int>& gpus,
                               double memory_gb_per_rank) {
  if ((box && !box->procs_files().empty()) || !gpus.empty()) return 0;
  return memory_limit_bytes(memory_gb_per_rank);
}

// The rank processes this worker runs for one attempt (all of a trial's
// ranks, or a gang's share of them: global ranks first .. first + count - 1
// of world), started from job files, polled in turn and killed together.
// The first rank that exits uncleanly while they are not being stopped is
// the failure; its peers are killed at once (they would only wait for it).
class RankGroup {
 public:
  RankGroup(std::string program, std::vector<std::string> env, fs::path dir,
            std::int64_t memory_limit, int first, int count, int world, double memory_gb_per_rank,
            const TrialBox* box, std::optional<Identity> who)
      : program_(std::move(program)),
        box_(box),
        who_(std::move(who)),
        env_(std::move(env)),
        dir_(std::move(dir)),
        memory_limit_(memory_limit),
        first_(first),
        world_(world),
        memory_gb_per_rank_(memory_gb_per_rank),
        ranks_(static_cast<std::size_t>(std::max(1, count))) {}

  // Starts local rank i on `job_file`: its pid, or nullopt with the failure set.
  std::optional<int> spawn(int i, const fs::path& job_file) {
    SpawnOptions o{{program_, job_file.string(), std::to_string(first_ + i)}, env_, dir_.string()};
    o.memory_limit_bytes = memory_limit_;
    if (box_) o.cgroup_procs = box_->procs_files();
    o.identity = who_;
    auto child = ChildProcess::spawn(o);
    if (!child) {
      fail(fmt::format("data-parallel rank {} of {}: {}", first_ + i, world_,
                       child.error().message));
      return std::nullopt;
    }
    const int pid = child->pid();
    ranks_[static_cast<std::size_t>(i)].process.emplace(std::move(child).value());
    return pid;
  }
  // A process started ahead (a standby) becomes local rank i.
  void adopt(int i, ChildProcess p) {
    ranks_[static_cast<std::size_t>(i)].process.emplace(std::move(p));
  }

  void signal_all(int sig) {
    for (auto& r : ranks_)
      if (r.process && !r.done) r.process->signal_group(sig);
  }
  void kill_all() { signal_all(SIGKILL); }
  // Records the attempt's failure (the first one counts) and kills the ranks.
  void fail(std::string why) {
    if (!failure) failure = std::move(why);
    kill_all();
  }
  int alive() const {
    int n = 0;
    for (const auto& r : ranks_) n += r.process && !r.done;
    return n;
  }

  // One round over the live ranks, each polled for its share of poll_ms: the
  // stdout lines go to on_line(i, line), and after(i, exited) follows each poll.
  template <typename OnLine, typename After>
  void poll_round(int poll_ms, bool stopping, OnLine&& on_line, After&& after) {
    const int wait_ms = std::max(1, poll_ms / std::max(1, alive()));
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
      auto& rank = ranks_[i];
      if (!rank.process || rank.done) continue;
      rank.done = rank.process->poll(wait_ms, [&](Stream s, std::string_view line) {
        if (s == Stream::kStderr) return rank.stderr_tail.add(line);
        on_line(static_cast<int>(i), line);
      });
      if (rank.done) {
        const int status = rank.process->exit_status().value_or(0);
        if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) && !failure && !stopping) {
          std::string why = world_ == 1 ? fmt::format("the training process {}",
                                                      describe_exit(status, memory_gb_per_rank_))
                                        : fmt::format("data-parallel rank {} of {} {}",
                                                      first_ + static_cast<int>(i), world_,
                                                      describe_exit(status, memory_gb_per_rank_));
          if (auto last = rank.stderr_tail.last_line(); !last.empty()) why += ": " + last;
          fail(std::move(why));
        }
      }
      after(static_cast<int>(i), rank.done);
    }
  }

  std::optional<std::string> failure;

 private:
  std::string program_;
  const TrialBox* box_;          // the attempt's cgroups the ranks join (null: none)
  std::optional<Identity> who_;  // whom the ranks run as (nullopt: this process)
  std::vector<std::string> env_;
  fs::path dir_;
  std::int64_t memory_limit_;
  int first_, world_;
  double memory_gb_per_rank_;
  std::vector<RankState> ranks_;
};

// A fresh attempt directory `base`/`name`, removed with its contents when the
// guard goes.
struct AttemptDir {
  fs::path path;
  AttemptDir(const AttemptDir&) = delete;
  AttemptDir& operator=(const AttemptDir&) = delete;
  explicit AttemptDir(fs::path p) : path(std::move(p)) {}
  ~AttemptDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

Status make_attempt_dir(const fs::path& dir) {
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  if (ec)
    return Error::unavailable(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  return Status{};
}

Status write_job(const tt::RankJob& job, const fs::path& file) {
  std::ofstream f(file);
  f << tt::encode_rank_job(job);
  if (!f) return Error::unavailable("cannot write " + file.string());
  return Status{};
}

// What every rank's job holds; the caller adds the store, its address, the
// first rank and the resume point.
tt::RankJob base_job(const trials::SweepSpec& spec, const trials::Trial& trial, int world,
                     int threads, std::vector<int> gpus, const fs::path& dir,
                     const TorchExecutorOptions& options, const tt::DatasetCache& cache,
                     const std::optional<Identity>& who) {
  tt::RankJob job;
  job.spec = spec.source;
  job.trial = trial;
  job.world = world;
  job.threads = threads;
  job.gpus = std::move(gpus);
  job.out = dir.string();
  job.timeout_ms = options.rank_timeout.count();
  job.data_roots = options.data_roots;
  // The host's dataset cache is the worker's: ranks of a trial user neither
  // read nor write it (a table another tenant's trial wrote would be trusted).
  if (!who) job.dataset_cache = cache.disk_dir();
  return job;
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
  bool disk_failed = false;
  auto read_checkpoint = [&](ByteSink& out) {
    return reporter.read_artifact(trials::artifact::kCheckpoint, out);
  };
  if (auto got = write_resume_file(job, dir.path, read_checkpoint, disk_failed); !got) {
    // This host's disk: retried, never a silent fresh start (a gang's
    // followers would resume where rank 0 did not).
    if (disk_failed) return failed(got.error().message, /*retryable=*/true);
    reporter.log("torch: cannot read the trial's checkpoint (" + got.error().message +
                 "); starting from the first epoch");
  }
  if (auto st = write_job(job, dir.path / "job.json"); !st) return failed(st.error().message, true);
  if (auto st = hand_over_ranks(task.work_dir, dir.path, who); !st)
    return failed(st.error().message, true);

  const std::vector<std::string> env = rank_environment(job.threads);
  // A single-rank trial takes a standby process when one with its threads waits.
  const bool standby = k == 1 && options_.standby && options_.standby->threads() == job.threads;
  // A cgroup holds all the ranks together (the box's limit); else a limit per
  // rank, not on GPU slots: the CUDA driver maps device memory into the process.
  const std::int64_t limit = rank_memory_limit(task.box, task.gpus, spec.trial.memory_gb / world);
  RankGroup ranks(*program, env, dir.path, limit, 0, k, world, spec.trial.memory_gb / world,
                  task.box, who);
  auto spawn_rank = [&](int r, const fs::path& job_file) {
    auto pid = ranks.spawn(r, job_file);
    if (pid)
      reporter.log(
          fmt::format("torch: data-parallel rank {} of {} started (pid {})", r, world, *pid));
    return pid.has_value();
  };
  // A gang's rank 0 starts first: its peers here and on the other workers join
  // the store it opens, once its address is known (published for them).
  std::optional<std::string> store_at;
  bool peers_started = false;
  auto start_peers = [&](const std::string& where) {
    if (auto st = reporter.publish_rendezvous(where); !st)
      return ranks.fail("publishing the rendezvous " + where + ": " + st.error().message);
    reporter.log(
        fmt::format("torch: gang of {} ranks ({} here): rank 0's store at {}", world, k, where));
    tt::RankJob peers = job;
    peers.store = "tcp://" + where;
    const fs::path peers_file = dir.path / "job-peers.json";
    if (auto st = write_job(peers, peers_file); !st) return ranks.fail(st.error().message);
    for (int r = 1; r < k && !ranks.failure; ++r) spawn_rank(r, peers_file);
  };
  for (int r = 0; r < (gang ? 1 : k); ++r) {
    if (standby)
      if (auto ready = options_.standby->take(who)) {
        auto given = ready->limit_memory(limit);
        if (given && task.box) given = task.box->adopt(ready->pid());
        if (given) given = ready->write_stdin((dir.path / "job.json").string() + " 0\n");
        if (given) {
          reporter.log(fmt::format("torch: training process started ahead (pid {})", ready->pid()));
          ranks.adopt(0, std::move(*ready));
          continue;
        }
        log_warn("torch: a standby training process could not take its job; starting one",
                 {{"error", given.error().message}});
      }
    if (!spawn_rank(r, dir.path / "job.json")) break;
  }

  // The next trial's process starts now, loading LibTorch while this one sets up: a slot's
  // next claim then finds it ready (one started when this trial ends would still be loading).
  if (standby) options_.standby->refill(*program, env, who);

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
    ranks.signal_all(reporter.stop_reason() == StopReason::kShutdown ? SIGUSR1 : SIGTERM);
    kill_at = kill_at ? std::min(*kill_at, grace()) : grace();
  };
  std::optional<CheckpointRefused> refused;
  while (ranks.alive() > 0) {
    ranks.poll_round(
        options_.poll_ms, stop_sent,
        [&](int r, std::string_view line) {
          if (r != 0) return;
          if (gang && !store_at && line.starts_with(kRankStorePrefix)) {
            store_at = std::string(line.substr(kRankStorePrefix.size()));
            return;
          }
          if (!relay_rank0_line(line, reporter, dir.path, refused)) request_stop();
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

  RankZeroResult r;
  if (ranks.failure) {
    r.out.end = tt::TrainOutput::End::kFailed;
    r.out.error = *ranks.failure;
    if (refused) r.retryable = refused->retryable;
  } else {
    r = read_rank_zero_result(dir.path, world, stop_sent);
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

namespace {
std::int64_t uid_of(const std::optional<Identity>& who) {
  return who ? static_cast<std::int64_t>(who->uid) : -1;
}
}  // namespace

std::optional<ChildProcess> StandbyRanks::take(const std::optional<Identity>& who) {
  std::lock_guard lock(mu_);
  for (auto it = ready_.begin(); it != ready_.end();) {
    if (it->uid != uid_of(who)) {
      ++it;
      continue;
    }
    ChildProcess p = std::move(it->process);
    it = ready_.erase(it);
    // One that has exited (killed meanwhile) is dropped; a waiting one writes nothing.
    if (!p.poll(0, [](Stream, std::string_view) {})) return p;
  }
  return std::nullopt;
}

void StandbyRanks::refill(const std::string& program, const std::vector<std::string>& env,
                          const std::optional<Identity>& who) {
  std::lock_guard lock(mu_);
  const std::size_t want = who ? 1 : size_;
  auto mine = [&] {
    return static_cast<std::size_t>(std::count_if(
        ready_.begin(), ready_.end(), [&](const Waiting& w) { return w.uid == uid_of(who); }));
  };
  // A trial user's replaces the oldest of another user's when the pool is full.
  while (mine() < want) {
    if (ready_.size() >= size_) {
      auto other = std::find_if(ready_.begin(), ready_.end(),
                                [&](const Waiting& w) { return w.uid != uid_of(who); });
      if (other == ready_.end()) return;
      ready_.erase(other);
    }
    SpawnOptions o{{program, "--standby"}, env, fs::temp_directory_path().string()};
    o.stdin_pipe = true;
    o.identity = who;
    auto child = ChildProcess::spawn(o);
    if (!child) {
      log_warn("torch: cannot start a standby training process",
               {{"error", child.error().message}});
      return;
    }
    ready_.push_back({std::move(child).value(), uid_of(who)});
  }
}

std::size_t StandbyRanks::ready() {
  std::lock_guard lock(mu_);
  return ready_.size();
}

}  // namespace hpo::workers
