// Every rule works row by row on pointers into the members' matrices, so a batch
// (combine()) and the out-of-bag estimate (a different member subset per row)
// share one code path and nothing is copied per member.
#include "ensemble/combiners.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace hpo::ensemble {

namespace {

std::string at(std::size_t i) {
  return "predictions[" + std::to_string(i) + "]";
}

std::vector<double> uniform(std::size_t n) {
  return std::vector<double>(n, n == 0 ? 0.0 : 1.0 / static_cast<double>(n));
}

}  // namespace

Status check_predictions(const std::vector<Matrix>& predictions, const Targets* targets) {
  if (predictions.empty()) return Error::invalid("predictions", "expected at least one member");
  const Matrix& first = predictions.front();
  for (std::size_t i = 0; i < predictions.size(); ++i) {
    const Matrix& p = predictions[i];
    if (p.data.size() != static_cast<std::size_t>(p.rows * p.cols))
      return Error::invalid(at(i), "data size is not rows * cols");
    if (p.rows != first.rows || p.cols != first.cols)
      return Error::invalid(at(i), "shape " + std::to_string(p.rows) + "x" +
                                       std::to_string(p.cols) + " differs from member 0's " +
                                       std::to_string(first.rows) + "x" +
                                       std::to_string(first.cols));
  }
  if (first.cols < 1) return Error::invalid(at(0), "expected at least one column");
  if (!targets) return {};
  if (targets->rows() != first.rows)
    return Error::invalid("targets", std::to_string(targets->rows()) + " rows, predictions have " +
                                         std::to_string(first.rows));
  if (targets->classification()) {
    for (int y : targets->labels)
      if (y < 0 || y >= first.cols)
        return Error::invalid("targets", "label " + std::to_string(y) + " outside [0, " +
                                             std::to_string(first.cols) + ")");
  } else if (targets->values.cols != first.cols) {
    return Error::invalid("targets", "regression targets have " +
                                         std::to_string(targets->values.cols) +
                                         " outputs, predictions " + std::to_string(first.cols));
  }
  return {};
}

Result<Matrix> combine(const Combiner& combiner, const std::vector<Matrix>& predictions) {
  if (auto st = check_predictions(predictions); !st.ok()) return st.error();
  auto w = combiner.weights();
  if (!w.empty() && w.size() != predictions.size())
    return Error::invalid("predictions", "the combiner was fitted on " + std::to_string(w.size()) +
                                             " members, got " + std::to_string(predictions.size()));
  const std::int64_t rows = predictions[0].rows, cols = predictions[0].cols;
  Matrix out(rows, cols);
  std::vector<int> members(predictions.size());
  std::iota(members.begin(), members.end(), 0);
  std::vector<const float*> row_ptr(predictions.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::size_t m = 0; m < predictions.size(); ++m) row_ptr[m] = predictions[m].row(r);
    if (!combiner.combine_row(row_ptr, members, cols, out.row(r)))
      return Error::internal("combiner: every member has weight 0");
  }
  return out;
}

// --- equal weights: hard vote, median ----------------------------------------

Status EqualWeightCombiner::fit(const std::vector<Matrix>& validation, const Targets& targets) {
  if (auto st = check_predictions(validation, &targets); !st.ok()) return st;
  members_ = validation.size();
  return {};
}

std::vector<double> EqualWeightCombiner::weights() const {
  return uniform(members_);
}

bool HardVoteCombiner::combine_row(std::span<const float* const> rows, std::span<const int>,
                                   std::int64_t cols, float* out) const {
  if (rows.empty()) return false;
  std::fill(out, out + cols, 0.0f);
  for (const float* row : rows) out[argmax(row, cols)] += 1.0f;
  const float share = 1.0f / static_cast<float>(rows.size());
  for (std::int64_t c = 0; c < cols; ++c) out[c] *= share;
  return true;
}

// --- median ------------------------------------------------------------------

bool MedianCombiner::combine_row(std::span<const float* const> rows, std::span<const int>,
                                 std::int64_t cols, float* out) const {
  if (rows.empty()) return false;
  std::vector<float> column(rows.size());
  const std::size_t mid = rows.size() / 2;
  for (std::int64_t c = 0; c < cols; ++c) {
    for (std::size_t m = 0; m < rows.size(); ++m) column[m] = rows[m][c];
    std::nth_element(column.begin(), column.begin() + mid, column.end());
    float upper = column[mid];
    if (rows.size() % 2 == 1) {
      out[c] = upper;
    } else {
      float lower = *std::max_element(column.begin(), column.begin() + mid);
      out[c] = static_cast<float>((static_cast<double>(lower) + upper) / 2);
    }
  }
  return true;
}

// --- weighted mean (soft vote, mean, weighted, selection) ----------------------

WeightedMeanCombiner::WeightedMeanCombiner(Rule rule, SelectionOptions selection)
    : rule_(rule), selection_(selection) {}

WeightedMeanCombiner::WeightedMeanCombiner(std::vector<double> weights)
    : rule_(Rule::kFixed), weights_(weights_from_scores(weights, /*higher_is_better=*/true)) {}

Status WeightedMeanCombiner::fit(const std::vector<Matrix>& validation, const Targets& targets) {
  if (auto st = check_predictions(validation, &targets); !st.ok()) return st;
  switch (rule_) {
    case Rule::kUniform:
      weights_ = uniform(validation.size());
      break;
    case Rule::kScore: {
      std::vector<double> scores;
      for (const auto& p : validation)
        scores.push_back(targets.classification() ? accuracy(p, targets.labels)
                                                  : mse(p, targets.values));
      weights_ = weights_from_scores(scores, targets.classification());
      break;
    }
    case Rule::kSelection: {
      auto result = ensemble_selection(validation, targets, selection_);
      if (!result.ok()) return result.error();
      selection_result_ = std::move(result).value();
      weights_ = selection_result_.weights;
      break;
    }
    case Rule::kFixed:
      if (weights_.size() != validation.size())
        return Error::invalid("predictions", "expected " + std::to_string(weights_.size()) +
                                                 " members (one per weight), got " +
                                                 std::to_string(validation.size()));
      break;
  }
  return {};
}

bool WeightedMeanCombiner::combine_row(std::span<const float* const> rows,
                                       std::span<const int> members, std::int64_t cols,
                                       float* out) const {
  double total = 0;
  for (std::size_t i = 0; i < rows.size(); ++i)
    total += weights_.empty() ? 1.0 : weights_[members[i]];
  if (!(total > 0)) return false;
  std::fill(out, out + cols, 0.0f);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double w = weights_.empty() ? 1.0 : weights_[members[i]];
    if (w == 0) continue;
    const auto f = static_cast<float>(w / total);
    for (std::int64_t c = 0; c < cols; ++c) out[c] += f * rows[i][c];
  }
  return true;
}

std::vector<double> weights_from_scores(const std::vector<double>& scores, bool higher_is_better) {
  std::vector<double> w(scores.size(), 0.0);
  if (!higher_is_better) {
    // A zero loss is infinitely better than any other: the perfect models share the weight.
    std::size_t perfect = std::count(scores.begin(), scores.end(), 0.0);
    if (perfect > 0) {
      for (std::size_t i = 0; i < scores.size(); ++i)
        w[i] = scores[i] == 0.0 ? 1.0 / static_cast<double>(perfect) : 0.0;
      return w;
    }
  }
  double total = 0;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    const double s = scores[i];
    if (std::isfinite(s) && s > 0) w[i] = higher_is_better ? s : 1.0 / s;
    if (!std::isfinite(w[i])) w[i] = 0;
    total += w[i];
  }
  if (!(total > 0)) return uniform(scores.size());
  for (double& x : w) x /= total;
  return w;
}

std::unique_ptr<Combiner> make_combiner(const trials::EnsembleRecipe& recipe) {
  using C = trials::EnsembleRecipe::Combine;
  using Rule = WeightedMeanCombiner::Rule;
  switch (recipe.combine) {
    case C::kHardVote:
      return std::make_unique<HardVoteCombiner>();
    case C::kMedian:
      return std::make_unique<MedianCombiner>();
    case C::kWeighted:
      return std::make_unique<WeightedMeanCombiner>(Rule::kScore);
    case C::kSelection: {
      SelectionOptions options;
      options.rounds = recipe.selection_rounds;
      options.init = recipe.selection_init;
      return std::make_unique<WeightedMeanCombiner>(Rule::kSelection, options);
    }
    case C::kSoftVote:
    case C::kMean:
      break;
  }
  return std::make_unique<WeightedMeanCombiner>(Rule::kUniform);
}

}  // namespace hpo::ensemble
