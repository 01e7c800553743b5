// The prediction artifacts ("val_predictions", "test_predictions") a torch
// trial stores for the ensemble stage: one matrix of class probabilities (or
// regression values) per data part, with the true labels and the rows' numbers
// in the source file, so members' matrices can be checked for alignment.
//
// The format and its codec live in ensemble/prediction_file.hpp (torch-free,
// so the scheduler reads these artifacts without LibTorch); this is the
// trainer's view of it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

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
