#include <gtest/gtest.h>

#include <cmath>

#include "ensemble/combiners.hpp"
#include "ensemble/metrics.hpp"
#include "ensemble/rng.hpp"

namespace hpo::ensemble {
namespace {

using Rule = WeightedMeanCombiner::Rule;

Matrix fitted_combine(Combiner& c, const std::vector<Matrix>& preds, const Targets& targets) {
  auto st = c.fit(preds, targets);
  EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
  auto out = combine(c, preds);
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
  return out.ok() ? *out : Matrix();
}

void expect_matrix_near(const Matrix& got, const Matrix& want, double tol = 1e-6) {
  ASSERT_EQ(got.rows, want.rows);
  ASSERT_EQ(got.cols, want.cols);
  for (std::size_t i = 0; i < got.data.size(); ++i)
    EXPECT_NEAR(got.data[i], want.data[i], tol) << "at flat index " << i;
}

TEST(HardVote, CountsVotesAsShares) {
  // Row 0: votes 0, 0, 2. Row 1: votes 1, 2, 2.
  std::vector<Matrix> p{Matrix::from({{0.6f, 0.3f, 0.1f}, {0.1f, 0.5f, 0.4f}}),
                        Matrix::from({{0.5f, 0.1f, 0.4f}, {0.2f, 0.3f, 0.5f}}),
                        Matrix::from({{0.2f, 0.1f, 0.7f}, {0.0f, 0.1f, 0.9f}})};
  HardVoteCombiner c;
  Matrix out = fitted_combine(c, p, Targets::classes({0, 2}));
  expect_matrix_near(out, Matrix::from({{2.f / 3, 0, 1.f / 3}, {0, 1.f / 3, 2.f / 3}}));
  EXPECT_EQ(argmax_rows(out), (std::vector<int>{0, 2}));
  EXPECT_EQ(c.weights(), (std::vector<double>{1.0 / 3, 1.0 / 3, 1.0 / 3}));
}

TEST(HardVote, TiesGoToTheLowestClassIndex) {
  // Two members vote class 2, two vote class 1: the tie goes to class 1, although the summed
  // probability of class 2 is higher. A member's own tie (0.5/0.5) is a vote for class 0.
  std::vector<Matrix> p{Matrix::from({{0.0f, 0.0f, 1.0f}, {0.5f, 0.5f, 0.0f}}),
                        Matrix::from({{0.0f, 0.0f, 1.0f}, {0.5f, 0.5f, 0.0f}}),
                        Matrix::from({{0.0f, 0.6f, 0.4f}, {0.4f, 0.6f, 0.0f}}),
                        Matrix::from({{0.0f, 0.6f, 0.4f}, {0.4f, 0.6f, 0.0f}})};
  HardVoteCombiner c;
  Matrix out = fitted_combine(c, p, Targets::classes({0, 0}));
  EXPECT_FLOAT_EQ(out(0, 1), 0.5f);
  EXPECT_FLOAT_EQ(out(0, 2), 0.5f);
  EXPECT_EQ(argmax_rows(out), (std::vector<int>{1, 0}));
}

TEST(SoftVote, AveragesProbabilitiesAndCanDisagreeWithTheHardVote) {
  // Two members lean weakly to class 0, one is sure of class 1.
  std::vector<Matrix> p{Matrix::from({{0.55f, 0.45f}}), Matrix::from({{0.55f, 0.45f}}),
                        Matrix::from({{0.0f, 1.0f}})};
  WeightedMeanCombiner soft(Rule::kUniform);
  Matrix s = fitted_combine(soft, p, Targets::classes({1}));
  expect_matrix_near(s, Matrix::from({{1.1f / 3, 1.9f / 3}}));
  HardVoteCombiner hard;
  Matrix h = fitted_combine(hard, p, Targets::classes({1}));
  EXPECT_EQ(argmax_rows(s)[0], 1);
  EXPECT_EQ(argmax_rows(h)[0], 0);
}

TEST(MeanAndMedian, Regression) {
  std::vector<Matrix> p{Matrix::from({{1.f}, {4.f}}), Matrix::from({{2.f}, {-2.f}}),
                        Matrix::from({{10.f}, {0.f}})};
  auto targets = Targets::regression(Matrix::from({{2.f}, {0.f}}));
  WeightedMeanCombiner mean(Rule::kUniform);
  expect_matrix_near(fitted_combine(mean, p, targets), Matrix::from({{13.f / 3}, {2.f / 3}}));
  MedianCombiner median;
  expect_matrix_near(fitted_combine(median, p, targets), Matrix::from({{2.f}, {0.f}}));
  p.push_back(Matrix::from({{3.f}, {1.f}}));  // even count: mean of the two middle values
  expect_matrix_near(fitted_combine(median, p, targets), Matrix::from({{2.5f}, {0.5f}}));
}

TEST(Weighted, WeightsFollowValidationAccuracy) {
  // Member 0 is right on both rows, member 1 on one of two: weights 2/3 and 1/3.
  std::vector<Matrix> p{Matrix::from({{1.f, 0.f}, {0.f, 1.f}}),
                        Matrix::from({{1.f, 0.f}, {1.f, 0.f}})};
  WeightedMeanCombiner c(Rule::kScore);
  Matrix out = fitted_combine(c, p, Targets::classes({0, 1}));
  ASSERT_EQ(c.weights().size(), 2u);
  EXPECT_NEAR(c.weights()[0], 2.0 / 3, 1e-12);
  EXPECT_NEAR(c.weights()[1], 1.0 / 3, 1e-12);
  expect_matrix_near(out, Matrix::from({{1.f, 0.f}, {1.f / 3, 2.f / 3}}));
}

TEST(Weighted, RegressionWeightsAreInverseMse) {
  std::vector<Matrix> p{Matrix::from({{1.f}}), Matrix::from({{3.f}})};  // MSE 1 and 9 vs target 0
  WeightedMeanCombiner c(Rule::kScore);
  ASSERT_TRUE(c.fit(p, Targets::regression(Matrix::from({{0.f}}))).ok());
  EXPECT_NEAR(c.weights()[0], 0.9, 1e-12);
  EXPECT_NEAR(c.weights()[1], 0.1, 1e-12);
  EXPECT_EQ(weights_from_scores({0.0, 2.0, 0.0}, false), (std::vector<double>{0.5, 0, 0.5}));
  EXPECT_EQ(weights_from_scores({-1.0, 0.0}, true), (std::vector<double>{0.5, 0.5}));
}

TEST(Weighted, FixedWeightsAreNormalisedAndMustMatchTheMembers) {
  WeightedMeanCombiner c(std::vector<double>{3, 1});
  EXPECT_EQ(c.weights(), (std::vector<double>{0.75, 0.25}));
  auto out = combine(c, {Matrix::from({{4.f}}), Matrix::from({{0.f}})});
  ASSERT_TRUE(out.ok());
  EXPECT_FLOAT_EQ((*out)(0, 0), 3.f);
  auto bad = combine(c, {Matrix::from({{4.f}})});
  EXPECT_FALSE(bad.ok());
}

TEST(Selection, PicksTheObviouslyBetterMemberFirst) {
  // Member 1 is right and confident on every row; 0 and 2 are wrong on some.
  std::vector<int> labels{0, 1, 1, 0};
  std::vector<Matrix> p{Matrix::from({{0.6f, 0.4f}, {0.6f, 0.4f}, {0.3f, 0.7f}, {0.4f, 0.6f}}),
                        Matrix::from({{0.9f, 0.1f}, {0.1f, 0.9f}, {0.1f, 0.9f}, {0.9f, 0.1f}}),
                        Matrix::from({{0.5f, 0.5f}, {0.5f, 0.5f}, {0.5f, 0.5f}, {0.5f, 0.5f}})};
  auto sel = ensemble_selection(p, Targets::classes(labels), {.rounds = 10, .init = 0});
  ASSERT_TRUE(sel.ok()) << sel.error().message;
  EXPECT_EQ(sel->picks.front(), 1);
  EXPECT_EQ(sel->counts, (std::vector<int>{0, 1, 0}));  // nothing improves on member 1 alone
  EXPECT_EQ(sel->loss_by_round.size(), 10u);
  EXPECT_DOUBLE_EQ(sel->loss, log_loss(p[1], labels));
}

TEST(Selection, PicksAMemberTwiceToReachTheBestWeighting) {
  // Target 1; member 0 predicts 0, member 1 predicts 3. Only weights 2/3, 1/3 hit the target:
  // picks 0 (loss 1), 1 (mean 1.5, loss .25), 0 (mean 1, loss 0), then 0 and 1 (loss .04).
  std::vector<Matrix> p{Matrix::from({{0.f}, {0.f}}), Matrix::from({{3.f}, {3.f}})};
  auto targets = Targets::regression(Matrix::from({{1.f}, {1.f}}));
  auto sel = ensemble_selection(p, targets, {.rounds = 5, .init = 1});
  ASSERT_TRUE(sel.ok()) << sel.error().message;
  EXPECT_EQ(sel->picks, (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(sel->counts, (std::vector<int>{2, 1}));
  EXPECT_NEAR(sel->weights[0], 2.0 / 3, 1e-12);
  EXPECT_NEAR(sel->loss, 0.0, 1e-12);
  EXPECT_EQ(sel->loss_by_round.size(), 5u);

  auto all = ensemble_selection(p, targets, {.rounds = 5, .init = 1, .best_prefix = false});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->picks, (std::vector<int>{0, 1, 0, 0, 1}));
  EXPECT_GT(all->loss, 0.0);

  WeightedMeanCombiner c(Rule::kSelection, {.rounds = 5, .init = 1});
  Matrix out = fitted_combine(c, p, targets);
  EXPECT_NEAR(out(0, 0), 1.0, 1e-6);
  EXPECT_EQ(c.selection().counts, (std::vector<int>{2, 1}));
}

TEST(Selection, SortedInitialisationStartsFromTheBestModels) {
  std::vector<Matrix> p{Matrix::from({{5.f}}), Matrix::from({{2.f}}), Matrix::from({{1.5f}})};
  auto sel = ensemble_selection(p, Targets::regression(Matrix::from({{1.f}})),
                                {.rounds = 2, .init = 2, .best_prefix = false});
  ASSERT_TRUE(sel.ok());
  EXPECT_EQ(sel->picks, (std::vector<int>{2, 1}));
}

TEST(Selection, RejectsBadInput) {
  std::vector<Matrix> p{Matrix::from({{0.5f, 0.5f}})};
  EXPECT_FALSE(ensemble_selection({}, Targets::classes({0}), {}).ok());
  EXPECT_FALSE(ensemble_selection(p, Targets::classes({0}), {.rounds = 0}).ok());
  EXPECT_FALSE(ensemble_selection(p, Targets::classes({0}), {.loss = Loss::kMse}).ok());
  EXPECT_FALSE(ensemble_selection(p, Targets::classes({2}), {}).ok());
}

TEST(CheckPredictions, NamesTheOffendingMember) {
  auto st = check_predictions({Matrix(3, 2), Matrix(3, 2), Matrix(2, 2)});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().fields.at(0).path, "predictions[2]");
  auto labels = Targets::classes({0, 1});
  EXPECT_FALSE(check_predictions({Matrix(3, 2)}, &labels).ok());
  EXPECT_FALSE(check_predictions({}).ok());
}

TEST(MakeCombiner, FollowsTheRecipe) {
  trials::EnsembleRecipe r;
  using C = trials::EnsembleRecipe::Combine;
  r.combine = C::kHardVote;
  EXPECT_NE(dynamic_cast<HardVoteCombiner*>(make_combiner(r).get()), nullptr);
  r.combine = C::kMedian;
  EXPECT_NE(dynamic_cast<MedianCombiner*>(make_combiner(r).get()), nullptr);
  // Selection takes its rounds from the recipe: one round keeps only the best model.
  r.combine = C::kSelection;
  r.selection_rounds = 1;
  auto sel = make_combiner(r);
  std::vector<Matrix> p{Matrix::from({{0.f}}), Matrix::from({{3.f}})};
  ASSERT_TRUE(sel->fit(p, Targets::regression(Matrix::from({{1.f}}))).ok());
  EXPECT_EQ(sel->weights(), (std::vector<double>{1, 0}));
}

// Members that are right more often than not, with independent errors: every combination
// rule must beat the average member (the premise of bagging), and selection must not be worse
// than the best single member on the rows it was fitted on.
TEST(Ensemble, IndependentNoisyMembersCombineBetterThanTheAverageMember) {
  const int members = 9, classes = 4;
  const std::int64_t n = 3000;
  Rng rng(2024);
  auto uniform = [&] { return static_cast<double>(rng.next() >> 11) * 0x1.0p-53; };
  std::vector<int> labels(n);
  for (auto& y : labels) y = static_cast<int>(rng.below(classes));
  std::vector<Matrix> preds;
  double mean_member_accuracy = 0, best_member_log_loss = 1e9;
  for (int m = 0; m < members; ++m) {
    Matrix p(n, classes);
    for (std::int64_t r = 0; r < n; ++r) {
      double total = 0;
      for (int c = 0; c < classes; ++c) {
        double logit = (c == labels[r] ? 1.0 : 0.0) + 1.6 * (uniform() - 0.5) * 2;
        p(r, c) = static_cast<float>(std::exp(logit));
        total += p(r, c);
      }
      for (int c = 0; c < classes; ++c) p(r, c) = static_cast<float>(p(r, c) / total);
    }
    mean_member_accuracy += accuracy(p, labels) / members;
    best_member_log_loss = std::min(best_member_log_loss, log_loss(p, labels));
    preds.push_back(std::move(p));
  }
  auto targets = Targets::classes(labels);
  ASSERT_GT(mean_member_accuracy, 0.4);
  ASSERT_LT(mean_member_accuracy, 0.8);

  trials::EnsembleRecipe recipe;
  for (auto rule :
       {trials::EnsembleRecipe::Combine::kHardVote, trials::EnsembleRecipe::Combine::kSoftVote,
        trials::EnsembleRecipe::Combine::kWeighted, trials::EnsembleRecipe::Combine::kSelection}) {
    recipe.combine = rule;
    auto c = make_combiner(recipe);
    Matrix out = fitted_combine(*c, preds, targets);
    EXPECT_GT(accuracy(out, labels), mean_member_accuracy + 0.05) << trials::to_string(rule);
    if (rule == trials::EnsembleRecipe::Combine::kSelection) {
      EXPECT_LE(log_loss(out, labels), best_member_log_loss);
      int picked = 0;
      for (double w : c->weights()) picked += w > 0;
      EXPECT_GT(picked, 1);  // independent errors: more than one member is worth adding
    }
  }
}

}  // namespace
}  // namespace hpo::ensemble
