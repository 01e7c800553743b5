// Reading the predictions a user's program writes (trial kind "command"): the
// files in $HPO_OUTPUT_DIR that become the trial's prediction artifacts
// (prediction_file.hpp), checked against the sweep's data description.
//
// CSV (validation.csv, test.csv, oob.csv): a header, then one line per row.
//   classification with K classes:  row_id,target,<K columns: class probabilities>
//   regression:                     row_id,target,<1 column: the predicted value>
// The header's first two names must be `row_id` and `target`; the probability
// columns may be named anything (p0,p1,... or the class names). Row ids are the
// rows' numbers in the user's own validation/test file (0-based), or for oob.csv
// the training-row indices of the member's out-of-bag rows (HPO_BAGGING_FILE);
// any order, each exactly once. Targets are the true class (0..K-1) or value.
//
// NumPy (validation.npy + validation_targets.npy, ...): the values as a float or
// integer array of shape (rows, K) — (rows,) or (rows, 1) for regression — in row
// order (oob: in the order of the plan's oob_rows), the targets as shape (rows,).
//
// Probabilities must lie in [0, 1] and sum to 1 within 0.01 per row (they are
// renormalised); values must be finite. Every error names the file, and for CSV
// the line and column (1-based), the value and what was expected.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "ensemble/prediction_file.hpp"

namespace hpo::ensemble {

struct PredictionShape {
  bool regression = false;
  std::int64_t classes = 0;  // classification: K >= 2
  // The rows expected: ids 0..rows-1 when `row_ids` is empty, else exactly `row_ids`
  // (ascending, distinct; the out-of-bag rows of a member).
  std::int64_t rows = 0;
  std::vector<std::int64_t> row_ids;
  std::string rows_field;  // where `rows` comes from, quoted in a count mismatch
};

// The result is ordered by row id, so two models' files align.
Result<PredictionFile> read_prediction_csv(std::string_view text, const std::string& file,
                                           const PredictionShape& shape);
Result<PredictionFile> read_prediction_npy(std::string_view values, const std::string& values_file,
                                           std::string_view targets,
                                           const std::string& targets_file,
                                           const PredictionShape& shape);

// A NumPy .npy array (format 1.0-3.0, little-endian, C order) as doubles.
struct NpyArray {
  std::vector<std::int64_t> shape;
  std::vector<double> data;
};
Result<NpyArray> read_npy(std::string_view bytes, const std::string& file);

}  // namespace hpo::ensemble
