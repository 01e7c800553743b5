#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "ensemble/evaluate.hpp"

namespace hpo::ensemble {
namespace {

EvaluationInput sample_input() {
  EvaluationInput in;
  // Model 1 is the best alone (3 of 3); models 0 and 2 get 2 of 3.
  in.validation = {Matrix::from({{0.9f, 0.1f}, {0.6f, 0.4f}, {0.2f, 0.8f}}),
                   Matrix::from({{0.7f, 0.3f}, {0.4f, 0.6f}, {0.4f, 0.6f}}),
                   Matrix::from({{0.4f, 0.6f}, {0.1f, 0.9f}, {0.1f, 0.9f}})};
  in.validation_targets = Targets::classes({0, 1, 1});
  in.test = {Matrix::from({{0.8f, 0.2f}}), Matrix::from({{0.3f, 0.7f}}),
             Matrix::from({{0.2f, 0.8f}})};
  in.test_targets = Targets::classes({1});
  in.train_targets = Targets::classes({0, 1});
  in.oob = {{0, {0}, Matrix::from({{0.9f, 0.1f}})},
            {2, {0, 1}, Matrix::from({{0.3f, 0.7f}, {0.2f, 0.8f}})}};
  return in;
}

TEST(Evaluate, ScoresModelsTheBestSingleAndTheEnsemble) {
  trials::EnsembleRecipe recipe;  // soft vote
  recipe.choose = trials::EnsembleRecipe::Choose::kBagged;
  auto in = sample_input();
  in.incumbent = 1;
  auto ev = evaluate_ensemble(recipe, in);
  ASSERT_TRUE(ev.ok()) << ev.error().message;
  EXPECT_EQ(ev->incumbent, 1);
  EXPECT_EQ(ev->candidates[0].weights, (std::vector<double>{0, 1, 0}));
  ASSERT_EQ(ev->models.size(), 3u);
  EXPECT_DOUBLE_EQ(*ev->models[0].validation.accuracy, 2.0 / 3);
  EXPECT_DOUBLE_EQ(*ev->models[0].test.accuracy, 0.0);
  auto val = combine(*ev->combiner, in.validation);
  ASSERT_TRUE(val.ok());
  EXPECT_DOUBLE_EQ(*ev->ensemble.validation.log_loss, log_loss(*val, in.validation_targets.labels));
  EXPECT_DOUBLE_EQ(*ev->ensemble.test.accuracy, 1.0);  // mean (0.43, 0.57): class 1
  ASSERT_TRUE(ev->oob.has_value());
  EXPECT_EQ(ev->oob->rows_covered, 2);
  EXPECT_DOUBLE_EQ(*ev->oob->scores.accuracy, 1.0);  // row 0: (0.9+0.3)/2 -> 0; row 1: 0.8 -> 1
  EXPECT_EQ(ev->weights.size(), 3u);
}

// --- choosing among the candidates -------------------------------------------

// Two-class predictions for `rows` rows whose label is rows % 2 ... drawn from a
// fixed generator: a model is right with probability `skill` (independently per
// model and row) and says so with confidence `confidence`.
struct Lab {
  std::uint64_t state;
  double uniform() {
    state += 0x9E3779B97F4A7C15ULL;
    std::uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return static_cast<double>((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
  }
  Matrix model(const std::vector<int>& labels, double skill, double confidence) {
    Matrix m(static_cast<std::int64_t>(labels.size()), 2);
    for (std::size_t r = 0; r < labels.size(); ++r) {
      bool right = uniform() < skill;
      int said = right ? labels[r] : 1 - labels[r];
      m(static_cast<std::int64_t>(r), said) = static_cast<float>(confidence);
      m(static_cast<std::int64_t>(r), 1 - said) = static_cast<float>(1 - confidence);
    }
    return m;
  }
};

std::vector<int> alternating(int rows) {
  std::vector<int> v(static_cast<std::size_t>(rows));
  for (int r = 0; r < rows; ++r) v[static_cast<std::size_t>(r)] = r % 2;
  return v;
}

const CandidateSummary& candidate(const Evaluation& ev, const std::string& name) {
  for (const auto& c : ev.candidates)
    if (c.name == name) return c;
  throw std::runtime_error("no candidate " + name);
}

TEST(EvaluateChoice, AGoodSearchTrialBeatsWeakBaggedMembers) {
  Lab lab{1};
  auto labels = alternating(400), test_labels = alternating(400);
  EvaluationInput in;
  for (int m = 0; m < 6; ++m) {  // members: barely better than chance
    in.validation.push_back(lab.model(labels, 0.55, 0.6));
    in.test.push_back(lab.model(test_labels, 0.55, 0.6));
  }
  in.validation.push_back(lab.model(labels, 0.92, 0.9));  // a search trial
  in.test.push_back(lab.model(test_labels, 0.92, 0.9));
  in.member_models = 6;
  in.validation_targets = Targets::classes(labels);
  in.test_targets = Targets::classes(test_labels);
  auto ev = evaluate_ensemble({}, in);
  ASSERT_TRUE(ev.ok()) << ev.error().message;
  ASSERT_EQ(ev->candidates.size(), 4u);
  EXPECT_EQ(ev->candidates[0].name, "best_single");
  EXPECT_EQ(ev->candidates[1].name, "bagged");
  EXPECT_EQ(ev->candidates[2].name, "selection");
  EXPECT_EQ(ev->candidates[3].name, "stacking");
  EXPECT_NE(ev->method, "bagged");
  // The choice is the search trial, or beats it beyond the noise; not worse
  // than it on the test rows either way.
  for (const auto& c : ev->candidates) EXPECT_TRUE(c.cross_validated);
  if (ev->method != "best_single") {
    EXPECT_TRUE(ev->decision.loss.clears()) << ev->decision.reason;
  }
  EXPECT_GT(candidate(*ev, "best_single").cv_loss + 0.05, ev->candidates[ev->chosen].cv_loss);
  EXPECT_GE(*ev->ensemble.test.accuracy, *ev->models[6].test.accuracy - 0.02);
  EXPECT_LT(*candidate(*ev, "bagged").scores.test.accuracy, *ev->ensemble.test.accuracy);
  // The weights point at the search trial.
  EXPECT_GT(ev->weights[6], 0.5);
  // The chosen combiner reproduces the recorded validation scores.
  auto val = combine(*ev->combiner, in.validation);
  ASSERT_TRUE(val.ok());
  EXPECT_NEAR(accuracy(*val, labels), *ev->ensemble.validation.accuracy, 1e-12);
}

TEST(EvaluateChoice, DiverseMembersMakeTheCombinationWin) {
  Lab lab{2};
  auto labels = alternating(600), test_labels = alternating(2000);
  EvaluationInput in;
  for (int m = 0; m < 9; ++m) {  // independent errors: the average is much better
    in.validation.push_back(lab.model(labels, 0.7, 0.7));
    in.test.push_back(lab.model(test_labels, 0.7, 0.7));
  }
  in.validation_targets = Targets::classes(labels);
  in.test_targets = Targets::classes(test_labels);
  auto ev = evaluate_ensemble({}, in);
  ASSERT_TRUE(ev.ok()) << ev.error().message;
  EXPECT_NE(ev->method, "best_single");
  EXPECT_LT(ev->candidates[ev->chosen].cv_loss, candidate(*ev, "best_single").cv_loss - 0.05);
  double best_test = 0;
  for (const auto& m : ev->models) best_test = std::max(best_test, *m.test.accuracy);
  EXPECT_GT(*ev->ensemble.test.accuracy, best_test + 0.05);
  EXPECT_TRUE(ev->warnings.empty()) << ev->warnings.front();
}

TEST(EvaluateChoice, WarnsWhenTheValidationRowsCannotTellTheCandidatesApart) {
  Lab lab{3};
  auto labels = alternating(8);
  EvaluationInput in;
  for (int m = 0; m < 3; ++m) in.validation.push_back(lab.model(labels, 0.7, 0.7));
  in.validation_targets = Targets::classes(labels);
  auto ev = evaluate_ensemble({}, in);
  ASSERT_TRUE(ev.ok()) << ev.error().message;
  ASSERT_FALSE(ev->warnings.empty());
  EXPECT_NE(ev->warnings.front().find("too few to cross-validate"), std::string::npos);
  EXPECT_EQ(ev->candidates.size(), 3u);  // no stacking on 8 rows
  EXPECT_FALSE(ev->candidates[0].cross_validated);

  // Two models alike in skill on 60 rows: a combination may score a little lower
  // loss, but not beyond the noise (two standard errors), so the best single
  // model is kept, and the record says why.
  auto some = alternating(60);
  in = {};
  in.validation = {lab.model(some, 0.75, 0.7), lab.model(some, 0.75, 0.7)};
  in.validation_targets = Targets::classes(some);
  ev = evaluate_ensemble({}, in);
  ASSERT_TRUE(ev.ok()) << ev.error().message;
  ASSERT_FALSE(ev->warnings.empty());
  const auto& w = ev->warnings.front();
  if (ev->method == "best_single")
    EXPECT_NE(w.find("kept the best single model"), std::string::npos) << w;
  else
    EXPECT_TRUE(ev->decision.loss.clears()) << w;

  // Two identical models: every candidate is the same prediction, nothing to warn about.
  auto many = alternating(200);
  in = {};
  auto m = lab.model(many, 0.8, 0.8);
  in.validation = {m, m};
  in.validation_targets = Targets::classes(many);
  ev = evaluate_ensemble({}, in);
  ASSERT_TRUE(ev.ok()) << ev.error().message;
  EXPECT_EQ(ev->method, "best_single");
  EXPECT_TRUE(ev->warnings.empty()) << ev->warnings.front();
}

TEST(EvaluateChoice, TheRecipeCanNameTheCandidate) {
  Lab lab{4};
  auto labels = alternating(100);
  EvaluationInput in;
  for (int m = 0; m < 3; ++m) in.validation.push_back(lab.model(labels, 0.75, 0.7));
  in.validation_targets = Targets::classes(labels);
  trials::EnsembleRecipe recipe;
  for (auto [choose, name] : {std::pair{trials::EnsembleRecipe::Choose::kStacking, "stacking"},
                              {trials::EnsembleRecipe::Choose::kBagged, "bagged"},
                              {trials::EnsembleRecipe::Choose::kBestSingle, "best_single"}}) {
    recipe.choose = choose;
    auto ev = evaluate_ensemble(recipe, in);
    ASSERT_TRUE(ev.ok()) << ev.error().message;
    EXPECT_EQ(ev->method, name);
    EXPECT_EQ(ev->stacking.has_value(), std::string(name) == "stacking");
  }
}

TEST(EvaluateChoice, RegressionStacksByRidge) {
  // y = 2 + 0.3 a + 0.9 b: the ridge meta-model finds the mix (an intercept and
  // weights that do not sum to 1, which no average of the models reaches).
  Lab lab{5};
  const int rows = 300;
  Matrix a(rows, 1), b(rows, 1), y(rows, 1);
  for (int r = 0; r < rows; ++r) {
    a(r, 0) = static_cast<float>(lab.uniform() * 10);
    b(r, 0) = static_cast<float>(lab.uniform() * 10);
    y(r, 0) = 2 + 0.3f * a(r, 0) + 0.9f * b(r, 0);
  }
  EvaluationInput in;
  in.validation = {a, b};
  in.validation_targets = Targets::regression(y);
  auto ev = evaluate_ensemble({}, in);
  ASSERT_TRUE(ev.ok()) << ev.error().message;
  EXPECT_EQ(ev->method, "stacking");
  ASSERT_TRUE(ev->stacking.has_value());
  EXPECT_NEAR(ev->weights[0], 0.3, 0.01);
  EXPECT_NEAR(ev->weights[1], 0.9, 0.01);
  EXPECT_NEAR(ev->stacking->intercept[0], 2.0, 0.05);
  EXPECT_LT(*ev->ensemble.validation.mse, 1e-3);
  auto val = combine(*ev->combiner, in.validation);
  ASSERT_TRUE(val.ok());
  EXPECT_NEAR(mse(*val, y), *ev->ensemble.validation.mse, 1e-9);
}

// --- the incumbent -----------------------------------------------------------

// Predictions of `labels` (two classes) that are wrong exactly on `wrong`, with
// probability `confidence` on the class said.
Matrix crafted(const std::vector<int>& labels, const std::vector<int>& wrong, float confidence) {
  Matrix m(static_cast<std::int64_t>(labels.size()), 2);
  for (std::size_t r = 0; r < labels.size(); ++r) {
    const bool is_wrong = std::find(wrong.begin(), wrong.end(), static_cast<int>(r)) != wrong.end();
    const int said = is_wrong ? 1 - labels[r] : labels[r];
    m(static_cast<std::int64_t>(r), said) = confidence;
    m(static_cast<std::int64_t>(r), 1 - said) = 1 - confidence;
  }
  return m;
}

TEST(EvaluateIncumbent, IsTheCallersModelOnEveryFold) {
  Lab lab{6};
  auto labels = alternating(300);
  EvaluationInput in;
  for (int m = 0; m < 4; ++m) in.validation.push_back(lab.model(labels, 0.6, 0.6));  // members
  in.validation.push_back(lab.model(labels, 0.8, 0.7));   // 4: the sweep's best by its objective
  in.validation.push_back(lab.model(labels, 0.85, 0.8));  // 5: a lower validation loss
  in.member_models = 4;
  in.incumbent = 4;
  in.validation_targets = Targets::classes(labels);
  trials::EnsembleRecipe recipe;
  recipe.choose = trials::EnsembleRecipe::Choose::kBestSingle;
  auto ev = evaluate_ensemble(recipe, in);
  ASSERT_TRUE(ev.ok()) << ev.error().message;
  EXPECT_EQ(ev->incumbent, 4);
  EXPECT_EQ(ev->method, "best_single");
  EXPECT_EQ(ev->weights, (std::vector<double>{0, 0, 0, 0, 1, 0}));
  // Its out-of-fold loss is that of the procedure that found it (the best
  // search trial by the objective on a fold's other rows), here model 5 on
  // every fold: the validation rows that chose a model do not also vouch for it.
  EXPECT_NEAR(ev->candidates[0].cv_loss, log_loss(in.validation[5], labels), 1e-9);
  // Without one, the search trial with the lowest validation loss.
  in.incumbent.reset();
  ev = evaluate_ensemble(recipe, in);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->incumbent, 5);
  in.incumbent = 9;
  EXPECT_FALSE(evaluate_ensemble(recipe, in).ok());
}

// The case: 27 validation rows, the sweep's best trial wrong on two of
// them, and another trial certain and right on every one (a validation loss of
// 0) that is much worse on the test rows. The incumbent is kept, and the
// combination that leans on the lucky model is marked as not trusted.
TEST(EvaluateIncumbent, KeptOnATinyValidationSetAgainstALuckyModel) {
  Lab lab{7};
  auto labels = alternating(27), test_labels = alternating(400);
  EvaluationInput in;
  for (int m = 0; m < 6; ++m) {  // bagged members, 70% right
    in.validation.push_back(lab.model(labels, 0.7, 0.7));
    in.test.push_back(lab.model(test_labels, 0.7, 0.7));
  }
  in.validation.push_back(crafted(labels, {3, 17}, 0.8f));  // 6: the sweep's best trial
  in.test.push_back(lab.model(test_labels, 0.95, 0.8));
  in.validation.push_back(crafted(labels, {}, 1.0f));  // 7: lucky, and certain
  in.test.push_back(lab.model(test_labels, 0.8, 1.0));
  in.member_models = 6;
  in.incumbent = 6;
  in.objective = {Loss::kError, false};  // the user's objective: an accuracy
  in.validation_targets = Targets::classes(labels);
  in.test_targets = Targets::classes(test_labels);
  auto ev = evaluate_ensemble({}, in);
  ASSERT_TRUE(ev.ok()) << ev.error().message;
  EXPECT_EQ(ev->method, "best_single");
  EXPECT_EQ(ev->weights[6], 1.0);
  EXPECT_DOUBLE_EQ(*ev->ensemble.test.accuracy, *ev->models[6].test.accuracy);
  ASSERT_TRUE(ev->test_advantage.has_value());
  EXPECT_EQ(ev->test_advantage->mean, 0.0);
  // The lucky model's certainty is named where it shows.
  bool named = false;
  for (const auto& c : ev->candidates) named = named || !c.untrusted.empty();
  EXPECT_TRUE(named);
  // The rule that kept it: the procedure that found the incumbent picks the
  // lucky model on every fold (rows 3 and 17 fall in different folds), so its
  // out-of-fold loss is 0 and no combination scores better; decided.
  EXPECT_EQ(ev->decision.challenger, 0);
  EXPECT_TRUE(ev->decision.decided);
  EXPECT_EQ(ev->decision.reason, "no combination scored better than the best single model");
  // On 27 rows with no out-of-bag predictions, the record says what the choice rests on.
  EXPECT_NE(std::find(ev->warnings.begin(), ev->warnings.end(),
                      "the validation set has 27 rows (fewer than 200) and no out-of-bag "
                      "predictions were available, so the choice rests on those 27 rows"),
            ev->warnings.end())
      << ::testing::PrintToString(ev->warnings);
}

TEST(EvaluateIncumbent, ACombinationMustAlsoBeBetterOnTheObjective) {
  // The incumbent is overconfident; another trial says the same classes with
  // sane probabilities: a mix has a much lower log-loss, the same accuracy.
  Lab lab{8};
  auto labels = alternating(400);
  std::vector<int> wrong;
  for (int r = 0; r < 400; r += 10) wrong.push_back(r);
  EvaluationInput in;
  in.validation = {lab.model(labels, 0.6, 0.6), crafted(labels, wrong, 0.999f),
                   crafted(labels, wrong, 0.8f)};
  in.member_models = 1;
  in.incumbent = 1;
  in.validation_targets = Targets::classes(labels);
  in.objective = {Loss::kError, false};
  auto ev = evaluate_ensemble({}, in);
  ASSERT_TRUE(ev.ok()) << ev.error().message;
  EXPECT_EQ(ev->method, "best_single");
  EXPECT_TRUE(ev->decision.decided);
  // The loss alone (a log-loss objective) takes the better-calibrated mix.
  in.objective = {Loss::kLogLoss, false};
  ev = evaluate_ensemble({}, in);
  ASSERT_TRUE(ev.ok()) << ev.error().message;
  EXPECT_NE(ev->method, "best_single");
  EXPECT_GT(ev->decision.loss.mean, ev->decision.bar * ev->decision.loss.se);
}

TEST(EvaluateIncumbent, OutOfBagRowsDecideForASmallValidationSet) {
  // An ensemble-only sweep, 12 validation rows: too few to cross-validate.
  // The bagged members (70% right, independent errors) predicted their
  // out-of-bag training rows; the incumbent is the best of them.
  Lab lab{9};
  auto labels = alternating(12), train = alternating(600);
  EvaluationInput in;
  for (int m = 0; m < 10; ++m) in.validation.push_back(lab.model(labels, 0.7, 0.7));
  in.member_models = 10;
  in.incumbent = 9;
  in.validation_targets = Targets::classes(labels);
  auto without = evaluate_ensemble({}, in);
  ASSERT_TRUE(without.ok()) << without.error().message;
  EXPECT_EQ(without->method, "best_single");
  EXPECT_EQ(without->decision.oob_rows, 0);
  // The incumbent (model 9) is the best member on these rows, and in-sample
  // selection picks it alone: no combination scores better; decided.
  EXPECT_EQ(without->decision.challenger, 0);
  EXPECT_TRUE(without->decision.decided);
  EXPECT_EQ(without->decision.reason, "no combination scored better than the best single model");
  const std::string rests_on =
      "the validation set has 12 rows (fewer than 200) and no out-of-bag predictions were "
      "available, so the choice rests on those 12 rows";
  EXPECT_NE(std::find(without->warnings.begin(), without->warnings.end(), rests_on),
            without->warnings.end())
      << ::testing::PrintToString(without->warnings);

  in.train_targets = Targets::classes(train);
  for (int m = 0; m < 10; ++m) {
    MemberOob oob;
    oob.member = m;
    std::vector<int> y;
    for (std::int64_t r = 0; r < 600; ++r)
      if (lab.uniform() < 0.37)
        oob.rows.push_back(r), y.push_back(train[static_cast<std::size_t>(r)]);
    oob.predictions = lab.model(y, 0.7, 0.7);
    in.oob.push_back(std::move(oob));
  }
  for (int m = 0; m < 10; ++m) in.incumbent_copies.push_back(m);
  auto with = evaluate_ensemble({}, in);
  ASSERT_TRUE(with.ok()) << with.error().message;
  EXPECT_EQ(with->method, "bagged") << with->decision.reason;
  EXPECT_TRUE(with->decision.decided);
  EXPECT_GT(with->decision.oob_rows, 400);
  EXPECT_NE(with->decision.reason.find("out-of-bag rows"), std::string::npos);
  EXPECT_EQ(std::find(with->warnings.begin(), with->warnings.end(), rests_on),
            with->warnings.end());
  // The out-of-bag estimate itself is unchanged by it.
  ASSERT_TRUE(with->oob.has_value());
  EXPECT_EQ(with->oob->rows_covered, with->decision.oob_rows);
}

TEST(EvaluateIncumbent, OutOfBagRowsAreHeardButNotPooledForASearchTrial) {
  // 100 validation rows on which the bagged members (all the same model) look
  // better than the search trial the sweep found best; on their out-of-bag
  // training rows they are the very members trained with its parameters, so
  // the bagged rule is no better there (decide() then keeps the incumbent:
  // Decide.OutOfBagRowsCanOverruleTheValidationRows).
  Lab lab{10};
  auto labels = alternating(100), train = alternating(400);
  EvaluationInput in;
  const Matrix member = lab.model(labels, 0.95, 0.9);
  for (int m = 0; m < 4; ++m) in.validation.push_back(member);
  in.validation.push_back(lab.model(labels, 0.7, 0.7));  // 4: the incumbent
  in.member_models = 4;
  in.incumbent = 4;
  in.validation_targets = Targets::classes(labels);
  trials::EnsembleRecipe recipe;
  auto alone = evaluate_ensemble(recipe, in);
  ASSERT_TRUE(alone.ok()) << alone.error().message;
  ASSERT_EQ(alone->evidence[1].name, "bagged");
  EXPECT_TRUE(alone->evidence[1].loss.advantage().clears());

  in.train_targets = Targets::classes(train);
  std::vector<std::int64_t> rows;
  std::vector<int> y;
  for (std::int64_t r = 0; r < 400; r += 2)
    rows.push_back(r), y.push_back(train[static_cast<std::size_t>(r)]);
  const Matrix oob = lab.model(y, 0.7, 0.7);
  for (int m = 0; m < 4; ++m) {
    in.oob.push_back({m, rows, oob});
    in.incumbent_copies.push_back(m);
  }
  auto heard = evaluate_ensemble(recipe, in);
  ASSERT_TRUE(heard.ok()) << heard.error().message;
  const auto& bagged = heard->evidence[1];
  EXPECT_EQ(bagged.loss.rows(), 100);  // not pooled: the incumbent saw every training row
  EXPECT_EQ(bagged.oob_rows, 0);
  EXPECT_EQ(bagged.oob_loss.rows(), 200);
  EXPECT_EQ(bagged.oob_loss.advantage().mean, 0.0);  // the same model as each member
  EXPECT_NE(heard->method, "bagged") << heard->decision.reason;
}

TEST(Evaluate, RejectsTestPredictionsOfTheWrongModels) {
  auto in = sample_input();
  in.test.pop_back();
  EXPECT_FALSE(evaluate_ensemble({}, in).ok());
  in = sample_input();
  in.validation.clear();
  EXPECT_FALSE(evaluate_ensemble({}, in).ok());
}

}  // namespace
}  // namespace hpo::ensemble
