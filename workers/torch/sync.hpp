// Tensor-level collectives of a data-parallel trial (see data_parallel.hpp).
// Internal to workers/torch: includes <torch/torch.h>.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "workers/torch/data_parallel.hpp"

namespace hpo::workers::torch_trainer {

// What the ranks agreed on in a collective: any rank asked to stop / diverged.
struct SyncFlags {
  bool stop = false;
  bool diverged = false;
};

// Gradient all-reduce in buckets during the backward pass (mode allreduce).
// The parameters, last first (the order backward produces their gradients),
// are cut into buckets of at most bucket_mb; a hook on each parameter copies
// its gradient into its bucket's buffer, and a bucket whose gradients are all
// there is all-reduced at once, asynchronously, while backward goes on; the
// buckets start in the same order on every rank (Gloo pairs collectives by
// order), a bucket waiting for an earlier one. finish() starts what is left
// (a rank that skipped backward sends zeros), waits, and makes each
// parameter's gradient the mean, a view into its bucket. The flags ride in
// the last bucket.
class GradientReducer {
 public:
  GradientReducer(ParallelGroup& group, const std::vector<torch::Tensor>& params);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Before the step's backward pass: these flags go with its gradients.
  void prepare(SyncFlags local);
  // After it (or instead of it, when the loss is not finite).
  SyncFlags finish();

  // What synchronisation cost the steps so far, on this rank's critical path.
  struct Stats {
    std::int64_t steps = 0;
    double hook_s = 0;    // copying gradients into buckets and starting their all-reduces
    double finish_s = 0;  // waiting for the all-reduces after backward and writing back
  };
  const Stats& stats() const;
  std::size_t buckets() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Replaces the parameters (and buffers: batch-norm statistics) by their mean
// over the ranks, together with the local flags.
SyncFlags average_parameters(ParallelGroup& group, const std::vector<torch::Tensor>& tensors,
                             SyncFlags local);

// Copies rank 0's tensors to every rank (same start for every rank).
void broadcast_from_root(ParallelGroup& group, const std::vector<torch::Tensor>& tensors);

}  // namespace hpo::workers::torch_trainer
