// The ensemble stage's decision: does a combination replace the incumbent?
//
// The incumbent is the sweep's best trial by the user's own objective; it is
// the candidate named best_single and the record's only best single model. A
// combination replaces it only when, on paired per-row differences against it,
// it is better by more than the noise (kNoise = two standard errors of the
// mean difference) both on the cross-validated loss (log-loss, or squared
// error) and on the user's objective as the predictions can score it (an
// accuracy as the error rate, a classification loss as log-loss, regression as
// squared or absolute error). Among those that clear both, the lowest
// cross-validated loss wins.
//
// Three kinds of evidence are not taken at face value:
//   - a candidate whose cross-validated loss is zero, or whose probabilities are
//     degenerate (certain on nearly every row), has a log-loss that says more
//     about clipping than about skill: it must beat the incumbent's error rate
//     by three standard errors instead;
//   - rows a candidate was fitted on (too few validation rows to cross-validate)
//     are no evidence for it;
//   - on a small validation set (under kSmallValidationRows rows), a candidate
//     that fits weights on the rows (selection, stacking) can find a lucky
//     model: it must clear three standard errors.
// A small validation set also hears the out-of-bag rows: the bagged
// combination, scored on the training rows its members left out, against the
// members trained with the incumbent's parameters on the same rows. When the
// incumbent is itself a member (an ensemble-only sweep) that comparison is fair
// and the rows are pooled with the validation rows. Otherwise the incumbent
// saw every training row and feature where those members saw a bootstrap, so
// beating them is necessary but not enough: the out-of-bag rows can only
// overrule the validation rows (the bagged rule must beat the members there
// too), never replace the incumbent by themselves. When nothing clears the bar
// although a candidate scored better, the decision says it could not tell, and
// why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "ensemble/metrics.hpp"
#include "trials/spec/recipe/ensemble_recipe.hpp"

namespace hpo::ensemble {

// The candidates' names (CandidateEvidence::name, CandidateSummary::name, the
// record's `chosen` and the manifest's `method`), spelled as the recipe's
// `choose` names them (trials::to_string(EnsembleRecipe::Choose)).
namespace candidate_name {
inline constexpr std::string_view kBestSingle = "best_single";
inline constexpr std::string_view kBagged = "bagged";
inline constexpr std::string_view kSelection = "selection";
inline constexpr std::string_view kStacking = "stacking";
}  // namespace candidate_name

// Fewer validation rows than this: no cross-validation, candidates compared in-sample.
inline constexpr std::int64_t kMinCrossValidationRows = 20;
// Fewer validation rows than this: the out-of-bag rows are heard too.
inline constexpr std::int64_t kSmallValidationRows = 200;
// The noise: a candidate must be better by this many standard errors.
inline constexpr double kNoise = 2;
// What is not taken at face value must clear this many.
inline constexpr double kDoubtfulNoise = 3;

// The user's objective as a per-row loss on the predictions.
struct ObjectiveLoss {
  Loss loss = Loss::kAuto;  // kError (an accuracy or error rate), kLogLoss, kMse or kMae
  bool stand_in = false;    // the metric has no counterpart in predictions: `loss` stands in
};
// From the objective's metric name: classification "…acc…" or "…err…" is the
// error rate, "…loss…", "…nll…" or "…entropy…" log-loss, anything else the
// error rate standing in; regression is absolute error when the name says
// mae or absolute, else squared error (standing in unless the name says
// mse, rmse, loss or error).
ObjectiveLoss objective_loss(std::string_view metric, bool classification);
// "log_loss", "error_rate", "squared_error", "absolute_error" (kAuto: "loss").
const char* loss_name(Loss loss);

// A candidate's mean per-row advantage over the incumbent (the incumbent's
// loss minus the candidate's: positive is better) and its standard error.
struct Advantage {
  double mean = 0;
  double se = 0;
  std::int64_t rows = 0;
  // Better by more than `k` standard errors.
  bool clears(double k = kNoise) const { return rows > 1 && mean > k * se; }
};

// Paired per-row differences, summed so that blocks of rows (validation,
// then streamed out-of-bag ranges) can be pooled.
class PairedSum {
 public:
  void add(double difference);
  void add(const PairedSum& other);
  Advantage advantage() const;
  std::int64_t rows() const { return n_; }

 private:
  std::int64_t n_ = 0;
  double sum_ = 0, sum_sq_ = 0;
};

// One candidate's evidence against the incumbent (candidate 0).
struct CandidateEvidence {
  std::string name;
  double cv_loss = 0;
  std::string untrusted;  // why its loss is not taken at face value; empty: it is
  bool eligible =
      true;  // false: it cannot replace the incumbent (fitted on the rows it is scored on)
  double bar = kNoise;  // the standard errors it must clear
  // Per row: incumbent's minus the candidate's, over the validation rows
  // (out of fold) and any pooled out-of-bag rows.
  PairedSum loss, objective, error;
  std::int64_t oob_rows = 0;  // of those rows, out-of-bag ones
  // Out-of-bag rows that can only overrule (not pooled): the members trained
  // with the incumbent's parameters' loss minus the candidate's.
  PairedSum oob_loss, oob_objective;
};

struct DecisionInput {
  std::vector<CandidateEvidence> candidates;  // [0]: the incumbent
  ObjectiveLoss objective;
  bool classification = true;
  std::int64_t validation_rows = 0;
  bool cross_validated = true;
  trials::EnsembleRecipe::Choose choose = trials::EnsembleRecipe::Choose::kAuto;
  // The objective's per-row loss is the cross-validated one (log-loss or
  // squared error), not the error rate or the absolute error.
  bool objective_is_loss() const {
    return objective.loss != Loss::kError && objective.loss != Loss::kMae;
  }
};

struct Decision {
  int chosen = 0;      // index into the candidates
  int challenger = 0;  // the candidate compared: the chosen one, else the strongest other (0: none)
  Advantage loss;      // the challenger's, against the incumbent
  Advantage objective;
  double bar = kNoise;        // the standard errors the challenger had to clear
  std::int64_t oob_rows = 0;  // out-of-bag rows heard (pooled, or able to overrule)
  bool decided = true;        // false: the rows could not tell
  std::string reason;         // one sentence: why this candidate
};

// The choice among the candidates, with its evidence. An error only when the
// recipe names a candidate that does not exist (too few rows for it).
Result<Decision> decide(const DecisionInput& input);

}  // namespace hpo::ensemble
