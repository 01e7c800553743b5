#include <gtest/gtest.h>

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
