#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "trials/spec/recipe/ensemble_recipe.hpp"

namespace hpo::trials {
namespace {

struct Parsed {
  EnsembleRecipe recipe;
  std::vector<FieldError> errors;
};

Parsed parse(const char* text) {
  Parsed p;
  parse_ensemble_recipe(nlohmann::json::parse(text), "ensemble", p.recipe, p.errors);
  return p;
}

// The message of the error at `path`, or "" when there is none.
std::string error_at(const Parsed& p, const std::string& path) {
  for (const auto& e : p.errors)
    if (e.path == path) return e.message;
  return "";
}

TEST(EnsembleRecipe, EmptyObjectGivesDefaults) {
  auto p = parse("{}");
  ASSERT_TRUE(p.errors.empty());
  EXPECT_EQ(p.recipe.members, 8);
  EXPECT_EQ(p.recipe.base, EnsembleRecipe::Base::kBest);
  EXPECT_TRUE(p.recipe.bootstrap);
  EXPECT_EQ(p.recipe.sample_fraction, 1.0);
  EXPECT_EQ(p.recipe.max_features, 1.0);
  EXPECT_EQ(p.recipe.combine, EnsembleRecipe::Combine::kSoftVote);
}

TEST(EnsembleRecipe, ParsesEveryField) {
  auto p = parse(R"({"members": 16, "base": {"top_k": 3}, "bootstrap": false,
                     "sample_fraction": 0.5, "max_features": 12, "combine": "selection",
                     "seed": 18446744073709551615, "selection_rounds": 20, "selection_init": 2})");
  ASSERT_TRUE(p.errors.empty()) << p.errors[0].path << ": " << p.errors[0].message;
  EXPECT_EQ(p.recipe.members, 16);
  EXPECT_EQ(p.recipe.base, EnsembleRecipe::Base::kTopK);
  EXPECT_EQ(p.recipe.top_k, 3);
  EXPECT_FALSE(p.recipe.bootstrap);
  EXPECT_EQ(p.recipe.sample_fraction, 0.5);
  EXPECT_EQ(p.recipe.max_features, 12.0);
  EXPECT_EQ(p.recipe.combine, EnsembleRecipe::Combine::kSelection);
  EXPECT_EQ(p.recipe.seed, 18446744073709551615ULL);
  EXPECT_EQ(p.recipe.selection_rounds, 20);
  EXPECT_EQ(p.recipe.selection_init, 2);
}

TEST(EnsembleRecipe, MemberBudget) {
  auto none = parse("{}");
  EXPECT_FALSE(none.recipe.epochs.has_value());
  EXPECT_FALSE(none.recipe.subset.has_value());
  auto p = parse(R"({"epochs": 8, "subset": 0})");
  ASSERT_TRUE(p.errors.empty());
  EXPECT_EQ(p.recipe.epochs, 8);
  EXPECT_EQ(p.recipe.subset, 0);
  auto bad = parse(R"({"epochs": 0, "subset": -3})");
  EXPECT_EQ(error_at(bad, "ensemble.epochs"), "0 is out of range: expected 1 to 100000");
  EXPECT_NE(error_at(bad, "ensemble.subset").find("-3 is out of range"), std::string::npos);
  EXPECT_FALSE(bad.recipe.epochs.has_value());
}

TEST(EnsembleRecipe, CombineNamesRoundTrip) {
  for (auto c : {EnsembleRecipe::Combine::kHardVote, EnsembleRecipe::Combine::kSoftVote,
                 EnsembleRecipe::Combine::kMean, EnsembleRecipe::Combine::kMedian,
                 EnsembleRecipe::Combine::kWeighted, EnsembleRecipe::Combine::kSelection}) {
    auto p = parse((std::string(R"({"combine": ")") + to_string(c) + "\"}").c_str());
    ASSERT_TRUE(p.errors.empty()) << to_string(c);
    EXPECT_EQ(p.recipe.combine, c);
  }
}

TEST(EnsembleRecipe, ReportsEveryBadFieldWithItsPathAndValue) {
  auto p = parse(R"({"members": 0, "base": "worst", "bootstrap": "yes", "sample_fraction": 1.5,
                     "max_features": 2.5, "combine": "vote", "seed": -1, "colour": 1})");
  EXPECT_EQ(p.errors.size(), 8u);
  EXPECT_EQ(error_at(p, "ensemble.members"), "0 is out of range: expected 1 to 1000");
  EXPECT_NE(error_at(p, "ensemble.base").find("\"worst\""), std::string::npos);
  EXPECT_NE(error_at(p, "ensemble.bootstrap").find("true or false"), std::string::npos);
  EXPECT_EQ(error_at(p, "ensemble.sample_fraction"),
            "1.5 is out of range: expected more than 0, up to 1");
  EXPECT_NE(error_at(p, "ensemble.max_features").find("got a number 2.5"), std::string::npos);
  EXPECT_NE(error_at(p, "ensemble.combine").find("\"vote\""), std::string::npos);
  EXPECT_NE(error_at(p, "ensemble.seed").find("-1 is out of range"), std::string::npos);
  EXPECT_NE(error_at(p, "ensemble.colour").find("unknown key"), std::string::npos);
}

TEST(EnsembleRecipe, IntegersMustBeIntegersAndNotWrap) {
  auto p = parse(R"({"members": 2.5, "selection_rounds": 4294967297, "combine": "selection"})");
  EXPECT_NE(error_at(p, "ensemble.members").find("got a number 2.5"), std::string::npos);
  EXPECT_NE(error_at(p, "ensemble.selection_rounds").find("4294967297 is out of range"),
            std::string::npos);
  EXPECT_EQ(p.recipe.members, 8);  // bad fields keep their defaults
}

TEST(EnsembleRecipe, TopKForm) {
  EXPECT_NE(
      error_at(parse(R"({"base": {"top_k": 0}})"), "ensemble.base.top_k").find("0 is out of range"),
      std::string::npos);
  EXPECT_NE(error_at(parse(R"({"base": {"top_k": 2, "k": 1}})"), "ensemble.base.k"), "");
  EXPECT_NE(error_at(parse(R"({"base": {}})"), "ensemble.base"), "");
  EXPECT_NE(error_at(parse(R"({"base": 3})"), "ensemble.base"), "");
}

TEST(EnsembleRecipe, SelectionKeysNeedSelection) {
  auto p = parse(R"({"combine": "mean", "selection_rounds": 10})");
  EXPECT_NE(error_at(p, "ensemble.combine").find("\"mean\""), std::string::npos);
  EXPECT_NE(error_at(parse(R"({"selection_init": 1})"), "ensemble.combine"), "");
  auto q = parse(R"({"combine": "selection", "selection_rounds": 3, "selection_init": 4})");
  EXPECT_NE(error_at(q, "ensemble.selection_init").find("got 4"), std::string::npos);
}

TEST(EnsembleRecipe, NotAnObject) {
  auto p = parse("[1]");
  ASSERT_EQ(p.errors.size(), 1u);
  EXPECT_EQ(p.errors[0].path, "ensemble");
}

}  // namespace
}  // namespace hpo::trials
