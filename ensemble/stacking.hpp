// Stacking: a regularised linear meta-model on the models' validation predictions.
//
// Classification: a multinomial logistic meta-model on the models' log-probabilities
// with one coefficient per model and one intercept per class (a learned log-linear
// pool): p_k ∝ exp(b_k + Σ_j w_j · ln max(p_jk, 1e-6)). It can sharpen, temper
// and reweight the models, and has only models + classes parameters, so a few
// hundred validation rows fit it. L2 penalty λ/2·|w|² (intercepts unpenalised),
// minimised by gradient descent with backtracking from w = 1/models.
//
// Regression: ridge regression of the target on the models' predictions with an
// intercept, λ·|w|² scaled by the rows (closed form).
//
// λ is chosen from a small grid by k-fold cross-validation over the validation
// rows (fit_stacking_cv), then the model is refitted on all of them.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/result.hpp"
#include "ensemble/combiners.hpp"
#include "ensemble/matrix.hpp"

namespace hpo::ensemble {

struct StackingModel {
  bool regression = false;
  std::vector<double> coefficients;  // one per model
  std::vector<double> intercept;     // classification: one per class; regression: one per output
  double lambda = 0;
};

inline constexpr double kStackingLogFloor = 1e-6;

Result<StackingModel> fit_stacking(const std::vector<Matrix>& predictions, const Targets& targets,
                                   double lambda);
// Rows of the folds: row r is in fold fold_of[r]; lambdas tried in order, ties to the first.
Result<StackingModel> fit_stacking_cv(const std::vector<Matrix>& predictions,
                                      const Targets& targets, const std::vector<int>& fold_of,
                                      int folds, std::span<const double> lambdas);
// The default grid.
std::span<const double> stacking_lambdas(bool regression);

// A fitted (or loaded) stacking model as a combiner; fit() runs fit_stacking_cv
// with 5 folds over the rows (fixed order: row r in fold r mod 5) unless the
// model was given.
class StackingCombiner final : public Combiner {
 public:
  StackingCombiner() = default;
  explicit StackingCombiner(StackingModel model) : model_(std::move(model)), fitted_(true) {}
  Status fit(const std::vector<Matrix>& validation, const Targets& targets) override;
  bool combine_row(std::span<const float* const> rows, std::span<const int> members,
                   std::int64_t cols, float* out) const override;
  // The coefficients (not normalised: a meta-model's, they need not sum to 1).
  std::vector<double> weights() const override { return model_.coefficients; }
  const StackingModel& model() const { return model_; }

 private:
  StackingModel model_;
  bool fitted_ = false;
};

}  // namespace hpo::ensemble
