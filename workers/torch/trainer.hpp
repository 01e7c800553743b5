// The training loop of the built-in trainer, behind a LibTorch-free header:
// the executor and the tests call train_model() on prepared data and never
// include <torch/torch.h> themselves.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "trials/spec/recipe/torch_recipe.hpp"
#include "trials/trial.hpp"
#include "workers/executor.hpp"
#include "workers/torch/data_parallel.hpp"
#include "workers/torch/dataset.hpp"
#include "workers/torch/predictions.hpp"

namespace hpo::workers::torch_trainer {

struct TrainOptions {
  int threads = 1;             // intra-op threads (torch::set_num_threads) for this thread
  int gpu = -1;                // cuda:N when >= 0 and LibTorch has CUDA; CPU otherwise
  std::uint64_t seed = 0;      // weights, shuffling, dropout
  bool keep_artifacts = true;  // serialise the model and keep the prediction matrices
  // Stored in model.pt next to the weights, for whoever predicts with it later.
  std::vector<std::int64_t> feature_index;  // the member's feature subset (empty: all)
  std::int64_t input_features = 0;          // features of the input before the subset
  // Checkpoints (trainer.cpp): `resume` is a checkpoint to continue from
  // (empty: start afresh); `checkpoint`, when set, is called with one after
  // every epoch but the last (every rank has the same state to save: rank 0
  // calls it) and, in a single-process training, when a stop with reason
  // kShutdown (drain, preemption) ends it between two batches. A resumed
  // training reaches the metrics of an uninterrupted one, bit for bit on CPU
  // with one thread per process (more threads: as reproducible as an
  // uninterrupted run, whose BLAS thread probe is timed).
  std::string resume;
  std::function<void(const std::string& bytes, std::int64_t epoch, std::int64_t batch)> checkpoint;
  // The last epoch is checkpointed too (a multi-fidelity trial paused at its
  // rung: the promotion resumes it with more epochs).
  bool checkpoint_last = false;
  // Data-parallel: this rank's group (not owned); null for a single process.
  // Rank 0 evaluates, reports and returns the artifacts; other ranks return
  // End::kCompleted with no metrics (and model_bytes, to compare ranks).
  ParallelGroup* group = nullptr;
};

// A completed training's metrics carry the wall-clock time (Unix ms) of its
// first step under this name; the executor turns it into first_step_ms, the
// time from the trial's claim, and drops it.
inline constexpr const char* kFirstStepUnixMs = "first_step_unix_ms";

struct TrainOutput {
  enum class End { kCompleted, kStopped, kDiverged, kFailed };
  End end = End::kCompleted;
  trials::Metrics metrics;  // see README: loss, accuracy, val_*, test_*, rmse, train_*
  std::string error;        // kDiverged / kFailed: why
  std::string model_bytes;  // torch::serialize archive of the module ("model.pt")
  PredictionMatrix val_predictions, test_predictions;
  bool has_test = false;
  PredictionMatrix oob_predictions;  // when data.has_oob: the member's out-of-bag rows
  bool has_oob = false;
};

// An End as text ("completed", "stopped", "diverged", "failed") and back (data-parallel rank 0
// writes it to its result file); text that names no End reads as kFailed.
const char* to_string(TrainOutput::End end);
TrainOutput::End end_from_string(std::string_view text);

// The CPU thread layout of one training, for as long as the object lives.
// An mlp spends its time in GEMMs, which ATen hands to BLAS in one call from
// the training thread: the cores go to OpenBLAS's pool and ATen's own ops stay
// on that thread (1.5-2x the samples/s of the reverse here). A cnn spends it in
// oneDNN convolutions on ATen's OpenMP pool: the cores go to ATen and BLAS keeps
// one thread. Never both at once: two pools spinning on the same cores slow
// each other down (hence OPENBLAS_NUM_THREADS=1 for the Python reference in
// train_bench.sh). OpenBLAS's thread count is process-wide, so it goes above 1
// only while a single training runs in the process; slots training side by side
// have already split the cores between them. No-op for BLAS on a GPU.
// train_model() holds one; public for the benchmark's bare loop.
class ThreadLayout {
 public:
  ThreadLayout(const trials::ResolvedModel& model, int threads, bool on_gpu = false);
  ~ThreadLayout();
  ThreadLayout(const ThreadLayout&) = delete;
  ThreadLayout& operator=(const ThreadLayout&) = delete;

  // Whether this layout gives BLAS more than one thread (an mlp on several CPU threads).
  bool blas_heavy() const { return blas_ > 1; }
  // For this layout's training, BLAS with its threads (true) or with one (false): on a VM whose
  // second vCPU is sometimes an SMT sibling of the first, the helper thread spins without helping
  // and one thread is faster; the trainer times both and keeps the faster (see trainer.cpp).
  // No-op unless this is the only training in the process.
  void use_blas_threads(bool many);

 private:
  int blas_ = 1;
};

// Trains `config` on `data`: reports validation metrics after each epoch
// (step = epoch number, 1-based), checks reporter.should_stop() between batches.
// LibTorch exceptions are caught here and become End::kFailed.
TrainOutput train_model(const trials::ResolvedTorchConfig& config, const PreparedData& data,
                        const TrainOptions& options, Reporter& reporter);

// Whether this LibTorch runs on CUDA devices here (a CUDA build and a driver).
bool cuda_available();

}  // namespace hpo::workers::torch_trainer
