// Executor: runs one attempt of a trial on a worker's slots.
//
// The agent (workers/agent/) claims a trial, picks the executor for its kind
// (command, synthetic, torch) and calls run() on the slot's thread. The
// executor reports intermediate metrics through the Reporter and returns the
// attempt's result; a failing trial is a TrialResult with outcome kFailed, not
// an exception. run() must return promptly (within a second or so) once
// Reporter::should_stop() turns true: pruned, cancelled, timed out or lease lost.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/child_process.hpp"
#include "trials/spec/spec.hpp"
#include "trials/store.hpp"
#include "trials/trial.hpp"

namespace hpo::workers {

// Why a trial must stop, as the Reporter knows it. kShutdown: this worker
// drains or stops; kPreempted: the scheduler takes the slot back (a
// preemption, Control::kRelease). Both keep the trial's progress: a trial
// that checkpoints does so, and the attempt is released, not failed.
enum class StopReason { kNone, kPruned, kCancelled, kTimeout, kLeaseLost, kShutdown, kPreempted };

// A stop after which the trial runs again elsewhere: checkpoint, then stop.
inline bool checkpoint_stop(StopReason r) {
  return r == StopReason::kShutdown || r == StopReason::kPreempted;
}

class Reporter {
 public:
  virtual ~Reporter() = default;
  // Called after each epoch/step with the metrics so far (validation loss,
  // accuracy, ...). Thread: the executor's. Returns false when the trial must stop.
  virtual bool report(std::int64_t step, const trials::Metrics& metrics) = 0;
  // Cheap (an atomic load): checked between batches.
  virtual StopReason stop_reason() const = 0;
  bool should_stop() const { return stop_reason() != StopReason::kNone; }
  // A line of the trial's log (kept as the trial's log tail).
  virtual void log(std::string_view line) = 0;
  // The running program says it checkpoints when asked to stop (a command
  // trial's `hpo-checkpoint-on-stop` line): from now on a drain stops it at
  // once, as trials of an executor that checkpoints() are.
  virtual void checkpoints_on_stop() {}
  // The attempt's program runs as process group `group` (its own): what the
  // worker counts as the attempt's when it measures a shared GPU's use.
  virtual void program_started(long /*group*/) {}
  // Stores a binary artifact (model, predictions) with the trial.
  virtual Status put_artifact(const std::string& name, const std::string& bytes) = 0;
  // An artifact of the trial as stored (by this or an earlier attempt: the
  // checkpoint a retried attempt resumes from); nullopt when there is none.
  virtual Result<std::optional<std::string>> get_artifact(const std::string& name) {
    (void)name;
    return std::optional<std::string>{};
  }
  // The same two streamed, for artifacts of any size (a checkpoint folder, a
  // model file): `produce` writes the bytes in pieces; `out` receives them in
  // pieces (false: none stored; on an error it may hold a part). Without an
  // artifact folder the store keeps at most inline_artifact_limit() bytes.
  virtual Status put_artifact_stream(const std::string& name, const ByteProducer& produce) {
    StringSink bytes(trials::TrialQueue::kDefaultInlineArtifactLimit, "artifact " + name);
    if (auto st = produce(bytes); !st) return st;
    return put_artifact(name, bytes.bytes());
  }
  // The most bytes one artifact may have (0: no limit but the disk's).
  virtual std::int64_t inline_artifact_limit() const {
    return trials::TrialQueue::kDefaultInlineArtifactLimit;
  }
  virtual Result<bool> read_artifact(const std::string& name, ByteSink& out) {
    auto got = get_artifact(name);
    if (!got) return got.error();
    if (!*got) return false;
    if (auto st = out.write(**got); !st) return st.error();
    return true;
  }
  // A gang's leader (rank 0 on this worker): where rank 0's c10d store
  // listens, for the followers' ranks (TrialQueue::publish_rendezvous).
  virtual Status publish_rendezvous(const std::string& address) {
    (void)address;
    return Error::unavailable("this reporter cannot publish a rendezvous");
  }
};

class TrialBox;  // workers/trial_sandbox.hpp

struct TrialTask {
  trials::Trial trial;
  const trials::SweepSpec* spec = nullptr;
  std::vector<int> gpus;  // the devices' GPU ordinals (empty: a CPU attempt)
  // How the trial's CUDA_VISIBLE_DEVICES names each of them: its UUID (a MIG
  // instance's included); empty: by its ordinal (mapped through the worker's own).
  std::vector<std::string> gpu_ids;
  int threads = 1;       // CPU threads this attempt may use
  std::string work_dir;  // a fresh directory for this attempt (see needs_work_dir)
  // This host's address the pool's other hosts reach (the ranks of a gang
  // listen there); empty: loopback only.
  std::string address;
  // Whom the trial's own program runs as (nullopt: this process's user), and
  // the box its processes run in (null: none); both the agent's, for this attempt.
  std::optional<Identity> identity;
  TrialBox* box = nullptr;
  // The namespaces its program runs in (nullopt: the worker's); the executor
  // adds its /tmp folder and what its command names (CommandExecutor).
  std::optional<Confinement> confinement;
};

// A follower's share of a gang trial another worker leads
// (trials/placement.hpp, "Gangs"): ranks first .. first + count - 1 of world.
struct RankTask {
  trials::Trial trial;
  const trials::SweepSpec* spec = nullptr;
  int first = 0;
  int count = 0;
  int world = 0;
  std::vector<int> gpus;             // the devices' GPU ordinals, one per rank (empty on CPU hosts)
  std::vector<std::string> gpu_ids;  // as TrialTask::gpu_ids
  int threads = 1;                   // CPU threads for all of them
  std::string work_dir;
  std::string address;               // as TrialTask::address
  std::optional<Identity> identity;  // as TrialTask::identity
  TrialBox* box = nullptr;           // as TrialTask::box
};

// What a follower's ranks need of the agent while they run.
class RankControl {
 public:
  virtual ~RankControl() = default;
  // The attempt is over (the store's fence, a lost lease) or the worker stops.
  virtual bool should_stop() const = 0;
  // The leader's rendezvous address once it is published.
  virtual Result<std::optional<std::string>> rendezvous() = 0;
  // An artifact of the trial as stored (the checkpoint the attempt resumes
  // from), streamed into `out`; false when there is none.
  virtual Result<bool> read_artifact(const std::string& name, ByteSink& out) = 0;
  virtual void log(std::string_view line) = 0;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual trials::TrialResult run(const TrialTask& task, Reporter& reporter) = 0;
  // False: run() never touches TrialTask::work_dir, and the agent makes none
  // (a directory per attempt costs file-system work cheap trials feel).
  virtual bool needs_work_dir() const { return true; }
  // True: a checkpoint_stop() checkpoints the attempt (kept as
  // artifact "checkpoint", which the next attempt resumes from), so a drain
  // or preemption stops it at once instead of waiting for it to finish.
  virtual bool checkpoints() const { return false; }
  // False: run() starts no process, so the agent gives the attempt no box
  // (TrialTask::box, a cgroup per attempt: file-system work cheap trials feel).
  virtual bool starts_processes() const { return true; }
  // Runs a follower's ranks until they end or control says stop; ok when
  // they ended cleanly. Executors of kinds without gangs refuse.
  virtual Status run_ranks(const RankTask& task, RankControl& control) {
    (void)task;
    (void)control;
    return Error::unavailable("this worker's executor runs no data-parallel ranks");
  }
};

// The executors a worker has, one factory per trial kind (called once per attempt).
using ExecutorFactory = std::function<std::unique_ptr<Executor>()>;
using ExecutorRegistry = std::map<trials::TrialKind, ExecutorFactory>;

}  // namespace hpo::workers
