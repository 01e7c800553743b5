#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "ensemble/bagging.hpp"
#include "ensemble/bagging_json.hpp"
#include "ensemble/rng.hpp"
#include "trials/trial_plan.hpp"

namespace hpo::ensemble {
namespace {

trials::EnsembleRecipe recipe_with(std::uint64_t seed, bool bootstrap, double sample_fraction,
                                   double max_features) {
  trials::EnsembleRecipe r;
  r.seed = seed;
  r.bootstrap = bootstrap;
  r.sample_fraction = sample_fraction;
  r.max_features = max_features;
  return r;
}

TEST(Rng, MatchesTheSplitMix64ReferenceSequence) {
  // First outputs of Vigna's splitmix64.c seeded with 0: the generator is portable by construction.
  Rng rng(0);
  EXPECT_EQ(rng.next(), 0xE220A8397B1DCDAFULL);
  EXPECT_EQ(rng.next(), 0x6E789E6AA1B965F4ULL);
  EXPECT_EQ(rng.next(), 0x06C45D188009454FULL);
}

TEST(Rng, BelowIsInRangeAndRoughlyUniform) {
  Rng rng(42);
  std::vector<int> counts(6, 0);
  for (int i = 0; i < 60000; ++i) {
    auto x = rng.below(6);
    ASSERT_LT(x, 6u);
    ++counts[x];
  }
  for (int c : counts) EXPECT_NEAR(c, 10000, 400);
}

TEST(Bagging, SameSeedSamePlan) {
  auto r = recipe_with(7, true, 1.0, 0.5);
  auto a = plan_member(r, 3, 1000, 20);
  auto b = plan_member(r, 3, 1000, 20);
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.features, b.features);
  EXPECT_EQ(a.oob_rows, b.oob_rows);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.train_seed, b.train_seed);
}

TEST(Bagging, MembersAndEnsembleSeedsDiffer) {
  auto r = recipe_with(7, true, 1.0, 0.5);
  auto a = plan_member(r, 0, 1000, 20);
  auto b = plan_member(r, 1, 1000, 20);
  auto c = plan_member(recipe_with(8, true, 1.0, 0.5), 0, 1000, 20);
  EXPECT_NE(a.seed, b.seed);
  EXPECT_NE(a.rows, b.rows);
  EXPECT_NE(a.features, b.features);
  EXPECT_NE(a.rows, c.rows);
  EXPECT_NE(a.seed, a.train_seed);
}

TEST(Bagging, BootstrapDrawsWithReplacementAndOobIsExactlyTheRowsNotDrawn) {
  const std::int64_t n = 10000;
  auto plan = plan_member(recipe_with(1, true, 1.0, 1.0), 0, n, 5);
  ASSERT_EQ(plan.rows.size(), static_cast<std::size_t>(n));
  EXPECT_TRUE(std::is_sorted(plan.rows.begin(), plan.rows.end()));
  std::set<std::int64_t> drawn(plan.rows.begin(), plan.rows.end());
  EXPECT_LT(drawn.size(), plan.rows.size());  // some row was drawn twice
  std::vector<std::int64_t> not_drawn;
  for (std::int64_t r = 0; r < n; ++r)
    if (!drawn.count(r)) not_drawn.push_back(r);
  EXPECT_EQ(plan.oob_rows, not_drawn);
  // About 1/e of the rows are out of bag.
  EXPECT_NEAR(static_cast<double>(plan.oob_rows.size()) / n, 0.3679, 0.015);
  EXPECT_GE(*drawn.begin(), 0);
  EXPECT_LT(*drawn.rbegin(), n);
}

TEST(Bagging, SampleFractionSetsTheDrawCount) {
  auto plan = plan_member(recipe_with(1, true, 0.25, 1.0), 0, 1001, 5);
  EXPECT_EQ(plan.rows.size(), 250u);  // round(0.25 * 1001)
  std::set<std::int64_t> drawn(plan.rows.begin(), plan.rows.end());
  EXPECT_EQ(drawn.size() + plan.oob_rows.size(), 1001u);
}

TEST(Bagging, SubsampleWithoutReplacement) {
  auto plan = plan_member(recipe_with(5, false, 0.6, 1.0), 2, 500, 5);
  ASSERT_EQ(plan.rows.size(), 300u);
  EXPECT_TRUE(std::adjacent_find(plan.rows.begin(), plan.rows.end()) == plan.rows.end());
  EXPECT_TRUE(std::is_sorted(plan.rows.begin(), plan.rows.end()));
  std::vector<std::int64_t> all(plan.rows);
  all.insert(all.end(), plan.oob_rows.begin(), plan.oob_rows.end());
  std::sort(all.begin(), all.end());
  for (std::int64_t r = 0; r < 500; ++r) ASSERT_EQ(all[r], r);

  auto full = plan_member(recipe_with(5, false, 1.0, 1.0), 2, 500, 5);
  EXPECT_EQ(full.rows.size(), 500u);
  EXPECT_TRUE(full.oob_rows.empty());
}

TEST(Bagging, FeatureSubsetsAreSortedDistinctAndSized) {
  EXPECT_EQ(features_per_member(0.3, 10), 3);
  EXPECT_EQ(features_per_member(0.01, 10), 1);
  EXPECT_EQ(features_per_member(1.0, 10), 10);
  EXPECT_EQ(features_per_member(4, 10), 4);
  EXPECT_EQ(features_per_member(50, 10), 10);
  auto plan = plan_member(recipe_with(9, true, 1.0, 0.3), 0, 100, 784);
  ASSERT_EQ(plan.features.size(), 235u);
  EXPECT_TRUE(std::adjacent_find(plan.features.begin(), plan.features.end(),
                                 std::greater_equal<>()) == plan.features.end());
  EXPECT_GE(plan.features.front(), 0);
  EXPECT_LT(plan.features.back(), 784);
  auto all = plan_member(recipe_with(9, true, 1.0, 1.0), 0, 100, 6);
  EXPECT_EQ(all.features, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5}));
}

TEST(Bagging, FeatureFractionDoesNotChangeTheRows) {
  auto a = plan_member(recipe_with(3, true, 1.0, 0.2), 4, 300, 50);
  auto b = plan_member(recipe_with(3, true, 1.0, 0.9), 4, 300, 50);
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_NE(a.features.size(), b.features.size());
}

TEST(Bagging, EmptyData) {
  auto plan = plan_member(recipe_with(3, true, 1.0, 1.0), 0, 0, 0);
  EXPECT_TRUE(plan.rows.empty());
  EXPECT_TRUE(plan.oob_rows.empty());
  EXPECT_TRUE(plan.features.empty());
}

// A member's spec as the worker reads it back: through the trial record's
// one codec (trials/trial_plan.hpp).
Result<MemberSpec> through_record(const MemberSpec& spec) {
  trials::TrialPlan plan;
  plan.member = spec;
  return trials::member_spec_of(trials::plan_from_text(trials::plan_to_json(plan, "sweep")));
}

Result<MemberSpec> member_from_text(std::string_view text) {
  return trials::member_from_json(nlohmann::json::parse(text), "extra");
}

TEST(BaggingJson, WorkerRecomputesTheSamePlanFromExtra) {
  auto recipe = recipe_with(0xDEADBEEFCAFEF00DULL, false, 0.7, 0.5);
  auto spec = member_spec(recipe, 5);
  auto parsed = through_record(spec);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->seed, spec.seed);
  EXPECT_EQ(parsed->member_index, 5);
  auto a = plan_member(recipe, 5, 2000, 30);
  auto b = plan_member(*parsed, 2000, 30);
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.features, b.features);
  EXPECT_EQ(a.oob_rows, b.oob_rows);
}

TEST(BaggingJson, MemberBudgetTravelsWithTheMember) {
  auto recipe = recipe_with(7, true, 1.0, 1.0);
  EXPECT_FALSE(through_record(member_spec(recipe, 0))->epochs);
  recipe.epochs = 12;
  recipe.subset = 0;
  auto parsed = through_record(member_spec(recipe, 3));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->epochs, 12);
  EXPECT_EQ(parsed->subset, 0);
  EXPECT_EQ(member_from_text(R"({"member": 1, "seed": 4, "epochs": 0})").error().fields.at(0).path,
            "extra.epochs");
}

TEST(BaggingJson, RejectsBadExtra) {
  EXPECT_FALSE(trials::member_spec_of(trials::plan_from_text("not json")).ok());
  EXPECT_EQ(member_from_text(R"({"seed": 1})").error().fields.at(0).path, "extra.member");
  EXPECT_EQ(member_from_text(R"({"member": 1, "seed": -4})").error().fields.at(0).path,
            "extra.seed");
  EXPECT_EQ(member_from_text(R"({"member": 1, "seed": 4, "sample_fraction": 0})")
                .error()
                .fields.at(0)
                .path,
            "extra.sample_fraction");
  EXPECT_TRUE(member_from_text(R"({"member": 1, "seed": 4, "rank": 2})").ok());
  // The record's codec says the same of a member trial's plan.
  EXPECT_EQ(trials::member_spec_of(trials::plan_from_text(R"({"seed": 1})")).error().message,
            "extra.member: expected a member index >= 0");
}

}  // namespace
}  // namespace hpo::ensemble
