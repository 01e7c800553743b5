// Combiners: M members' predictions (each rows × cols) -> one ensemble prediction (rows × cols).
//
// Lifecycle of a Combiner:
//   fit()          once per ensemble, with every member's validation predictions, before any
//                  combine_row(). Fixed rules (votes, mean, median) only record the member count;
//                  `weighted` derives weights from validation scores; `selection` runs Caruana's
//                  greedy selection. A combiner built with explicit weights needs no fit.
//   combine_row()  for every row of every prediction batch (through combine()), and by the
//                  out-of-bag estimate with only the members that did not train on that row.
//   weights()      when the manifest is written: one weight per member, summing to 1.
// After fit a combiner is immutable; its const methods may be called from several threads.
//
// Ties: a member's class is the argmax of its row, the lowest class index on ties; hard vote
// outputs vote shares (votes / members), and its class is again the lowest index among the
// classes with the most votes. Deterministic, and the same rule argmax_rows() applies everywhere.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "ensemble/matrix.hpp"
#include "ensemble/selection.hpp"
#include "trials/spec/recipe/ensemble_recipe.hpp"

namespace hpo::ensemble {

class Combiner {
 public:
  virtual ~Combiner() = default;

  virtual Status fit(const std::vector<Matrix>& validation, const Targets& targets) = 0;

  // `rows[i]` is the prediction row (`cols` floats) of member `members[i]`; `members` may be any
  // non-empty subset of the fitted members. Writes `cols` floats to `out`. Returns false (and
  // writes nothing) when none of the given members carries weight.
  virtual bool combine_row(std::span<const float* const> rows, std::span<const int> members,
                           std::int64_t cols, float* out) const = 0;

  // One weight per member, summing to 1; empty before fit for the fixed rules.
  virtual std::vector<double> weights() const = 0;
};

// Checks that there is at least one member, that all have the same shape and, when `targets` is
// given, that they match it (rows, labels in [0, cols), regression outputs).
Status check_predictions(const std::vector<Matrix>& predictions, const Targets* targets = nullptr);

// The ensemble prediction of a batch: combine_row() over every row with every member.
Result<Matrix> combine(const Combiner& combiner, const std::vector<Matrix>& predictions);

// Rules that treat every member alike: fit() only checks the shapes and records the count.
class EqualWeightCombiner : public Combiner {
 public:
  Status fit(const std::vector<Matrix>& validation, const Targets& targets) override;
  std::vector<double> weights() const override;

 private:
  std::size_t members_ = 0;
};

// Hard majority vote: vote shares per class (see the tie rule above).
class HardVoteCombiner final : public EqualWeightCombiner {
 public:
  bool combine_row(std::span<const float* const> rows, std::span<const int> members,
                   std::int64_t cols, float* out) const override;
};

// Element-wise median of the members (mean of the two middle values for an even count).
class MedianCombiner final : public EqualWeightCombiner {
 public:
  bool combine_row(std::span<const float* const> rows, std::span<const int> members,
                   std::int64_t cols, float* out) const override;
};

// Weighted mean of the members' rows, renormalised over the members given. What differs between
// the rules is how fit() chooses the weights.
class WeightedMeanCombiner : public Combiner {
 public:
  enum class Rule {
    kUniform,    // soft_vote (mean of probabilities) and mean: equal weights
    kScore,      // weighted: proportional to the validation score (accuracy, or 1 / MSE)
    kSelection,  // selection: Caruana's ensemble selection, weights = pick counts
    kFixed,      // weights given to the constructor (a manifest being loaded); fit() keeps them
  };
  explicit WeightedMeanCombiner(Rule rule, SelectionOptions selection = {});
  explicit WeightedMeanCombiner(std::vector<double> weights);  // kFixed; normalised to sum 1

  Status fit(const std::vector<Matrix>& validation, const Targets& targets) override;
  bool combine_row(std::span<const float* const> rows, std::span<const int> members,
                   std::int64_t cols, float* out) const override;
  std::vector<double> weights() const override { return weights_; }
  // kSelection: the selection's details (picks, per-round loss) after fit.
  const SelectionResult& selection() const { return selection_result_; }

 private:
  Rule rule_;
  SelectionOptions selection_;
  SelectionResult selection_result_;
  std::vector<double> weights_;
};

// Weights proportional to scores (higher_is_better) or to 1 / score (a loss). Non-positive or
// non-finite scores get weight 0; if every weight would be 0 the result is uniform.
std::vector<double> weights_from_scores(const std::vector<double>& scores, bool higher_is_better);

// The combiner a recipe asks for (selection uses recipe.selection_rounds / selection_init).
std::unique_ptr<Combiner> make_combiner(const trials::EnsembleRecipe& recipe);

}  // namespace hpo::ensemble
