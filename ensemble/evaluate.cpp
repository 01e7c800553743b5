// evaluate_ensemble: score every model, then fit, cross-validate and choose
// among the candidates (see evaluate.hpp). A candidate is a fit procedure: given
// the library's predictions on some rows, it returns a fitted combiner over a
// subset of the models (its inputs); the same procedure serves each fold and the
// final refit on every row.
#include "ensemble/evaluate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ensemble/rng.hpp"

namespace hpo::ensemble {

namespace {

double mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

struct Fitted {
  std::shared_ptr<Combiner> combiner;
  std::vector<int> inputs;  // library models the combiner combines, in its member order
  std::string detail;
};
using FitProcedure = std::function<Result<Fitted>(const std::vector<Matrix>&, const Targets&)>;

Result<Matrix> predict_with(const Fitted& f, const std::vector<Matrix>& library) {
  std::vector<Matrix> in;
  in.reserve(f.inputs.size());
  for (int m : f.inputs) in.push_back(library[static_cast<std::size_t>(m)]);
  return combine(*f.combiner, in);
}

std::vector<int> all_models(std::size_t n) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// Models ordered by their loss on these rows, lowest first (ties: lower index).
std::vector<int> by_loss(const std::vector<Matrix>& library, const Targets& t) {
  std::vector<double> l(library.size());
  for (std::size_t m = 0; m < library.size(); ++m) l[m] = loss(library[m], t, Loss::kAuto);
  auto order = all_models(library.size());
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return l[static_cast<std::size_t>(a)] < l[static_cast<std::size_t>(b)];
  });
  return order;
}

Result<Fitted> fit_on(std::unique_ptr<Combiner> c, std::vector<int> inputs,
                      const std::vector<Matrix>& library, const Targets& t, std::string detail) {
  std::vector<Matrix> in;
  for (int m : inputs) in.push_back(library[static_cast<std::size_t>(m)]);
  if (auto st = c->fit(in, t); !st.ok()) return st.error();
  return Fitted{std::move(c), std::move(inputs), std::move(detail)};
}

// One library model alone, as a candidate's fit.
Result<Fitted> fit_single(int model, const std::vector<Matrix>& library, const Targets& t) {
  return fit_on(std::make_unique<WeightedMeanCombiner>(std::vector<double>{1.0}), {model}, library,
                t, fmt::format("model {}", model));
}

struct Candidate {
  std::string_view name;  // a candidate_name
  FitProcedure fit;       // on a fold's other rows, and on every row unless `final` is set
  FitProcedure final;     // on every validation row, when it differs
};

// The out-of-bag predictions held in memory, as one range.
class MemoryOobBlocks final : public OobBlocks {
 public:
  MemoryOobBlocks(const std::vector<MemberOob>& members, const Targets& targets)
      : members_(members), targets_(targets) {}
  Result<bool> next(std::vector<MemberOob>& members, Targets& targets) override {
    if (done_) return false;
    done_ = true;
    members = members_;
    targets = targets_;
    return true;
  }
  std::int64_t rows_total() const override { return targets_.rows(); }

 private:
  const std::vector<MemberOob>& members_;
  const Targets& targets_;
  bool done_ = false;
};

// Every model's validation scores.
void score_models(Evaluation& ev, const std::vector<Matrix>& library, const Targets& vt) {
  ev.models.resize(library.size());
  for (std::size_t m = 0; m < library.size(); ++m) ev.models[m].validation = score(library[m], vt);
}

// The incumbent when the caller names none: the search trial (an
// ensemble-only sweep: the member) with the lowest validation loss.
int default_incumbent(const std::vector<Matrix>& library, const Targets& vt,
                      std::size_t n_members) {
  for (int m : by_loss(library, vt))
    if (static_cast<std::size_t>(m) >= n_members || n_members == library.size()) return m;
  return 0;
}

// The candidates, in tie-break order. Their fit procedures run after this
// returns, so they hold the recipe (evaluate_ensemble's caller's) by reference
// and everything else by value.
std::vector<Candidate> make_candidates(const trials::EnsembleRecipe& recipe, std::size_t n_members,
                                       int incumbent, Loss objective, bool classification,
                                       bool can_stack) {
  using Combine = trials::EnsembleRecipe::Combine;
  using namespace candidate_name;  // kBestSingle, kBagged, kSelection, kStacking
  std::vector<Candidate> candidates;
  // The incumbent is the sweep's best trial by the user's objective, found by
  // the search on these very validation rows: its own loss on them is
  // optimistic. So what is cross-validated is the procedure that found it,
  // picking the search trial with the best objective on a fold's other rows
  // (ties: the sweep's ranking, the library's order); the model returned is
  // the incumbent itself.
  auto pick = [n_members, objective](const std::vector<Matrix>& lib, const Targets& t) {
    int best = -1;
    double best_loss = 0;
    for (std::size_t m = 0; m < lib.size(); ++m) {
      if (m < n_members && n_members != lib.size()) continue;  // search trials only
      const double l = loss(lib[m], t, objective);
      if (best < 0 || l < best_loss) best = static_cast<int>(m), best_loss = l;
    }
    return fit_single(best, lib, t);
  };
  candidates.push_back(
      {kBestSingle, pick, [incumbent](const std::vector<Matrix>& lib, const Targets& t) {
         return fit_single(incumbent, lib, t);
       }});
  candidates.push_back(
      {kBagged, [&recipe, n_members](const std::vector<Matrix>& lib, const Targets& t) {
         std::vector<int> members(n_members);
         std::iota(members.begin(), members.end(), 0);
         return fit_on(make_combiner(recipe), std::move(members), lib, t,
                       fmt::format("{} over {} bagged members", trials::to_string(recipe.combine),
                                   n_members));
       }});
  SelectionOptions sel;
  if (recipe.combine == Combine::kSelection) {
    sel.rounds = recipe.selection_rounds;
    sel.init = recipe.selection_init;
  }
  candidates.push_back(
      {kSelection, [sel](const std::vector<Matrix>& lib, const Targets& t) {
         return fit_on(
             std::make_unique<WeightedMeanCombiner>(WeightedMeanCombiner::Rule::kSelection, sel),
             all_models(lib.size()), lib, t,
             fmt::format("{} rounds over {} models", sel.rounds, lib.size()));
       }});
  if (can_stack)
    candidates.push_back(
        {kStacking, [classification](const std::vector<Matrix>& lib, const Targets& t) {
           auto order = by_loss(lib, t);
           if (order.size() > static_cast<std::size_t>(kMaxStackingInputs))
             order.resize(kMaxStackingInputs);
           std::sort(order.begin(), order.end());
           auto c = std::make_unique<StackingCombiner>();
           auto* raw = c.get();
           auto f = fit_on(std::move(c), order, lib, t, "");
           if (f)
             f->detail = fmt::format("{} over the {} best models, lambda {}",
                                     classification ? "log-linear pool" : "ridge", order.size(),
                                     raw->model().lambda);
           return f;
         }});
  return candidates;
}

// The cross-validation folds. Too few validation rows make a single fold and
// no cross-validation: the candidates are then compared on the rows they were
// fitted on.
struct Folds {
  bool cross_validate = false;
  int count = 1;
  std::vector<int> fold_of;  // per validation row
};

// Folds: a shuffled assignment of the validation rows.
Folds assign_folds(std::int64_t n_rows, std::uint64_t seed) {
  Folds folds;
  folds.cross_validate = n_rows >= kMinCrossValidationRows;
  folds.count = folds.cross_validate ? kCrossValidationFolds : 1;
  folds.fold_of.resize(static_cast<std::size_t>(n_rows));
  std::vector<std::int64_t> perm(static_cast<std::size_t>(n_rows));
  std::iota(perm.begin(), perm.end(), 0);
  Rng rng(seed ^ 0xC3A5C85C97CB3127ULL);
  for (std::size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng.below(i)]);
  for (std::size_t i = 0; i < perm.size(); ++i)
    folds.fold_of[static_cast<std::size_t>(perm[i])] =
        static_cast<int>(i % static_cast<std::size_t>(folds.count));
  return folds;
}

// Fills `oof` with each validation row's prediction by the candidate refitted
// on the other folds' rows, so that no row is scored by a fit that saw it.
Status predict_out_of_fold(const Candidate& candidate, const std::vector<Matrix>& library,
                           const Targets& vt, const Folds& folds, Matrix& oof) {
  const std::int64_t n_rows = vt.rows();
  for (int f = 0; f < folds.count; ++f) {
    std::vector<std::int64_t> train, held;
    for (std::int64_t r = 0; r < n_rows; ++r)
      (folds.fold_of[static_cast<std::size_t>(r)] == f ? held : train).push_back(r);
    std::vector<Matrix> ltrain, lheld;
    for (const auto& p : library) {
      ltrain.push_back(take_rows(p, train));
      lheld.push_back(take_rows(p, held));
    }
    auto fitted = candidate.fit(ltrain, vt.subset(train));
    if (!fitted) return fitted.error();
    auto pred = predict_with(*fitted, lheld);
    if (!pred) return pred.error();
    for (std::size_t i = 0; i < held.size(); ++i)
      std::copy(pred->row(static_cast<std::int64_t>(i)),
                pred->row(static_cast<std::int64_t>(i)) + pred->cols, oof.row(held[i]));
  }
  return {};
}

// One candidate cross-validated, then refitted on every validation row: its
// summary, its per-row out-of-fold losses (for the paired comparison the
// choice makes: the loss, the objective's and the error rate) and the refitted
// combiner (the one returned if it is chosen).
struct EvaluatedCandidate {
  CandidateSummary summary;
  std::vector<double> loss, objective, error;
  Fitted final_fit;
};

// Why a classifier's out-of-fold loss is not taken at face value: zero, or
// certain on nearly every row. Empty: it is.
std::string untrusted_loss(const Matrix& oof, const Targets& vt, double cv_loss) {
  if (cv_loss < 1e-6) return fmt::format("its cross-validated loss is {:.2g}", cv_loss);
  if (!vt.classification() || oof.rows == 0) return {};
  std::int64_t certain = 0;
  for (std::int64_t r = 0; r < oof.rows; ++r)
    certain += *std::max_element(oof.row(r), oof.row(r) + oof.cols) >= 1 - 1e-6;
  const double share = static_cast<double>(certain) / static_cast<double>(oof.rows);
  if (share < 0.95) return {};
  return fmt::format("its probabilities are degenerate (certain on {:.0f}% of rows)", 100 * share);
}

Result<EvaluatedCandidate> evaluate_candidate(const Candidate& candidate,
                                              const std::vector<Matrix>& library, const Targets& vt,
                                              const Folds& folds, Loss objective) {
  const std::size_t n_models = library.size();
  CandidateSummary s;
  s.name = candidate.name;
  s.cross_validated = folds.cross_validate;
  Matrix oof(vt.rows(), library.front().cols);
  if (folds.cross_validate)
    if (auto st = predict_out_of_fold(candidate, library, vt, folds, oof); !st.ok())
      return st.error();
  auto final_fit = (candidate.final ? candidate.final : candidate.fit)(library, vt);
  if (!final_fit) return final_fit.error();
  auto val = predict_with(*final_fit, library);
  if (!val) return val.error();
  if (!folds.cross_validate) oof = *val;
  EvaluatedCandidate e;
  e.loss = row_losses(oof, vt, Loss::kAuto);
  e.objective = row_losses(oof, vt, objective);
  if (vt.classification()) e.error = row_losses(oof, vt, Loss::kError);
  s.cv_loss = mean(e.loss);
  if (vt.classification()) s.cv_accuracy = accuracy(oof, vt.labels);
  s.untrusted = untrusted_loss(oof, vt, s.cv_loss);
  s.detail = final_fit->detail;
  s.scores.validation = score(*val, vt);
  s.weights.assign(n_models, 0.0);
  auto w = final_fit->combiner->weights();
  if (w.empty())
    w.assign(final_fit->inputs.size(), 1.0 / static_cast<double>(final_fit->inputs.size()));
  for (std::size_t i = 0; i < final_fit->inputs.size(); ++i)
    s.weights[static_cast<std::size_t>(final_fit->inputs[i])] = w[i];
  e.summary = std::move(s);
  e.final_fit = std::move(*final_fit);
  return e;
}

// Per row, the incumbent's loss minus the candidate's.
PairedSum paired(const std::vector<double>& incumbent, const std::vector<double>& candidate) {
  PairedSum sum;
  for (std::size_t r = 0; r < candidate.size(); ++r) sum.add(incumbent[r] - candidate[r]);
  return sum;
}

// Makes candidate `chosen` the evaluation's result: its scores and weights, and
// the combine rule and combiner that reproduce it.
void adopt_candidate(Evaluation& ev, const trials::EnsembleRecipe& recipe, int chosen) {
  using Combine = trials::EnsembleRecipe::Combine;
  const bool classification = ev.classification;
  ev.chosen = chosen;
  const auto& pick = ev.candidates[static_cast<std::size_t>(chosen)];
  const auto& fitted = ev.fitted[static_cast<std::size_t>(chosen)];
  ev.method = pick.name;
  ev.weights = pick.weights;
  ev.ensemble = pick.scores;
  if (pick.name == candidate_name::kBagged) {
    ev.combine = recipe.combine;
  } else if (pick.name == candidate_name::kSelection) {
    ev.combine = Combine::kSelection;
  } else {
    ev.combine = classification ? Combine::kSoftVote : Combine::kMean;
  }
  if (pick.name == candidate_name::kStacking) {
    auto model = static_cast<const StackingCombiner&>(*fitted.combiner).model();
    model.coefficients = pick.weights;  // over every model, 0 for those not stacked
    ev.stacking = model;
    ev.combiner = std::make_shared<StackingCombiner>(std::move(model));
  } else if (pick.name == candidate_name::kBagged &&
             (recipe.combine == Combine::kHardVote || recipe.combine == Combine::kMedian)) {
    ev.combiner = fitted.combiner;
  } else {
    ev.combiner = std::make_shared<WeightedMeanCombiner>(pick.weights);
  }
}

// Per training row of a block: the mean loss (and objective's) of the members
// trained with the incumbent's parameters that left it out, and how many did.
struct CopyLosses {
  std::vector<double> loss, objective, error;
  std::vector<int> count;
};

// Only rows the out-of-bag estimate covered (`covered`, ascending): their
// targets were checked against the predictions' shape there.
CopyLosses copy_losses(const std::vector<MemberOob>& members, const Targets& targets,
                       const std::vector<std::int64_t>& covered, const std::vector<int>& copies,
                       Loss objective) {
  const auto n = static_cast<std::size_t>(targets.rows());
  CopyLosses c{std::vector<double>(n), std::vector<double>(n), std::vector<double>(n),
               std::vector<int>(n)};
  for (const auto& m : members) {
    if (std::find(copies.begin(), copies.end(), m.member) == copies.end()) continue;
    for (std::size_t i = 0; i < m.rows.size(); ++i) {
      const auto r = m.rows[i];
      if (!std::binary_search(covered.begin(), covered.end(), r)) continue;
      const float* p = m.predictions.row(static_cast<std::int64_t>(i));
      const auto cols = m.predictions.cols;
      const double l = row_loss(p, cols, targets, r, Loss::kAuto);
      c.loss[static_cast<std::size_t>(r)] += l;
      c.objective[static_cast<std::size_t>(r)] += row_loss(p, cols, targets, r, objective);
      if (targets.classification())
        c.error[static_cast<std::size_t>(r)] += row_loss(p, cols, targets, r, Loss::kError);
      ++c.count[static_cast<std::size_t>(r)];
    }
  }
  return c;
}

// The out-of-bag rows heard as evidence (pooled, or able to overrule): the
// bagged candidate's, the only one they are heard for.
std::int64_t oob_rows_heard(const Evaluation& ev) {
  for (const auto& e : ev.evidence)
    if (e.name == candidate_name::kBagged) return e.oob_rows + e.oob_loss.rows();
  return 0;
}

}  // namespace

Result<Evaluation> evaluate_candidates(const trials::EnsembleRecipe& recipe,
                                       const EvaluationInput& input) {
  const auto& library = input.validation;
  const Targets& vt = input.validation_targets;
  if (auto st = check_predictions(library, &vt); !st.ok()) return st.error();
  const std::size_t n_models = library.size();
  const std::size_t n_members =
      input.member_models == 0 ? n_models : std::min(input.member_models, n_models);
  if (input.incumbent && *input.incumbent >= n_models)
    return Error::invalid("incumbent", fmt::format("model {} of {}", *input.incumbent, n_models));
  const bool classification = vt.classification();

  Evaluation ev;
  score_models(ev, library, vt);
  ev.incumbent = input.incumbent ? static_cast<int>(*input.incumbent)
                                 : default_incumbent(library, vt, n_members);
  ev.objective = input.objective;
  if (ev.objective.loss == Loss::kAuto)
    ev.objective.loss = classification ? Loss::kLogLoss : Loss::kMse;
  ev.classification = classification;
  const bool regression_loss = ev.objective.loss == Loss::kMse || ev.objective.loss == Loss::kMae;
  if (regression_loss == classification)
    return Error::invalid(
        "objective", fmt::format("{} does not score {} predictions", loss_name(ev.objective.loss),
                                 classification ? "class" : "regression"));
  ev.incumbent_copies = input.incumbent_copies;
  ev.validation_rows = vt.rows();

  const bool can_stack = vt.rows() >= kMinCrossValidationRows;
  const std::vector<Candidate> candidates = make_candidates(
      recipe, n_members, ev.incumbent, ev.objective.loss, classification, can_stack);
  const Folds folds = assign_folds(vt.rows(), input.seed);
  ev.cross_validated = folds.cross_validate;

  std::vector<EvaluatedCandidate> done;
  for (const auto& candidate : candidates) {
    auto e = evaluate_candidate(candidate, library, vt, folds, ev.objective.loss);
    if (!e) return e.error();
    done.push_back(std::move(*e));
  }
  for (auto& e : done) {
    CandidateEvidence ce;
    ce.name = e.summary.name;
    ce.cv_loss = e.summary.cv_loss;
    ce.untrusted = e.summary.untrusted;
    // Rows a candidate was fitted on are no evidence for it (the bagged rule
    // may still win on out-of-bag rows, see estimate_oob).
    ce.eligible = folds.cross_validate;
    const bool fits_weights =
        ce.name == candidate_name::kSelection || ce.name == candidate_name::kStacking;
    if (fits_weights && vt.rows() < kSmallValidationRows) ce.bar = kDoubtfulNoise;
    ce.loss = paired(done[0].loss, e.loss);
    ce.objective = paired(done[0].objective, e.objective);
    ce.error = paired(done[0].error, e.error);
    ev.evidence.push_back(std::move(ce));
    ev.candidates.push_back(std::move(e.summary));
    ev.fitted.push_back({std::move(e.final_fit.combiner), std::move(e.final_fit.inputs)});
  }
  return ev;
}

Status choose(Evaluation& ev, const trials::EnsembleRecipe& recipe) {
  DecisionInput in;
  in.candidates = ev.evidence;
  in.objective = ev.objective;
  in.classification = ev.classification;
  in.validation_rows = ev.validation_rows;
  in.cross_validated = ev.cross_validated;
  in.choose = recipe.choose;
  auto d = decide(in);
  if (!d) return d.error();
  adopt_candidate(ev, recipe, d->chosen);
  if (!ev.cross_validated)
    ev.warnings.push_back(fmt::format(
        "{} validation rows: too few to cross-validate the candidates; they were compared "
        "on the rows they were fitted on",
        ev.validation_rows));
  if (!d->decided) ev.warnings.push_back(d->reason);
  if (recipe.choose == trials::EnsembleRecipe::Choose::kAuto &&
      ev.validation_rows < kSmallValidationRows && oob_rows_heard(ev) == 0)
    ev.warnings.push_back(fmt::format(
        "the validation set has {} rows (fewer than {}) and no out-of-bag predictions{} were "
        "available, so the choice rests on those {} rows",
        ev.validation_rows, kSmallValidationRows,
        ev.oob ? " of the members trained with the best single model's parameters" : "",
        ev.validation_rows));
  ev.decision = std::move(*d);
  return {};
}

Result<Evaluation> evaluate_ensemble(const trials::EnsembleRecipe& recipe,
                                     const EvaluationInput& input) {
  const bool with_test = !input.test.empty();
  if (with_test) {
    if (input.test.size() != input.validation.size())
      return Error::invalid("test", "expected test predictions of every model");
    if (auto st = check_predictions(input.test, &input.test_targets); !st.ok()) return st.error();
  }
  auto ev = evaluate_candidates(recipe, input);
  if (!ev) return ev.error();
  // The random-forest out-of-bag estimate of the bagged combination.
  if (!input.oob.empty()) {
    MemoryOobBlocks blocks(input.oob, input.train_targets);
    if (auto st = estimate_oob(*ev, blocks); !st.ok()) return st.error();
  }
  if (auto st = choose(*ev, recipe); !st.ok()) return st.error();
  if (with_test) {
    MatrixRowBlocks rows(input.test, input.test_targets);
    if (auto st = score_rows(*ev, rows); !st.ok()) return st.error();
  }
  return ev;
}

Result<bool> MatrixRowBlocks::next(std::vector<Matrix>& models, Targets& targets) {
  if (done_) return false;
  done_ = true;
  models = models_;
  targets = targets_;
  return true;
}

Status score_rows(Evaluation& ev, RowBlocks& rows) {
  const std::size_t n_models = ev.models.size();
  if (ev.fitted.size() != ev.candidates.size() || ev.chosen < 0)
    return Error::internal("score_rows: no candidate chosen yet");
  const auto chosen = static_cast<std::size_t>(ev.chosen);
  std::vector<ScoreSum> models(n_models), candidates(ev.candidates.size());
  PairedSum test_advantage;
  std::vector<Matrix> block, predicted(ev.candidates.size());
  Targets targets;
  std::vector<Matrix> in;
  for (;;) {
    auto more = rows.next(block, targets);
    if (!more) return more.error();
    if (!*more) break;
    if (block.size() != n_models)
      return Error::invalid("rows", fmt::format("a block of {} models' predictions, expected {}",
                                                block.size(), n_models));
    if (auto st = check_predictions(block, &targets); !st.ok()) return st.error();
    const std::int64_t n = targets.rows();
    for (std::size_t m = 0; m < n_models; ++m) models[m].add(score(block[m], targets), n);
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      in.clear();
      for (int m : ev.fitted[c].inputs) in.push_back(block[static_cast<std::size_t>(m)]);
      auto p = combine(*ev.fitted[c].combiner, in);
      if (!p) return p.error();
      candidates[c].add(score(*p, targets), n);
      predicted[c] = std::move(*p);
    }
    test_advantage.add(paired(row_losses(predicted[0], targets, ev.objective.loss),
                              row_losses(predicted[chosen], targets, ev.objective.loss)));
  }
  for (std::size_t m = 0; m < n_models; ++m) ev.models[m].test = models[m].mean();
  for (std::size_t c = 0; c < candidates.size(); ++c)
    ev.candidates[c].scores.test = candidates[c].mean();
  ev.ensemble.test = ev.candidates[chosen].scores.test;
  if (test_advantage.rows() > 0) ev.test_advantage = test_advantage.advantage();
  return {};
}

Status estimate_oob(Evaluation& ev, OobBlocks& blocks) {
  auto it = std::find_if(ev.candidates.begin(), ev.candidates.end(), [](const CandidateSummary& c) {
    return c.name == candidate_name::kBagged;
  });
  if (it == ev.candidates.end() || ev.fitted.size() != ev.candidates.size())
    return Error::internal("estimate_oob: no fitted bagged candidate");
  const auto bagged_at = static_cast<std::size_t>(it - ev.candidates.begin());
  const Combiner& bagged = *ev.fitted[bagged_at].combiner;
  // A small validation set: the out-of-bag rows are heard too, the bagged rule
  // against the members trained with the incumbent's parameters (decision.hpp:
  // pooled when the incumbent is one of them, else able only to overrule).
  const auto& copies_of = ev.incumbent_copies;
  const bool hear = ev.validation_rows < kSmallValidationRows && !copies_of.empty();
  const bool pool = std::find(copies_of.begin(), copies_of.end(), ev.incumbent) != copies_of.end();
  ScoreSum sum;
  PairedSum loss, objective, error;
  std::int64_t covered = 0;
  std::vector<MemberOob> members;
  Targets targets;
  for (;;) {
    auto more = blocks.next(members, targets);
    if (!more) return more.error();
    if (!*more) break;
    auto est = oob_estimate(bagged, members, targets);
    if (!est.ok()) return est.error();
    sum.add(est->scores, est->rows_covered);
    covered += est->rows_covered;
    if (!hear) continue;
    const CopyLosses copies =
        copy_losses(members, targets, est->rows, ev.incumbent_copies, ev.objective.loss);
    for (std::size_t i = 0; i < est->rows.size(); ++i) {
      const auto r = est->rows[i];
      const auto k = static_cast<std::size_t>(r);
      if (copies.count[k] == 0) continue;
      const float* p = est->predictions.row(static_cast<std::int64_t>(i));
      const auto cols = est->predictions.cols;
      const double n = copies.count[k];
      loss.add(copies.loss[k] / n - row_loss(p, cols, targets, r, Loss::kAuto));
      objective.add(copies.objective[k] / n - row_loss(p, cols, targets, r, ev.objective.loss));
      if (targets.classification())
        error.add(copies.error[k] / n - row_loss(p, cols, targets, r, Loss::kError));
    }
  }
  ev.oob = OobSummary{blocks.rows_total(), covered, sum.mean()};
  auto& e = ev.evidence[bagged_at];
  if (hear && pool && loss.rows() > 0) {
    e.loss.add(loss);
    e.objective.add(objective);
    e.error.add(error);
    e.oob_rows += loss.rows();
    e.eligible = true;  // the bagged rule fits nothing on the out-of-bag rows
  } else if (hear) {
    e.oob_loss = loss;
    e.oob_objective = objective;
  }
  return {};
}

}  // namespace hpo::ensemble
