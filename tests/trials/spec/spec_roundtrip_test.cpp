// The spec encoder: every accepted spec round-trips. For each text T (the examples/ specs and a
// table of hand-written ones covering every parameter type, sampler, pruner, trial kind and
// section): s1 = parse_spec(T), d1 = dump_spec(s1); parse_spec(d1) succeeds, gives a spec equal
// to s1 field by field, and dumps to d1 again. Each case also names fragments its dump must
// hold, so an encoder that drops or mistypes a field fails here even when it does so consistently.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "trials/spec/spec.hpp"
#include "trials/spec/spec_json.hpp"

namespace hpo::trials {
namespace {

// Paths of the fields where two specs differ (`source` aside).
class SpecDiff {
 public:
  template <class T>
  void eq(const std::string& path, const T& x, const T& y) {
    if (!(x == y)) out.push_back(path);
  }
  template <class T>
  void eq(const std::string& path, const Sweepable<T>& x, const Sweepable<T>& y) {
    eq(path + ".value", x.value, y.value);
    eq(path + ".ref", x.ref, y.ref);
  }
  void eq(const std::string& path, const SweepableIntList& x, const SweepableIntList& y) {
    eq(path + ".ref", x.ref, y.ref);
    eq(path + ".size", x.items.size(), y.items.size());
    for (std::size_t i = 0; i < x.items.size() && i < y.items.size(); ++i)
      eq(path + "[" + std::to_string(i) + "]", x.items[i], y.items[i]);
  }

  std::vector<std::string> out;
};

#define HPO_EQ(field) d.eq(#field, a.field, b.field)

std::vector<std::string> differences(const SweepSpec& a, const SweepSpec& b) {
  SpecDiff d;
  HPO_EQ(name);
  HPO_EQ(objective.metric);
  HPO_EQ(objective.maximize);
  HPO_EQ(objectives.size());
  for (std::size_t i = 0; i < a.objectives.size() && i < b.objectives.size(); ++i) {
    const std::string at = "objectives[" + std::to_string(i) + "].";
    d.eq(at + "metric", a.objectives[i].metric, b.objectives[i].metric);
    d.eq(at + "maximize", a.objectives[i].maximize, b.objectives[i].maximize);
    d.eq(at + "reference", a.objectives[i].reference, b.objectives[i].reference);
  }
  HPO_EQ(space.params.size());
  for (std::size_t i = 0; i < a.space.params.size() && i < b.space.params.size(); ++i) {
    const auto& p = a.space.params[i];
    const auto& q = b.space.params[i];
    const std::string at = "space.params[" + std::to_string(i) + "].";
    d.eq(at + "name", p.name, q.name);
    d.eq(at + "type", p.type, q.type);
    d.eq(at + "min", p.min, q.min);
    d.eq(at + "max", p.max, q.max);
    d.eq(at + "log", p.log, q.log);
    d.eq(at + "step", p.step, q.step);
    d.eq(at + "choices", p.choices, q.choices);
    d.eq(at + "when", p.when.has_value(), q.when.has_value());
    if (p.when && q.when) {
      d.eq(at + "when.parent", p.when->parent, q.when->parent);
      d.eq(at + "when.values", p.when->values, q.when->values);
    }
  }
  HPO_EQ(search.sampler.algorithm);
  HPO_EQ(search.sampler.seed);
  HPO_EQ(search.sampler.n_initial);
  HPO_EQ(search.sampler.population);
  HPO_EQ(search.warm_start_sweeps);
  HPO_EQ(search.fidelity.has_value());
  if (a.search.fidelity && b.search.fidelity) {
    HPO_EQ(search.fidelity->schedule);
    HPO_EQ(search.fidelity->resource);
    HPO_EQ(search.fidelity->min_budget);
    HPO_EQ(search.fidelity->max_budget);
    HPO_EQ(search.fidelity->reduction_factor);
    HPO_EQ(search.fidelity->integer);
  }
  HPO_EQ(search.max_trials);
  HPO_EQ(search.max_concurrent);
  HPO_EQ(early_stopping.has_value());
  if (a.early_stopping && b.early_stopping) {
    HPO_EQ(early_stopping->type);
    HPO_EQ(early_stopping->warmup_steps);
    HPO_EQ(early_stopping->min_trials);
    HPO_EQ(early_stopping->grace_period);
    HPO_EQ(early_stopping->reduction_factor);
    HPO_EQ(early_stopping->max_steps);
  }
  HPO_EQ(trial.kind);
  HPO_EQ(trial.command.argv);
  HPO_EQ(trial.command.env);
  HPO_EQ(trial.command.cwd);
  HPO_EQ(trial.command.data.has_value());
  if (a.trial.command.data && b.trial.command.data) {
    HPO_EQ(trial.command.data->regression);
    HPO_EQ(trial.command.data->classes);
    HPO_EQ(trial.command.data->train_rows);
    HPO_EQ(trial.command.data->validation_rows);
    HPO_EQ(trial.command.data->test_rows);
    HPO_EQ(trial.command.data->features);
  }
  HPO_EQ(trial.synthetic.function);
  HPO_EQ(trial.synthetic.sleep_s);
  HPO_EQ(trial.synthetic.noise);
  HPO_EQ(trial.synthetic.steps);
  HPO_EQ(trial.synthetic.crossing);
  HPO_EQ(trial.torch.task);
  HPO_EQ(trial.torch.model.type);
  HPO_EQ(trial.torch.model.hidden);
  HPO_EQ(trial.torch.model.depth);
  HPO_EQ(trial.torch.model.layers);
  HPO_EQ(trial.torch.model.channels);
  HPO_EQ(trial.torch.model.kernel);
  HPO_EQ(trial.torch.model.padding);
  HPO_EQ(trial.torch.model.pool);
  HPO_EQ(trial.torch.model.dense);
  HPO_EQ(trial.torch.model.activation);
  HPO_EQ(trial.torch.model.dropout);
  HPO_EQ(trial.torch.model.batch_norm);
  HPO_EQ(trial.torch.data.format);
  HPO_EQ(trial.torch.data.train_images);
  HPO_EQ(trial.torch.data.train_labels);
  HPO_EQ(trial.torch.data.validation_images);
  HPO_EQ(trial.torch.data.validation_labels);
  HPO_EQ(trial.torch.data.test_images);
  HPO_EQ(trial.torch.data.test_labels);
  HPO_EQ(trial.torch.data.train);
  HPO_EQ(trial.torch.data.validation);
  HPO_EQ(trial.torch.data.test);
  HPO_EQ(trial.torch.data.target);
  HPO_EQ(trial.torch.data.validation_fraction);
  HPO_EQ(trial.torch.data.subset);
  HPO_EQ(trial.torch.data.test_subset);
  HPO_EQ(trial.torch.data.seed);
  HPO_EQ(trial.torch.data.standardize);
  HPO_EQ(trial.torch.optimizer.type);
  HPO_EQ(trial.torch.optimizer.lr);
  HPO_EQ(trial.torch.optimizer.momentum);
  HPO_EQ(trial.torch.optimizer.nesterov);
  HPO_EQ(trial.torch.optimizer.weight_decay);
  HPO_EQ(trial.torch.optimizer.beta1);
  HPO_EQ(trial.torch.optimizer.beta2);
  HPO_EQ(trial.torch.optimizer.eps);
  HPO_EQ(trial.torch.schedule.type);
  HPO_EQ(trial.torch.schedule.step_size);
  HPO_EQ(trial.torch.schedule.gamma);
  HPO_EQ(trial.torch.schedule.min_lr);
  HPO_EQ(trial.torch.schedule.warmup_epochs);
  HPO_EQ(trial.torch.batch_size);
  HPO_EQ(trial.torch.eval_batch_size);
  HPO_EQ(trial.torch.epochs);
  HPO_EQ(trial.torch.seed);
  HPO_EQ(trial.timeout_s);
  HPO_EQ(trial.max_attempts);
  HPO_EQ(trial.gpus);
  HPO_EQ(trial.memory_gb);
  HPO_EQ(trial.data_parallel.replicas);
  HPO_EQ(trial.data_parallel.average);
  HPO_EQ(trial.data_parallel.average_every);
  HPO_EQ(trial.data_parallel.bucket_mb);
  HPO_EQ(trial.data_parallel.transport);
  HPO_EQ(ensemble.has_value());
  if (a.ensemble && b.ensemble) {
    HPO_EQ(ensemble->members);
    HPO_EQ(ensemble->base);
    HPO_EQ(ensemble->top_k);
    HPO_EQ(ensemble->bootstrap);
    HPO_EQ(ensemble->sample_fraction);
    HPO_EQ(ensemble->max_features);
    HPO_EQ(ensemble->combine);
    HPO_EQ(ensemble->seed);
    HPO_EQ(ensemble->choose);
    HPO_EQ(ensemble->selection_rounds);
    HPO_EQ(ensemble->selection_init);
    HPO_EQ(ensemble->epochs);
    HPO_EQ(ensemble->subset);
  }
  return d.out;
}

#undef HPO_EQ

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// The round trip of one accepted text; returns d1 (empty after a failure).
std::string expect_round_trip(const std::string& text) {
  auto s1 = parse_spec(text);
  EXPECT_TRUE(s1.ok()) << "the case itself must be valid: " << s1.error().message;
  if (!s1.ok()) return {};
  const std::string d1 = dump_spec(*s1);
  auto s2 = parse_spec(d1);
  EXPECT_TRUE(s2.ok()) << "the dump does not parse: " << s2.error().message << "\n" << d1;
  if (!s2.ok()) return {};
  EXPECT_EQ(dump_spec(*s2), d1);
  EXPECT_EQ(join(differences(*s1, *s2)), "") << d1;
  return d1;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(SpecRoundTrip, EveryExampleRoundTrips) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(HPO_SOURCE_DIR "/examples")) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    const std::string text = read_file(entry.path());
    const std::string d1 = expect_round_trip(text);
    EXPECT_NE(d1, "");
    ++n;
  }
  EXPECT_GE(n, 4);
}

TEST(SpecRoundTrip, ExampleFieldsSurviveTyped) {
  auto s1 = parse_spec(read_file(HPO_SOURCE_DIR "/examples/fashion_mnist_ensemble.json"));
  ASSERT_TRUE(s1.ok()) << s1.error().message;
  auto s2 = parse_spec(dump_spec(*s1));
  ASSERT_TRUE(s2.ok()) << s2.error().message;
  EXPECT_EQ(s2->name, "fashion-mnist cnn + bagged ensemble");
  EXPECT_TRUE(s2->objective.maximize);
  ASSERT_EQ(s2->space.params.size(), 3u);
  EXPECT_EQ(s2->space.params[0].name, "lr");
  EXPECT_TRUE(s2->space.params[0].log);
  EXPECT_DOUBLE_EQ(s2->space.params[0].min, 0.0005);
  EXPECT_EQ(s2->space.params[2].choices,
            (std::vector<search::Value>{std::int64_t{128}, std::int64_t{256}}));
  EXPECT_EQ(s2->search.sampler.algorithm, search::Algorithm::kBayesian);
  EXPECT_EQ(s2->trial.kind, TrialKind::kTorch);
  EXPECT_EQ(s2->trial.torch.model.type.value, "cnn");
  ASSERT_EQ(s2->trial.torch.model.dense.items.size(), 1u);
  EXPECT_EQ(s2->trial.torch.model.dense.items[0].ref, "dense");
  EXPECT_EQ(s2->trial.torch.optimizer.lr.ref, "lr");
  EXPECT_EQ(s2->trial.torch.data.subset.value, 15000);
  EXPECT_DOUBLE_EQ(s2->trial.timeout_s, 1800);
  ASSERT_TRUE(s2->ensemble);
  EXPECT_EQ(s2->ensemble->seed, 7u);
  EXPECT_EQ(s2->ensemble->epochs, std::optional<std::int64_t>(8));
  EXPECT_EQ(s2->ensemble->subset, std::optional<std::int64_t>(0));
}

// ---- the table ----------------------------------------------------------------------------

struct Case {
  std::string name;
  std::string text;
  std::vector<std::string> present;  // fragments of the compact dump
  std::vector<std::string> absent;
};

std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << c.name;
}

constexpr const char* kBraninParams =
    R"({"x1": {"type": "float", "min": -5, "max": 10}, "x2": {"type": "float", "min": 0, "max": 15}})";
constexpr const char* kBranin = R"({"kind": "synthetic", "function": "branin"})";
constexpr const char* kCsv = R"("data": {"format": "csv", "train": "t.csv", "target": "y"})";

std::string spec(const std::string& parameters, const std::string& trial,
                 const std::string& search = R"({"max_trials": 5})",
                 const std::string& extra = "") {
  return R"({"name": "t", "objective": {"metric": "loss"}, "parameters": )" + parameters +
         R"(, "search": )" + search + R"(, "trial": )" + trial + extra + "}";
}

std::string torch(const std::string& fields) {
  return R"({"kind": "torch", )" + fields + "}";
}

std::vector<Case> cases() {
  return {
      // Parameters.
      {"float_bounds",
       spec(R"({"x1": {"type": "float", "min": -5, "max": 10},
                "x2": {"type": "float", "min": 0.5, "max": 15.25}})",
            kBranin),
       {R"("x1":{"log":false,"max":10.0,"min":-5.0,"type":"float"})",
        R"("x2":{"log":false,"max":15.25,"min":0.5,"type":"float"})"},
       {"\"step\""}},
      {"float_log",
       spec(R"({"lr": {"type": "float", "min": 1e-5, "max": 0.1, "log": true}})",
            R"({"kind": "command", "argv": ["train", "--lr={lr}"]})"),
       {R"("lr":{"log":true,"max":0.1,"min":1e-05,"type":"float"})"}},
      {"command_data_and_ensemble",
       spec(R"({"k": {"type": "int", "min": 1, "max": 9}})",
            R"({"kind": "command", "argv": ["f", "{k}"], "data": {"task": "classification",
                "classes": 3, "train_rows": 800, "validation_rows": 200, "test_rows": 100,
                "features": 12}})",
            R"({"max_trials": 5})",
            R"(, "ensemble": {"members": 4, "max_features": 0.5, "choose": "stacking"})"),
       {R"("data":{"classes":3,"features":12,"task":"classification","test_rows":100,)"
        R"("train_rows":800,"validation_rows":200})"}},
      {"command_data_regression",
       spec(R"({"k": {"type": "int", "min": 1, "max": 9}})",
            R"({"kind": "command", "argv": ["f", "{k}"], "data": {"task": "regression",
                "train_rows": 80, "validation_rows": 20, "features": 3}})"),
       {R"("task":"regression")"},
       {"\"classes\""}},
      {"float_step_and_extreme_doubles",
       spec(R"({"x": {"type": "float", "min": 0.1, "max": 0.7, "step": 0.1},
                "y": {"type": "float", "min": 5e-324, "max": 1e150},
                "z": {"type": "float", "min": -0.0, "max": 0.30000000000000004}})",
            R"({"kind": "command", "argv": ["f", "{x}", "{y}", "{z}"]})"),
       {R"("x":{"log":false,"max":0.7,"min":0.1,"step":0.1,"type":"float"})", R"("min":5e-324)",
        R"("max":1e+150)", R"("min":-0.0)", R"("max":0.30000000000000004)"}},
      {"int_bounds_written_as_floats",
       spec(R"({"n": {"type": "int", "min": 1.0, "max": 8e0}})",
            R"({"kind": "command", "argv": ["f", "{n}"]})"),
       {R"("n":{"log":false,"max":8,"min":1,"type":"int"})"}},
      {"int_step_and_log",
       spec(R"({"width": {"type": "int", "min": 64, "max": 512, "step": 64},
                "batch": {"type": "int", "min": 16, "max": 1024, "log": true}})",
            R"({"kind": "command", "argv": ["f", "{width}", "{batch}"]})"),
       {R"("width":{"log":false,"max":512,"min":64,"step":64,"type":"int"})",
        R"("batch":{"log":true,"max":1024,"min":16,"type":"int"})"}},
      {"int_extreme_bounds",
       spec(R"({"k": {"type": "int", "min": -9007199254740992, "max": 9007199254740992}})",
            R"({"kind": "command", "argv": ["f", "{k}"]})"),
       {R"("max":9007199254740992,"min":-9007199254740992)"}},
      {"categorical_mixed_types",
       spec(R"({"c": {"type": "categorical", "values": [1, 1.0, true, "a", -2.5, 0, false]}})",
            R"({"kind": "command", "argv": ["f", "{c}"]})"),
       {R"("c":{"type":"categorical","values":[1,1.0,true,"a",-2.5,0,false]})"},
       {"\"log\""}},
      {"conditional_child_written_first",
       spec(R"({"momentum": {"type": "float", "min": 0, "max": 0.99, "when": {"opt": "sgd"}},
                "opt": {"type": "categorical", "values": ["sgd", "adam"]}})",
            R"({"kind": "command", "argv": ["f", "{opt}", "{momentum}"]})"),
       {R"("parameters":{"opt":{"type":"categorical","values":["sgd","adam"]},)"
        R"("momentum":{"log":false,"max":0.99,"min":0.0,"type":"float","when":{"opt":["sgd"]}}})"}},
      {"conditional_chain_numeric_and_bool_parents",
       spec(R"({"depth": {"type": "int", "min": 1, "max": 3},
                "w2": {"type": "int", "min": 8, "max": 64, "step": 8, "when": {"depth": [2, 3]}},
                "w3": {"type": "int", "min": 8, "max": 64, "when": {"w2": [8, 16.0]}},
                "flag": {"type": "categorical", "values": [true, false]},
                "x": {"type": "float", "min": 0, "max": 1, "when": {"flag": true}},
                "y": {"type": "float", "min": 0, "max": 1, "when": {"x": 0.5}}})",
            R"({"kind": "command", "argv": ["f"]})"),
       {R"("when":{"depth":[2,3]})", R"("when":{"w2":[8,16.0]})", R"("when":{"flag":[true]})",
        R"("when":{"x":[0.5]})"}},
      // Samplers.
      {"grid_keeps_parameter_order",
       spec(
           R"({"z": {"type": "int", "min": 1, "max": 3}, "a": {"type": "categorical", "values": ["p", "q"]},
                "m": {"type": "float", "min": 0, "max": 1, "step": 0.5}})",
           R"({"kind": "command", "argv": ["f"]})", R"({"algorithm": "grid", "max_trials": 18})"),
       {R"("parameters":{"z":{)", R"(},"a":{"type":"categorical")", R"(},"m":{"log":false)",
        R"("search":{"algorithm":"grid","max_concurrent":1,"max_trials":18,"n_initial":0,"seed":0})"}},
      {"random_largest_seed",
       spec(kBraninParams, kBranin,
            R"({"algorithm": "random", "max_trials": 1000000, "seed": 9007199254740992})"),
       {R"("search":{"algorithm":"random","max_concurrent":1,"max_trials":1000000,"n_initial":0,"seed":9007199254740992})"}},
      {"default_algorithm",
       spec(kBraninParams, kBranin, R"({"max_trials": 3})"),
       {R"("algorithm":"random")", R"("max_trials":3)"}},
      {"sobol",
       spec(kBraninParams, kBranin, R"({"algorithm": "sobol", "max_trials": 8, "seed": 4})"),
       {R"("algorithm":"sobol")", R"("seed":4)"}},
      {"bayesian_n_initial",
       spec(
           kBraninParams, kBranin,
           R"({"algorithm": "bayesian", "max_trials": 20, "n_initial": 7, "max_concurrent": 10000})"),
       {R"("algorithm":"bayesian")", R"("n_initial":7)", R"("max_concurrent":10000)"}},
      {"warm_start",
       spec(kBraninParams, kBranin,
            R"({"algorithm": "tpe", "max_trials": 4, "warm_start": {"sweeps": ["s1", "s2"]}})"),
       {R"("warm_start":{"sweeps":["s1","s2"]})"}},
      {"multi_fidelity",
       spec(kBraninParams,
            R"({"kind": "synthetic", "function": "branin", "steps": 9, "curve": "crossing"})",
            R"({"algorithm": "tpe", "max_trials": 30, "multi_fidelity": {"type": "hyperband",
                "resource": "steps", "min": 1, "max": 27, "reduction_factor": 3}})"),
       {R"("multi_fidelity":{"max":27.0,"min":1.0,"reduction_factor":3.0,"resource":"steps","type":"hyperband"})",
        R"("curve":"crossing")"}},
      {"tpe",
       spec(kBraninParams, kBranin,
            R"({"algorithm": "tpe", "max_trials": 40.0, "n_initial": 100000})"),
       {R"("algorithm":"tpe")", R"("max_trials":40,)", R"("n_initial":100000)"}},
      // Pruners.
      {"median_defaults",
       spec(kBraninParams, kBranin, R"({"max_trials": 5})",
            R"(, "early_stopping": {"type": "median"})"),
       {R"("early_stopping":{"min_trials":5,"type":"median","warmup_steps":1})"}},
      {"median_set",
       spec(kBraninParams, kBranin, R"({"max_trials": 5})",
            R"(, "early_stopping": {"type": "median", "warmup_steps": 0, "min_trials": 3})"),
       {R"("early_stopping":{"min_trials":3,"type":"median","warmup_steps":0})"}},
      {"asha_defaults",
       spec(kBraninParams, kBranin, R"({"max_trials": 5})",
            R"(, "early_stopping": {"type": "asha"})"),
       {R"("early_stopping":{"grace_period":1,"max_steps":0,"reduction_factor":3.0,"type":"asha"})"}},
      {"asha_set",
       spec(kBraninParams, kBranin, R"({"max_trials": 5})",
            R"(, "early_stopping": {"type": "asha", "grace_period": 2, "reduction_factor": 2.5,
                                     "max_steps": 81})"),
       {R"("early_stopping":{"grace_period":2,"max_steps":81,"reduction_factor":2.5,"type":"asha"})"}},
      {"nulls_are_absent",
       spec(R"({"x1": {"type": "float", "min": -5, "max": 10, "step": null, "when": null},
                "x2": {"type": "float", "min": 0, "max": 15, "log": null}})",
            kBranin, R"({"max_trials": 5, "seed": null})",
            R"(, "early_stopping": null, "ensemble": null)"),
       {R"("x1":{"log":false,"max":10.0,"min":-5.0,"type":"float"})", R"("seed":0)"},
       {"early_stopping", "ensemble", "\"step\"", "\"when\""}},
      // Trial kinds.
      {"command_env_cwd",
       spec(
           R"({"lr": {"type": "float", "min": 0.001, "max": 0.1}, "n": {"type": "int", "min": 1, "max": 4}})",
           R"({"kind": "command", "argv": ["python3", "train.py", "--lr={lr}", "{{literal}}", "--n", "{n}"],
                "env": {"ZED": "1", "ALPHA": "two words", "EMPTY": ""}, "cwd": "/tmp/work"})"),
       {R"("argv":["python3","train.py","--lr={lr}","{{literal}}","--n","{n}"])",
        R"("env":{"ZED":"1","ALPHA":"two words","EMPTY":""})", R"("cwd":"/tmp/work")",
        R"("kind":"command")"},
       {"\"function\"", "\"model\""}},
      {"command_limits_and_resources",
       spec(R"({"n": {"type": "int", "min": 1, "max": 4}})",
            R"({"kind": "command", "argv": ["f"], "timeout_s": 0, "max_attempts": 100,
                "resources": {"gpus": 2, "memory_gb": 0.0625}})"),
       {R"("timeout_s":0.0)", R"("max_attempts":100)",
        R"("resources":{"gpus":2,"memory_gb":0.0625})",
        R"("data_parallel":{"average_every":1,"bucket_mb":0.125,"mode":"allreduce","replicas":1,"transport":"auto"})",
        R"("env":{})", R"("cwd":"")"}},
      {"command_placement",
       spec(R"({"n": {"type": "int", "min": 1, "max": 4}})",
            R"({"kind": "command", "argv": ["f"],
                "resources": {"gpus": 1, "gpu_memory_gb": 40, "gpu_model": "A100", "cpus": 2.5,
                              "labels": ["zone=a", "fast-disk"]}})"),
       {R"("resources":{"cpus":2.5,"gpu_memory_gb":40.0,"gpu_model":"A100","gpus":1,"labels":["zone=a","fast-disk"]})"}},
      {"command_default_limits",
       spec(R"({"n": {"type": "int", "min": 1, "max": 4}})",
            R"({"kind": "command", "argv": ["f"], "resources": {"gpus": 0}})"),
       {R"("timeout_s":86400.0)", R"("max_attempts":3)", R"("resources":{"gpus":0})"},
       {"memory_gb"}},
      {"synthetic_noop_curve",
       spec(
           R"({"u": {"type": "float", "min": 0, "max": 1}})",
           R"({"kind": "synthetic", "function": "noop", "sleep_s": 1.5, "noise": 0.25, "steps": 10})"),
       {R"("function":"noop")", R"("noise":0.25)", R"("sleep_s":1.5)", R"("steps":10)",
        R"("kind":"synthetic")"},
       {"\"argv\"", "\"env\""}},
      {"synthetic_hartmann6",
       spec(
           R"({"x1": {"type": "float", "min": 0, "max": 1}, "x2": {"type": "float", "min": 0, "max": 1},
                "x3": {"type": "float", "min": 0, "max": 1}, "x4": {"type": "float", "min": 0, "max": 1},
                "x5": {"type": "float", "min": 0, "max": 1}, "x6": {"type": "int", "min": 0, "max": 1}})",
           R"({"kind": "synthetic", "function": "hartmann6"})"),
       {R"("function":"hartmann6")", R"("noise":0.0,)", R"("sleep_s":0.0,)", R"("steps":0,)"}},
      {"synthetic_rosenbrock",
       spec(
           R"({"x1": {"type": "float", "min": -5, "max": 10}, "x2": {"type": "float", "min": -5, "max": 10},
                "x3": {"type": "float", "min": -5, "max": 10}, "x4": {"type": "float", "min": -5, "max": 10}})",
           R"({"kind": "synthetic", "function": "rosenbrock", "steps": 100000})"),
       {R"("function":"rosenbrock")", R"("steps":100000)"}},
      {"synthetic_ackley",
       spec(R"({"x1": {"type": "float", "min": -32.768, "max": 32.768},
                "x2": {"type": "float", "min": -32.768, "max": 32.768},
                "x3": {"type": "float", "min": -32.768, "max": 32.768},
                "x4": {"type": "float", "min": -32.768, "max": 32.768},
                "x5": {"type": "float", "min": -32.768, "max": 32.768}})",
            R"({"kind": "synthetic", "function": "ackley", "noise": 1e12})"),
       {R"("function":"ackley")", R"("noise":1000000000000.0)", R"("min":-32.768)"}},
      {"torch_defaults",
       spec(R"({})", torch(kCsv)),
       {R"("model":{"activation":"relu","batch_norm":false,"channels":[32,64],"dense":[128],)"
        R"("depth":2,"dropout":0.0,"hidden":128,"kernel":3,"layers":[],"padding":"same",)"
        R"("pool":"each","type":"mlp"})",
        R"("data":{"format":"csv","seed":0,"standardize":true,"subset":0,"target":"y","test":"",)"
        R"("test_images":"","test_labels":"","test_subset":0,"train":"t.csv","train_images":"",)"
        R"("train_labels":"","validation":"","validation_fraction":0.1,"validation_images":"",)"
        R"("validation_labels":""})",
        R"("optimizer":{"beta1":0.9,"beta2":0.999,"eps":1e-08,"lr":0.01,"momentum":0.0,)"
        R"("nesterov":false,"type":"sgd","weight_decay":0.0})",
        R"("schedule":{"gamma":0.1,"min_lr":0.0,"step_size":1,"type":"constant","warmup_epochs":0})",
        R"("batch_size":128,)", R"("epochs":1,"eval_batch_size":1024,)",
        R"("seed":0,"task":"classification","timeout_s":86400.0})"}},
      {"torch_mlp_refs_and_literals",
       spec(
           R"({"width": {"type": "int", "min": 16, "max": 256}, "dropout": {"type": "float", "min": 0, "max": 0.5},
                "opt": {"type": "categorical", "values": ["sgd", "adam"]},
                "lr": {"type": "float", "min": 1e-4, "max": 0.1, "log": true}})",
           torch(
               R"("model": {"type": "mlp", "hidden": "{width}", "depth": 3, "dropout": "{dropout}",
                               "batch_norm": true, "activation": "gelu"},
                     "optimizer": {"type": "{opt}", "lr": "{lr}", "momentum": 0.9, "nesterov": true},
                     )" +
               std::string(kCsv))),
       {R"("hidden":"{width}")", R"("depth":3)", R"("dropout":"{dropout}")", R"("batch_norm":true)",
        R"("activation":"gelu")", R"("lr":"{lr}")",
        R"("momentum":0.9,"nesterov":true,"type":"{opt}")"}},
      {"torch_mlp_layers_list_with_refs",
       spec(R"({"w2": {"type": "int", "min": 16, "max": 256}})",
            torch(R"("model": {"layers": [256, "{w2}", 64.0]}, )" + std::string(kCsv))),
       {R"("layers":[256,"{w2}",64])"}},
      {"torch_mlp_layers_ref_and_single_dense",
       spec(R"({"arch": {"type": "categorical", "values": ["64,64", "128"]}})",
            torch(R"("model": {"layers": "{arch}", "dense": 32, "pool": true}, )" +
                  std::string(kCsv))),
       {R"("layers":"{arch}")", R"("dense":[32])", R"("pool":"true")"}},
      {"torch_cnn_idx",
       spec(
           R"({"c2": {"type": "int", "min": 8, "max": 64}, "k": {"type": "categorical", "values": [3, 5]}})",
           torch(
               R"("model": {"type": "cnn", "channels": [16, "{c2}"], "kernel": "{k}", "padding": "valid",
                               "pool": false, "dense": [], "activation": "leaky_relu"},
                     "data": {"format": "idx", "train_images": "ti.gz", "train_labels": "tl.gz",
                              "validation_images": "vi.gz", "validation_labels": "vl.gz",
                              "test_images": "xi", "test_labels": "xl", "subset": 1000,
                              "test_subset": 500, "seed": 3, "standardize": false,
                              "validation_fraction": 0})")),
       {R"("channels":[16,"{c2}"])", R"("kernel":"{k}")", R"("padding":"valid")",
        R"("pool":"false")", R"("dense":[])", R"("format":"idx")", R"("validation_images":"vi.gz")",
        R"("validation_labels":"vl.gz")", R"("test_images":"xi")", R"("standardize":false)",
        R"("subset":1000)", R"("test_subset":500)", R"("validation_fraction":0.0)"}},
      {"torch_csv_files_adamw_step_schedule",
       spec(R"({"bs": {"type": "int", "min": 16, "max": 256, "log": true}})",
            torch(R"("task": "regression",
                     "data": {"format": "csv", "train": "a.csv", "validation": "b.csv", "test": "c.csv",
                              "target": "price", "validation_fraction": 0.5},
                     "optimizer": {"type": "adamw", "lr": 3e-4, "weight_decay": 0.01, "beta1": 0.85,
                                   "beta2": 0.995, "eps": 1e-7},
                     "schedule": {"type": "step", "step_size": 3, "gamma": 0.5, "warmup_epochs": 1},
                     "batch_size": "{bs}", "eval_batch_size": 256, "epochs": 4, "seed": 11)")),
       {R"("task":"regression")", R"("validation":"b.csv")", R"("test":"c.csv")",
        R"("target":"price")",
        R"("beta1":0.85,"beta2":0.995,"eps":1e-07,"lr":0.0003,"momentum":0.0,"nesterov":false,)"
        R"("type":"adamw","weight_decay":0.01)",
        R"("schedule":{"gamma":0.5,"min_lr":0.0,"step_size":3,"type":"step","warmup_epochs":1})",
        R"("batch_size":"{bs}")", R"("epochs":4,"eval_batch_size":256,)", R"("seed":11,)"}},
      {"torch_cosine_schedule_refs",
       spec(R"({"sched": {"type": "categorical", "values": ["constant", "cosine"]},
                "min_lr": {"type": "float", "min": 0, "max": 0.001},
                "vf": {"type": "float", "min": 0.1, "max": 0.3},
                "ep": {"type": "int", "min": 1, "max": 5}})",
            torch(R"("schedule": {"type": "{sched}", "min_lr": "{min_lr}", "warmup_epochs": "{ep}"},
                     "data": {"format": "csv", "train": "t.csv", "target": "y", "validation_fraction": "{vf}",
                              "seed": "{ep}", "standardize": "{sched}"},
                     "epochs": "{ep}", "seed": "{ep}", "task": "{sched}")")),
       {R"("schedule":{"gamma":0.1,"min_lr":"{min_lr}","step_size":1,"type":"{sched}","warmup_epochs":"{ep}"})",
        R"("validation_fraction":"{vf}")", R"("standardize":"{sched}")", R"("task":"{sched}")",
        R"("epochs":"{ep}")"}},
      {"torch_data_parallel_and_resources",
       spec(R"({})",
            torch(std::string(kCsv) +
                  R"(, "data_parallel": {"replicas": 4, "mode": "average", "average_every": 8},
                  "resources": {"gpus": 1, "memory_gb": 65536}, "max_attempts": 1, "timeout_s": 2592000)")),
       {R"("data_parallel":{"average_every":8,"bucket_mb":0.125,"mode":"average","replicas":4,"transport":"auto"})",
        R"("resources":{"gpus":1,"memory_gb":65536.0})", R"("max_attempts":1,)",
        R"("timeout_s":2592000.0)"}},
      {"torch_data_parallel_allreduce",
       spec(R"({})", torch(std::string(kCsv) + R"(, "data_parallel": {"replicas": 2})")),
       {R"("data_parallel":{"average_every":1,"bucket_mb":0.125,"mode":"allreduce","replicas":2,"transport":"auto"})"}},
      // Ensemble.
      {"ensemble_defaults",
       spec(R"({})", torch(kCsv), R"({"max_trials": 5})", R"(, "ensemble": {})"),
       {R"("ensemble":{"base":"best","bootstrap":true,"choose":"auto","combine":"soft_vote","max_features":1.0,)"
        R"("members":8,"sample_fraction":1.0,"seed":0})"},
       {"selection_rounds", "top_k"}},
      {"ensemble_top_k_selection",
       spec(
           R"({})", torch(kCsv), R"({"max_trials": 5})",
           R"(, "ensemble": {"members": 1000, "base": {"top_k": 3}, "bootstrap": false, "sample_fraction": 0.5,
                              "max_features": 3, "combine": "selection", "seed": 18446744073709551615,
                              "selection_rounds": 20, "selection_init": 20, "epochs": 5, "subset": 0})"),
       {R"("ensemble":{"base":{"top_k":3},"bootstrap":false,"choose":"auto","combine":"selection","epochs":5,)"
        R"("max_features":3.0,"members":1000,"sample_fraction":0.5,"seed":18446744073709551615,)"
        R"("selection_init":20,"selection_rounds":20,"subset":0})"}},
      {"ensemble_weighted_subspace",
       spec(R"({})", torch(kCsv), R"({"max_trials": 5})",
            R"(, "ensemble": {"combine": "weighted", "max_features": 0.25, "subset": 1099511627776,
                              "base": "best"})"),
       {R"("combine":"weighted")", R"("max_features":0.25)",
        R"("seed":0,"subset":1099511627776})"}},
      {"ensemble_hard_vote",
       spec(R"({})", torch(kCsv), R"({"max_trials": 5})",
            R"(, "ensemble": {"combine": "hard_vote", "members": 1})"),
       {R"("combine":"hard_vote")", R"("members":1,)"}},
      {"ensemble_mean",
       spec(R"({})", torch(kCsv), R"({"max_trials": 5})",
            R"(, "ensemble": {"combine": "mean", "sample_fraction": 1e-3})"),
       {R"("combine":"mean")", R"("sample_fraction":0.001)"}},
      {"ensemble_median_regression",
       spec(R"({})", torch(R"("task": "regression", )" + std::string(kCsv)), R"({"max_trials": 5})",
            R"(, "ensemble": {"combine": "median", "epochs": 100000})"),
       {R"("combine":"median")", R"("epochs":100000)"}},
      {"several_objectives_nsga2",
       R"({"name": "mo", "objectives": [{"metric": "f1", "mode": "min", "reference": 1.5},
                                        {"metric": "acc", "mode": "max"}],
           "parameters": {"x1": {"type": "float", "min": 0, "max": 1}},
           "search": {"algorithm": "nsga2", "population": 12, "max_trials": 40},
           "trial": {"kind": "command", "argv": ["f", "{x1}"]}})",
       {R"("objectives":[{"metric":"f1","mode":"min","reference":1.5},{"metric":"acc","mode":"max"}])",
        R"("algorithm":"nsga2")", R"("population":12)"},
       {R"("objective":)"}},
      // Top level.
      {"objective_max_and_text_escapes",
       R"({"name": "sweep \"q\" \\ \u00e9 日本 \u0001", "description": "dropped",
           "objective": {"metric": "val acc/top-1", "mode": "max"},
           "parameters": {"a.b-c_d": {"type": "float", "min": 0, "max": 1}},
           "search": {"max_trials": 1},
           "trial": {"kind": "command", "argv": ["f", "{a.b-c_d}", "é"]}})",
       {R"("name":"sweep \"q\" \\ é 日本 \u0001")",
        R"("objective":{"metric":"val acc/top-1","mode":"max"})", R"("a.b-c_d":{)"},
       {"description", "dropped"}},
  };
}

class SpecRoundTripTable : public ::testing::TestWithParam<Case> {};

TEST_P(SpecRoundTripTable, DumpParsesBackToTheSameSpecAndText) {
  const Case& c = GetParam();
  const std::string d1 = expect_round_trip(c.text);
  ASSERT_NE(d1, "");
  for (const auto& f : c.present) EXPECT_NE(d1.find(f), std::string::npos) << f << "\nin\n" << d1;
  for (const auto& f : c.absent) EXPECT_EQ(d1.find(f), std::string::npos) << f << "\nin\n" << d1;
}

INSTANTIATE_TEST_SUITE_P(Specs, SpecRoundTripTable, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

TEST(SpecRoundTrip, TableCoversEnough) {
  EXPECT_GE(cases().size(), 25u);
}

// The whole canonical form of a small spec: every default written, keys sorted, compact.
TEST(SpecRoundTrip, CanonicalFormOfAMinimalSpec) {
  auto s = parse_spec(R"({"trial": {"argv": ["run", "{n}"], "kind": "command"},
                          "search": {"max_trials": 2}, "name": "m",
                          "parameters": {"n": {"max": 2, "type": "int", "min": 0}},
                          "objective": {"metric": "loss"}})");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(
      dump_spec(*s),
      R"({"name":"m","objective":{"metric":"loss","mode":"min"},)"
      R"("parameters":{"n":{"log":false,"max":2,"min":0,"type":"int"}},)"
      R"("search":{"algorithm":"random","max_concurrent":1,"max_trials":2,"n_initial":0,"seed":0},)"
      R"("trial":{"argv":["run","{n}"],"cwd":"",)"
      R"("data_parallel":{"average_every":1,"bucket_mb":0.125,"mode":"allreduce","replicas":1,"transport":"auto"},"env":{},)"
      R"("kind":"command","max_attempts":3,"network":"loopback","resources":{"gpus":0},)"
      R"("timeout_s":86400.0}})");
}

// Parameters keep the parsed order (parents first), which the grid walks in.
TEST(SpecRoundTrip, ParameterOrderSurvivesTyped) {
  auto s1 = parse_spec(
      spec(R"({"w": {"type": "float", "min": 0, "max": 1, "step": 0.5, "when": {"b": "y"}},
                                "c": {"type": "int", "min": 0, "max": 2},
                                "b": {"type": "categorical", "values": ["x", "y"]}})",
           R"({"kind": "command", "argv": ["f"]})", R"({"algorithm": "grid", "max_trials": 9})"));
  ASSERT_TRUE(s1.ok()) << s1.error().message;
  auto s2 = parse_spec(dump_spec(*s1));
  ASSERT_TRUE(s2.ok()) << s2.error().message;
  std::vector<std::string> names;
  for (const auto& p : s2->space.params) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"c", "b", "w"}));
  EXPECT_EQ(s2->space.params[2].step, std::optional<double>(0.5));
  ASSERT_TRUE(s2->space.params[2].when);
  EXPECT_EQ(s2->space.params[2].when->values, (std::vector<search::Value>{std::string("y")}));
}

// Ints stay ints and floats stay floats through the dump (1 vs 1.0 is a different choice).
TEST(SpecRoundTrip, ValueTypesSurviveTyped) {
  auto s1 = parse_spec(spec(R"({"c": {"type": "categorical", "values": [1, 1.0, "1", true]}})",
                            R"({"kind": "command", "argv": ["f", "{c}"]})"));
  ASSERT_TRUE(s1.ok()) << s1.error().message;
  auto s2 = parse_spec(dump_spec(*s1));
  ASSERT_TRUE(s2.ok()) << s2.error().message;
  const auto& v = s2->space.params[0].choices;
  ASSERT_EQ(v.size(), 4u);
  EXPECT_TRUE(std::holds_alternative<std::int64_t>(v[0]));
  EXPECT_TRUE(std::holds_alternative<double>(v[1]));
  EXPECT_TRUE(std::holds_alternative<std::string>(v[2]));
  EXPECT_TRUE(std::holds_alternative<bool>(v[3]));
}

// The comparison the table relies on notices a field that did not survive.
TEST(SpecRoundTrip, DifferencesNamesTheChangedField) {
  auto s1 = parse_spec(spec(R"({})", torch(kCsv), R"({"max_trials": 5})", R"(, "ensemble": {})"));
  ASSERT_TRUE(s1.ok()) << s1.error().message;
  SweepSpec s2 = *s1;
  EXPECT_EQ(join(differences(*s1, s2)), "");
  s2.trial.torch.optimizer.eps.ref = "eps";
  s2.ensemble->max_features = 0.5;
  EXPECT_EQ(join(differences(*s1, s2)), "trial.torch.optimizer.eps.ref, ensemble->max_features");
}

}  // namespace
}  // namespace hpo::trials
