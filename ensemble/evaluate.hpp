// One call for the ensemble stage's arithmetic: fit the recipe's combiner on the
// validation predictions, then score every model, the best single one and the
// ensemble on validation and test, and the ensemble's out-of-bag estimate.
//
// The ensemble returned is one of four candidates, never just the bagged one:
//   best_single  the search trial with the lowest validation loss
//   bagged       the recipe's `combine` rule over the bagged members
//   selection    Caruana's ensemble selection over every model (members and trials)
//   stacking     a regularised linear meta-model (stacking.hpp) over the best
//                kMaxStackingInputs models
// Each is fitted and scored by k-fold cross-validation over the validation rows
// (k = 5; the procedure, e.g. which model is best or which weights selection
// picks, is refitted on each fold's other rows). The best single model is the
// best search trial (members only in an ensemble-only sweep), and a combination
// replaces it only when its paired out-of-fold advantage (per-row losses:
// log-loss, or squared error for regression) is more than one standard error;
// among those, the lowest out-of-fold loss wins. The winner is refitted on
// every validation row and returned — unless the recipe's `choose` names one.
// A warning is recorded when the best single model was kept although a
// combination scored a lower loss, when the chosen combination's advantage is
// within two standard errors, or when the rows are too few to cross-validate.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "ensemble/combiners.hpp"
#include "ensemble/manifest.hpp"
#include "ensemble/metrics.hpp"
#include "ensemble/stacking.hpp"
#include "trials/recipe/ensemble_recipe.hpp"

namespace hpo::ensemble {

struct EvaluationInput {
  std::vector<Matrix> validation;  // per model, on the validation rows (required)
  Targets validation_targets;
  std::vector<Matrix> test;  // per model, on the test rows; empty: no test scores
  Targets test_targets;
  std::vector<MemberOob> oob;  // bagged members' OOB predictions; empty: no OOB estimate
  Targets train_targets;       // needed with `oob`
  // Models [0, member_models) are the bagged members, the rest search trials;
  // 0 = every model is a member.
  std::size_t member_models = 0;
  std::uint64_t seed = 0;  // the cross-validation folds' shuffle
};

inline constexpr int kCrossValidationFolds = 5;
inline constexpr int kMaxStackingInputs = 16;
// Fewer validation rows than this: no cross-validation, candidates compared in-sample.
inline constexpr std::int64_t kMinCrossValidationRows = 20;

struct CandidateSummary {
  std::string name;    // best_single | bagged | selection | stacking
  std::string detail;  // which model, rule or penalty
  bool cross_validated = false;
  double cv_loss = 0;                 // out-of-fold (or in-sample) validation loss
  std::optional<double> cv_accuracy;  // out-of-fold accuracy, classification
  MetricSummary scores;               // refitted on every validation row
  std::vector<double> weights;        // per model; stacking: the meta-model's coefficients
};

struct Evaluation {
  std::unique_ptr<Combiner> combiner;  // the chosen candidate, fitted on every validation row
  std::vector<double> weights;         // per model: the chosen candidate's
  std::string method;                  // the chosen candidate's name
  trials::EnsembleRecipe::Combine combine = trials::EnsembleRecipe::Combine::kSoftVote;
  std::optional<StackingModel> stacking;  // method "stacking"
  std::vector<CandidateSummary> candidates;
  int chosen = 0;  // index into candidates
  std::vector<std::string> warnings;
  std::vector<MetricSummary> models;  // per model
  int best_model =
      0;  // best single model by validation accuracy (regression: MSE); lowest index on ties
  MetricSummary ensemble;         // the chosen candidate's scores
  std::optional<OobSummary> oob;  // of the bagged combination
};

Result<Evaluation> evaluate_ensemble(const trials::EnsembleRecipe& recipe,
                                     const EvaluationInput& input);

}  // namespace hpo::ensemble
