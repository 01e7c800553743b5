// Data-parallel trials: k ranks of one trial train on disjoint shards of every
// global batch and keep their models in step through c10d's ProcessGroupGloo
// on CPU, or ProcessGroupNCCL when the ranks run on GPUs and LibTorch has NCCL.
//
// A ParallelGroup is one rank's membership: ranks of one host rendezvous
// through a FileStore (a file all ranks of the attempt can reach) and talk
// over loopback TCP; ranks on several hosts (a gang, trials/placement.hpp)
// through rank 0's c10d TCPStore, whose address the leader publishes in the
// store (Redis), and talk Gloo over TCP between the hosts' addresses (NCCL
// between GPUs). The trainer (trainer.cpp) does the synchronisation:
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
#include <functional>
#include <memory>
#include <string>

#include "core/result.hpp"

namespace hpo::workers::torch_trainer {

struct RankConfig {
  int rank = 0;
  int world = 1;
  // The rendezvous: a FileStore path (a fresh file per attempt, shared by the
  // ranks of one host), or across hosts "tcp://HOST:PORT", rank 0's c10d
  // TCPStore; rank 0 passes "tcp://HOST:0" and starts that store on a free
  // port, which on_store is told ("HOST:PORT") before the group forms.
  std::string store_path;
  bool average = false;                      // parameter averaging instead of gradient all-reduce
  int average_every = 1;                     // H: optimiser steps between averages (mode average)
  std::chrono::milliseconds timeout{60000};  // a collective slower than this fails the attempt
  int gpu = -1;  // this rank's cuda:N: NCCL when LibTorch has it (else Gloo through host memory)
  double bucket_mb = 0.125;  // allreduce: the gradient buckets' size (spec data_parallel.bucket_mb)
  std::string transport = "auto";  // CPU ranks: "shm" / "auto" (shm_allreduce.hpp) or "gloo"
  // This rank's address for Gloo's connections (the host's address the other
  // hosts reach); empty: loopback (all ranks on one host).
  std::string address;
  std::function<void(const std::string&)> on_store;  // rank 0 of a TCPStore: where it listens
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
