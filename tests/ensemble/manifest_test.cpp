#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ensemble/manifest.hpp"

namespace hpo::ensemble {
namespace {

EnsembleManifest sample() {
  EnsembleManifest m;
  m.sweep_id = "s42";
  m.n_features = 784;
  m.n_outputs = 10;
  m.combine = trials::EnsembleRecipe::Combine::kSelection;
  trials::EnsembleRecipe recipe;
  recipe.seed = 0xFFFFFFFFFFFFFFF0ULL;  // above 2^63: must survive the round trip exactly
  recipe.max_features = 0.5;
  ManifestMember a;
  a.trial_id = "s42-m0";
  a.params = {{"lr", 0.001}, {"layers", std::int64_t{3}}, {"act", std::string("relu")}};
  a.bagging = member_spec(recipe, 0);
  a.features = {0, 5, 9};
  a.weight = 0.75;
  a.artifact = "members/m0.pt";
  a.metrics.validation.accuracy = 0.91;
  a.metrics.validation.log_loss = 0.25;
  a.metrics.test.accuracy = 0.9;
  ManifestMember b;
  b.trial_id = "s42-7";
  b.kind = "trial";
  b.weight = 0.25;
  m.members = {a, b};
  m.ensemble_metrics.test.accuracy = 0.93;
  m.best_single_trial_id = "s42-7";
  m.best_single_metrics.test.accuracy = 0.91;
  m.oob = OobSummary{60000, 59800, {}};
  m.oob->scores.accuracy = 0.92;
  return m;
}

TEST(Manifest, RoundTrips) {
  EnsembleManifest m = sample();
  auto back = manifest_from_json(manifest_to_json(m));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->sweep_id, "s42");
  EXPECT_EQ(back->n_features, 784);
  EXPECT_EQ(back->combine, trials::EnsembleRecipe::Combine::kSelection);
  ASSERT_EQ(back->members.size(), 2u);
  const auto& a = back->members[0];
  EXPECT_EQ(a.params, m.members[0].params);
  ASSERT_TRUE(a.bagging.has_value());
  EXPECT_EQ(a.bagging->seed, m.members[0].bagging->seed);
  EXPECT_EQ(a.bagging->max_features, 0.5);
  EXPECT_EQ(a.features, (std::vector<std::int64_t>{0, 5, 9}));
  EXPECT_EQ(a.weight, 0.75);
  EXPECT_EQ(a.artifact, "members/m0.pt");
  EXPECT_EQ(a.metrics.validation.log_loss, 0.25);
  EXPECT_FALSE(a.metrics.validation.mse.has_value());
  EXPECT_EQ(back->members[1].kind, "trial");
  EXPECT_FALSE(back->members[1].bagging.has_value());
  EXPECT_EQ(back->ensemble_metrics.test.accuracy, 0.93);
  EXPECT_EQ(back->best_single_trial_id, "s42-7");
  ASSERT_TRUE(back->oob.has_value());
  EXPECT_EQ(back->oob->rows_covered, 59800);
  EXPECT_EQ(back->oob->scores.accuracy, 0.92);
}

TEST(Manifest, ErrorsNameTheField) {
  auto j = nlohmann::json::parse(manifest_to_json(sample()));
  auto error_path = [](const nlohmann::json& doc) {
    auto r = manifest_from_json(doc.dump());
    return r.ok() ? std::string("ok") : r.error().fields.at(0).path;
  };
  auto k = j;
  k["members"][1].erase("weight");
  EXPECT_EQ(error_path(k), "manifest.members[1].weight");
  k = j;
  k["members"][0]["bagging"]["seed"] = "x";
  EXPECT_EQ(error_path(k), "manifest.members[0].bagging.seed");
  k = j;
  k["members"][0]["params"]["lr"] = nlohmann::json::array();
  EXPECT_EQ(error_path(k), "manifest.members[0].params.lr");
  k = j;
  k["version"] = 2;
  EXPECT_EQ(error_path(k), "manifest.version");
  k = j;
  k["combine"] = "vote";
  EXPECT_EQ(error_path(k), "manifest.combine");
  k = j;
  k["members"] = nlohmann::json::array();
  EXPECT_EQ(error_path(k), "manifest.members");
  k = j;
  k["ensemble"]["test"]["accuracy"] = "high";
  EXPECT_EQ(error_path(k), "manifest.ensemble.test.accuracy");
  k = j;
  k["future_field"] = 1;  // unknown keys are ignored
  EXPECT_EQ(error_path(k), "ok");
  EXPECT_FALSE(manifest_from_json("[]").ok());
}

TEST(Manifest, CombinerReproducesTheRecordedWeights) {
  auto m = sample();
  auto c = combiner_for(m);
  auto out = combine(*c, {Matrix::from({{1.f, 0.f}}), Matrix::from({{0.f, 1.f}})});
  ASSERT_TRUE(out.ok());
  EXPECT_FLOAT_EQ((*out)(0, 0), 0.75f);
  m.combine = trials::EnsembleRecipe::Combine::kHardVote;
  EXPECT_NE(dynamic_cast<HardVoteCombiner*>(combiner_for(m).get()), nullptr);
}

}  // namespace
}  // namespace hpo::ensemble
