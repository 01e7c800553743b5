// Spec parsing: a valid spec becomes typed structs; every kind of bad input is
// rejected with the JSON path of the offending field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "trials/placement.hpp"
#include "trials/spec/spec.hpp"
#include "trials/spec/spec_json.hpp"

namespace hpo::trials {
namespace {

using Json = nlohmann::ordered_json;

Json valid_spec() {
  return Json::parse(R"({
    "name": "demo",
    "objective": {"metric": "loss", "mode": "min"},
    "parameters": {
      "lr": {"type": "float", "min": 0.0001, "max": 0.1, "log": true},
      "layers": {"type": "int", "min": 1, "max": 4},
      "opt": {"type": "categorical", "values": ["sgd", "adam"]},
      "momentum": {"type": "float", "min": 0, "max": 0.99, "when": {"opt": "sgd"}}
    },
    "search": {"algorithm": "random", "max_trials": 20, "max_concurrent": 4, "seed": 7},
    "trial": {"kind": "command", "argv": ["python3", "train.py", "--lr={lr}", "--layers", "{layers}"],
              "timeout_s": 60, "max_attempts": 2, "resources": {"gpus": 1}}
  })");
}

// Field paths of the errors a spec produces (empty when it parses).
std::vector<std::string> error_paths(const Json& spec) {
  auto r = parse_spec(spec.dump());
  std::vector<std::string> paths;
  if (r.ok()) return paths;
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  for (const auto& f : r.error().fields) paths.push_back(f.path);
  return paths;
}

bool has_error(const Json& spec, const std::string& path, const std::string& fragment = "") {
  auto r = parse_spec(spec.dump());
  if (r.ok()) return false;
  for (const auto& f : r.error().fields)
    if (f.path == path && f.message.find(fragment) != std::string::npos) return true;
  ADD_FAILURE() << "no error at " << path << " containing '" << fragment
                << "'; got: " << r.error().message;
  return false;
}

TEST(Spec, ValidSpecParsesIntoTypedStructs) {
  auto r = parse_spec(valid_spec().dump());
  ASSERT_TRUE(r.ok()) << r.error().message;
  const SweepSpec& s = *r;
  EXPECT_EQ(s.name, "demo");
  EXPECT_EQ(s.objective.metric, "loss");
  EXPECT_FALSE(s.objective.maximize);
  ASSERT_EQ(s.space.params.size(), 4u);
  EXPECT_EQ(s.space.params[0].name, "lr");
  EXPECT_TRUE(s.space.params[0].log);
  EXPECT_EQ(s.space.params[1].type, search::ParamType::kInt);
  EXPECT_EQ(s.space.params[2].choices.size(), 2u);
  ASSERT_TRUE(s.space.params[3].when);
  EXPECT_EQ(s.space.params[3].when->parent, "opt");
  EXPECT_EQ(s.search.sampler.algorithm, search::Algorithm::kRandom);
  EXPECT_EQ(s.search.max_trials, 20);
  EXPECT_EQ(s.search.max_concurrent, 4);
  EXPECT_EQ(s.search.sampler.seed, 7u);
  EXPECT_EQ(s.trial.kind, TrialKind::kCommand);
  EXPECT_EQ(s.trial.command.argv.size(), 5u);
  EXPECT_EQ(s.trial.max_attempts, 2);
  EXPECT_EQ(s.trial.gpus, 1);
  EXPECT_EQ(s.trial.slots(), 1);
  EXPECT_DOUBLE_EQ(s.trial.timeout_s, 60);
}

TEST(Spec, ConditionalChildrenAreOrderedAfterTheirParent) {
  auto spec = valid_spec();
  Json params = Json::object();
  params["momentum"] = spec["parameters"]["momentum"];
  params["opt"] = spec["parameters"]["opt"];
  spec["parameters"] = params;
  spec["trial"]["argv"] = Json::array({"true"});
  auto r = parse_spec(spec.dump());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->space.params[0].name, "opt");
  EXPECT_EQ(r->space.params[1].name, "momentum");
}

TEST(Spec, NotJsonOrNotAnObject) {
  EXPECT_FALSE(parse_spec("{").ok());
  EXPECT_NE(parse_spec("{").error().message.find("not valid JSON"), std::string::npos);
  EXPECT_FALSE(parse_spec("[1,2]").ok());
}

TEST(Spec, UnknownKeysAtEveryLevel) {
  auto s = valid_spec();
  s["colour"] = "blue";
  EXPECT_TRUE(has_error(s, "colour", "unknown key"));
  s = valid_spec();
  s["parameters"]["lr"]["mni"] = 1;
  EXPECT_TRUE(has_error(s, "parameters.lr.mni", "unknown key"));
  s = valid_spec();
  s["search"]["max_trial"] = 3;
  EXPECT_TRUE(has_error(s, "search.max_trial", "unknown key"));
  s = valid_spec();
  s["trial"]["resources"]["cpu"] = 3;
  EXPECT_TRUE(has_error(s, "trial.resources.cpu", "unknown key"));
}

TEST(Spec, WrongTypesNameTheValue) {
  auto s = valid_spec();
  s["search"]["max_trials"] = "ten";
  EXPECT_TRUE(has_error(s, "search.max_trials", "expected an integer, got a string \"ten\""));
  s = valid_spec();
  s["parameters"]["lr"]["min"] = "small";
  EXPECT_TRUE(has_error(s, "parameters.lr.min", "expected a number"));
  s = valid_spec();
  s["parameters"]["layers"]["max"] = 2.5;
  EXPECT_TRUE(has_error(s, "parameters.layers.max", "expected an integer"));
  s = valid_spec();
  s["objective"]["mode"] = "maximise";
  EXPECT_TRUE(has_error(s, "objective.mode", "\"maximise\" is not one of: min, max"));
  s = valid_spec();
  s["trial"]["argv"][1] = 5;
  EXPECT_TRUE(has_error(s, "trial.argv[1]", "expected a string"));
}

TEST(Spec, RequiredFields) {
  for (const char* key : {"name", "objective", "parameters", "search", "trial"}) {
    auto s = valid_spec();
    s.erase(key);
    EXPECT_TRUE(has_error(s, key, "is required")) << key;
  }
  auto s = valid_spec();
  s["search"].erase("max_trials");
  EXPECT_TRUE(has_error(s, "search.max_trials", "is required"));
}

TEST(Spec, BoundsAndScales) {
  auto s = valid_spec();
  s["parameters"]["lr"]["min"] = 0.5;
  EXPECT_TRUE(has_error(s, "parameters.lr", "min (0.5) must be less than max (0.1)"));
  s = valid_spec();
  s["parameters"]["layers"]["min"] = 4;
  EXPECT_TRUE(has_error(s, "parameters.layers", "must be less than max"));
  s = valid_spec();
  s["parameters"]["lr"]["min"] = 0;
  EXPECT_TRUE(has_error(s, "parameters.lr.log", "log scale needs min > 0"));
  s = valid_spec();
  s["parameters"]["layers"]["step"] = 0;
  EXPECT_TRUE(has_error(s, "parameters.layers.step", "must be > 0"));
  s = valid_spec();
  s["search"]["max_trials"] = 0;
  EXPECT_TRUE(has_error(s, "search.max_trials", "out of range"));
}

TEST(Spec, NonFiniteNumbersInTheTextAreRejected) {
  std::string text = valid_spec().dump();
  auto pos = text.find("0.0001");
  text.replace(pos, 6, "1e999");
  auto r = parse_spec(text);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find("1e999"), std::string::npos) << r.error().message;
}

TEST(Spec, Categoricals) {
  auto s = valid_spec();
  s["parameters"]["opt"]["values"] = Json::array();
  EXPECT_TRUE(has_error(s, "parameters.opt.values", "must not be empty"));
  s = valid_spec();
  s["parameters"]["opt"]["values"] = Json::array({"sgd", "sgd"});
  EXPECT_TRUE(has_error(s, "parameters.opt.values[1]", "duplicate"));
  s = valid_spec();
  s["parameters"]["opt"]["values"] = Json::array({"sgd", Json::object()});
  EXPECT_TRUE(has_error(s, "parameters.opt.values[1]", "expected a string, boolean or number"));
}

TEST(Spec, Conditions) {
  auto s = valid_spec();
  s["parameters"]["momentum"]["when"] = {{"optimiser", "sgd"}};
  EXPECT_TRUE(has_error(s, "parameters.momentum.when.optimiser", "unknown parent"));
  s = valid_spec();
  s["parameters"]["momentum"]["when"] = {{"opt", "rmsprop"}};
  EXPECT_TRUE(has_error(s, "parameters.momentum.when.opt", "impossible condition"));
  s = valid_spec();
  s["parameters"]["momentum"]["when"] = {{"momentum", 0.5}};
  EXPECT_TRUE(has_error(s, "parameters.momentum.when.momentum", "itself"));
  s = valid_spec();
  s["parameters"]["opt"]["when"] = {{"momentum", 0.5}};
  EXPECT_TRUE(has_error(s, "parameters.opt.when", "cycle"));
}

TEST(Spec, GridNeedsDiscreteParameters) {
  auto s = valid_spec();
  s["search"]["algorithm"] = "grid";
  EXPECT_TRUE(has_error(s, "parameters.lr.step", "grid search needs a step"));
  s["parameters"].erase("lr");
  s["parameters"].erase("momentum");
  s["trial"]["argv"] = Json::array({"run", "{layers}", "{opt}"});
  EXPECT_TRUE(error_paths(s).empty());
}

TEST(Spec, WarmStartNamesEarlierSweeps) {
  auto s = valid_spec();
  s["search"]["algorithm"] = "bayesian";
  s["search"]["warm_start"] = {{"sweeps", {"s1", "abc-DEF_9"}}};
  auto ok = parse_spec(s.dump());
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->search.warm_start_sweeps, (std::vector<std::string>{"s1", "abc-DEF_9"}));
  s["search"]["warm_start"] = {{"sweeps", Json::array()}};
  EXPECT_TRUE(has_error(s, "search.warm_start.sweeps", "expected 1 to 20 sweep ids"));
  s["search"]["warm_start"] = {{"sweeps", {"s1", 7, "../x", "s1"}}};
  EXPECT_TRUE(has_error(s, "search.warm_start.sweeps[1]", "expected a sweep id"));
  EXPECT_TRUE(has_error(s, "search.warm_start.sweeps[2]", "expected a sweep id"));
  EXPECT_TRUE(has_error(s, "search.warm_start.sweeps[3]", "named twice"));
  s["search"]["warm_start"] = {{"sweep", {"s1"}}};
  EXPECT_TRUE(has_error(s, "search.warm_start.sweeps", "required"));
  EXPECT_TRUE(has_error(s, "search.warm_start.sweep", "unknown"));
  s["search"]["warm_start"] = {{"sweeps", {"s1"}}};
  s["search"]["algorithm"] = "grid";
  EXPECT_TRUE(has_error(s, "search.warm_start", "only the bayesian and tpe algorithms"));
  s["search"]["algorithm"] = "tpe";
  EXPECT_TRUE(error_paths(s).empty());
}

TEST(Spec, PlaceholdersMustNameParameters) {
  auto s = valid_spec();
  s["trial"]["argv"][2] = "--lr={learning_rate}";
  EXPECT_TRUE(has_error(s, "trial.argv[2]", "placeholder {learning_rate} names no parameter"));
  s = valid_spec();
  s["trial"]["argv"][2] = "--lr={lr";
  EXPECT_TRUE(has_error(s, "trial.argv[2]", "unclosed"));
  s = valid_spec();
  s["trial"]["argv"][2] = "{{literal}}";
  EXPECT_TRUE(error_paths(s).empty());
}

TEST(Spec, TrialKinds) {
  auto s = valid_spec();
  s["trial"]["kind"] = "shell";
  EXPECT_TRUE(has_error(s, "trial.kind", "is not one of"));
  s = valid_spec();
  s["trial"] = {{"kind", "command"}};
  EXPECT_TRUE(has_error(s, "trial.argv", "is required"));
  s = valid_spec();
  s["trial"] = {{"kind", "synthetic"}, {"function", "branin"}};
  EXPECT_TRUE(has_error(s, "trial.function", "x1"));
  s["parameters"] = {{"x1", {{"type", "float"}, {"min", -5}, {"max", 10}}},
                     {"x2", {{"type", "float"}, {"min", 0}, {"max", 15}}}};
  auto r = parse_spec(s.dump());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->trial.kind, TrialKind::kSynthetic);
  EXPECT_EQ(r->trial.synthetic.function, "branin");
  s["trial"]["sleep_s"] = -1;
  EXPECT_TRUE(has_error(s, "trial.sleep_s", "out of range"));
}

TEST(Spec, EnsembleMemberBudgetIsForTorchTrialsOnly) {
  auto spec = valid_spec();
  spec["ensemble"] = {{"members", 4}, {"epochs", 5}};
  EXPECT_TRUE(has_error(spec, "ensemble.epochs", "kind torch only"));
  spec["ensemble"].erase("epochs");
  // The section itself needs the data's shape from a command trial.
  EXPECT_TRUE(has_error(spec, "ensemble", "needs trial.data"));
}

// A command trial's network where the worker confines it: loopback (the
// default) or the host's.
TEST(Spec, ACommandTrialsNetworkIsLoopbackOrTheHosts) {
  auto s = valid_spec();  // kind command
  auto r = parse_spec(s.dump());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->trial.command.host_network);
  s["trial"]["network"] = "host";
  r = parse_spec(s.dump());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->trial.command.host_network);
  s["trial"]["network"] = "internet";
  EXPECT_TRUE(has_error(s, "trial.network", "loopback"));
}

// A command trial that says what its data looks like can be ensembled; the
// description is checked field by field.
TEST(Spec, CommandTrialDataDescription) {
  auto s = valid_spec();  // kind command
  s["ensemble"] = {{"members", 4}, {"max_features", 0.5}};
  s["trial"]["data"] = {{"task", "classification"}, {"classes", 3},     {"train_rows", 800},
                        {"validation_rows", 200},   {"test_rows", 100}, {"features", 12}};
  auto r = parse_spec(s.dump());
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->trial.command.data.has_value());
  EXPECT_FALSE(r->trial.command.data->regression);
  EXPECT_EQ(r->trial.command.data->classes, 3);
  EXPECT_EQ(r->trial.command.data->train_rows, 800);
  EXPECT_EQ(r->trial.command.data->validation_rows, 200);
  EXPECT_EQ(r->trial.command.data->test_rows, 100);
  EXPECT_EQ(r->trial.command.data->features, 12);
  ASSERT_TRUE(r->ensemble.has_value());

  auto bad = s;
  bad["trial"]["data"].erase("classes");
  EXPECT_TRUE(has_error(bad, "trial.data.classes"));
  bad = s;
  bad["trial"]["data"]["task"] = "regression";
  EXPECT_TRUE(has_error(bad, "trial.data.classes", "classification only"));
  bad = s;
  bad["trial"]["data"]["validation_rows"] = 0;
  EXPECT_TRUE(has_error(bad, "trial.data.validation_rows", "out of range"));
  bad = s;
  bad["trial"]["data"]["task"] = "ranking";
  EXPECT_TRUE(has_error(bad, "trial.data.task", "ranking"));
  bad = s;
  bad["trial"]["data"]["rows"] = 5;
  EXPECT_TRUE(has_error(bad, "trial.data.rows"));
  bad = s;
  bad["trial"]["data"].erase("features");
  EXPECT_TRUE(has_error(bad, "trial.data.features"));
}

TEST(Spec, AllErrorsAreReportedAtOnce) {
  auto s = valid_spec();
  s["parameters"]["lr"]["min"] = 1;
  s["search"]["max_concurrent"] = -1;
  s["trial"]["argv"][2] = "{nope}";
  auto paths = error_paths(s);
  EXPECT_EQ(paths.size(), 3u);
}

// Nothing runs forever by default; a memory limit is a checked number.
TEST(Spec, FiniteDefaultTimeoutAndAMemoryLimit) {
  auto s = valid_spec();
  s["trial"].erase("timeout_s");
  auto r = parse_spec(s.dump());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->trial.timeout_s, 86400);
  EXPECT_EQ(r->trial.memory_gb, 0);
  s["trial"]["timeout_s"] = 0;  // an explicit "no limit" is allowed
  EXPECT_EQ(parse_spec(s.dump())->trial.timeout_s, 0);
  s["trial"]["resources"]["memory_gb"] = 2.5;
  EXPECT_EQ(parse_spec(s.dump())->trial.memory_gb, 2.5);
  s["trial"]["resources"]["memory_gb"] = 0;
  EXPECT_TRUE(has_error(s, "trial.resources.memory_gb", "out of range"));
  s["trial"]["resources"]["memory_gb"] = "lots";
  EXPECT_TRUE(has_error(s, "trial.resources.memory_gb"));
}

// A built-in model that cannot fit anywhere is refused at submit, by its JSON path.
TEST(Spec, AHugeTorchModelIsRefusedAtSubmit) {
  auto s = valid_spec();
  s["trial"] = {{"kind", "torch"},
                {"model", {{"type", "mlp"}, {"layers", {65536, 65536, 65536}}}},
                {"data", {{"format", "csv"}, {"train", "t.csv"}, {"target", "y"}}}};
  EXPECT_TRUE(has_error(s, "trial.model", "parameters between its hidden layers"));
  s["trial"]["model"]["layers"] = {4096, 4096};
  EXPECT_TRUE(error_paths(s).empty()) << ::testing::PrintToString(error_paths(s));
}

// A body nested a few hundred thousand levels deep is refused before any
// recursive work (it used to crash the scheduler with a stack overflow).
TEST(Spec, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep = std::string(300'000, '[') + std::string(300'000, ']');
  auto r = parse_spec(R"({"name": )" + deep + "}");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("nested deeper than 64 levels"), std::string::npos)
      << r.error().message;
  // Brackets inside strings are text, not nesting.
  auto s = valid_spec();
  s["description"] = std::string(100, '[') + std::string(100, '{');
  EXPECT_TRUE(parse_spec(s.dump()).ok()) << parse_spec(s.dump()).error().message;
  EXPECT_FALSE(params_from_json(std::string(100, '[') + std::string(100, ']')).ok());
}

// Ranges whose arithmetic would overflow are refused by their path (a
// [-1e308, 1e308] float used to yield NaN parameters and a sweep erroring forever).
TEST(Spec, NumericRangesMustBeFiniteAndSane) {
  auto s = valid_spec();
  s["parameters"]["lr"] = {{"type", "float"}, {"min", -1e308}, {"max", 1e308}};
  EXPECT_TRUE(has_error(s, "parameters.lr", "too wide"));
  s["parameters"]["lr"] = {{"type", "int"}, {"min", 0}, {"max", 9223372036854775807LL}};
  EXPECT_TRUE(has_error(s, "parameters.lr", "2^53"));
  s["parameters"]["lr"] = {{"type", "float"}, {"min", 0}, {"max", 1}, {"step", 1e-300}};
  EXPECT_TRUE(has_error(s, "parameters.lr.step", "more than"));
  s["parameters"]["lr"] = {{"type", "float"}, {"min", -1e6}, {"max", 1e6}, {"step", 0.5}};
  EXPECT_TRUE(error_paths(s).empty()) << ::testing::PrintToString(error_paths(s));
}

// Integers past int64 (nlohmann keeps them as unsigned) are refused with the
// value as written, never wrapped into negative numbers or cast out of range.
TEST(Spec, IntegersPastInt64AreRefusedNotWrapped) {
  auto s = valid_spec();
  s["search"]["max_trials"] = 18446744073709551615ULL;
  EXPECT_TRUE(has_error(s, "search.max_trials", "18446744073709551615 is out of range"));
  s = valid_spec();
  s["search"]["max_trials"] = 1e300;
  EXPECT_TRUE(has_error(s, "search.max_trials", "expected an integer"));
  s = valid_spec();
  s["parameters"]["opt"]["values"] = Json::array({18446744073709551615ULL, -1});
  EXPECT_TRUE(has_error(s, "parameters.opt.values[0]", "integers within int64"));
  auto torch = Json::parse(R"({"name": "t", "objective": {"metric": "loss", "mode": "min"},
    "parameters": {"lr": {"type": "float", "min": 0.001, "max": 0.1}},
    "search": {"algorithm": "random", "max_trials": 2},
    "trial": {"kind": "torch", "model": {"type": "mlp"}, "optimizer": {"lr": "{lr}"},
              "data": {"format": "csv", "train": "a.csv", "target": "y"}}})");
  torch["trial"]["seed"] = 18446744073709551615ULL;
  EXPECT_TRUE(has_error(torch, "trial.seed"));
  torch["trial"]["seed"] = 7;
  EXPECT_TRUE(error_paths(torch).empty()) << ::testing::PrintToString(error_paths(torch));
}

// Sections a trial kind cannot run are refused at submit, not after the search.
TEST(Spec, SectionsTheKindCannotRunAreRefused) {
  auto s = valid_spec();  // kind command
  s["ensemble"] = {{"members", 4}};
  EXPECT_TRUE(has_error(s, "ensemble", "needs trial.data"));
  s.erase("ensemble");
  s["trial"]["data_parallel"] = {{"replicas", 2}};
  EXPECT_TRUE(has_error(s, "trial.data_parallel", "kind torch only"));
}

TEST(Spec, SlotsFromGpusAndReplicas) {
  auto s = valid_spec();
  s["trial"] = {{"kind", "torch"},
                {"data", {{"format", "csv"}, {"train", "t.csv"}, {"target", "y"}}}};
  s["trial"]["data_parallel"] = {{"replicas", 2}, {"mode", "average"}, {"average_every", 4}};
  auto r = parse_spec(s.dump());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->trial.slots(), 2);
  EXPECT_TRUE(r->trial.data_parallel.average);
  EXPECT_EQ(r->trial.data_parallel.average_every, 4);
  EXPECT_EQ(r->trial.data_parallel.bucket_mb, 0.125);  // the default
}

TEST(Spec, PerHostMustDivideTheReplicas) {
  auto s = valid_spec();
  s["trial"] = {{"kind", "torch"},
                {"data", {{"format", "csv"}, {"train", "t.csv"}, {"target", "y"}}}};
  s["trial"]["data_parallel"] = {{"replicas", 4}, {"per_host", 2}};
  auto r = parse_spec(s.dump());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->trial.data_parallel.per_host, 2);
  auto need = request_for(r->trial);
  EXPECT_EQ(need.ranks, 4);
  EXPECT_EQ(need.per_host, 2);
  EXPECT_EQ(request_from_json(to_json(need))->per_host, 2);  // as the store keeps it
  s["trial"]["data_parallel"]["per_host"] = 3;
  EXPECT_TRUE(has_error(s, "trial.data_parallel.per_host", "3 does not divide replicas (4)"));
  s["trial"]["data_parallel"]["per_host"] = 0;
  EXPECT_TRUE(has_error(s, "trial.data_parallel.per_host"));
}

TEST(Spec, PlacementRequestsAreCheckedFieldByField) {
  Json s = valid_spec();
  s["trial"]["resources"] = Json::parse(R"({"gpus": 2, "gpu_memory_gb": 40, "gpu_model": "A100",
                                           "cpus": 4, "labels": ["zone=a", "fast-disk"]})");
  auto r = parse_spec(s.dump());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->trial.gpu_model, "A100");
  EXPECT_DOUBLE_EQ(r->trial.gpu_memory_gb, 40);
  EXPECT_DOUBLE_EQ(r->trial.cpus, 4);
  EXPECT_EQ(r->trial.labels, (std::vector<std::string>{"zone=a", "fast-disk"}));

  s["trial"]["resources"] = Json::parse(R"({"gpus": 0, "gpu_model": "A100"})");
  EXPECT_TRUE(has_error(s, "trial.resources.gpus", "need gpus: a share of one GPU"));
  // A share of one GPU, in thousandths; more than one is whole GPUs.
  s["trial"]["resources"] = Json::parse(R"({"gpus": 0.25, "gpu_memory_gb": 30})");
  r = parse_spec(s.dump());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_DOUBLE_EQ(r->trial.gpus, 0.25);
  EXPECT_EQ(r->trial.slots(), 1);
  s["trial"]["resources"] = Json::parse(R"({"gpus": 1.5})");
  EXPECT_TRUE(has_error(s, "trial.resources.gpus", "1.5: more than one GPU is a whole number"));
  s["trial"]["resources"] = Json::parse(R"({"gpus": 0.0004})");
  EXPECT_TRUE(has_error(s, "trial.resources.gpus", "counted in thousandths"));
  s["trial"]["resources"] = Json::parse(R"({"gpus": 0.5})");
  s["trial"]["data_parallel"] = Json::parse(R"({"replicas": 2})");
  EXPECT_TRUE(has_error(s, "trial.resources.gpus", "take a whole GPU each"));
  s["trial"].erase("data_parallel");
  s["trial"]["resources"] = Json::parse(R"({"labels": ["zone=a", "bad key", 3]})");
  EXPECT_TRUE(has_error(s, "trial.resources.labels[1]", "letters, digits"));
  EXPECT_TRUE(has_error(s, "trial.resources.labels[2]", "expected a string"));
  s["trial"]["resources"] = Json::parse(R"({"labels": "zone=a"})");
  EXPECT_TRUE(has_error(s, "trial.resources.labels", "expected an array"));
  s["trial"]["resources"] = Json::parse(R"({"cpus": 0})");
  EXPECT_TRUE(has_error(s, "trial.resources.cpus"));
  s["trial"]["resources"] = Json::parse(R"({"gpus": 1, "gpu_model": ""})");
  EXPECT_TRUE(has_error(s, "trial.resources.gpu_model", "1 to 100 characters"));
  s["trial"]["resources"] = Json::parse(R"({"gpu": 1})");
  EXPECT_TRUE(has_error(s, "trial.resources.gpu", "unknown key"));
}

TEST(Spec, GradientBucketsHaveAPositiveBoundedSize) {
  auto s = valid_spec();
  s["trial"] = {{"kind", "torch"},
                {"data", {{"format", "csv"}, {"train", "t.csv"}, {"target", "y"}}}};
  s["trial"]["data_parallel"] = {{"replicas", 2}, {"bucket_mb", 4}};
  auto r = parse_spec(s.dump());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->trial.data_parallel.bucket_mb, 4);
  for (double bad : {0.0, -1.0, 2048.0}) {
    s["trial"]["data_parallel"]["bucket_mb"] = bad;
    EXPECT_TRUE(has_error(s, "trial.data_parallel.bucket_mb", "")) << bad;
  }
}

TEST(RenderArgv, ReplacesPlaceholdersVerbatimWithoutShell) {
  search::Params p{
      {"lr", 0.001}, {"layers", std::int64_t{3}}, {"name", std::string("$(rm -rf /)")}};
  auto out = render_argv({"train", "--lr={lr}", "{layers}", "{name}", "{{x}}"}, p);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[1], "--lr=0.001");
  EXPECT_EQ(out[2], "3");
  EXPECT_EQ(out[3], "$(rm -rf /)");
  EXPECT_EQ(out[4], "{x}");
}

// An inactive conditional parameter leaves its element out (never
// "--momentum=", which argparse refuses), and a lone "{name}" takes the flag
// before it along; the active ones render as always.
TEST(RenderArgv, AnInactiveParameterLeavesItsOptionOut) {
  search::Params p{{"optimizer", std::string("adam")}, {"lr", 0.01}};
  auto out = render_argv({"train.py", "--optimizer={optimizer}", "--momentum={momentum}", "--lr",
                          "{lr}", "--nesterov", "{momentum}", "--beta={momentum}:{lr}", "-v"},
                         p);
  EXPECT_EQ(out, (std::vector<std::string>{"train.py", "--optimizer=adam", "--lr", "0.01", "-v"}));
  p["momentum"] = 0.9;
  out = render_argv({"train.py", "--momentum={momentum}", "--nesterov", "{momentum}"}, p);
  EXPECT_EQ(out, (std::vector<std::string>{"train.py", "--momentum=0.9", "--nesterov", "0.9"}));
  // A lone placeholder after a positional argument, a negative number, a
  // whole option or "--" leaves only itself out.
  out = render_argv({"train.py", "data.csv", "{gamma}", "--offset", "-1", "{gamma}", "-.5",
                     "{gamma}", "--lr=0.1", "{gamma}", "--", "{gamma}"},
                    p);
  EXPECT_EQ(out, (std::vector<std::string>{"train.py", "data.csv", "--offset", "-1", "-.5",
                                           "--lr=0.1", "--"}));
}

TEST(ParamsJson, RoundTripKeepsIntsAndFloatsApart) {
  search::Params p{{"a", 1.0}, {"b", std::int64_t{2}}, {"c", true}, {"d", std::string("x")}};
  auto back = params_from_json(params_to_json(p));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, p);
}

}  // namespace
}  // namespace hpo::trials

namespace hpo::trials {
namespace {

// objectives: 2 to 8 distinct metrics, the first also `objective`; what needs
// one objective (early stopping, warm start, an ensemble) is refused.
TEST(Spec, SeveralObjectives) {
  Json s = valid_spec();
  s.erase("objective");
  s["objectives"] = Json::parse(R"([{"metric": "loss"}, {"metric": "ms", "mode": "max",
                                    "reference": 10}])");
  s["search"]["algorithm"] = "nsga2";
  s["search"]["population"] = 8;
  auto ok = parse_spec(s.dump());
  ASSERT_TRUE(ok) << ok.error().message;
  ASSERT_EQ(ok->objectives.size(), 2u);
  EXPECT_EQ(ok->objective.metric, "loss");
  EXPECT_TRUE(ok->objectives[1].maximize);
  EXPECT_EQ(ok->objectives[1].reference, 10.0);
  EXPECT_EQ(ok->search.sampler.algorithm, search::Algorithm::kNsga2);
  EXPECT_EQ(ok->search.sampler.population, 8);
  // One objective: `objectives` holds it.
  auto one = parse_spec(valid_spec().dump());
  ASSERT_TRUE(one);
  ASSERT_EQ(one->objectives.size(), 1u);
  EXPECT_EQ(one->objectives[0].metric, "loss");

  Json both = s;
  both["objective"] = {{"metric", "loss"}};
  EXPECT_TRUE(has_error(both, "objectives", "not both"));
  Json single = s;
  single["objectives"] = Json::parse(R"([{"metric": "loss"}])");
  EXPECT_TRUE(has_error(single, "objectives", "expected 2 to 8 objectives, got 1"));
  Json twice = s;
  twice["objectives"][1]["metric"] = "loss";
  EXPECT_TRUE(has_error(twice, "objectives[1].metric", "\"loss\" is already an objective"));
  Json not_object = s;
  not_object["objectives"][0] = "loss";
  EXPECT_TRUE(has_error(not_object, "objectives[0]", "expected an object"));
  Json bad_mode = s;
  bad_mode["objectives"][1]["mode"] = "up";
  EXPECT_TRUE(has_error(bad_mode, "objectives[1].mode", "is not one of: min, max"));
  Json tpe = s;
  tpe["search"].erase("population");
  tpe["search"]["algorithm"] = "tpe";
  auto motpe = parse_spec(tpe.dump());
  ASSERT_TRUE(motpe) << motpe.error().message;
  EXPECT_EQ(motpe->search.sampler.algorithm, search::Algorithm::kTpe);
  Json bayesian = s;
  bayesian["search"].erase("population");
  bayesian["search"]["algorithm"] = "bayesian";
  auto gp = parse_spec(bayesian.dump());
  ASSERT_TRUE(gp) << gp.error().message;
  EXPECT_EQ(gp->search.sampler.algorithm, search::Algorithm::kBayesian);
  Json warm = bayesian;
  warm["search"]["warm_start"] = {{"sweeps", {"s-1"}}};
  EXPECT_TRUE(has_error(warm, "search.warm_start", "several objectives"));
  Json pruned = s;
  pruned["early_stopping"] = {{"type", "median"}};
  EXPECT_TRUE(has_error(pruned, "early_stopping", "several objectives"));
  Json population = valid_spec();
  population["search"]["population"] = 8;
  EXPECT_TRUE(has_error(population, "search.population", "nsga2 only"));
  Json neither = s;
  neither.erase("objectives");
  EXPECT_TRUE(has_error(neither, "objective", "is required"));
}

// constraints: 1 to 16 distinct metrics with max and/or min (min <= max);
// they round-trip through dump_spec.
TEST(Spec, Constraints) {
  Json s = valid_spec();
  s["constraints"] = Json::parse(R"([{"metric": "ms", "max": 20}, {"metric": "acc", "min": 0.5,
                                      "max": 1}])");
  auto ok = parse_spec(s.dump());
  ASSERT_TRUE(ok) << ok.error().message;
  ASSERT_EQ(ok->constraints.size(), 2u);
  EXPECT_EQ(ok->constraints[0].metric, "ms");
  EXPECT_EQ(ok->constraints[0].max, 20.0);
  EXPECT_FALSE(ok->constraints[0].min.has_value());
  EXPECT_EQ(ok->constraints[1].min, 0.5);
  auto again = parse_spec(dump_spec(*ok));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->constraints.size(), 2u);
  EXPECT_EQ(again->constraints[1].max, 1.0);

  Json empty = s;
  empty["constraints"] = Json::array();
  EXPECT_TRUE(has_error(empty, "constraints", "expected 1 to 16 constraints, got 0"));
  Json neither = s;
  neither["constraints"][0].erase("max");
  EXPECT_TRUE(has_error(neither, "constraints[0]", "needs max"));
  Json crossed = s;
  crossed["constraints"][1]["min"] = 2;
  EXPECT_TRUE(has_error(crossed, "constraints[1]", "min 2 is above max 1"));
  Json twice = s;
  twice["constraints"][1]["metric"] = "ms";
  EXPECT_TRUE(has_error(twice, "constraints[1].metric", "\"ms\" is already constrained"));
  Json not_number = s;
  not_number["constraints"][0]["max"] = "20";
  EXPECT_TRUE(has_error(not_number, "constraints[0].max", "expected a number"));
  Json unknown = s;
  unknown["constraints"][0]["below"] = 3;
  EXPECT_TRUE(has_error(unknown, "constraints[0].below", "unknown"));
  Json not_object = s;
  not_object["constraints"][0] = "ms";
  EXPECT_TRUE(has_error(not_object, "constraints[0]", "expected an object"));
  Json no_metric = s;
  no_metric["constraints"][0].erase("metric");
  EXPECT_TRUE(has_error(no_metric, "constraints[0].metric", "is required"));
}

// search.multi_fidelity: ASHA or Hyperband over a declared resource; the
// resource must be one the trial's kind has, and it replaces early_stopping.
TEST(Spec, MultiFidelity) {
  Json s = valid_spec();
  s["search"]["multi_fidelity"] = Json::parse(
      R"({"type": "asha", "resource": "shards", "min": 1, "max": 16, "reduction_factor": 2})");
  auto ok = parse_spec(s.dump());
  ASSERT_TRUE(ok) << ok.error().message;
  ASSERT_TRUE(ok->search.fidelity);
  EXPECT_EQ(ok->search.fidelity->schedule, search::Schedule::kAsha);
  EXPECT_EQ(ok->search.fidelity->resource, "shards");
  EXPECT_EQ(ok->search.fidelity->max_budget, 16);
  EXPECT_EQ(ok->search.fidelity->reduction_factor, 2);
  EXPECT_TRUE(ok->search.fidelity->integer);
  Json fraction = s;
  fraction["search"]["multi_fidelity"]["min"] = 0.1;
  fraction["search"]["multi_fidelity"]["max"] = 1;
  ok = parse_spec(fraction.dump());
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_FALSE(ok->search.fidelity->integer);

  const std::string at = "search.multi_fidelity";
  Json epochs = s;
  epochs["search"]["multi_fidelity"]["resource"] = "epochs";
  EXPECT_TRUE(has_error(epochs, at + ".resource", "budget of the built-in trainer"));
  Json bad_name = s;
  bad_name["search"]["multi_fidelity"]["resource"] = "my budget";
  EXPECT_TRUE(has_error(bad_name, at + ".resource", "got \"my budget\""));
  Json crossed = s;
  crossed["search"]["multi_fidelity"]["max"] = 1;
  EXPECT_TRUE(has_error(crossed, at + ".max", "must be above min (1), got 1"));
  Json zero = s;
  zero["search"]["multi_fidelity"]["min"] = 0;
  EXPECT_TRUE(has_error(zero, at + ".min", "must be above 0, got 0"));
  Json factor = s;
  factor["search"]["multi_fidelity"]["reduction_factor"] = 1;
  EXPECT_TRUE(has_error(factor, at + ".reduction_factor", "above 1"));
  Json type = s;
  type["search"]["multi_fidelity"]["type"] = "bohb";
  EXPECT_TRUE(has_error(type, at + ".type", "bohb"));
  Json unknown = s;
  unknown["search"]["multi_fidelity"]["grace"] = 1;
  EXPECT_TRUE(has_error(unknown, at + ".grace", "unknown"));
  Json pruned = s;
  pruned["early_stopping"] = {{"type", "median"}};
  EXPECT_TRUE(has_error(pruned, "early_stopping", "drop one of them"));
  Json grid = s;
  grid["search"]["algorithm"] = "grid";
  grid["parameters"].erase("lr");
  grid["parameters"].erase("momentum");
  grid["trial"]["argv"] = Json::array({"train", "{layers}"});
  EXPECT_TRUE(has_error(grid, "search.algorithm", "random, sobol, tpe or bayesian"));

  Json synthetic = Json::parse(R"({"name": "mf", "objective": {"metric": "value"},
    "parameters": {"x1": {"type": "float", "min": 0, "max": 1}},
    "search": {"max_trials": 9, "multi_fidelity": {"type": "hyperband", "resource": "steps", "min": 1, "max": 9.5}},
    "trial": {"kind": "synthetic", "function": "noop"}})");
  EXPECT_TRUE(has_error(synthetic, at, "whole numbers"));
  synthetic["search"]["multi_fidelity"]["max"] = 9;
  ok = parse_spec(synthetic.dump());
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->search.fidelity->schedule, search::Schedule::kHyperband);
  synthetic["search"]["multi_fidelity"]["resource"] = "epochs";
  EXPECT_TRUE(has_error(synthetic, at + ".resource", "kind torch"));
}

// search.pbt: a population trained in intervals of a resource the trial's
// kind has; its mutations name parameters of the space.
TEST(Spec, PopulationBasedTraining) {
  Json s = Json::parse(R"({"name": "pbt", "objective": {"metric": "value"},
    "parameters": {"lr": {"type": "float", "min": 0.001, "max": 0.5, "log": true}},
    "search": {"max_trials": 40, "seed": 5, "pbt": {"population": 6, "resource": "steps",
               "interval": 4, "max": 24, "quantile": 0.2, "mutations": ["lr"]}},
    "trial": {"kind": "synthetic", "function": "noisy_quadratic"}})");
  auto ok = parse_spec(s.dump());
  ASSERT_TRUE(ok) << ok.error().message;
  ASSERT_TRUE(ok->search.pbt);
  EXPECT_EQ(ok->search.pbt->population, 6);
  EXPECT_EQ(ok->search.pbt->interval, 4);
  EXPECT_EQ(ok->search.pbt->max_budget, 24);
  EXPECT_EQ(ok->search.pbt->quantile, 0.2);
  EXPECT_EQ(ok->search.pbt->seed, 5u);
  EXPECT_EQ(ok->search.pbt->mutable_params, std::vector<std::string>{"lr"});
  auto again = parse_spec(dump_spec(*ok));
  ASSERT_TRUE(again) << again.error().message;
  ASSERT_TRUE(again->search.pbt);
  EXPECT_EQ(again->search.pbt->mutable_params, std::vector<std::string>{"lr"});
  EXPECT_EQ(again->search.pbt->max_budget, 24);

  const std::string at = "search.pbt";
  Json unknown_param = s;
  unknown_param["search"]["pbt"]["mutations"] = {"lr", "momentum"};
  EXPECT_TRUE(has_error(unknown_param, at + ".mutations[1]", "\"momentum\" is not a parameter"));
  Json short_max = s;
  short_max["search"]["pbt"]["max"] = 3;
  EXPECT_TRUE(has_error(short_max, at + ".max", "must be at least interval (4), got 3"));
  Json quantile = s;
  quantile["search"]["pbt"]["quantile"] = 0.7;
  EXPECT_TRUE(has_error(quantile, at + ".quantile", "(0, 0.5], got 0.7"));
  Json tiny = s;
  tiny["search"]["pbt"]["population"] = 1;
  EXPECT_TRUE(has_error(tiny, at + ".population", ""));
  Json few = s;
  few["search"]["max_trials"] = 5;
  EXPECT_TRUE(has_error(few, "search.max_trials", "at least search.pbt.population (6), got 5"));
  Json model = s;
  model["search"]["algorithm"] = "tpe";
  EXPECT_TRUE(has_error(model, "search.algorithm", "random or sobol"));
  Json epochs = s;
  epochs["search"]["pbt"]["resource"] = "epochs";
  EXPECT_TRUE(has_error(epochs, at + ".resource", "built-in trainer"));
  Json both = s;
  both["search"]["multi_fidelity"] =
      Json::parse(R"({"type": "asha", "resource": "steps", "min": 1, "max": 9})");
  EXPECT_TRUE(has_error(both, at, "use one"));
  Json no_lr = s;
  no_lr["parameters"] = Json::parse(R"({"x1": {"type": "float", "min": 0, "max": 1}})");
  no_lr["search"]["pbt"].erase("mutations");
  EXPECT_TRUE(
      has_error(no_lr, "trial.function", "noisy_quadratic trains at the numeric parameter lr"));
}

}  // namespace
}  // namespace hpo::trials
