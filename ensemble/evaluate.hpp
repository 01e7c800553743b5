// One call for the ensemble stage's arithmetic: fit the recipe's combiner on the
// validation predictions, then score every model, the best single one and the
// ensemble on validation and test, and the ensemble's out-of-bag estimate.
//
// The scheduler gathers the predictions (from the members' reports) and calls
// this once; what comes back goes into the manifest and the sweep's record, so
// the scheduler holds no ensemble arithmetic of its own.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "core/result.hpp"
#include "ensemble/combiners.hpp"
#include "ensemble/manifest.hpp"
#include "ensemble/metrics.hpp"
#include "trials/recipe/ensemble_recipe.hpp"

namespace hpo::ensemble {

struct EvaluationInput {
  std::vector<Matrix> validation;  // per model, on the validation rows (required)
  Targets validation_targets;
  std::vector<Matrix> test;  // per model, on the test rows; empty: no test scores
  Targets test_targets;
  std::vector<MemberOob> oob;  // bagged members' OOB predictions; empty: no OOB estimate
  Targets train_targets;       // needed with `oob`
};

struct Evaluation {
  std::unique_ptr<Combiner> combiner;  // fitted
  std::vector<double> weights;         // per model
  std::vector<MetricSummary> models;   // per model
  int best_model =
      0;  // best single model by validation accuracy (regression: MSE); lowest index on ties
  MetricSummary ensemble;
  std::optional<OobSummary> oob;
};

Result<Evaluation> evaluate_ensemble(const trials::EnsembleRecipe& recipe,
                                     const EvaluationInput& input);

}  // namespace hpo::ensemble
