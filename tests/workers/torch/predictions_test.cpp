#include <gtest/gtest.h>

#include "workers/torch/predictions.hpp"

namespace hpo::workers::torch_trainer {
namespace {

TEST(Predictions, RoundTripsAndHasTheDocumentedLayout) {
  PredictionMatrix m;
  m.rows = 2;
  m.cols = 3;
  m.values = {0.1f, 0.2f, 0.7f, 0.5f, 0.25f, 0.25f};
  m.labels = {2, 0};
  m.row_ids = {7, 9};
  auto bytes = encode_predictions(m);
  ASSERT_EQ(bytes.size(), 32u + 6 * 4 + 2 * 4 + 2 * 8);
  EXPECT_EQ(bytes.substr(0, 8), "HPOPRED1");
  auto back = decode_predictions(bytes);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_FALSE(back->regression);
  EXPECT_EQ(back->rows, 2);
  EXPECT_EQ(back->cols, 3);
  EXPECT_EQ(back->values, m.values);
  EXPECT_EQ(back->labels, m.labels);
  EXPECT_EQ(back->row_ids, m.row_ids);
}

TEST(Predictions, RefusesDamagedBytes) {
  PredictionMatrix m;
  m.regression = true;
  m.rows = 1;
  m.cols = 1;
  m.values = {1.5f};
  m.labels = {2.0f};
  m.row_ids = {0};
  auto bytes = encode_predictions(m);
  EXPECT_TRUE(decode_predictions(bytes)->regression);
  EXPECT_FALSE(decode_predictions(bytes.substr(0, bytes.size() - 1)).ok());
  bytes[0] = 'X';
  EXPECT_FALSE(decode_predictions(bytes).ok());
}

}  // namespace
}  // namespace hpo::workers::torch_trainer
