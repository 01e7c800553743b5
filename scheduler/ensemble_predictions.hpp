// The stored prediction files the ensemble stage reads, kept apart from its
// steps: the validation predictions loaded whole (the combination is fitted on
// them), the test and out-of-bag predictions streamed a block of rows at a time
// (read as ranges of their files, never whole, whatever their size). Internal
// to scheduler/: only ensemble_stage.cpp includes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "ensemble/evaluate.hpp"
#include "ensemble/prediction_file.hpp"
#include "scheduler/sweep_roles.hpp"
#include "trials/store.hpp"
#include "trials/trial.hpp"

namespace hpo::scheduler::ensemble_predictions {

// The test and out-of-bag predictions stream through this many rows of every model at a time.
inline constexpr std::int64_t kStreamRows = 4096;

// One model the ensemble may combine: a completed member or search trial.
struct Model {
  const trials::Trial* trial = nullptr;
  ensemble::PredictionFile validation;
  std::optional<ensemble::PredictionFileReader> test;
};

// A stored prediction file opened for reading a block of rows at a time
// (ranges of the file in the artifact folder, or of its value in Redis).
Result<std::optional<ensemble::PredictionFileReader>> open_predictions(SweepRoles store,
                                                                       const std::string& trial_id,
                                                                       const std::string& name);

// The validation predictions, whole (the combination is fitted on them).
Result<std::optional<ensemble::PredictionFile>> load_predictions(SweepRoles store,
                                                                 const std::string& trial_id,
                                                                 const std::string& name);

// Every model's test predictions, kStreamRows rows at a time; `models` must
// all have test predictions and outlive the result.
std::unique_ptr<ensemble::RowBlocks> stream_test_rows(const std::vector<Model>& models);

// The members' predictions on their own out-of-bag training rows (artifact
// "oob_predictions", rows = BaggingPlan::oob_rows, labels = the rows' true
// targets), for the random-forest OOB estimate, opened for streaming. Used
// only when every member stored them in the validation predictions' shape
// (nullptr otherwise); the training targets come from the files' labels (rows
// no member left out are never scored).
Result<std::unique_ptr<ensemble::OobBlocks>> open_oob(SweepRoles store,
                                                      const std::vector<Model>& models,
                                                      std::size_t member_models, bool regression,
                                                      std::int64_t cols);

}  // namespace hpo::scheduler::ensemble_predictions
