// Plain prediction matrices and targets: what every combiner and metric works on.
//
// A member's predictions for N rows are an N × C matrix: class probabilities
// (C classes, rows summing to 1) for classification, values (C outputs, usually 1)
// for regression. Row-major floats, because that is what a trainer's output
// tensor holds and what a worker writes; accumulation happens in double.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace hpo::ensemble {

struct Matrix {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<float> data;  // rows * cols, row-major

  Matrix() = default;
  Matrix(std::int64_t rows, std::int64_t cols, float fill = 0.0f)
      : rows(rows), cols(cols), data(static_cast<std::size_t>(rows * cols), fill) {}
  // Matrix::from({{0.9, 0.1}, {0.2, 0.8}}); every row must have the same length.
  static Matrix from(std::initializer_list<std::initializer_list<float>> values);

  float* row(std::int64_t r) { return data.data() + r * cols; }
  const float* row(std::int64_t r) const { return data.data() + r * cols; }
  float& operator()(std::int64_t r, std::int64_t c) { return data[r * cols + c]; }
  float operator()(std::int64_t r, std::int64_t c) const { return data[r * cols + c]; }
};

// The index of the largest value of each row; ties go to the lowest index.
std::vector<int> argmax_rows(const Matrix& m);
int argmax(const float* values, std::int64_t n);

// The given rows of `m`, in that order (a fold of a cross-validation).
Matrix take_rows(const Matrix& m, const std::vector<std::int64_t>& rows);

// What the predictions are scored against.
struct Targets {
  enum class Task { kClassification, kRegression };
  Task task = Task::kClassification;
  std::vector<int> labels;  // classification: one class index per row, in [0, cols)
  Matrix values;            // regression: rows × outputs

  static Targets classes(std::vector<int> labels) {
    return {Task::kClassification, std::move(labels), {}};
  }
  static Targets regression(Matrix values) { return {Task::kRegression, {}, std::move(values)}; }
  bool classification() const { return task == Task::kClassification; }
  std::int64_t rows() const {
    return classification() ? static_cast<std::int64_t>(labels.size()) : values.rows;
  }
  // The targets of the given rows, in that order.
  Targets subset(const std::vector<std::int64_t>& rows) const;
};

}  // namespace hpo::ensemble
