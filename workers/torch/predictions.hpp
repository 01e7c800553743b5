// The prediction artifacts ("val_predictions", "test_predictions") a torch
// trial stores for the ensemble stage: one matrix of class probabilities (or
// regression values) per data part, with the true labels and the rows' numbers
// in the source file, so members' matrices can be checked for alignment.
//
// Layout (little-endian, no padding), documented in workers/torch/README.md:
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

#include "trials/result.hpp"

namespace hpo::workers::torch_trainer {

struct PredictionMatrix {
  bool regression = false;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<float> values;  // rows * cols
  std::vector<float> labels;  // rows
  std::vector<std::int64_t> row_ids;
};

std::string encode_predictions(const PredictionMatrix& m);
Result<PredictionMatrix> decode_predictions(std::string_view bytes);

}  // namespace hpo::workers::torch_trainer
