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
#include <functional>
#include <memory>
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

// Labels as targets: class indices (rounded), or a rows × 1 value matrix.
Targets targets_of(bool regression, const std::vector<float>& labels);

std::string encode_prediction_file(const PredictionFile& file);
// kInvalidArgument naming what is wrong (magic, kind, shape, size).
Result<PredictionFile> decode_prediction_file(std::string_view bytes);

// `size` bytes of a stored file from `offset` into `out` (a file on disk, a
// range of a value in the store).
using ReadAt = std::function<Status(std::int64_t offset, std::int64_t size, char* out)>;

// A prediction file read a block of rows at a time, never whole: its header
// when opened (checked as decode_prediction_file checks it), then the values,
// labels and row ids of any rows, each straight into its own array.
class PredictionFileReader {
 public:
  // `size`: the file's size in bytes; `what` names it in every error.
  static Result<PredictionFileReader> open(ReadAt read, std::int64_t size, std::string what);

  bool regression() const { return regression_; }
  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  const std::string& what() const { return what_; }

  // Rows [first, first + count) (clipped to the file): their values into
  // `values` (reshaped to count × cols), and, where asked, labels and row ids.
  Status read_rows(std::int64_t first, std::int64_t count, Matrix& values,
                   std::vector<float>* labels, std::vector<std::int64_t>* row_ids) const;
  // Every row (what decode_prediction_file returns, without the file's bytes in memory).
  Result<PredictionFile> read_all() const;

 private:
  ReadAt read_;
  std::string what_;
  bool regression_ = false;
  std::int64_t rows_ = 0, cols_ = 0;
};

// A reader of bytes held in memory (tests, small files).
ReadAt read_from(std::shared_ptr<const std::string> bytes);

}  // namespace hpo::ensemble
