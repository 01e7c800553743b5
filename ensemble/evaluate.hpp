// The ensemble stage's arithmetic: fit the candidates on the validation
// predictions, score every model and candidate on validation and test, the
// bagged combination's out-of-bag estimate, and the choice among them.
//
// The ensemble returned is one of four candidates, never just the bagged one:
//   best_single  the incumbent: the sweep's best trial by the user's objective
//   bagged       the recipe's `combine` rule over the bagged members
//   selection    Caruana's ensemble selection over every model (members and trials)
//   stacking     a regularised linear meta-model (stacking.hpp) over the best
//                kMaxStackingInputs models
// Each is fitted and scored by k-fold cross-validation over the validation rows
// (k = 5; the procedure, e.g. which weights selection picks, is refitted on each
// fold's other rows; the incumbent is fixed). A combination replaces the
// incumbent only when it is better on the cross-validated loss and on the
// user's objective beyond the noise (decision.hpp says exactly when, and what is
// not taken at face value); the winner is refitted on every validation row and
// returned — unless the recipe's `choose` names one.
//
// The steps, for a caller that streams the rows (the ensemble stage):
// evaluate_candidates, then estimate_oob (its evidence counts for a small
// validation set), then choose, then score_rows (the test rows).
// evaluate_ensemble runs them all on rows held in memory.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "ensemble/combiners.hpp"
#include "ensemble/decision.hpp"
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
  // The incumbent (the candidate best_single, the record's best single model):
  // the sweep's best trial by the user's objective. nullopt: the search trial
  // (an ensemble-only sweep: the member) with the lowest validation loss.
  std::optional<std::size_t> incumbent;
  // The user's objective as the predictions score it; Loss::kAuto: the
  // cross-validated loss alone decides.
  ObjectiveLoss objective;
  // Members (indices in [0, member_models)) trained with the incumbent's
  // parameters: on training rows, their out-of-bag predictions stand for it.
  std::vector<int> incumbent_copies;
};

inline constexpr int kCrossValidationFolds = 5;
inline constexpr int kMaxStackingInputs = 16;

struct CandidateSummary {
  std::string name;    // best_single | bagged | selection | stacking
  std::string detail;  // which model, rule or penalty
  bool cross_validated = false;
  // Out-of-fold (or in-sample) validation loss. best_single's is that of the
  // procedure that picks the best search trial on each fold's other rows, not
  // of the incumbent itself (whose rows chose it).
  double cv_loss = 0;
  std::optional<double> cv_accuracy;  // out-of-fold accuracy, classification
  MetricSummary scores;               // refitted on every validation row
  std::string untrusted;              // why its loss is not taken at face value; empty: it is
  std::vector<double> weights;        // per model; stacking: the meta-model's coefficients
};

// A candidate refitted on every validation row: what scores it on other rows.
struct FittedCandidate {
  std::shared_ptr<const Combiner> combiner;
  std::vector<int> inputs;  // the library models it combines, in its member order
};

struct Evaluation {
  std::shared_ptr<const Combiner> combiner;  // the chosen candidate, fitted on every validation row
  std::vector<double> weights;               // per model: the chosen candidate's
  std::string method;                        // the chosen candidate's name
  trials::EnsembleRecipe::Combine combine = trials::EnsembleRecipe::Combine::kSoftVote;
  std::optional<StackingModel> stacking;  // method "stacking"
  std::vector<CandidateSummary> candidates;
  std::vector<FittedCandidate> fitted;  // per candidate
  int chosen = -1;                      // index into candidates; -1 until choose()
  std::vector<std::string> warnings;
  std::vector<MetricSummary> models;  // per model
  int incumbent = 0;                  // the model candidate best_single is
  MetricSummary ensemble;             // the chosen candidate's scores
  std::optional<OobSummary> oob;      // of the bagged combination
  Decision decision;                  // why the chosen candidate
  // The chosen candidate against the incumbent on the test rows, in the
  // objective's per-row loss (positive: better).
  std::optional<Advantage> test_advantage;

  // What choose() weighs: per candidate its evidence against the incumbent.
  std::vector<CandidateEvidence> evidence;
  ObjectiveLoss objective;  // kAuto resolved to the task's loss
  std::vector<int> incumbent_copies;
  bool classification = true;
  std::int64_t validation_rows = 0;
  bool cross_validated = false;
};

// Scores every model and cross-validates every candidate; chooses nothing yet.
Result<Evaluation> evaluate_candidates(const trials::EnsembleRecipe& recipe,
                                       const EvaluationInput& input);

// The random-forest out-of-bag estimate of the bagged candidate (fitted on the
// members' validation rows), over training rows that come a range at a time:
// sets `ev.oob`, at the end. With a small validation set the same rows become
// evidence for the bagged candidate against the members trained with the
// incumbent's parameters. Before choose().
Status estimate_oob(Evaluation& ev, OobBlocks& blocks);

// The decision (decision.hpp): sets chosen, method, weights, combiner, the
// validation scores of the ensemble, decision and warnings.
Status choose(Evaluation& ev, const trials::EnsembleRecipe& recipe);

// Scores every model and every candidate on rows that come a block at a time
// (the test rows): sets models[m].test, candidates[c].scores.test,
// ensemble.test and test_advantage, all at the end, so an error (a block whose
// shape differs) leaves `ev` as it was. After choose().
Status score_rows(Evaluation& ev, RowBlocks& rows);

// Every step on rows held in memory.
Result<Evaluation> evaluate_ensemble(const trials::EnsembleRecipe& recipe,
                                     const EvaluationInput& input);

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
