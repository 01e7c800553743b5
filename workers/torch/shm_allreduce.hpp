// All-reduce between the ranks of one host through a shared memory-mapped
// file, for data-parallel trials on CPU. Gloo sends the same bytes through
// loopback TCP and its own threads: on this 2-core machine one all-reduce of
// the mlp's 0.9 MB of gradients took ~3 ms, longer than the step (~1.2 ms);
// here it is a copy, a sum and two barriers.
//
// The file (beside the attempt's FileStore) holds, per rank, an arrival
// counter on its own cache line, an input slot of `capacity` floats, and one
// result area. One call, per chunk of at most `capacity` floats:
//   1. each rank copies its values into its slot; barrier;
//   2. rank r sums its 1/world of the elements over the slots in rank order
//      (the same bits on every rank, whatever the timing) into the result; barrier;
//   3. each rank copies the result back.
// A rank that arrives at the next call has finished reading this one's result,
// and the next sum starts only when all have arrived, so two barriers suffice.
// A barrier spins briefly, then sleeps on a futex; it fails after `timeout`
// (a peer that died: the executor also kills the others at once).
//
// LibTorch-free; no threads.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/result.hpp"

namespace hpo::workers::torch_trainer {

class ShmAllreduce {
 public:
  // Every rank opens the same `path` with the same world and capacity (floats
  // per chunk); the file is created by whichever comes first.
  static Result<std::unique_ptr<ShmAllreduce>> open(const std::string& path, int rank, int world,
                                                    std::size_t capacity,
                                                    std::chrono::milliseconds timeout);
  ~ShmAllreduce();
  ShmAllreduce(const ShmAllreduce&) = delete;
  ShmAllreduce& operator=(const ShmAllreduce&) = delete;

  // Replaces data[0, n) by its sum over the ranks (every rank passes the same n).
  // An error when a peer did not arrive within the timeout.
  Status sum(float* data, std::size_t n);

 private:
  ShmAllreduce() = default;
  Status barrier();

  int rank_ = 0, world_ = 1;
  std::size_t capacity_ = 0;
  std::chrono::milliseconds timeout_{0};
  void* base_ = nullptr;
  std::size_t bytes_ = 0;
  std::uint32_t generation_ = 0;  // barriers passed
};

}  // namespace hpo::workers::torch_trainer
