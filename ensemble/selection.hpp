// Ensemble selection (Caruana, Niculescu-Mizil, Crew, Ksikes, ICML 2004).
//
// Greedy forward selection with replacement from a library of models (every
// model the sweep trained: search trials and bagged members), on validation
// predictions: start from the `init` individually best models, then add, each
// round, the model whose inclusion gives the lowest validation loss of the
// averaged prediction. Picking a model again raises its weight, which is how
// selection with replacement reaches weightings a plain subset cannot. The
// ensemble kept is the prefix of picks with the lowest loss (the paper's guard
// against the late rounds overfitting the validation set). Ties go to the lowest
// model index, so a selection is a pure function of its inputs.
#pragma once

#include <vector>

#include "core/result.hpp"
#include "ensemble/matrix.hpp"
#include "ensemble/metrics.hpp"

namespace hpo::ensemble {

struct SelectionOptions {
  int rounds = 50;          // picks in total (including the init ones)
  int init = 1;             // start from the N individually best models (sorted initialisation)
  Loss loss = Loss::kAuto;  // minimised on the validation predictions
  bool best_prefix = true;  // keep the prefix of picks with the lowest loss, not all rounds
};

struct SelectionResult {
  std::vector<int> picks;             // model indices in pick order (the kept prefix)
  std::vector<int> counts;            // per model: times picked in the kept prefix
  std::vector<double> weights;        // counts / picks.size()
  std::vector<double> loss_by_round;  // validation loss after each of the `rounds` picks
  double loss = 0;                    // validation loss of the kept ensemble
};

// `validation[m]` is model m's prediction of the validation rows. Errors: no models, shapes that
// differ or do not match the targets, rounds < 1.
Result<SelectionResult> ensemble_selection(const std::vector<Matrix>& validation,
                                           const Targets& targets, const SelectionOptions& options);

}  // namespace hpo::ensemble
