// Ensemble metrics on prediction matrices, and the out-of-bag estimate.
//
// Shapes are checked: a mismatch is a programmer error here (predictions are
// validated once by check_predictions() where they enter), so these functions
// throw std::invalid_argument instead of returning a Result.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/result.hpp"
#include "ensemble/matrix.hpp"

namespace hpo::ensemble {

class Combiner;  // combiners.hpp

// Fraction of rows whose argmax (lowest index on ties) is the label.
double accuracy(const Matrix& probabilities, const std::vector<int>& labels);
// Mean of -ln(p[label]) with p clipped to [kLogLossEps, 1]; natural log, as scikit-learn.
inline constexpr double kLogLossEps = 1e-15;
double log_loss(const Matrix& probabilities, const std::vector<int>& labels);
// Mean over rows and outputs of the squared difference; rmse is its square root.
double mse(const Matrix& predictions, const Matrix& targets);
double rmse(const Matrix& predictions, const Matrix& targets);
// Mean over rows and outputs of the absolute difference.
double mae(const Matrix& predictions, const Matrix& targets);

// The loss a selection or a comparison minimises.
enum class Loss {
  kAuto,  // log-loss for classification, MSE for regression
  kLogLoss,
  kError,  // 1 - accuracy
  kMse,
  kMae,  // mean absolute error (regression)
};
double loss(const Matrix& predictions, const Targets& targets, Loss kind);
// One row's loss: `row` holds `cols` predictions for target row `r`.
double row_loss(const float* row, std::int64_t cols, const Targets& targets, std::int64_t r,
                Loss kind);
// Every row's loss, in order (their mean is loss()).
std::vector<double> row_losses(const Matrix& predictions, const Targets& targets, Loss kind);

// Every metric that applies to the task (the others are empty).
struct Scores {
  std::optional<double> accuracy;
  std::optional<double> log_loss;
  std::optional<double> mse;
  std::optional<double> rmse;
};
Scores score(const Matrix& predictions, const Targets& targets);

// The scores of rows that come a block at a time: every metric is a mean over
// rows (MSE over rows × the same outputs), so the whole is each block's
// score() weighted by its rows.
class ScoreSum {
 public:
  void add(const Scores& block, std::int64_t rows);
  Scores mean() const;  // nothing when no rows came
  std::int64_t rows() const { return rows_; }

 private:
  std::int64_t rows_ = 0;
  double accuracy_ = 0, log_loss_ = 0, mse_ = 0;
  bool classification_ = false;
};

// One member's predictions on its own out-of-bag training rows.
struct MemberOob {
  int member = 0;                  // the member's index among the combiner's members
  std::vector<std::int64_t> rows;  // training row indices (BaggingPlan::oob_rows)
  Matrix predictions;              // rows.size() × cols, row i predicts training row rows[i]
};

// The out-of-bag estimate as a random forest computes it: every training row is
// predicted by combining only the members that did not train on it; the error
// is taken over the rows that had at least one such member.
struct OobEstimate {
  std::int64_t rows_total = 0;     // training rows
  std::int64_t rows_covered = 0;   // rows with at least one out-of-bag member
  std::vector<std::int64_t> rows;  // the covered rows, ascending
  Matrix predictions;              // their combined out-of-bag predictions
  Scores scores;                   // of `predictions` against the covered rows' targets
};
Result<OobEstimate> oob_estimate(const Combiner& combiner, const std::vector<MemberOob>& members,
                                 const Targets& train_targets);

}  // namespace hpo::ensemble
