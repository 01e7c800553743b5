// The prediction file's codec, and its reader: any block of rows read through
// ranges of the file is what decoding the whole file gives; a bad header is
// an error naming the file; scores summed over blocks are the whole's.
#include <gtest/gtest.h>

#include <memory>

#include "ensemble/metrics.hpp"
#include "ensemble/prediction_file.hpp"

namespace hpo::ensemble {
namespace {

PredictionFile sample(std::int64_t rows, std::int64_t cols) {
  PredictionFile f;
  f.values = Matrix(rows, cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c)
      f.values(r, c) = static_cast<float>((r * 7 + c * 3) % 11) / 11.0f;
    f.labels.push_back(static_cast<float>(r % cols));
    f.row_ids.push_back(r * 2 + 1);
  }
  return f;
}

TEST(PredictionFileReader, AnyBlockOfRowsIsWhatTheWholeFileDecodesTo) {
  const PredictionFile f = sample(1000, 4);
  auto bytes = std::make_shared<const std::string>(encode_prediction_file(f));
  auto reader = PredictionFileReader::open(
      read_from(bytes), static_cast<std::int64_t>(bytes->size()), "val_predictions of trial t");
  ASSERT_TRUE(reader.ok()) << reader.error().message;
  EXPECT_EQ(reader->rows(), 1000);
  EXPECT_EQ(reader->cols(), 4);
  EXPECT_FALSE(reader->regression());
  for (auto [first, count] : {std::pair<std::int64_t, std::int64_t>{0, 1},
                              {999, 1},
                              {300, 256},
                              {900, 500},
                              {1000, 10}}) {
    Matrix block;
    std::vector<float> labels;
    std::vector<std::int64_t> ids;
    ASSERT_TRUE(reader->read_rows(first, count, block, &labels, &ids).ok());
    const std::int64_t n = std::max<std::int64_t>(0, std::min(count, 1000 - first));
    ASSERT_EQ(block.rows, n);
    ASSERT_EQ(labels.size(), static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t c = 0; c < 4; ++c) EXPECT_EQ(block(i, c), f.values(first + i, c));
      EXPECT_EQ(labels[i], f.labels[first + i]);
      EXPECT_EQ(ids[i], f.row_ids[first + i]);
    }
  }
  auto all = reader->read_all();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->values.data, f.values.data);
  EXPECT_EQ(all->row_ids, f.row_ids);
}

TEST(PredictionFileReader, ABadHeaderIsAnErrorNamingTheFile) {
  const std::string good = encode_prediction_file(sample(10, 2));
  auto open = [](std::string bytes) {
    auto b = std::make_shared<const std::string>(std::move(bytes));
    return PredictionFileReader::open(read_from(b), static_cast<std::int64_t>(b->size()),
                                      "test_predictions of trial t-3");
  };
  for (std::string bad : {std::string("HPOPRED0") + good.substr(8), good.substr(0, good.size() - 1),
                          std::string("short")}) {
    auto r = open(bad);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("test_predictions of trial t-3"), std::string::npos)
        << r.error().message;
  }
}

TEST(ScoreSum, BlocksWeightedByTheirRowsGiveTheWholesScores) {
  const PredictionFile f = sample(1000, 4);
  const Targets all = f.targets();
  ScoreSum sum;
  for (std::int64_t first = 0; first < 1000; first += 300) {
    std::vector<std::int64_t> rows;
    for (std::int64_t r = first; r < std::min<std::int64_t>(first + 300, 1000); ++r)
      rows.push_back(r);
    sum.add(score(take_rows(f.values, rows), all.subset(rows)),
            static_cast<std::int64_t>(rows.size()));
  }
  const Scores whole = score(f.values, all);
  EXPECT_EQ(sum.rows(), 1000);
  EXPECT_NEAR(*sum.mean().accuracy, *whole.accuracy, 1e-12);
  EXPECT_NEAR(*sum.mean().log_loss, *whole.log_loss, 1e-12);
  EXPECT_FALSE(ScoreSum().mean().accuracy.has_value());
}

}  // namespace
}  // namespace hpo::ensemble
