// The decision against the incumbent (ensemble/decision.hpp), as pure logic:
// evidence in, choice and reason out.
#include "ensemble/decision.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace hpo::ensemble {
namespace {

TEST(ObjectiveLoss, TheMetricNameSaysWhatThePredictionsScore) {
  EXPECT_EQ(objective_loss("val_accuracy", true).loss, Loss::kError);
  EXPECT_FALSE(objective_loss("val_accuracy", true).stand_in);
  EXPECT_EQ(objective_loss("Top1_Error", true).loss, Loss::kError);
  EXPECT_EQ(objective_loss("val_loss", true).loss, Loss::kLogLoss);
  EXPECT_EQ(objective_loss("nll", true).loss, Loss::kLogLoss);
  auto f1 = objective_loss("macro_f1", true);
  EXPECT_EQ(f1.loss, Loss::kError);
  EXPECT_TRUE(f1.stand_in);
  EXPECT_EQ(objective_loss("val_rmse", false).loss, Loss::kMse);
  EXPECT_FALSE(objective_loss("val_rmse", false).stand_in);
  EXPECT_TRUE(objective_loss("r2", false).stand_in);
  EXPECT_STREQ(loss_name(Loss::kError), "error_rate");
}

TEST(ObjectiveLoss, AnAbsoluteErrorIsScoredAsOneNotAsASquaredError) {
  for (const char* name : {"val_mae", "mean_absolute_error", "MAE"}) {
    EXPECT_EQ(objective_loss(name, false).loss, Loss::kMae) << name;
    EXPECT_FALSE(objective_loss(name, false).stand_in) << name;
  }
  EXPECT_EQ(objective_loss("val_mse", false).loss, Loss::kMse);
  EXPECT_STREQ(loss_name(Loss::kMae), "absolute_error");
}

TEST(PairedSum, MeanAndStandardErrorOfTheDifferences) {
  PairedSum s;
  for (double d : {1.0, 2.0, 3.0, 4.0}) s.add(d);
  auto a = s.advantage();
  EXPECT_EQ(a.rows, 4);
  EXPECT_DOUBLE_EQ(a.mean, 2.5);
  EXPECT_NEAR(a.se, std::sqrt((1.5 * 1.5 * 2 + 0.5 * 0.5 * 2) / 3 / 4), 1e-12);
  PairedSum more;
  more.add(s);
  more.add(2.5);
  EXPECT_EQ(more.rows(), 5);
  EXPECT_DOUBLE_EQ(more.advantage().mean, 2.5);
  EXPECT_FALSE(PairedSum().advantage().clears());  // no rows: nothing clears
  PairedSum same;
  for (int i = 0; i < 10; ++i) same.add(0);
  EXPECT_FALSE(same.advantage().clears());  // the same predictions: no advantage
}

// Evidence whose per-row differences are `better` on `n_better` rows, `worse`
// on `n_worse`, and 0 elsewhere (of `rows`).
PairedSum rows_of(int rows, int n_better, double better, int n_worse = 0, double worse = 0) {
  PairedSum s;
  for (int r = 0; r < rows; ++r) s.add(r < n_better ? better : r < n_better + n_worse ? -worse : 0);
  return s;
}

CandidateEvidence candidate(const std::string& name, double cv_loss, PairedSum loss,
                            PairedSum objective) {
  CandidateEvidence e;
  e.name = name;
  e.cv_loss = cv_loss;
  e.loss = loss;
  e.objective = objective;
  e.error = objective;
  return e;
}

DecisionInput accuracy_objective(std::vector<CandidateEvidence> cs) {
  DecisionInput in;
  in.candidates = std::move(cs);
  in.objective = {Loss::kError, false};
  in.validation_rows = in.candidates.front().loss.rows();
  return in;
}

TEST(Decide, TheLowestLossAmongThoseThatClearBothWins) {
  auto in = accuracy_objective(
      {candidate("best_single", 0.5, rows_of(200, 0, 0), rows_of(200, 0, 0)),
       candidate("bagged", 0.40, rows_of(200, 150, 0.1), rows_of(200, 20, 1)),
       candidate("selection", 0.35, rows_of(200, 150, 0.2), rows_of(200, 20, 1)),
       // the lowest loss, but no better on the objective
       candidate("stacking", 0.30, rows_of(200, 190, 0.3), rows_of(200, 10, 1, 10, 1))});
  auto d = decide(in);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->chosen, 2);
  EXPECT_TRUE(d->decided);
  EXPECT_EQ(d->challenger, 2);
  EXPECT_GT(d->objective.mean, kNoise * d->objective.se);
  EXPECT_NE(d->reason.find("selection is better than the best single model"), std::string::npos)
      << d->reason;
}

TEST(Decide, ABetterLossWithAWorseObjectiveKeepsTheIncumbent) {
  auto in = accuracy_objective(
      {candidate("best_single", 0.5, rows_of(200, 0, 0), rows_of(200, 0, 0)),
       candidate("stacking", 0.3, rows_of(200, 190, 0.3), rows_of(200, 5, 1, 15, 1))});
  auto d = decide(in);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->chosen, 0);
  EXPECT_EQ(d->challenger, 1);
  EXPECT_TRUE(d->decided);  // it is worse on what the user asked for: nothing to doubt
  EXPECT_NE(d->reason.find("worse error_rate"), std::string::npos) << d->reason;
}

// The loss, the objective and the error rate are told apart: each gets its own
// evidence, so reading one for another changes the outcome or the reason.
// The bagged candidate against an incumbent with no per-row advantage, on 200
// rows: the decision keeps the incumbent, undecided, with each advantage's mean
// as given, one of them clearing the noise and the other not.
void expect_kept_within_noise(const CandidateEvidence& bagged, double loss_mean,
                              double objective_mean, bool loss_clears, const std::string& says) {
  auto in = accuracy_objective(
      {candidate("best_single", 0.5, rows_of(200, 0, 0), rows_of(200, 0, 0)), bagged});
  auto d = decide(in);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->chosen, 0);
  EXPECT_EQ(d->challenger, 1);
  EXPECT_FALSE(d->decided);
  EXPECT_NEAR(d->loss.mean, loss_mean, 1e-12);
  EXPECT_NEAR(d->objective.mean, objective_mean, 1e-12);
  EXPECT_EQ(d->loss.clears(), loss_clears);
  EXPECT_EQ(d->objective.clears(), !loss_clears);
  EXPECT_NE(d->reason.find(says), std::string::npos) << d->reason;
  EXPECT_NE(d->reason.find("within the noise (2 standard errors)"), std::string::npos) << d->reason;
}

TEST(Decide, TheLossClearsTheNoiseButTheObjectiveDoesNot) {
  auto bagged = candidate("bagged", 0.4, rows_of(200, 150, 0.1), rows_of(200, 3, 1, 1, 1));
  bagged.error = rows_of(200, 30, 1);  // clears: asked instead of the objective, it would win
  expect_kept_within_noise(bagged, 0.075, 0.01, true, "but its error_rate advantage 0.01 ± ");
}

TEST(Decide, TheObjectiveClearsTheNoiseButTheLossDoesNot) {
  auto bagged = candidate("bagged", 0.45, rows_of(200, 3, 0.1, 1, 0.1), rows_of(200, 30, 1));
  bagged.error = rows_of(200, 3, 1, 1, 1);
  expect_kept_within_noise(bagged, 0.001, 0.15, false, "but its advantage 0.001 ± ");
}

// The bar is two standard errors, not one. On 100 rows with k better by the
// same amount and the rest equal, mean / se = sqrt(k (100 - 1) / (100 - k)):
// 1.75 for k = 3 (kept), 2.03 for k = 4 (replaced); for the objective, then
// for the loss.
TEST(Decide, TheNoiseIsTwoStandardErrorsNotOne) {
  const auto incumbent = candidate("best_single", 0.5, rows_of(100, 0, 0), rows_of(100, 0, 0));
  auto in = accuracy_objective(
      {incumbent, candidate("bagged", 0.4, rows_of(100, 60, 0.1), rows_of(100, 3, 1))});
  auto d = decide(in);
  ASSERT_TRUE(d.ok());
  ASSERT_GT(d->objective.mean, d->objective.se);
  ASSERT_LT(d->objective.mean, kNoise * d->objective.se);
  EXPECT_EQ(d->chosen, 0);
  EXPECT_FALSE(d->decided);
  EXPECT_NE(d->reason.find("error_rate advantage"), std::string::npos) << d->reason;
  EXPECT_NE(d->reason.find("within the noise (2 standard errors)"), std::string::npos) << d->reason;

  in.candidates[1].objective = in.candidates[1].error = rows_of(100, 4, 1);
  d = decide(in);
  ASSERT_TRUE(d.ok());
  ASSERT_GT(d->objective.mean, kNoise * d->objective.se);
  ASSERT_LT(d->objective.mean, 2.1 * d->objective.se);
  EXPECT_EQ(d->chosen, 1);
  EXPECT_TRUE(d->decided);

  in.candidates[1].objective = in.candidates[1].error = rows_of(100, 60, 1);
  in.candidates[1].loss = rows_of(100, 3, 0.2);
  d = decide(in);
  ASSERT_TRUE(d.ok());
  ASSERT_GT(d->loss.mean, d->loss.se);
  ASSERT_LT(d->loss.mean, kNoise * d->loss.se);
  EXPECT_EQ(d->chosen, 0);
  EXPECT_FALSE(d->decided);
  EXPECT_NE(d->reason.find("but its advantage"), std::string::npos) << d->reason;

  in.candidates[1].loss = rows_of(100, 4, 0.2);
  d = decide(in);
  ASSERT_TRUE(d.ok());
  ASSERT_GT(d->loss.mean, kNoise * d->loss.se);
  ASSERT_LT(d->loss.mean, 2.1 * d->loss.se);
  EXPECT_EQ(d->chosen, 1);
  EXPECT_TRUE(d->decided);
}

// Regression scored by absolute error: a lower squared error (the loss) is not
// enough, the absolute error must clear the noise too, also when the loss is
// not taken at face value.
TEST(Decide, AnAbsoluteErrorObjectiveMustClearTheNoiseToo) {
  DecisionInput in;
  in.classification = false;
  in.objective = objective_loss("val_mae", false);
  in.validation_rows = 200;
  in.candidates = {
      candidate("best_single", 0.3, rows_of(200, 0, 0), rows_of(200, 0, 0)),
      candidate("stacking", 0.2, rows_of(200, 150, 0.1), rows_of(200, 3, 0.5, 1, 0.5))};
  auto d = decide(in);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->chosen, 0);
  EXPECT_FALSE(d->decided);
  EXPECT_TRUE(d->loss.clears());
  EXPECT_NE(d->reason.find("its absolute_error advantage"), std::string::npos) << d->reason;

  in.candidates[1].untrusted = "its cross-validated loss is 0";
  d = decide(in);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->chosen, 0);
  EXPECT_EQ(d->bar, kDoubtfulNoise);
  EXPECT_NE(d->reason.find("its absolute_error advantage"), std::string::npos) << d->reason;
  EXPECT_NE(d->reason.find("not taken at face value"), std::string::npos) << d->reason;
  EXPECT_NE(d->reason.find("3 standard errors"), std::string::npos) << d->reason;

  in.candidates[1].untrusted.clear();
  in.candidates[1].objective = rows_of(200, 30, 0.5);
  d = decide(in);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->chosen, 1);
  EXPECT_NE(d->reason.find("absolute_error by"), std::string::npos) << d->reason;
}

TEST(Decide, WithinTheNoiseItSaysItCouldNotTell) {
  auto in = accuracy_objective(
      {candidate("best_single", 0.5, rows_of(30, 0, 0), rows_of(30, 0, 0)),
       candidate("bagged", 0.45, rows_of(30, 3, 0.5, 3, 0.3), rows_of(30, 2, 1, 1, 1))});
  auto d = decide(in);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->chosen, 0);
  EXPECT_FALSE(d->decided);
  EXPECT_NE(d->reason.find("kept the best single model"), std::string::npos) << d->reason;
  EXPECT_NE(d->reason.find("within the noise"), std::string::npos) << d->reason;
}

TEST(Decide, AZeroLossMustBeatTheErrorRateByThreeStandardErrors) {
  // 27 rows; the incumbent is wrong on 5 of them, the candidate on none, with
  // a zero loss: 5/27 = 0.185 fewer errors, one standard error 0.076.
  auto lucky = candidate("selection", 0.0, rows_of(27, 27, 0.3), rows_of(27, 5, 1));
  lucky.untrusted = "its cross-validated loss is 0";
  auto in = accuracy_objective(
      {candidate("best_single", 0.3, rows_of(27, 0, 0), rows_of(27, 0, 0)), lucky});
  auto d = decide(in);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->chosen, 0);
  EXPECT_FALSE(d->decided);
  EXPECT_NE(d->reason.find("not taken at face value"), std::string::npos) << d->reason;
  EXPECT_NE(d->reason.find("3 standard errors"), std::string::npos) << d->reason;
  // Trusted, the same evidence clears the noise (two standard errors).
  in.candidates[1].untrusted.clear();
  d = decide(in);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->chosen, 1);
  EXPECT_EQ(d->bar, kNoise);
  // Fitted on a small validation set: three again.
  in.candidates[1].bar = kDoubtfulNoise;
  d = decide(in);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->chosen, 0);
  EXPECT_NE(d->reason.find("3 standard errors"), std::string::npos) << d->reason;
}

TEST(Decide, OutOfBagRowsCanOverruleTheValidationRows) {
  // Clearly better on 60 validation rows, but on 300 out-of-bag rows no better
  // than the members trained with the incumbent's parameters.
  auto bagged = candidate("bagged", 0.3, rows_of(60, 40, 0.3), rows_of(60, 12, 1));
  bagged.oob_loss = rows_of(300, 100, 0.1, 110, 0.1);
  bagged.oob_objective = rows_of(300, 10, 1, 10, 1);
  auto in = accuracy_objective(
      {candidate("best_single", 0.5, rows_of(60, 0, 0), rows_of(60, 0, 0)), bagged});
  auto d = decide(in);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->chosen, 0);
  EXPECT_FALSE(d->decided);
  EXPECT_EQ(d->oob_rows, 300);
  EXPECT_NE(d->reason.find("out-of-bag"), std::string::npos) << d->reason;
  // Better there too: the validation rows decide.
  in.candidates[1].oob_loss = rows_of(300, 100, 0.1);
  in.candidates[1].oob_objective = rows_of(300, 10, 1);
  d = decide(in);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->chosen, 1);
}

TEST(Decide, RowsACandidateWasFittedOnAreNoEvidence) {
  auto c = candidate("stacking", 0.1, rows_of(12, 12, 0.4), rows_of(12, 4, 1));
  c.eligible = false;
  auto in =
      accuracy_objective({candidate("best_single", 0.5, rows_of(12, 0, 0), rows_of(12, 0, 0)), c});
  in.cross_validated = false;
  auto d = decide(in);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->chosen, 0);
  EXPECT_FALSE(d->decided);
  EXPECT_NE(d->reason.find("no evidence"), std::string::npos) << d->reason;
}

TEST(Decide, TheRecipeCanNameACandidateThatExists) {
  auto in =
      accuracy_objective({candidate("best_single", 0.5, rows_of(12, 0, 0), rows_of(12, 0, 0)),
                          candidate("bagged", 0.6, rows_of(12, 0, 0, 12, 0.1), rows_of(12, 0, 0))});
  in.choose = trials::EnsembleRecipe::Choose::kBagged;
  auto d = decide(in);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->chosen, 1);
  EXPECT_NE(d->reason.find("named by the recipe"), std::string::npos);
  in.choose = trials::EnsembleRecipe::Choose::kStacking;
  d = decide(in);
  ASSERT_FALSE(d.ok());
  ASSERT_EQ(d.error().fields.size(), 1u);
  EXPECT_EQ(d.error().fields[0].path, "ensemble.choose");
}

}  // namespace
}  // namespace hpo::ensemble
