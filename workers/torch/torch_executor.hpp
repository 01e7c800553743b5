// TorchExecutor: trial kind "torch" — trains the recipe's model with LibTorch
// (workers/torch/README.md has the recipe format, metrics and artifacts).
//
// One executor serves every slot of a worker process: run() is called from the
// slots' threads concurrently and shares only the dataset cache (thread-safe),
// so files are read once per process, not once per trial. A data-parallel
// trial runs its k ranks as hpo-train-rank processes (torch_executor.cpp).
#pragma once

#include <chrono>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/child_process.hpp"
#include "workers/executor.hpp"
#include "workers/torch/dataset.hpp"

namespace hpo::workers {

class StandbyRanks;

struct TorchExecutorOptions {
  // The rank program of data-parallel trials. Empty: $HPO_TRAIN_RANK, else
  // hpo-train-rank beside this program, else on PATH.
  std::string rank_program;
  // A collective (or the rendezvous) slower than this fails the attempt.
  std::chrono::milliseconds rank_timeout{60000};
  int poll_ms = 50;  // how often the ranks' pipes and the stop flag are checked
  // Every trial in its own process (an hpo-train-rank of world 1 for a
  // single-replica trial): a trial that exhausts memory or aborts inside
  // LibTorch fails alone. false trains single-replica trials on the calling
  // thread (unit tests of the trainer).
  bool isolate = true;
  // Folders trials may read data from (trials/data_roots.hpp); empty: any.
  // hpo-worker passes its --data-root list (default: the Debian dataset
  // folder and its work dir).
  std::vector<std::string> data_roots;
  // Rank processes started ahead of their trials, shared by the worker's
  // executors; null: each trial starts its own.
  std::shared_ptr<StandbyRanks> standby;
  // OPENBLAS_CORETYPE for the trials' processes ("" none): hpo-worker sets
  // blas_core_override() (blas_core.hpp) when OpenBLAS misjudged the CPU.
  std::string blas_core;
  // Ranks run as the trial's user (TrialTask::identity) when it has one;
  // false: as this process (hpo-worker sets it when the trial users cannot
  // reach the rank program, and says so at start).
  bool ranks_as_trial_user = true;
};

// Single-rank trials' processes, started ahead (hpo-train-rank --standby):
// LibTorch takes ~0.75 s to load in a fresh process, which every trial would
// otherwise wait for between its claim and its first step. Each one still
// runs exactly one trial and exits; the pool keeps up to `size` waiting (one
// per slot), started with `threads` threads, and the executor that takes one
// starts the next at once (it loads while the trial sets up). An idle standby costs its memory
// (LibTorch's libraries, ~100 MB) and no CPU; they die with the worker.
// Thread-safe.
class StandbyRanks {
 public:
  StandbyRanks(std::size_t size, int threads) : size_(size), threads_(threads) {}
  int threads() const { return threads_; }
  // A waiting process started as `who` (nullopt: as this process), or
  // nullopt (none ready, or only ones that have exited).
  std::optional<ChildProcess> take(const std::optional<Identity>& who = std::nullopt);
  // Starts processes as `who` until enough wait (`size` as this process; one
  // per trial user, `size` in all); errors are logged and leave fewer.
  void refill(const std::string& program, const std::vector<std::string>& env,
              const std::optional<Identity>& who = std::nullopt);
  std::size_t ready();

 private:
  struct Waiting {
    ChildProcess process;
    std::int64_t uid;  // -1: this process's
  };
  std::mutex mu_;
  std::size_t size_;
  int threads_;
  std::list<Waiting> ready_;
};

// Rank 0 writes each epoch's report to stdout as this prefix and a JSON object
// {"step": N, "metrics": {...}}.
inline constexpr std::string_view kRankReportPrefix = "hpo-rank-report ";
// ... and this line when it has left a checkpoint in checkpoint.pt of its
// directory: "hpo-rank-checkpoint EPOCH BATCH". SIGUSR1 asks a rank to
// checkpoint and stop (a drain); SIGTERM only to stop.
inline constexpr std::string_view kRankCheckpointPrefix = "hpo-rank-checkpoint ";
inline constexpr char kRankCheckpointFile[] = "checkpoint.pt";
// A gang's rank 0: "hpo-rank-store HOST:PORT", where its c10d TCPStore listens.
inline constexpr std::string_view kRankStorePrefix = "hpo-rank-store ";

class TorchExecutor : public Executor {
 public:
  TorchExecutor();
  explicit TorchExecutor(std::shared_ptr<torch_trainer::DatasetCache> cache,
                         TorchExecutorOptions options = {});

  // Resolves the trial's config from its params, loads the data (cached), trains
  // (ensemble members on their bagging plan, from the trial's `extra`), stores
  // "model.pt", "val_predictions" and "test_predictions" (members also
  // "oob_predictions", their out-of-bag training rows) through the reporter.
  // Bad configs, data errors and NaN losses fail the trial without a retry; a
  // lost data-parallel rank fails it with a retry.
  trials::TrialResult run(const TrialTask& task, Reporter& reporter) override;
  // After every epoch but the last, and when a drain or a preemption stops it
  // (checkpoint_stop()), the trainer's state is stored as artifact
  // "checkpoint"; an attempt that finds one resumes from it.
  bool checkpoints() const override { return true; }
  // A gang follower's ranks: they join the leader's rendezvous once it is
  // published, start from the trial's checkpoint when it has one, and stop
  // when control says so or any of them fails (then all of them).
  Status run_ranks(const RankTask& task, RankControl& control) override;

  const torch_trainer::DatasetCache& cache() const { return *cache_; }

  // Fills options.standby (no-op without one or without the rank program).
  void prestart();
  // The rank program: $HPO_TRAIN_RANK, else hpo-train-rank beside this program, else on PATH.
  Result<std::string> rank_program() const;

 private:
  trials::TrialResult run_parallel(const TrialTask& task, Reporter& reporter);
  std::vector<std::string> rank_environment(int threads) const;
  // Whom a trial's ranks run as: its user, unless options say the worker.
  std::optional<Identity> ranks_identity(const std::optional<Identity>& trial) const;

  std::shared_ptr<torch_trainer::DatasetCache> cache_;
  TorchExecutorOptions options_;
};

}  // namespace hpo::workers
