// What a command trial hands back besides its metrics: the files it wrote to
// $HPO_OUTPUT_DIR, and for an ensemble member the bagging plan it was given.
//
//   validation.csv | validation.npy + validation_targets.npy   -> val_predictions
//   test.csv       | test.npy + test_targets.npy               -> test_predictions
//   oob.csv        | oob.npy + oob_targets.npy (members)       -> oob_predictions
//   anything else (a model file, a plot)                       -> output.<name>
//   a subfolder (a TensorBoard run)                            -> output.<name>.tar
//
// The prediction files are checked against the sweep's trial.data
// (ensemble/prediction_reader.hpp); a malformed one fails the attempt with the
// file, line and column. Without trial.data every file is simply kept.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "ensemble/bagging.hpp"
#include "trials/spec/spec.hpp"
#include "trials/trial.hpp"

namespace hpo::workers {

// Bounds on what one attempt may leave behind.
inline constexpr std::int64_t kMaxPredictionFileBytes = std::int64_t{512} << 20;
inline constexpr std::int64_t kMaxKeptFileBytes = std::int64_t{64} << 20;
inline constexpr int kMaxKeptFiles = 32;

struct CommandOutputs {
  std::vector<std::pair<std::string, std::string>> artifacts;  // name, bytes
  std::vector<std::string> notes;                              // for the trial's log
  // Subfolders to keep whole, each streamed as the tar artifact output.<name>.tar.
  std::vector<std::string> folders;
};

// `plan`: the member's (its out-of-bag rows are what oob.* must predict); null
// for a search trial. A member must write its validation predictions, and its
// test predictions when trial.data.test_rows > 0.
Result<CommandOutputs> collect_outputs(const std::string& dir, const trials::CommandData* data,
                                       const ensemble::BaggingPlan* plan);

// A member trial's bagging plan for the command's data (nullopt for a search
// trial); the error when its plan has no member spec.
Result<std::optional<ensemble::BaggingPlan>> command_member_plan(const trials::Trial& trial,
                                                                 const trials::CommandData& data);

}  // namespace hpo::workers
