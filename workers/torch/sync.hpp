// Tensor-level collectives of a data-parallel trial (see data_parallel.hpp).
// Internal to workers/torch: includes <torch/torch.h>.
#pragma once

#include <vector>

#include <torch/torch.h>

#include "workers/torch/data_parallel.hpp"

namespace hpo::workers::torch_trainer {

// What the ranks agreed on in a collective: any rank asked to stop / diverged.
struct SyncFlags {
  bool stop = false;
  bool diverged = false;
};

// Sums every parameter's gradient over the ranks and divides by k (one flat
// buffer, one all-reduce), together with the local flags.
SyncFlags allreduce_gradients(ParallelGroup& group, const std::vector<torch::Tensor>& params,
                              SyncFlags local);

// Replaces the parameters (and buffers: batch-norm statistics) by their mean
// over the ranks, together with the local flags.
SyncFlags average_parameters(ParallelGroup& group, const std::vector<torch::Tensor>& tensors,
                             SyncFlags local);

// Copies rank 0's tensors to every rank (same start for every rank).
void broadcast_from_root(ParallelGroup& group, const std::vector<torch::Tensor>& tensors);

}  // namespace hpo::workers::torch_trainer
