// TorchExecutor: trial kind "torch" — trains the recipe's model in-process with
// LibTorch (workers/torch/README.md has the recipe format, metrics and artifacts).
//
// One executor serves every slot of a worker process: run() is called from the
// slots' threads concurrently and shares only the dataset cache (thread-safe),
// so files are read once per process, not once per trial.
#pragma once

#include <memory>

#include "workers/executor.hpp"
#include "workers/torch/dataset.hpp"

namespace hpo::workers {

class TorchExecutor : public Executor {
 public:
  TorchExecutor();
  explicit TorchExecutor(std::shared_ptr<torch_trainer::DatasetCache> cache);

  // Resolves the trial's config from its params, loads the data (cached), trains
  // (ensemble members on their bagging plan, from the trial's `extra`), stores
  // "model.pt", "val_predictions" and "test_predictions" (members also
  // "oob_predictions", their out-of-bag training rows) through the reporter.
  // Bad configs, data errors and NaN losses fail the trial without a retry.
  trials::TrialResult run(const TrialTask& task, Reporter& reporter) override;

  const torch_trainer::DatasetCache& cache() const { return *cache_; }

 private:
  std::shared_ptr<torch_trainer::DatasetCache> cache_;
};

}  // namespace hpo::workers
