#include <gtest/gtest.h>

#include <cmath>

#include "ensemble/manifest.hpp"
#include "ensemble/stacking.hpp"

namespace hpo::ensemble {
namespace {

// An under-confident model (its logits a quarter of the evidence): the
// log-linear pool learns to sharpen it (the best coefficient on these rows is
// about 2.3, log-loss 0.535 against the raw 0.581).
TEST(Stacking, TheLogLinearPoolSharpensAnUnderConfidentModel) {
  const int rows = 400;
  Matrix p(rows, 2);
  std::vector<int> labels(rows);
  for (int r = 0; r < rows; ++r) {
    labels[static_cast<std::size_t>(r)] = r % 2;
    // True log-odds in {±1, ±3}; the model reports a quarter of them.
    double logit = (r % 4 < 2 ? 1.0 : 3.0) * (r % 2 ? 1 : -1);
    if (r % 5 == 0) logit = -logit;  // some rows go the other way
    double q = 1 / (1 + std::exp(-0.25 * logit));
    p(r, 1) = static_cast<float>(q);
    p(r, 0) = static_cast<float>(1 - q);
  }
  auto t = Targets::classes(labels);
  auto model = fit_stacking({p}, t, 1e-4);
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_GT(model->coefficients[0], 2.0);
  StackingCombiner c(*model);
  auto pooled = combine(c, {p});
  ASSERT_TRUE(pooled.ok());
  EXPECT_LT(log_loss(*pooled, labels), log_loss(p, labels) - 0.04);
}

TEST(Stacking, CrossValidationPicksAPenaltyFromTheGrid) {
  Matrix a(50, 1), y(50, 1);
  for (int r = 0; r < 50; ++r) {
    a(r, 0) = static_cast<float>(r);
    y(r, 0) = static_cast<float>(2 * r + 1);
  }
  std::vector<int> folds(50);
  for (int r = 0; r < 50; ++r) folds[static_cast<std::size_t>(r)] = r % 5;
  auto lambdas = stacking_lambdas(true);
  auto model = fit_stacking_cv({a}, Targets::regression(y), folds, 5, lambdas);
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_DOUBLE_EQ(model->lambda, lambdas.front());  // exact linear data: least penalty wins
  EXPECT_NEAR(model->coefficients[0], 2.0, 1e-3);
  EXPECT_NEAR(model->intercept[0], 1.0, 0.05);
  EXPECT_FALSE(fit_stacking({a}, Targets::regression(y), -1).ok());
}

// A stacked ensemble survives the manifest: hpo-predict rebuilds the same combiner.
TEST(Stacking, TheManifestRebuildsTheMetaModel) {
  EnsembleManifest m;
  m.sweep_id = "s";
  m.n_features = 4;
  m.n_outputs = 2;
  m.method = "stacking";
  m.stacking_intercept = {0.1, -0.1};
  for (double w : {1.5, -0.25}) {
    ManifestMember mm;
    mm.trial_id = "t";
    mm.weight = w;
    m.members.push_back(mm);
  }
  auto back = manifest_from_json(manifest_to_json(m));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->method, "stacking");
  EXPECT_EQ(back->stacking_intercept, m.stacking_intercept);
  EXPECT_DOUBLE_EQ(back->members[1].weight, -0.25);
  auto a = Matrix::from({{0.8f, 0.2f}}), b = Matrix::from({{0.4f, 0.6f}});
  auto got = combine(*combiner_for(*back), {a, b});
  ASSERT_TRUE(got.ok());
  StackingModel direct{false, {1.5, -0.25}, {0.1, -0.1}, 0};
  auto want = combine(StackingCombiner(direct), {a, b});
  EXPECT_FLOAT_EQ((*got)(0, 0), (*want)(0, 0));
  EXPECT_NEAR((*got)(0, 0) + (*got)(0, 1), 1.0, 1e-6);
  // A negative weight outside stacking is still refused.
  m.method = "bagged";
  EXPECT_FALSE(manifest_from_json(manifest_to_json(m)).ok());
}

}  // namespace
}  // namespace hpo::ensemble
