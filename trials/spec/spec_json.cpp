// Sweep spec encoding. Each section is written the way parse_spec() reads it, so the two stay
// inverse: ints where the parser wants an integer (int parameters' bounds and step included),
// doubles where it keeps a double (nlohmann prints the shortest text that reads back to the same
// double, and keeps 1.0 a float so a categorical 1.0 does not come back as the int 1), a swept
// torch field as "{name}".
//
// Keys are sorted, as nlohmann::json sorts them, except in the two objects whose order is data:
// `parameters` (spec order is the grid's order; parents stay before their children, an order
// that parsing keeps as it is) and the command's `env` (kept as the vector it came from). So the
// document is built in an ordered_json and sorted at the end, those two objects left alone.
//
// The enum switches have no default: a new algorithm, pruner, kind or ensemble base is a warning
// here until the encoder writes it.
#include "trials/spec/spec_json.hpp"

#include <algorithm>
#include <cmath>
#include <variant>

#include <nlohmann/json.hpp>

#include "trials/record_json.hpp"
#include "trials/spec/spec_names.hpp"

namespace hpo::trials {
namespace {

using OrderedJson = nlohmann::ordered_json;

OrderedJson value_json(const search::Value& v) {
  return std::visit([](const auto& x) { return OrderedJson(x); }, v);
}

OrderedJson values_json(const std::vector<search::Value>& values) {
  OrderedJson out = OrderedJson::array();
  for (const auto& v : values) out.push_back(value_json(v));
  return out;
}

OrderedJson parameter_json(const search::ParamSpec& p) {
  OrderedJson j = OrderedJson::object();
  if (p.type == search::ParamType::kCategorical) {
    j["type"] = "categorical";
    j["values"] = values_json(p.choices);
  } else {
    const bool is_int = p.type == search::ParamType::kInt;
    // Validation keeps int bounds and steps within 2^53, so the cast is exact.
    auto number = [&](double d) {
      return is_int ? OrderedJson(static_cast<std::int64_t>(d)) : OrderedJson(d);
    };
    j["type"] = is_int ? "int" : "float";
    j["min"] = number(p.min);
    j["max"] = number(p.max);
    j["log"] = p.log;
    if (p.step) j["step"] = number(*p.step);
  }
  if (p.when) {
    OrderedJson when = OrderedJson::object();
    when[p.when->parent] = values_json(p.when->values);
    j["when"] = std::move(when);
  }
  return j;
}

OrderedJson search_json(const SearchConfig& s) {
  OrderedJson j = {{"algorithm", kAlgorithmNames(s.sampler.algorithm)},
                   {"seed", s.sampler.seed},
                   {"n_initial", s.sampler.n_initial},
                   {"max_trials", s.max_trials},
                   {"max_concurrent", s.max_concurrent}};
  if (s.sampler.population > 0) j["population"] = s.sampler.population;
  if (!s.warm_start_sweeps.empty()) j["warm_start"] = {{"sweeps", s.warm_start_sweeps}};
  if (const auto& f = s.fidelity)
    j["multi_fidelity"] = {{"type", kScheduleNames(f->schedule)},
                           {"resource", f->resource},
                           {"min", f->min_budget},
                           {"max", f->max_budget},
                           {"reduction_factor", f->reduction_factor}};
  if (const auto& p = s.pbt) {
    j["pbt"] = {{"population", p->population}, {"resource", p->resource},
                {"interval", p->interval},     {"max", p->max_budget},
                {"quantile", p->quantile},     {"resample_probability", p->resample_probability}};
    if (!p->mutable_params.empty()) j["pbt"]["mutations"] = p->mutable_params;
  }
  return j;
}

OrderedJson pruner_json(const search::PrunerConfig& c) {
  switch (c.type) {
    case search::PrunerType::kMedian:
      return {{"type", kPrunerNames(c.type)},
              {"warmup_steps", c.warmup_steps},
              {"min_trials", c.min_trials}};
    case search::PrunerType::kAsha:
      return {{"type", kPrunerNames(c.type)},
              {"grace_period", c.grace_period},
              {"reduction_factor", c.reduction_factor},
              {"max_steps", c.max_steps}};
  }
  return OrderedJson::object();
}

template <class T>
OrderedJson sweepable(const Sweepable<T>& f) {
  if (f.is_ref()) return "{" + f.ref + "}";
  return f.value;
}

OrderedJson sweepable(const SweepableIntList& l) {
  if (!l.ref.empty()) return "{" + l.ref + "}";
  OrderedJson out = OrderedJson::array();
  for (const auto& item : l.items) out.push_back(sweepable(item));
  return out;
}

// The kind-"torch" keys of the `trial` object.
void add_torch(const TorchRecipe& t, OrderedJson& j) {
  const auto& m = t.model;
  const auto& d = t.data;
  const auto& o = t.optimizer;
  const auto& s = t.schedule;
  j["task"] = sweepable(t.task);
  j["model"] = {{"type", sweepable(m.type)},         {"hidden", sweepable(m.hidden)},
                {"depth", sweepable(m.depth)},       {"layers", sweepable(m.layers)},
                {"channels", sweepable(m.channels)}, {"kernel", sweepable(m.kernel)},
                {"padding", sweepable(m.padding)},   {"pool", sweepable(m.pool)},
                {"dense", sweepable(m.dense)},       {"activation", sweepable(m.activation)},
                {"dropout", sweepable(m.dropout)},   {"batch_norm", sweepable(m.batch_norm)}};
  j["data"] = {{"format", d.format},
               {"train_images", d.train_images},
               {"train_labels", d.train_labels},
               {"validation_images", d.validation_images},
               {"validation_labels", d.validation_labels},
               {"test_images", d.test_images},
               {"test_labels", d.test_labels},
               {"train", d.train},
               {"validation", d.validation},
               {"test", d.test},
               {"target", d.target},
               {"validation_fraction", sweepable(d.validation_fraction)},
               {"subset", sweepable(d.subset)},
               {"test_subset", sweepable(d.test_subset)},
               {"seed", sweepable(d.seed)},
               {"standardize", sweepable(d.standardize)}};
  j["optimizer"] = {{"type", sweepable(o.type)},
                    {"lr", sweepable(o.lr)},
                    {"momentum", sweepable(o.momentum)},
                    {"nesterov", sweepable(o.nesterov)},
                    {"weight_decay", sweepable(o.weight_decay)},
                    {"beta1", sweepable(o.beta1)},
                    {"beta2", sweepable(o.beta2)},
                    {"eps", sweepable(o.eps)}};
  j["schedule"] = {{"type", sweepable(s.type)},
                   {"step_size", sweepable(s.step_size)},
                   {"gamma", sweepable(s.gamma)},
                   {"min_lr", sweepable(s.min_lr)},
                   {"warmup_epochs", sweepable(s.warmup_epochs)}};
  j["batch_size"] = sweepable(t.batch_size);
  j["eval_batch_size"] = sweepable(t.eval_batch_size);
  j["epochs"] = sweepable(t.epochs);
  j["seed"] = sweepable(t.seed);
}

OrderedJson trial_json(const TrialRecipe& t) {
  OrderedJson j = OrderedJson::object();
  j["timeout_s"] = t.timeout_s;
  j["max_attempts"] = t.max_attempts;
  if (t.gpus == std::floor(t.gpus))
    j["resources"] = {{"gpus", static_cast<std::int64_t>(t.gpus)}};
  else
    j["resources"] = {{"gpus", t.gpus}};
  // The parser takes memory_gb in [0.0625, 65536]; the default 0 (no cap) is its absence.
  if (t.memory_gb > 0) j["resources"]["memory_gb"] = t.memory_gb;
  // Placement fields, like memory_gb, are absent at their defaults.
  if (t.gpu_memory_gb > 0) j["resources"]["gpu_memory_gb"] = t.gpu_memory_gb;
  if (!t.gpu_model.empty()) j["resources"]["gpu_model"] = t.gpu_model;
  if (t.cpus > 0) j["resources"]["cpus"] = t.cpus;
  if (!t.labels.empty()) j["resources"]["labels"] = t.labels;
  j["data_parallel"] = {{"replicas", t.data_parallel.replicas},
                        {"mode", t.data_parallel.average ? "average" : "allreduce"},
                        {"average_every", t.data_parallel.average_every},
                        {"bucket_mb", t.data_parallel.bucket_mb},
                        {"transport", t.data_parallel.transport}};
  if (t.data_parallel.per_host > 0) j["data_parallel"]["per_host"] = t.data_parallel.per_host;
  switch (t.kind) {
    case TrialKind::kCommand: {
      j["kind"] = kTrialKindNames(t.kind);
      j["argv"] = t.command.argv;
      OrderedJson env = OrderedJson::object();
      for (const auto& [name, value] : t.command.env) env[name] = value;
      j["env"] = std::move(env);
      j["cwd"] = t.command.cwd;
      j["network"] = t.command.host_network ? "host" : "loopback";
      if (const auto& d = t.command.data) {
        OrderedJson data = {{"task", d->regression ? "regression" : "classification"},
                            {"train_rows", d->train_rows},
                            {"validation_rows", d->validation_rows},
                            {"test_rows", d->test_rows},
                            {"features", d->features}};
        if (!d->regression) data["classes"] = d->classes;
        j["data"] = std::move(data);
      }
      break;
    }
    case TrialKind::kSynthetic:
      j["kind"] = kTrialKindNames(t.kind);
      j["function"] = t.synthetic.function;
      j["sleep_s"] = t.synthetic.sleep_s;
      j["noise"] = t.synthetic.noise;
      j["steps"] = t.synthetic.steps;
      if (t.synthetic.crossing) j["curve"] = "crossing";
      break;
    case TrialKind::kTorch:
      j["kind"] = kTrialKindNames(t.kind);
      add_torch(t.torch, j);
      break;
  }
  return j;
}

OrderedJson ensemble_json(const EnsembleRecipe& e) {
  OrderedJson j = OrderedJson::object();
  j["members"] = e.members;
  switch (e.base) {
    case EnsembleRecipe::Base::kBest:
      j["base"] = "best";
      break;
    case EnsembleRecipe::Base::kTopK:
      j["base"] = {{"top_k", e.top_k}};
      break;
  }
  j["bootstrap"] = e.bootstrap;
  j["sample_fraction"] = e.sample_fraction;
  j["max_features"] = e.max_features;
  j["combine"] = to_string(e.combine);
  j["choose"] = to_string(e.choose);
  j["seed"] = e.seed;
  // The parser refuses selection_* under any other combine.
  if (e.combine == EnsembleRecipe::Combine::kSelection) {
    j["selection_rounds"] = e.selection_rounds;
    j["selection_init"] = e.selection_init;
  }
  if (e.epochs) j["epochs"] = *e.epochs;
  if (e.subset) j["subset"] = *e.subset;
  return j;
}

// `j` with the keys of every object sorted, except in the objects at the paths in `keep`.
OrderedJson sorted(const OrderedJson& j, const std::string& path,
                   std::initializer_list<const char*> keep) {
  if (j.is_array()) {
    OrderedJson out = OrderedJson::array();
    for (const auto& e : j) out.push_back(sorted(e, path, keep));
    return out;
  }
  if (!j.is_object()) return j;
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  if (std::none_of(keep.begin(), keep.end(), [&](const char* k) { return path == k; }))
    std::sort(keys.begin(), keys.end());
  OrderedJson out = OrderedJson::object();
  for (const auto& key : keys)
    out[key] = sorted(j.at(key), path.empty() ? key : path + "." + key, keep);
  return out;
}

}  // namespace

std::string dump_spec(const SweepSpec& spec) {
  OrderedJson root = OrderedJson::object();
  root["name"] = spec.name;
  auto objective_json = [](const Objective& o) {
    OrderedJson j{{"metric", o.metric}, {"mode", o.maximize ? "max" : "min"}};
    if (o.reference) j["reference"] = *o.reference;
    return j;
  };
  if (spec.objectives.size() > 1) {
    OrderedJson list = OrderedJson::array();
    for (const auto& o : spec.objectives) list.push_back(objective_json(o));
    root["objectives"] = std::move(list);
  } else {
    root["objective"] = objective_json(spec.objective);
  }
  if (!spec.constraints.empty()) root["constraints"] = record::to_json(spec.constraints);
  OrderedJson params = OrderedJson::object();
  for (const auto& p : spec.space.params) params[p.name] = parameter_json(p);
  root["parameters"] = std::move(params);
  root["search"] = search_json(spec.search);
  if (spec.early_stopping) root["early_stopping"] = pruner_json(*spec.early_stopping);
  root["trial"] = trial_json(spec.trial);
  if (spec.ensemble) root["ensemble"] = ensemble_json(*spec.ensemble);
  return sorted(root, "", {"parameters", "trial.env"}).dump();
}

}  // namespace hpo::trials
