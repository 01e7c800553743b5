#include "ensemble/matrix.hpp"

#include <algorithm>
#include <stdexcept>

namespace hpo::ensemble {

Matrix Matrix::from(std::initializer_list<std::initializer_list<float>> values) {
  Matrix m;
  m.rows = static_cast<std::int64_t>(values.size());
  m.cols = values.size() == 0 ? 0 : static_cast<std::int64_t>(values.begin()->size());
  for (const auto& row : values) {
    if (static_cast<std::int64_t>(row.size()) != m.cols)
      throw std::invalid_argument("Matrix::from: rows of different lengths");
    m.data.insert(m.data.end(), row.begin(), row.end());
  }
  return m;
}

int argmax(const float* values, std::int64_t n) {
  return static_cast<int>(std::max_element(values, values + n) - values);  // first of equal maxima
}

std::vector<int> argmax_rows(const Matrix& m) {
  std::vector<int> out(static_cast<std::size_t>(m.rows));
  for (std::int64_t r = 0; r < m.rows; ++r) out[r] = argmax(m.row(r), m.cols);
  return out;
}

Matrix take_rows(const Matrix& m, const std::vector<std::int64_t>& rows) {
  Matrix out(static_cast<std::int64_t>(rows.size()), m.cols);
  for (std::size_t i = 0; i < rows.size(); ++i)
    std::copy(m.row(rows[i]), m.row(rows[i]) + m.cols, out.row(static_cast<std::int64_t>(i)));
  return out;
}

Targets Targets::subset(const std::vector<std::int64_t>& rows) const {
  Targets out;
  out.task = task;
  if (classification()) {
    out.labels.reserve(rows.size());
    for (auto r : rows) out.labels.push_back(labels[r]);
  } else {
    out.values = Matrix(static_cast<std::int64_t>(rows.size()), values.cols);
    for (std::size_t i = 0; i < rows.size(); ++i)
      std::copy_n(values.row(rows[i]), values.cols, out.values.row(static_cast<std::int64_t>(i)));
  }
  return out;
}

}  // namespace hpo::ensemble
