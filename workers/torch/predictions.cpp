// The trainer's prediction artifacts, encoded by the torch-free codec in
// ensemble/prediction_file.cpp (one format, read by the scheduler too).
#include "workers/torch/predictions.hpp"

#include "ensemble/prediction_file.hpp"

namespace hpo::workers::torch_trainer {

std::string encode_predictions(const PredictionMatrix& m) {
  ensemble::PredictionFile f;
  f.regression = m.regression;
  f.values.rows = m.rows;
  f.values.cols = m.cols;
  f.values.data = m.values;
  f.labels = m.labels;
  f.row_ids = m.row_ids;
  return ensemble::encode_prediction_file(f);
}

Result<PredictionMatrix> decode_predictions(std::string_view bytes) {
  auto f = ensemble::decode_prediction_file(bytes);
  if (!f) return f.error();
  PredictionMatrix m;
  m.regression = f->regression;
  m.rows = f->values.rows;
  m.cols = f->values.cols;
  m.values = std::move(f->values.data);
  m.labels = std::move(f->labels);
  m.row_ids = std::move(f->row_ids);
  return m;
}

}  // namespace hpo::workers::torch_trainer
