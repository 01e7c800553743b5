#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "trials/spec/recipe/torch_recipe.hpp"

namespace hpo::trials {
namespace {

using nlohmann::json;

struct Parsed {
  TorchRecipe recipe;
  std::vector<std::string> consumed;
  std::vector<FieldError> errors;
  bool has_error(const std::string& path) const {
    return std::any_of(errors.begin(), errors.end(), [&](auto& e) { return e.path == path; });
  }
  std::string dump() const {
    std::string s;
    for (const auto& e : errors) s += e.path + ": " + e.message + "\n";
    return s;
  }
};

Parsed parse(const json& j) {
  Parsed p;
  parse_torch_recipe(j, "trial", p.recipe, p.consumed, p.errors);
  return p;
}

json base() {
  return json::parse(R"({
    "kind": "torch", "task": "classification",
    "model": {"type": "mlp", "hidden": "{width}", "depth": "{depth}", "activation": "relu",
              "dropout": "{dropout}", "batch_norm": false},
    "data": {"format": "idx", "train_images": "a.gz", "train_labels": "b.gz",
             "validation_fraction": 0.1, "subset": 5000, "seed": 0},
    "optimizer": {"type": "{opt}", "lr": "{lr}", "momentum": 0.9, "nesterov": false,
                  "weight_decay": 0},
    "schedule": {"type": "cosine", "min_lr": 0.0001},
    "batch_size": 128, "epochs": 3, "seed": 7, "timeout_s": 60
  })");
}

TEST(TorchRecipe, ParsesLiteralsAndReferences) {
  auto p = parse(base());
  ASSERT_TRUE(p.errors.empty()) << p.dump();
  EXPECT_EQ(p.recipe.model.hidden.ref, "width");
  EXPECT_EQ(p.recipe.optimizer.lr.ref, "lr");
  EXPECT_FALSE(p.recipe.optimizer.momentum.is_ref());
  EXPECT_DOUBLE_EQ(p.recipe.optimizer.momentum.value, 0.9);
  EXPECT_EQ(p.recipe.data.train_images, "a.gz");
  EXPECT_EQ(p.recipe.seed.value, 7);
  EXPECT_EQ(torch_recipe_param_refs(p.recipe),
            (std::vector<std::string>{"depth", "dropout", "lr", "opt", "width"}));
}

TEST(TorchRecipe, ConsumesItsKeysButNotTheCommonOnes) {
  auto p = parse(base());
  for (const char* k :
       {"task", "model", "data", "optimizer", "schedule", "batch_size", "epochs", "seed"})
    EXPECT_NE(std::find(p.consumed.begin(), p.consumed.end(), k), p.consumed.end()) << k;
  for (const char* k : {"kind", "timeout_s"})
    EXPECT_EQ(std::find(p.consumed.begin(), p.consumed.end(), k), p.consumed.end()) << k;
}

TEST(TorchRecipe, ReportsBadFieldsWithTheirPaths) {
  auto j = base();
  j["model"]["hiden"] = 3;
  j["optimizer"]["momentum"] = "lots";
  j["optimizer"]["type"] = "rmsprop";
  j["model"]["dropout"] = 1.5;
  j["batch_size"] = 0;
  j["schedule"]["type"] = "linear";
  auto p = parse(j);
  EXPECT_TRUE(p.has_error("trial.model.hiden")) << p.dump();
  EXPECT_TRUE(p.has_error("trial.optimizer.momentum")) << p.dump();
  EXPECT_TRUE(p.has_error("trial.optimizer.type")) << p.dump();
  EXPECT_TRUE(p.has_error("trial.model.dropout")) << p.dump();
  EXPECT_TRUE(p.has_error("trial.batch_size")) << p.dump();
  EXPECT_TRUE(p.has_error("trial.schedule.type")) << p.dump();
}

TEST(TorchRecipe, ChecksDataFieldsPerFormat) {
  auto j = base();
  j["data"] = {{"format", "csv"}, {"train", "t.csv"}};
  EXPECT_TRUE(parse(j).has_error("trial.data.target"));
  j["data"] = {
      {"format", "idx"}, {"train_images", "a"}, {"train_labels", "b"}, {"test_images", "c"}};
  EXPECT_TRUE(parse(j).has_error("trial.data.test_labels"));
  j["data"] = {{"format", "parquet"}};
  EXPECT_TRUE(parse(j).has_error("trial.data.format"));
  j.erase("data");
  EXPECT_TRUE(parse(j).has_error("trial.data"));
}

TEST(TorchRecipe, CnnNeedsImages) {
  auto j = base();
  j["model"] = {{"type", "cnn"}, {"channels", {32, 64}}, {"pool", true}};
  j["data"] = {{"format", "csv"}, {"train", "t.csv"}, {"target", "y"}};
  auto p = parse(j);
  EXPECT_TRUE(p.has_error("trial.model.type")) << p.dump();
  EXPECT_EQ(p.recipe.model.pool.value, "true");
}

TEST(TorchRecipe, ResolvesParametersPerTrial) {
  auto p = parse(base());
  ASSERT_TRUE(p.errors.empty());
  search::Params params{{"width", std::int64_t{64}},
                        {"depth", std::int64_t{3}},
                        {"dropout", 0.25},
                        {"opt", std::string("adamw")},
                        {"lr", 0.003}};
  auto c = resolve(p.recipe, params);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->model.layers, (std::vector<std::int64_t>{64, 64, 64}));
  EXPECT_DOUBLE_EQ(c->model.dropout, 0.25);
  EXPECT_EQ(c->optimizer.type, OptimizerType::kAdamW);
  EXPECT_DOUBLE_EQ(c->optimizer.lr, 0.003);
  EXPECT_EQ(c->schedule.type, ScheduleType::kCosine);
  EXPECT_EQ(c->data.subset, 5000);
}

TEST(TorchRecipe, ResolveRefusesMissingAndUnusableParameters) {
  auto p = parse(base());
  search::Params params{{"width", std::string("wide")},
                        {"depth", std::int64_t{3}},
                        {"dropout", 0.25},
                        {"opt", std::string("sgd")},
                        {"lr", -1.0}};
  auto c = resolve(p.recipe, params);
  ASSERT_FALSE(c.ok());
  auto has = [&](const std::string& path) {
    return std::any_of(c.error().fields.begin(), c.error().fields.end(),
                       [&](auto& f) { return f.path == path; });
  };
  EXPECT_TRUE(has("trial.model.hidden")) << c.error().message;
  EXPECT_TRUE(has("trial.optimizer.lr")) << c.error().message;
  params.erase("lr");
  c = resolve(p.recipe, params);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("parameter 'lr' is not set"), std::string::npos);
}

TEST(TorchRecipe, IntListsTakeReferencesAndStrings) {
  auto j = base();
  j["model"] = {{"type", "cnn"}, {"channels", "{arch}"}, {"dense", {"{fc}", 32}}, {"pool", "last"}};
  auto p = parse(j);
  ASSERT_TRUE(p.errors.empty()) << p.dump();
  search::Params params{{"arch", std::string("16,32")},
                        {"fc", std::int64_t{128}},
                        {"opt", std::string("sgd")},
                        {"lr", 0.1}};
  auto c = resolve(p.recipe, params);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->model.channels, (std::vector<std::int64_t>{16, 32}));
  EXPECT_EQ(c->model.dense, (std::vector<std::int64_t>{128, 32}));
  EXPECT_EQ(c->model.pool, PoolMode::kLast);
  params["arch"] = std::string("16,wide");
  EXPECT_FALSE(resolve(p.recipe, params).ok());
}

}  // namespace
}  // namespace hpo::trials
