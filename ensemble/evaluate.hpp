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
#include "trials/spec/recipe/ensemble_recipe.hpp"

namespace hpo::ensemble {

// Every model's predictions on the same rows, a block of rows at a time (the
// test rows, streamed from their files so that no model's are held whole).
class RowBlocks {
 public:
  virtual ~RowBlocks() = default;
  // The next block: per model its predictions on the block's rows (same
  // shape), and the rows' targets. false: no rows left.
  virtual Result<bool> next(std::vector<Matrix>& models, Targets& targets) = 0;
};

// The bagged members' out-of-bag predictions, a range of training rows at a time.
class OobBlocks {
 public:
  virtual ~OobBlocks() = default;
  // The next range of training rows that some member left out: the members'
  // predictions on its rows (MemberOob::rows relative to the range's first
  // row) and one target per row of the range (rows no member predicts may
  // hold anything). false: none left.
  virtual Result<bool> next(std::vector<MemberOob>& members, Targets& targets) = 0;
  // The training rows in all (known once next() returned false).
  virtual std::int64_t rows_total() const = 0;
};

struct EvaluationInput {
  std::vector<Matrix> validation;  // per model, on the validation rows (required)
  Targets validation_targets;
  // Held in memory (tests, small data); the ensemble stage streams them
  // instead through score_rows() and estimate_oob().
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

// A candidate refitted on every validation row: what scores it on other rows.
struct FittedCandidate {
  std::shared_ptr<const Combiner> combiner;
  std::vector<int> inputs;  // the library models it combines, in its member order
};

struct Evaluation {
  std::shared_ptr<Combiner> combiner;  // the chosen candidate, fitted on every validation row
  std::vector<double> weights;         // per model: the chosen candidate's
  std::string method;                  // the chosen candidate's name
  trials::EnsembleRecipe::Combine combine = trials::EnsembleRecipe::Combine::kSoftVote;
  std::optional<StackingModel> stacking;  // method "stacking"
  std::vector<CandidateSummary> candidates;
  std::vector<FittedCandidate> fitted;  // per candidate
  int chosen = 0;                       // index into candidates
  std::vector<std::string> warnings;
  std::vector<MetricSummary> models;  // per model
  int best_model =
      0;  // best single model by validation accuracy (regression: MSE); lowest index on ties
  MetricSummary ensemble;         // the chosen candidate's scores
  std::optional<OobSummary> oob;  // of the bagged combination
};

Result<Evaluation> evaluate_ensemble(const trials::EnsembleRecipe& recipe,
                                     const EvaluationInput& input);

// Scores every model and every candidate on rows that come a block at a time
// (the test rows): sets models[m].test, candidates[c].scores.test and
// ensemble.test, all at the end, so an error (a block whose shape differs)
// leaves `ev` as it was.
Status score_rows(Evaluation& ev, RowBlocks& rows);

// The random-forest out-of-bag estimate of the bagged candidate (fitted on the
// members' validation rows), over training rows that come a range at a time:
// sets `ev.oob`, at the end.
Status estimate_oob(Evaluation& ev, OobBlocks& blocks);

// The rows of predictions held in memory as one block.
class MatrixRowBlocks final : public RowBlocks {
 public:
  MatrixRowBlocks(const std::vector<Matrix>& models, const Targets& targets)
      : models_(models), targets_(targets) {}
  Result<bool> next(std::vector<Matrix>& models, Targets& targets) override;

 private:
  const std::vector<Matrix>& models_;
  const Targets& targets_;
  bool done_ = false;
};

}  // namespace hpo::ensemble
