// What the torch executor and a data-parallel rank process (hpo-train-rank) do
// alike before and after training: resolve a trial's config from its
// parameters, apply an ensemble member's budget and bagging plan, load the data
// (through the cache), and turn a finished training into the artifacts stored
// with the trial. LibTorch-free header.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "trials/spec/spec.hpp"
#include "trials/trial.hpp"
#include "workers/executor.hpp"
#include "workers/torch/dataset.hpp"
#include "workers/torch/trainer.hpp"

namespace hpo::workers::torch_trainer {

struct TrialSetup {
  trials::ResolvedTorchConfig config;
  PreparedData data;
  TrainOptions options;
  // An ensemble member's plan summary (ensemble/bagging_json.hpp), stored as
  // its "bagging.json" artifact; empty for a search trial.
  std::string plan_summary;
};

// Everything a user can get wrong (a parameter value the recipe cannot use, a
// missing file, a model that does not fit the data) is an error whose message
// is the trial's failure reason; the same attempt would fail again.
// Data paths are confined to `data_roots` first (confine_data_paths; empty: not confined).
Result<TrialSetup> setup_trial(const trials::SweepSpec& spec, const trials::Trial& trial,
                               int threads, int gpu, DatasetCache& cache, Reporter& reporter,
                               const std::vector<std::string>& data_roots = {});

// The artifacts of a completed training, as stored with the trial: "model.pt",
// "val_predictions", "test_predictions" and (members) "oob_predictions"; the
// ones the training did not produce are left out. Moves the model bytes out.
std::vector<std::pair<std::string, std::string>> artifacts_of(TrainOutput& out,
                                                              const std::string& plan_summary = {});

}  // namespace hpo::workers::torch_trainer
