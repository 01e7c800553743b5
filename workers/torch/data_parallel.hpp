// Data-parallel trials: k ranks of one trial train on disjoint shards of every
// global batch and keep their models in step through c10d's ProcessGroupGloo
// on CPU, or ProcessGroupNCCL when the ranks run on GPUs and LibTorch has NCCL.
//
// A ParallelGroup is one rank's membership: ranks rendezvous through a
// FileStore (a file all ranks of the attempt can reach, i.e. one host) and talk
// over loopback TCP. The trainer (trainer.cpp) does the synchronisation:
//   allreduce: the gradients are summed and divided by k in buckets of
//              bucket_mb, each all-reduced as soon as the backward pass has
//              produced all of its gradients (GradientReducer, sync.hpp), so
//              the communication of the last layers overlaps the computation
//              of the first ones, as PyTorch's DDP does;
//   average:   every H optimiser steps (and at each epoch end) the parameters are averaged.
// Each collective also carries two flags (stop requested, non-finite loss), so
// when rank 0 is pruned or any rank diverges, every rank stops at the same step
// instead of waiting on a peer that left. CPU ranks sum through shared memory
// (shm_allreduce.hpp) unless transport is "gloo"; the start broadcast is Gloo's. A rank that dies
// makes its peers' next collective fail (connection closed) or time out (`timeout`): the attempt
// fails on every rank within that bound, and the trial is retried.
//
// LibTorch-free header (pimpl); the tensor-level operations are in sync.hpp.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/result.hpp"

namespace hpo::workers::torch_trainer {

struct RankConfig {
  int rank = 0;
  int world = 1;
  std::string store_path;  // FileStore: a fresh file per attempt, shared by the ranks
  bool average = false;    // parameter averaging instead of gradient all-reduce
  int average_every = 1;   // H: optimiser steps between averages (mode average)
  std::chrono::milliseconds timeout{60000};  // a collective slower than this fails the attempt
  int gpu = -1;  // this rank's cuda:N: NCCL when LibTorch has it (else Gloo through host memory)
  double bucket_mb = 0.125;  // allreduce: the gradient buckets' size (spec data_parallel.bucket_mb)
  std::string transport = "auto";  // CPU ranks: "shm" / "auto" (shm_allreduce.hpp) or "gloo"
};

class ParallelGroup {
 public:
  // Blocks until all `world` ranks have joined (or `timeout`).
  static Result<std::unique_ptr<ParallelGroup>> connect(const RankConfig& config);
  ~ParallelGroup();

  const RankConfig& config() const;
  struct Impl;
  Impl& impl() { return *impl_; }
  const Impl& impl() const { return *impl_; }

 private:
  explicit ParallelGroup(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hpo::workers::torch_trainer
