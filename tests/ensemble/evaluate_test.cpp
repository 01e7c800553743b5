#include <gtest/gtest.h>

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
  auto ev = evaluate_ensemble(recipe, in);
  ASSERT_TRUE(ev.ok()) << ev.error().message;
  EXPECT_EQ(ev->best_model, 1);
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
  // The choice has the lowest cross-validated loss, and is not worse than the
  // best single model on the test rows.
  for (const auto& c : ev->candidates) {
    EXPECT_TRUE(c.cross_validated);
    EXPECT_LE(ev->candidates[static_cast<std::size_t>(ev->chosen)].cv_loss, c.cv_loss) << c.name;
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
  // loss, but not by more than one standard error, so the best single model is
  // kept, and the record says why.
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
    EXPECT_NE(w.find("cannot tell"), std::string::npos) << w;

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
