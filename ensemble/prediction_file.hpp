// The prediction file a trained model stores for the ensemble stage
// ("val_predictions", "test_predictions" artifacts): one matrix of class
// probabilities (or regression values) for one data part, with the true
// labels and the rows' numbers in the source file, so that models'
// matrices can be checked for alignment before they are combined.
//
// Plain C++ so the scheduler reads what a LibTorch worker wrote without
// linking LibTorch. Layout (little-endian, no padding):
//   0   char[8]  magic "HPOPRED1"
//   8   uint32   kind: 0 = class probabilities, 1 = regression values
//   12  uint32   reserved, 0
//   16  uint64   rows
//   24  uint64   cols (classes; 1 for regression)
//   32  float32  values[rows * cols], row-major
//   ..  float32  labels[rows] (class index or true value)
//   ..  int64    row_ids[rows]
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "ensemble/matrix.hpp"

namespace hpo::ensemble {

struct PredictionFile {
  bool regression = false;
  Matrix values;                      // rows × cols
  std::vector<float> labels;          // rows: class index or true value
  std::vector<std::int64_t> row_ids;  // rows: row number in the source file

  // The labels as targets: class indices, or a rows × 1 value matrix.
  Targets targets() const;
};

std::string encode_prediction_file(const PredictionFile& file);
// kInvalidArgument naming what is wrong (magic, kind, shape, size).
Result<PredictionFile> decode_prediction_file(std::string_view bytes);

}  // namespace hpo::ensemble
