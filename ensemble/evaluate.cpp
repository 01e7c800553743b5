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
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ensemble/rng.hpp"

namespace hpo::ensemble {

namespace {

// Higher is better: accuracy for classification, -MSE for regression.
double rank_score(const Scores& s) {
  return s.accuracy ? *s.accuracy : -s.mse.value_or(0);
}

// Per-row loss: -ln p[label] (clipped as log_loss), or the mean squared error over outputs.
std::vector<double> row_losses(const Matrix& p, const Targets& t) {
  std::vector<double> out(static_cast<std::size_t>(p.rows));
  for (std::int64_t r = 0; r < p.rows; ++r) {
    if (t.classification()) {
      double q = p(r, t.labels[static_cast<std::size_t>(r)]);
      out[static_cast<std::size_t>(r)] = -std::log(std::clamp(q, kLogLossEps, 1.0));
    } else {
      double s = 0;
      for (std::int64_t c = 0; c < p.cols; ++c) {
        double d = p(r, c) - t.values(r, c);
        s += d * d;
      }
      out[static_cast<std::size_t>(r)] = s / static_cast<double>(p.cols);
    }
  }
  return out;
}

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

struct Candidate {
  std::string name;
  FitProcedure fit;
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

// Every model's validation scores, and the best of them by rank_score.
void score_models(Evaluation& ev, const std::vector<Matrix>& library, const Targets& vt) {
  const std::size_t n_models = library.size();
  ev.models.resize(n_models);
  for (std::size_t m = 0; m < n_models; ++m) {
    ev.models[m].validation = score(library[m], vt);
    if (rank_score(ev.models[m].validation) > rank_score(ev.models[ev.best_model].validation))
      ev.best_model = static_cast<int>(m);
  }
}

// The candidates, in tie-break order. Their fit procedures run after this
// returns, so they hold the recipe (evaluate_ensemble's caller's) by reference
// and everything else by value.
std::vector<Candidate> make_candidates(const trials::EnsembleRecipe& recipe, std::size_t n_members,
                                       bool classification, bool can_stack) {
  using Combine = trials::EnsembleRecipe::Combine;
  std::vector<Candidate> candidates;
  // The best single model is the best search trial (bagged members train on a
  // bootstrap of the rows: one scoring lower on the validation rows than the
  // configuration it copies is luck); an ensemble-only sweep's best member.
  candidates.push_back(
      {"best_single", [n_members](const std::vector<Matrix>& lib, const Targets& t) {
         int best = -1;
         for (int m : by_loss(lib, t))
           if (best < 0 && (static_cast<std::size_t>(m) >= n_members || n_members == lib.size()))
             best = m;
         return fit_on(std::make_unique<WeightedMeanCombiner>(std::vector<double>{1.0}), {best},
                       lib, t, fmt::format("model {}", best));
       }});
  candidates.push_back(
      {"bagged", [&recipe, n_members](const std::vector<Matrix>& lib, const Targets& t) {
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
      {"selection", [sel](const std::vector<Matrix>& lib, const Targets& t) {
         return fit_on(
             std::make_unique<WeightedMeanCombiner>(WeightedMeanCombiner::Rule::kSelection, sel),
             all_models(lib.size()), lib, t,
             fmt::format("{} rounds over {} models", sel.rounds, lib.size()));
       }});
  if (can_stack)
    candidates.push_back(
        {"stacking", [classification](const std::vector<Matrix>& lib, const Targets& t) {
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
// summary, its per-row losses (for the paired comparison the choice makes) and
// the refitted combiner (the one returned if it is chosen).
struct EvaluatedCandidate {
  CandidateSummary summary;
  std::vector<double> per_row;
  Fitted final_fit;
};

Result<EvaluatedCandidate> evaluate_candidate(const Candidate& candidate,
                                              const std::vector<Matrix>& library, const Targets& vt,
                                              const Folds& folds) {
  const std::size_t n_models = library.size();
  CandidateSummary s;
  s.name = candidate.name;
  s.cross_validated = folds.cross_validate;
  Matrix oof(vt.rows(), library.front().cols);
  if (folds.cross_validate)
    if (auto st = predict_out_of_fold(candidate, library, vt, folds, oof); !st.ok())
      return st.error();
  auto final_fit = candidate.fit(library, vt);
  if (!final_fit) return final_fit.error();
  auto val = predict_with(*final_fit, library);
  if (!val) return val.error();
  if (!folds.cross_validate) oof = *val;
  EvaluatedCandidate e;
  e.per_row = row_losses(oof, vt);
  s.cv_loss = mean(e.per_row);
  if (vt.classification()) s.cv_accuracy = accuracy(oof, vt.labels);
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

// Per candidate, the out-of-fold loss of each validation row.
using RowLosses = std::vector<std::vector<double>>;

// Paired out-of-fold per-row loss differences of candidate c against
// candidate `ref`: their mean (positive: c is better) and its standard error.
std::pair<double, double> advantage(const RowLosses& per_row, std::size_t c, std::size_t ref) {
  const std::size_t n = per_row[c].size();
  double md = 0;
  for (std::size_t r = 0; r < n; ++r) md += per_row[ref][r] - per_row[c][r];
  md /= static_cast<double>(std::max<std::size_t>(n, 1));
  double var = 0;
  for (std::size_t r = 0; r < n; ++r) {
    const double x = per_row[ref][r] - per_row[c][r] - md;
    var += x * x;
  }
  const double se =
      n > 1 ? std::sqrt(var / static_cast<double>(n - 1) / static_cast<double>(n)) : 0.0;
  return std::pair{md, se};
}

// The choice: the index of the candidate the evaluation returns.
Result<int> choose_candidate(const trials::EnsembleRecipe& recipe,
                             const std::vector<CandidateSummary>& candidates,
                             const RowLosses& per_row, std::int64_t n_rows) {
  using Choose = trials::EnsembleRecipe::Choose;
  int chosen = 0;
  if (recipe.choose == Choose::kAuto) {
    // A combination replaces the best single model only when its advantage is
    // more than one standard error (cross-validated); then the lowest loss
    // among those that clear it wins.
    for (std::size_t c = 1; c < candidates.size(); ++c) {
      auto [md, se] = advantage(per_row, c, 0);
      if (md > se && (chosen == 0 ||
                      candidates[c].cv_loss < candidates[static_cast<std::size_t>(chosen)].cv_loss))
        chosen = static_cast<int>(c);
    }
  } else {
    const char* want = trials::to_string(recipe.choose);
    auto it = std::find_if(candidates.begin(), candidates.end(),
                           [&](const CandidateSummary& s) { return s.name == want; });
    if (it == candidates.end())
      return Error::invalid("ensemble.choose",
                            fmt::format("{} needs at least {} validation rows, got {}", want,
                                        kMinCrossValidationRows, n_rows));
    chosen = static_cast<int>(it - candidates.begin());
  }
  return chosen;
}

// Makes candidate `chosen` the evaluation's result: its scores and weights, and
// the combine rule and combiner that reproduce it.
void adopt_candidate(Evaluation& ev, const trials::EnsembleRecipe& recipe,
                     const std::vector<Fitted>& finals, int chosen, bool classification) {
  using Combine = trials::EnsembleRecipe::Combine;
  ev.chosen = chosen;
  const auto& pick = ev.candidates[static_cast<std::size_t>(chosen)];
  ev.method = pick.name;
  ev.weights = pick.weights;
  ev.ensemble = pick.scores;
  if (pick.name == "bagged") {
    ev.combine = recipe.combine;
  } else if (pick.name == "selection") {
    ev.combine = Combine::kSelection;
  } else {
    ev.combine = classification ? Combine::kSoftVote : Combine::kMean;
  }
  if (pick.name == "stacking") {
    auto model =
        static_cast<const StackingCombiner&>(*finals[static_cast<std::size_t>(chosen)].combiner)
            .model();
    model.coefficients = pick.weights;  // over every model, 0 for those not stacked
    ev.stacking = model;
    ev.combiner = std::make_unique<StackingCombiner>(std::move(model));
  } else if (pick.name == "bagged" &&
             (recipe.combine == Combine::kHardVote || recipe.combine == Combine::kMedian)) {
    ev.combiner = finals[static_cast<std::size_t>(chosen)].combiner;
  } else {
    ev.combiner = std::make_unique<WeightedMeanCombiner>(pick.weights);
  }
}

// Can the validation rows tell the choice from the runner-up?
void warn_if_unclear(Evaluation& ev, const trials::EnsembleRecipe& recipe, const RowLosses& per_row,
                     bool cross_validate, std::int64_t n_rows) {
  using Choose = trials::EnsembleRecipe::Choose;
  const int chosen = ev.chosen;
  int lowest = 0;  // the lowest cv loss, whether or not it clears the bar
  for (std::size_t c = 1; c < ev.candidates.size(); ++c)
    if (ev.candidates[c].cv_loss < ev.candidates[static_cast<std::size_t>(lowest)].cv_loss)
      lowest = static_cast<int>(c);
  if (!cross_validate)
    ev.warnings.push_back(fmt::format(
        "{} validation rows: too few to cross-validate the candidates; they were compared "
        "on the rows they were fitted on",
        n_rows));
  if (ev.candidates.size() > 1 && n_rows > 1) {
    // The question that matters: is the combination really better than the
    // best single model? When the best single model is the choice, against the
    // lowest-loss combination.
    const std::size_t other = chosen == 0 ? static_cast<std::size_t>(lowest == 0 ? 1 : lowest)
                                          : static_cast<std::size_t>(chosen);
    auto [md, se] = advantage(per_row, other, 0);
    const auto& c = ev.candidates[other];
    const auto& b = ev.candidates[0];
    if (chosen == 0 && md > 0 && recipe.choose == Choose::kAuto)
      ev.warnings.push_back(fmt::format(
          "kept the best single model: {} has a lower cv loss ({:.4g} against {:.4g}) but its "
          "advantage {:.3g} is within one standard error ({:.3g}) over the {} validation rows; "
          "a larger validation set would tell",
          c.name, c.cv_loss, b.cv_loss, md, se, n_rows));
    else if (chosen != 0 && std::abs(md) <= 2 * se)
      ev.warnings.push_back(fmt::format(
          "the {} validation rows cannot tell {} (cv loss {:.4g}) from best_single (cv loss "
          "{:.4g}) apart: the difference {:.3g} is within two standard errors ({:.3g}); a larger "
          "validation set would make the choice reliable",
          n_rows, c.name, c.cv_loss, b.cv_loss, md, 2 * se));
  }
}

}  // namespace

Result<Evaluation> evaluate_ensemble(const trials::EnsembleRecipe& recipe,
                                     const EvaluationInput& input) {
  const auto& library = input.validation;
  const Targets& vt = input.validation_targets;
  if (auto st = check_predictions(library, &vt); !st.ok()) return st.error();
  const std::size_t n_models = library.size();
  const std::size_t n_members =
      input.member_models == 0 ? n_models : std::min(input.member_models, n_models);
  const bool with_test = !input.test.empty();
  if (with_test) {
    if (input.test.size() != n_models)
      return Error::invalid("test", "expected test predictions of every model");
    if (auto st = check_predictions(input.test, &input.test_targets); !st.ok()) return st.error();
  }
  const bool classification = vt.classification();

  Evaluation ev;
  score_models(ev, library, vt);

  const bool can_stack = vt.rows() >= kMinCrossValidationRows;
  const std::vector<Candidate> candidates =
      make_candidates(recipe, n_members, classification, can_stack);
  const std::int64_t n_rows = vt.rows();
  const Folds folds = assign_folds(n_rows, input.seed);

  RowLosses per_row(candidates.size());
  std::vector<Fitted> finals(candidates.size());
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    auto e = evaluate_candidate(candidates[c], library, vt, folds);
    if (!e) return e.error();
    per_row[c] = std::move(e->per_row);
    ev.candidates.push_back(std::move(e->summary));
    finals[c] = std::move(e->final_fit);
  }

  auto chosen = choose_candidate(recipe, ev.candidates, per_row, n_rows);
  if (!chosen) return chosen.error();
  adopt_candidate(ev, recipe, finals, *chosen, classification);
  warn_if_unclear(ev, recipe, per_row, folds.cross_validate, n_rows);

  for (auto& f : finals) ev.fitted.push_back({std::move(f.combiner), std::move(f.inputs)});
  if (with_test) {
    MatrixRowBlocks rows(input.test, input.test_targets);
    if (auto st = score_rows(ev, rows); !st.ok()) return st.error();
  }
  // The random-forest out-of-bag estimate of the bagged combination.
  if (!input.oob.empty()) {
    MemoryOobBlocks blocks(input.oob, input.train_targets);
    if (auto st = estimate_oob(ev, blocks); !st.ok()) return st.error();
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
  if (ev.fitted.size() != ev.candidates.size())
    return Error::internal("score_rows: the candidates were not kept fitted");
  std::vector<ScoreSum> models(n_models), candidates(ev.candidates.size());
  std::vector<Matrix> block;
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
    }
  }
  for (std::size_t m = 0; m < n_models; ++m) ev.models[m].test = models[m].mean();
  for (std::size_t c = 0; c < candidates.size(); ++c)
    ev.candidates[c].scores.test = candidates[c].mean();
  ev.ensemble.test = ev.candidates[static_cast<std::size_t>(ev.chosen)].scores.test;
  return {};
}

Status estimate_oob(Evaluation& ev, OobBlocks& blocks) {
  auto it = std::find_if(ev.candidates.begin(), ev.candidates.end(),
                         [](const CandidateSummary& c) { return c.name == "bagged"; });
  if (it == ev.candidates.end() || ev.fitted.size() != ev.candidates.size())
    return Error::internal("estimate_oob: no fitted bagged candidate");
  const Combiner& bagged =
      *ev.fitted[static_cast<std::size_t>(it - ev.candidates.begin())].combiner;
  ScoreSum sum;
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
  }
  ev.oob = OobSummary{blocks.rows_total(), covered, sum.mean()};
  return {};
}

}  // namespace hpo::ensemble
