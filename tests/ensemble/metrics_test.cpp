#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "ensemble/bagging.hpp"
#include "ensemble/combiners.hpp"
#include "ensemble/metrics.hpp"

namespace hpo::ensemble {
namespace {

TEST(Metrics, AccuracyAndLogLoss) {
  Matrix p = Matrix::from({{0.8f, 0.2f}, {0.3f, 0.7f}, {0.6f, 0.4f}});
  std::vector<int> labels{0, 1, 1};
  EXPECT_DOUBLE_EQ(accuracy(p, labels), 2.0 / 3);
  auto ln = [](float x) { return std::log(static_cast<double>(x)); };
  double want = -(ln(0.8f) + ln(0.7f) + ln(0.4f)) / 3;
  EXPECT_NEAR(log_loss(p, labels), want, 1e-12);
  EXPECT_NEAR(loss(p, Targets::classes(labels), Loss::kError), 1.0 / 3, 1e-12);
  // A zero probability on the label is clipped, not infinite.
  EXPECT_NEAR(log_loss(Matrix::from({{1.f, 0.f}}), {1}), -std::log(kLogLossEps), 1e-9);
  EXPECT_THROW(accuracy(p, {0, 1}), std::invalid_argument);
  EXPECT_THROW(accuracy(p, {0, 1, 2}), std::invalid_argument);
}

TEST(Metrics, MseAndRmse) {
  Matrix p = Matrix::from({{1.f, 2.f}, {3.f, 4.f}});
  Matrix t = Matrix::from({{1.f, 0.f}, {0.f, 4.f}});
  EXPECT_DOUBLE_EQ(mse(p, t), (4.0 + 9.0) / 4);
  EXPECT_DOUBLE_EQ(rmse(p, t), std::sqrt(13.0 / 4));
  auto s = score(p, Targets::regression(t));
  EXPECT_FALSE(s.accuracy.has_value());
  EXPECT_DOUBLE_EQ(*s.mse, 13.0 / 4);
}

TEST(Metrics, MaeRowByRow) {
  Matrix p = Matrix::from({{1.f, 2.f}, {3.f, 4.f}});
  auto t = Targets::regression(Matrix::from({{1.f, 0.f}, {0.f, 4.f}}));
  EXPECT_DOUBLE_EQ(mae(p, t.values), (2.0 + 3.0) / 4);
  EXPECT_DOUBLE_EQ(loss(p, t, Loss::kMae), (2.0 + 3.0) / 4);
  // Per row, the mean over outputs of |y - prediction|, not of its square.
  EXPECT_EQ(row_losses(p, t, Loss::kMae), (std::vector<double>{1.0, 1.5}));
  EXPECT_EQ(row_losses(p, t, Loss::kMse), (std::vector<double>{2.0, 4.5}));
  EXPECT_THROW(loss(p, Targets::classes({0, 1}), Loss::kMae), std::invalid_argument);
}

TEST(Oob, CombinesOnlyTheMembersForWhichTheRowWasOutOfBag) {
  // 4 training rows. Member 0 is OOB on rows 0 and 1, member 1 on row 1, member 2 on none:
  // row 0 is predicted by member 0 alone, row 1 by members 0 and 1, rows 2 and 3 by nobody.
  std::vector<MemberOob> oob{
      {0, {0, 1}, Matrix::from({{0.9f, 0.1f}, {0.2f, 0.8f}})},
      {1, {1}, Matrix::from({{0.6f, 0.4f}})},
      {2, {}, Matrix(0, 2)},
  };
  WeightedMeanCombiner soft(WeightedMeanCombiner::Rule::kUniform);
  auto labels = Targets::classes({0, 0, 1, 1});
  auto est = oob_estimate(soft, oob, labels);
  ASSERT_TRUE(est.ok()) << est.error().message;
  EXPECT_EQ(est->rows_total, 4);
  EXPECT_EQ(est->rows_covered, 2);
  EXPECT_EQ(est->rows, (std::vector<std::int64_t>{0, 1}));
  EXPECT_NEAR(est->predictions(0, 0), 0.9f, 1e-6);
  EXPECT_NEAR(est->predictions(1, 0), 0.4f, 1e-6);  // (0.2 + 0.6) / 2
  EXPECT_DOUBLE_EQ(*est->scores.accuracy, 0.5);     // row 0 right, row 1 wrong

  HardVoteCombiner hard;
  auto h = oob_estimate(hard, oob, labels);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(argmax_rows(h->predictions), (std::vector<int>{0, 0}));  // row 1: 1-1 tie -> class 0
}

TEST(Oob, EveryRowGetsExactlyItsOutOfBagMembersFromRealPlans) {
  // Member m "predicts" a one-hot of column m, so the mean over a row's OOB members shows
  // exactly which members were combined for it.
  const int members = 6;
  const std::int64_t n = 300;
  trials::EnsembleRecipe recipe;
  recipe.seed = 11;
  std::vector<MemberOob> oob;
  std::vector<std::set<std::int64_t>> oob_sets;
  for (int m = 0; m < members; ++m) {
    auto plan = plan_member(recipe, m, n, 1);
    MemberOob o{m, plan.oob_rows, Matrix(static_cast<std::int64_t>(plan.oob_rows.size()), members)};
    for (std::int64_t i = 0; i < o.predictions.rows; ++i) o.predictions(i, m) = 1.f;
    oob_sets.emplace_back(plan.oob_rows.begin(), plan.oob_rows.end());
    oob.push_back(std::move(o));
  }
  std::vector<int> labels(n, 0);
  WeightedMeanCombiner mean(WeightedMeanCombiner::Rule::kUniform);
  auto est = oob_estimate(mean, oob, Targets::classes(labels));
  ASSERT_TRUE(est.ok()) << est.error().message;
  std::size_t covered = 0;
  for (std::int64_t r = 0; r < n; ++r) {
    int count = 0;
    for (const auto& s : oob_sets) count += static_cast<int>(s.count(r));
    if (count == 0) continue;
    ASSERT_LT(covered, est->rows.size());
    ASSERT_EQ(est->rows[covered], r);
    for (int m = 0; m < members; ++m)
      EXPECT_NEAR(est->predictions(static_cast<std::int64_t>(covered), m),
                  oob_sets[m].count(r) ? 1.0 / count : 0.0, 1e-6);
    ++covered;
  }
  EXPECT_EQ(static_cast<std::size_t>(est->rows_covered), covered);
  EXPECT_GT(covered, static_cast<std::size_t>(n) * 9 / 10);  // 1 - (1 - 1/e)^6 ≈ 0.94 of rows
}

TEST(Oob, RejectsBadInput) {
  WeightedMeanCombiner mean(WeightedMeanCombiner::Rule::kUniform);
  auto labels = Targets::classes({0, 1});
  EXPECT_FALSE(oob_estimate(mean, {{0, {2}, Matrix::from({{1.f, 0.f}})}}, labels).ok());
  EXPECT_FALSE(oob_estimate(mean, {{0, {0, 1}, Matrix::from({{1.f, 0.f}})}}, labels).ok());
  EXPECT_FALSE(oob_estimate(mean,
                            {{0, {0}, Matrix::from({{1.f, 0.f}})}, {1, {1}, Matrix::from({{1.f}})}},
                            labels)
                   .ok());
}

}  // namespace
}  // namespace hpo::ensemble
