// Sweep spec parsing and validation.
//
// The spec is read with nlohmann::ordered_json so that the user's parameter
// order survives (grid order and the order of conditional parameters depend
// on it). Every object is read through a field reader (json_fields.hpp) that
// knows its JSON path, records each key it consumed and, at the end, reports the
// keys nobody asked for ("unknown key"). Errors are collected, never thrown: the
// caller gets all of them in one Error with one FieldError per problem.
#include "trials/spec.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "search/test_functions.hpp"
#include "trials/json_fields.hpp"
#include "trials/json_limits.hpp"
#include "trials/placement.hpp"

namespace hpo::trials {

using Json = nlohmann::ordered_json;

namespace {

constexpr std::int64_t kMaxTrials = 1'000'000;
constexpr std::int64_t kMaxConcurrent = 10'000;
constexpr std::size_t kMaxNameLength = 200;

using Reader = OrderedFieldReader;

std::optional<search::Value> scalar_value(const Json& v) {
  if (v.is_boolean()) return search::Value(v.get<bool>());
  if (v.is_number_integer()) {  // unsigned included; past int64 it is refused, not wrapped
    auto i = json_int64(v);
    if (!i) return std::nullopt;
    return search::Value(*i);
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d)) return std::nullopt;
    return search::Value(d);
  }
  if (v.is_string()) return search::Value(v.get<std::string>());
  return std::nullopt;
}

bool valid_param_name(const std::string& name) {
  static const std::regex kName("[A-Za-z_][A-Za-z0-9_.-]{0,63}");
  return std::regex_match(name, kName);
}

// Whether `v` is a value the parameter `p` can take (for `when` conditions).
bool in_domain(const search::ParamSpec& p, const search::Value& v) {
  if (p.type == search::ParamType::kCategorical)
    return std::any_of(p.choices.begin(), p.choices.end(), [&](const search::Value& c) {
      auto a = search::as_double(c), b = search::as_double(v);
      return c == v || (a && b && !std::holds_alternative<std::string>(c) && *a == *b);
    });
  auto d = search::as_double(v);
  if (!d || std::holds_alternative<bool>(v)) return false;
  if (*d < p.min || *d > p.max) return false;
  if (p.type == search::ParamType::kInt && *d != std::floor(*d)) return false;
  if (p.step) {
    double k = (*d - p.min) / *p.step;
    return std::fabs(k - std::round(k)) < 1e-9;
  }
  return true;
}

// Sane numeric ranges: wide enough for any hyperparameter, narrow enough that
// the samplers' arithmetic (widths, logs, int64 values) stays finite and exact.
constexpr double kMaxBound = 1e150;
constexpr double kMaxIntBound = 9007199254740992.0;  // 2^53: every int is an exact double
constexpr double kMaxSteps = 1e15;

void parse_parameter(const std::string& name, const Json& j, const std::string& path,
                     search::ParamSpec& out, std::vector<FieldError>& errors) {
  out.name = name;
  if (!valid_param_name(name))
    errors.push_back({path,
                      "parameter names are 1-64 characters of letters, digits, '_', '.', "
                      "'-', starting with a letter or '_'"});
  Reader r(j, path, errors);
  if (!j.is_object()) {
    r.expected(path, "an object", j);
    return;
  }
  auto type = r.one_of("type", {"float", "int", "categorical"}, true);
  if (!type) {
    r.mark_seen("min"), r.mark_seen("max"), r.mark_seen("log"), r.mark_seen("step");
    r.mark_seen("values"), r.mark_seen("when");
    return;
  }
  if (*type == "categorical") {
    out.type = search::ParamType::kCategorical;
    const Json* values = r.array("values", true);
    if (values && values->empty()) {
      r.error(r.at("values"), "must not be empty");
    } else if (values) {
      for (std::size_t i = 0; i < values->size(); ++i) {
        auto v = scalar_value((*values)[i]);
        std::string vp = Reader::item(r.at("values"), i);
        if (!v) {
          r.expected(vp, "a string, boolean or number (integers within int64)", (*values)[i]);
          continue;
        }
        if (std::find(out.choices.begin(), out.choices.end(), *v) != out.choices.end()) {
          r.error(vp, fmt::format("duplicate value {}", Reader::describe((*values)[i])));
          continue;
        }
        out.choices.push_back(*v);
      }
    }
  } else {
    out.type = *type == "int" ? search::ParamType::kInt : search::ParamType::kFloat;
    bool is_int = out.type == search::ParamType::kInt;
    auto read_bound = [&](const char* key) -> std::optional<double> {
      const Json* v = r.get(key, true);
      if (!v) return std::nullopt;
      if (is_int && !r.is_integer(*v)) {
        r.expected(r.at(key), "an integer", *v);
        return std::nullopt;
      }
      return r.as_number(*v, r.at(key));
    };
    auto lo = read_bound("min");
    auto hi = read_bound("max");
    out.log = r.boolean("log").value_or(false);
    if (const Json* step = r.get("step")) {
      if (is_int && !r.is_integer(*step))
        r.expected(r.at("step"), "an integer", *step);
      else if (auto s = r.as_number(*step, r.at("step"))) {
        if (*s <= 0)
          r.error(r.at("step"), fmt::format("must be > 0, got {}", *s));
        else
          out.step = *s;
      }
    }
    if (lo && hi) {
      out.min = *lo;
      out.max = *hi;
      if (*lo >= *hi) r.error(path, fmt::format("min ({}) must be less than max ({})", *lo, *hi));
      if (out.log && *lo <= 0)
        r.error(r.at("log"), fmt::format("log scale needs min > 0, got min = {}", *lo));
      if (out.step && out.log) r.error(r.at("step"), "step cannot be combined with log: true");
      if (out.step && *lo<*hi&& * out.step> * hi - *lo)
        r.error(r.at("step"),
                fmt::format("step ({}) is larger than max - min ({})", *out.step, *hi - *lo));
      // Samplers compute with max - min (and int values as int64): a range
      // whose width overflows would produce NaN or wrapped parameters.
      if (!is_int && *lo < *hi &&
          !(std::isfinite(*hi - *lo) && std::fabs(*lo) <= kMaxBound && std::fabs(*hi) <= kMaxBound))
        r.error(path, fmt::format("the range [{}, {}] is too wide: bounds must be within ±{:g}",
                                  *lo, *hi, kMaxBound));
      if (is_int && !(std::fabs(*lo) <= kMaxIntBound && std::fabs(*hi) <= kMaxIntBound))
        r.error(path, fmt::format("integer bounds must be within ±{:g} (2^53), got [{}, {}]",
                                  kMaxIntBound, *lo, *hi));
      if (out.step && *out.step < (*hi - *lo) / kMaxSteps)
        r.error(r.at("step"), fmt::format("step ({}) makes more than {:g} values in [{}, {}]",
                                          *out.step, kMaxSteps, *lo, *hi));
    }
  }
  if (const Json* when = r.get("when")) {
    std::string wp = r.at("when");
    if (!when->is_object() || when->size() != 1) {
      r.error(wp,
              "expected an object with one key, the parent parameter: {\"parent\": value} or "
              "{\"parent\": [values]}");
    } else {
      search::Condition cond;
      cond.parent = when->begin().key();
      const Json& vals = when->begin().value();
      std::vector<Json> list =
          vals.is_array() ? std::vector<Json>(vals.begin(), vals.end()) : std::vector<Json>{vals};
      if (list.empty()) r.error(wp + "." + cond.parent, "needs at least one value");
      for (const Json& v : list) {
        if (auto sv = scalar_value(v))
          cond.values.push_back(*sv);
        else
          r.error(wp + "." + cond.parent,
                  fmt::format("{} is not a parameter value", Reader::describe(v)));
      }
      out.when = std::move(cond);
    }
  }
  r.unknown_keys("type, min, max, log, step, values, when");
}

// Orders parameters so that parents come before children (stable: the user's
// order otherwise) and checks conditions: parents exist, no cycles, values possible.
void order_parameters(std::vector<search::ParamSpec>& params, std::vector<FieldError>& errors) {
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < params.size(); ++i) index[params[i].name] = i;
  bool ok = true;
  for (const auto& p : params) {
    if (!p.when) continue;
    std::string path = "parameters." + p.name + ".when." + p.when->parent;
    auto it = index.find(p.when->parent);
    if (it == index.end()) {
      errors.push_back({path, fmt::format("unknown parent parameter \"{}\"", p.when->parent)});
      ok = false;
      continue;
    }
    if (p.when->parent == p.name) {
      errors.push_back({path, "a parameter cannot depend on itself"});
      ok = false;
      continue;
    }
    const auto& parent = params[it->second];
    for (const auto& v : p.when->values)
      if (!in_domain(parent, v))
        errors.push_back({path, fmt::format("impossible condition: \"{}\" never takes the value {}",
                                            parent.name, search::to_string(v))});
  }
  if (!ok) return;
  // Kahn's algorithm, always taking the earliest ready parameter.
  std::vector<search::ParamSpec> sorted;
  std::vector<bool> placed(params.size(), false);
  while (sorted.size() < params.size()) {
    bool progress = false;
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (placed[i]) continue;
      const auto& p = params[i];
      if (p.when && !placed[index[p.when->parent]]) continue;
      placed[i] = true;
      sorted.push_back(p);
      progress = true;
      break;
    }
    if (!progress) {
      for (std::size_t i = 0; i < params.size(); ++i)
        if (!placed[i])
          errors.push_back({"parameters." + params[i].name + ".when", "conditions form a cycle"});
      return;
    }
  }
  params = std::move(sorted);
}

// Placeholders `{name}` in one argv element; `{{`/`}}` are literal braces.
void check_placeholders(const std::string& arg, const std::string& path,
                        const search::SearchSpace& space, std::vector<FieldError>& errors) {
  for (std::size_t i = 0; i < arg.size(); ++i) {
    if (arg[i] == '{') {
      if (i + 1 < arg.size() && arg[i + 1] == '{') {
        ++i;
        continue;
      }
      auto close = arg.find('}', i);
      if (close == std::string::npos) {
        errors.push_back(
            {path, fmt::format("unclosed '{{' in \"{}\" (write '{{{{' for a brace)", arg)});
        return;
      }
      std::string name = arg.substr(i + 1, close - i - 1);
      if (!space.find(name))
        errors.push_back({path, fmt::format("placeholder {{{}}} names no parameter", name)});
      i = close;
    } else if (arg[i] == '}') {
      if (i + 1 < arg.size() && arg[i + 1] == '}')
        ++i;
      else
        errors.push_back({path, fmt::format("stray '}}' in \"{}\" (write '}}}}')", arg)});
    }
  }
}

void parse_command_data(const Json& j, CommandRecipe& out, std::vector<FieldError>& errors) {
  Reader r(j, "trial.data", errors);
  constexpr std::int64_t kMaxRows = std::int64_t{1} << 31;
  CommandData d;
  auto task = r.one_of("task", {"classification", "regression"}, true);
  d.regression = task && *task == "regression";
  if (auto c = r.integer("classes", 2, 100'000, task && !d.regression)) d.classes = *c;
  if (d.regression && j.contains("classes"))
    r.error("trial.data.classes", "applies to task classification only");
  if (auto n = r.integer("train_rows", 1, kMaxRows, true)) d.train_rows = *n;
  if (auto n = r.integer("validation_rows", 1, kMaxRows, true)) d.validation_rows = *n;
  if (auto n = r.integer("test_rows", 0, kMaxRows)) d.test_rows = *n;
  if (auto n = r.integer("features", 1, std::int64_t{1} << 24, true)) d.features = *n;
  r.unknown_keys("task, classes, train_rows, validation_rows, test_rows, features");
  out.data = d;
}

void parse_trial(const Json* j, const search::SearchSpace& space, TrialRecipe& out,
                 std::vector<FieldError>& errors) {
  if (!j) return;
  Reader r(*j, "trial", errors);
  auto kind = r.one_of("kind", {"command", "synthetic", "torch"}, true);
  if (auto t = r.number_in("timeout_s", 0, 30 * 24 * 3600.0)) out.timeout_s = *t;
  if (auto a = r.integer("max_attempts", 1, 100)) out.max_attempts = static_cast<int>(*a);
  if (const Json* res = r.object("resources")) {
    Reader rr(*res, "trial.resources", errors);
    if (auto g = rr.integer("gpus", 0, 64)) out.gpus = static_cast<int>(*g);
    if (auto m = rr.number_in("memory_gb", 0.0625, 65536)) out.memory_gb = *m;
    if (auto m = rr.number_in("gpu_memory_gb", 0.0625, 65536)) out.gpu_memory_gb = *m;
    if (auto m = rr.string("gpu_model")) {
      if (m->empty() || m->size() > 100)
        rr.error("trial.resources.gpu_model", "expected 1 to 100 characters");
      else
        out.gpu_model = *m;
    }
    if (auto c = rr.number_in("cpus", 0.01, 4096)) out.cpus = *c;
    if (const Json* labels = rr.array("labels")) {
      if (labels->size() > 32) rr.error("trial.resources.labels", "at most 32 labels");
      for (std::size_t i = 0; i < labels->size() && i < 32; ++i) {
        std::string p = Reader::item("trial.resources.labels", i);
        if (!(*labels)[i].is_string()) {
          rr.expected(p, "a string \"key\" or \"key=value\"", (*labels)[i]);
          continue;
        }
        auto label = parse_label((*labels)[i].get<std::string>());
        if (!label) {
          rr.error(p, label.error().message);
          continue;
        }
        out.labels.push_back((*labels)[i].get<std::string>());
      }
    }
    if ((out.gpu_memory_gb > 0 || !out.gpu_model.empty()) && out.gpus == 0)
      rr.error("trial.resources.gpus", "gpu_memory_gb and gpu_model need gpus of at least 1");
    rr.unknown_keys("gpus, memory_gb, gpu_memory_gb, gpu_model, cpus, labels");
  }
  if (const Json* dp = r.object("data_parallel")) {
    Reader rd(*dp, "trial.data_parallel", errors);
    if (auto k = rd.integer("replicas", 1, 64)) out.data_parallel.replicas = static_cast<int>(*k);
    if (auto m = rd.one_of("mode", {"allreduce", "average"}))
      out.data_parallel.average = *m == "average";
    if (auto h = rd.integer("average_every", 1, 1'000'000))
      out.data_parallel.average_every = static_cast<int>(*h);
    if (auto b = rd.number_in("bucket_mb", 0.001, 1024)) out.data_parallel.bucket_mb = *b;
    if (auto t = rd.one_of("transport", {"auto", "shm", "gloo"})) out.data_parallel.transport = *t;
    if (auto m = rd.integer("per_host", 1, 64)) {
      out.data_parallel.per_host = static_cast<int>(*m);
      if (out.data_parallel.replicas % out.data_parallel.per_host != 0)
        rd.error(rd.at("per_host"),
                 fmt::format("{} does not divide replicas ({}): every worker of the "
                             "trial runs the same number of ranks",
                             *m, out.data_parallel.replicas));
    }
    rd.unknown_keys("replicas, mode, average_every, bucket_mb, transport, per_host");
  }
  if (!kind) {
    for (auto it = j->begin(); it != j->end(); ++it) r.mark_seen(it.key());
    return;
  }
  if (*kind == "command") {
    out.kind = TrialKind::kCommand;
    const Json* argv = r.array("argv", true);
    if (argv && argv->empty()) {
      r.error("trial.argv", "must not be empty");
    } else if (argv) {
      for (std::size_t i = 0; i < argv->size(); ++i) {
        std::string p = Reader::item("trial.argv", i);
        if (!(*argv)[i].is_string()) {
          r.expected(p, "a string", (*argv)[i]);
          continue;
        }
        out.command.argv.push_back((*argv)[i].get<std::string>());
        check_placeholders(out.command.argv.back(), p, space, errors);
      }
      if (!out.command.argv.empty() && out.command.argv[0].empty())
        r.error("trial.argv[0]", "the program must not be empty");
    }
    if (const Json* env = r.object("env")) {
      for (auto it = env->begin(); it != env->end(); ++it) {
        if (!it.value().is_string()) {
          r.expected("trial.env." + it.key(), "a string", it.value());
          continue;
        }
        if (it.key().empty() || it.key().find('=') != std::string::npos)
          r.error("trial.env." + it.key(), "invalid environment variable name");
        out.command.env.emplace_back(it.key(), it.value().get<std::string>());
      }
    }
    if (auto cwd = r.string("cwd")) out.command.cwd = *cwd;
    if (const Json* data = r.object("data")) parse_command_data(*data, out.command, errors);
    r.unknown_keys("kind, argv, env, cwd, data, timeout_s, max_attempts, resources, data_parallel");
  } else if (*kind == "synthetic") {
    out.kind = TrialKind::kSynthetic;
    auto fn = r.one_of("function",
                       {"noop", "branin", "hartmann6", "rosenbrock", "ackley", "zdt1", "zdt2",
                        "dtlz2", "noisy_quadratic"},
                       true);
    if (fn && *fn == "noisy_quadratic") {
      out.synthetic.function = *fn;
      const auto* p = space.find("lr");
      if (!p || p->type == search::ParamType::kCategorical || p->when)
        r.error("trial.function",
                "noisy_quadratic trains at the numeric parameter lr; \"lr\" is missing, "
                "categorical or conditional");
    } else if (fn) {
      out.synthetic.function = *fn;
      auto several = search::multi_objective_info(*fn);
      int dims = several ? several->dims : search::test_function_dims(*fn);
      for (int i = 1; i <= dims; ++i) {
        std::string x = "x" + std::to_string(i);
        const auto* p = space.find(x);
        if (!p || p->type == search::ParamType::kCategorical || p->when)
          r.error("trial.function",
                  fmt::format("{} reads the numeric parameters x1..x{}; \"{}\" is missing, "
                              "categorical or conditional",
                              *fn, dims, x));
      }
    }
    out.synthetic.sleep_s = r.number_in("sleep_s", 0, 24 * 3600.0).value_or(0);
    out.synthetic.noise = r.number_in("noise", 0, 1e12).value_or(0);
    if (auto s = r.integer("steps", 0, 100'000)) out.synthetic.steps = *s;
    if (auto c = r.one_of("curve", {"linear", "crossing"}))
      out.synthetic.crossing = *c == "crossing";
    r.unknown_keys(
        "kind, function, sleep_s, noise, steps, curve, timeout_s, max_attempts, resources, "
        "data_parallel");
  } else {
    out.kind = TrialKind::kTorch;
    std::vector<std::string> consumed;
    parse_torch_recipe(*j, "trial", out.torch, consumed, errors);
    for (const auto& k : consumed) r.mark_seen(k);
    for (const auto& ref : torch_recipe_param_refs(out.torch))
      if (!space.find(ref)) r.error("trial", fmt::format("\"{{{}}}\" names no parameter", ref));
    r.unknown_keys();
  }
}

Objective parse_objective(const Json& j, const std::string& path, std::vector<FieldError>& errors) {
  Objective out;
  Reader ro(j, path, errors);
  if (auto m = ro.string("metric", true)) {
    out.metric = *m;
    if (m->empty()) ro.error(ro.at("metric"), "must not be empty");
  }
  if (auto mode = ro.one_of("mode", {"min", "max"})) out.maximize = *mode == "max";
  out.reference = ro.number("reference");
  ro.unknown_keys("metric, mode, reference");
  return out;
}

// `objective: {metric, mode}` or `objectives: [{metric, mode}, ...]` (2 to 8,
// distinct metrics), one of the two.
void parse_objectives(Reader& r, SweepSpec& spec, std::vector<FieldError>& errors) {
  const bool one = r.get("objective") != nullptr, several = r.get("objectives") != nullptr;
  if (one && several) {
    r.error("objectives", "give either objective (one) or objectives (several), not both");
    return;
  }
  if (!several) {
    if (const Json* obj = r.object("objective", true)) {
      spec.objective = parse_objective(*obj, "objective", errors);
      spec.objectives = {spec.objective};
    }
    return;
  }
  const Json* list = r.array("objectives", true);
  if (!list) return;
  constexpr std::size_t kMaxObjectives = 8;
  if (list->size() < 2 || list->size() > kMaxObjectives) {
    r.error("objectives", fmt::format("expected 2 to {} objectives, got {} (one objective: use "
                                      "objective)",
                                      kMaxObjectives, list->size()));
    return;
  }
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::string at = Reader::item("objectives", i);
    if (!(*list)[i].is_object()) {
      r.expected(at, "an object {metric, mode}", (*list)[i]);
      continue;
    }
    Objective o = parse_objective((*list)[i], at, errors);
    for (const auto& earlier : spec.objectives)
      if (!o.metric.empty() && earlier.metric == o.metric)
        r.error(at + ".metric", "\"" + o.metric + "\" is already an objective");
    spec.objectives.push_back(std::move(o));
  }
  if (!spec.objectives.empty()) spec.objective = spec.objectives.front();
}

// `constraints: [{metric, max, min}, ...]` (1 to 16 distinct metrics, each
// with max or min or both, min <= max).
void parse_constraints(Reader& r, SweepSpec& spec, std::vector<FieldError>& errors) {
  const Json* list = r.array("constraints");
  if (!list) return;
  constexpr std::size_t kMaxConstraints = 16;
  if (list->empty() || list->size() > kMaxConstraints) {
    r.error("constraints",
            fmt::format("expected 1 to {} constraints, got {}", kMaxConstraints, list->size()));
    return;
  }
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::string at = Reader::item("constraints", i);
    if (!(*list)[i].is_object()) {
      r.expected(at, "an object {metric, max, min}", (*list)[i]);
      continue;
    }
    Reader rc((*list)[i], at, errors);
    MetricBound b;
    if (auto m = rc.string("metric", true)) {
      b.metric = *m;
      if (m->empty()) rc.error(rc.at("metric"), "must not be empty");
    }
    b.max = rc.number("max");
    b.min = rc.number("min");
    if (!b.max && !b.min && !rc.get("max") && !rc.get("min"))
      rc.error(at, "needs max (the metric must stay at or below it) or min (at or above), or both");
    if (b.max && b.min && *b.min > *b.max)
      rc.error(at, fmt::format("min {} is above max {}: no value keeps both", *b.min, *b.max));
    for (const auto& earlier : spec.constraints)
      if (!b.metric.empty() && earlier.metric == b.metric)
        rc.error(rc.at("metric"),
                 "\"" + b.metric + "\" is already constrained (give max and min in one entry)");
    rc.unknown_keys("metric, max, min");
    spec.constraints.push_back(std::move(b));
  }
}

// What several objectives rule out: pruning on one objective's curve, a warm
// start from the best by one, an ensemble of the best by one.
void check_several_objectives(const SweepSpec& spec, std::vector<FieldError>& errors) {
  if (spec.objectives.size() < 2) return;
  if (spec.early_stopping)
    errors.push_back({"early_stopping",
                      "prunes on one objective's curve; not available with several objectives"});
  if (!spec.search.warm_start_sweeps.empty())
    errors.push_back({"search.warm_start",
                      "seeds from the best trials by one objective; not available with several "
                      "objectives"});
  if (spec.ensemble)
    errors.push_back(
        {"ensemble", "ranks trials by one objective; not available with several objectives"});
}

// `resource` of search.multi_fidelity and search.pbt: epochs, steps, subset or
// the user's own name.
std::optional<std::string> read_resource(Reader& r) {
  auto res = r.string("resource", true);
  if (!res) return std::nullopt;
  const bool name_ok =
      !res->empty() && res->size() <= 64 && !std::isdigit(static_cast<unsigned char>((*res)[0])) &&
      res->find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") ==
          std::string::npos;
  if (!name_ok) {
    r.error(r.at("resource"),
            fmt::format("expected epochs, steps, subset or a name of letters, digits and _ "
                        "(passed to command trials as HPO_BUDGET), got \"{}\"",
                        res->substr(0, 64)));
    return std::nullopt;
  }
  return res;
}

bool builtin_resource(const std::string& res) {
  return res == "epochs" || res == "steps" || res == "subset";
}

// search.pbt (the resource and the parameters it mutates are checked once the
// trial and the space are read: check_pbt).
void parse_pbt(const Json& j, const std::string& path, SearchConfig& out,
               std::vector<FieldError>& errors) {
  Reader r(j, path, errors);
  search::PbtConfig c;
  if (auto n = r.integer("population", 2, 1000, true)) c.population = static_cast<int>(*n);
  if (auto res = read_resource(r)) c.resource = *res;
  auto interval = r.number("interval", true);
  auto hi = r.number("max", true);
  if (auto q = r.number("quantile")) {
    if (!(*q > 0 && *q <= 0.5))
      r.error(r.at("quantile"), fmt::format("expected a number in (0, 0.5], got {}", *q));
    else
      c.quantile = *q;
  }
  if (auto p = r.number("resample_probability")) {
    if (!(*p >= 0 && *p <= 1))
      r.error(r.at("resample_probability"), fmt::format("expected a number in [0, 1], got {}", *p));
    else
      c.resample_probability = *p;
  }
  if (const Json* m = r.array("mutations")) {
    const std::string at = r.at("mutations");
    if (m->empty()) r.error(at, "expected the names of the parameters PBT may change, got []");
    for (std::size_t i = 0; i < m->size() && i < 1000; ++i) {
      if (!(*m)[i].is_string()) {
        r.expected(Reader::item(at, i), "a parameter name", (*m)[i]);
        continue;
      }
      c.mutable_params.push_back((*m)[i].get<std::string>());
    }
  }
  if (interval && hi) {
    const bool whole = builtin_resource(c.resource);
    if (*interval <= 0)
      r.error(r.at("interval"), fmt::format("must be above 0, got {}", *interval));
    else if (*hi < *interval)
      r.error(r.at("max"), fmt::format("must be at least interval ({}), got {}", *interval, *hi));
    else if (whole && (std::floor(*interval) != *interval || std::floor(*hi) != *hi || *hi > 1e9))
      r.error(path, fmt::format("{} is counted in whole numbers: interval and max must be "
                                "integers up to 1e9, got {} and {}",
                                c.resource, *interval, *hi));
    else if (*hi / *interval > 10'000)
      r.error(path,
              fmt::format("max / interval = {} makes more than 10,000 intervals", *hi / *interval));
    c.interval = *interval;
    c.max_budget = *hi;
  }
  r.unknown_keys("population, resource, interval, max, quantile, resample_probability, mutations");
  c.seed = out.sampler.seed;
  if (r.ok()) out.pbt = c;
}

// search.multi_fidelity (what the resource may be for the trial's kind is
// checked once the trial is read: check_fidelity).
void parse_fidelity(const Json& j, const std::string& path, SearchConfig& out,
                    std::vector<FieldError>& errors) {
  Reader r(j, path, errors);
  search::FidelityConfig c;
  if (auto t = r.one_of("type", {"asha", "hyperband"}, true))
    c.schedule = *t == "asha" ? search::Schedule::kAsha : search::Schedule::kHyperband;
  if (auto res = read_resource(r)) c.resource = *res;
  auto lo = r.number("min", true);
  auto hi = r.number("max", true);
  if (auto f = r.number("reduction_factor")) {
    if (*f <= 1 || *f > 100)
      r.error(r.at("reduction_factor"),
              fmt::format("expected a number above 1 and at most 100, got {}", *f));
    else
      c.reduction_factor = *f;
  }
  const bool builtin = builtin_resource(c.resource);
  if (lo && hi) {
    c.integer = builtin || (std::floor(*lo) == *lo && std::floor(*hi) == *hi);
    if (*lo <= 0)
      r.error(r.at("min"), fmt::format("must be above 0, got {}", *lo));
    else if (*hi <= *lo)
      r.error(r.at("max"), fmt::format("must be above min ({}), got {}", *lo, *hi));
    else if (builtin && (std::floor(*lo) != *lo || std::floor(*hi) != *hi || *hi > 1e9))
      r.error(path, fmt::format("{} is counted in whole numbers: min and max must be integers up "
                                "to 1e9, got {} and {}",
                                c.resource, *lo, *hi));
    else if (std::log(*hi / *lo) / std::log(c.reduction_factor) > 30)
      r.error(path, fmt::format("max / min = {} makes more than 30 rungs at reduction_factor {}",
                                *hi / *lo, c.reduction_factor));
    c.min_budget = *lo;
    c.max_budget = *hi;
  }
  r.unknown_keys("type, resource, min, max, reduction_factor");
  if (r.ok()) out.fidelity = c;
}

// What a schedule's resource means for the trial's kind.
void check_resource(const std::string& res, const std::string& at, TrialKind kind,
                    std::vector<FieldError>& errors) {
  if ((res == "epochs" || res == "subset") && kind != TrialKind::kTorch)
    errors.push_back({at, "\"" + res +
                              "\" is a budget of the built-in trainer (trial kind torch); a "
                              "command trial names its own resource (it gets HPO_BUDGET)"});
  else if (res == "steps" && kind != TrialKind::kSynthetic)
    errors.push_back({at,
                      "\"steps\" is the budget of synthetic trials; kind torch takes epochs "
                      "or subset, a command trial names its own resource"});
  else if (res != "epochs" && res != "subset" && res != "steps" && kind != TrialKind::kCommand)
    errors.push_back({at, "\"" + res +
                              "\": a resource of your own applies to command trials (kind "
                              "torch: epochs or subset; synthetic: steps)"});
}

void check_pbt(const SweepSpec& spec, std::vector<FieldError>& errors) {
  if (!spec.search.pbt) return;
  const auto& pbt = *spec.search.pbt;
  check_resource(pbt.resource, "search.pbt.resource", spec.trial.kind, errors);
  if (pbt.resource == "subset")
    errors.push_back({"search.pbt.resource",
                      "PBT goes on from checkpoints; a budget of training rows retrains (torch: "
                      "use epochs)"});
  for (std::size_t i = 0; i < pbt.mutable_params.size(); ++i)
    if (!spec.space.find(pbt.mutable_params[i]))
      errors.push_back({"search.pbt.mutations[" + std::to_string(i) + "]",
                        "\"" + pbt.mutable_params[i] + "\" is not a parameter of the space"});
  if (spec.search.fidelity)
    errors.push_back({"search.pbt", "and search.multi_fidelity both schedule the trials; use one"});
  if (spec.early_stopping)
    errors.push_back({"early_stopping", "search.pbt replaces the bottom members itself; drop one"});
  using search::Algorithm;
  const Algorithm a = spec.search.sampler.algorithm;
  if (a != Algorithm::kRandom && a != Algorithm::kSobol)
    errors.push_back({"search.algorithm",
                      "search.pbt draws its first population with random or sobol; later "
                      "members come from exploit and explore"});
  if (spec.search.max_trials < pbt.population)
    errors.push_back(
        {"search.max_trials", fmt::format("must be at least search.pbt.population ({}), got {}",
                                          pbt.population, spec.search.max_trials)});
  if (spec.objectives.size() > 1)
    errors.push_back({"search.pbt", "ranks members by one objective; not available with several"});
}

// What a multi-fidelity schedule cannot be combined with.
void check_fidelity(const SweepSpec& spec, std::vector<FieldError>& errors) {
  if (!spec.search.fidelity) return;
  check_resource(spec.search.fidelity->resource, "search.multi_fidelity.resource", spec.trial.kind,
                 errors);
  if (spec.early_stopping)
    errors.push_back({"early_stopping",
                      "search.multi_fidelity stops and promotes trials itself; drop one of them"});
  using search::Algorithm;
  const Algorithm a = spec.search.sampler.algorithm;
  if (a == Algorithm::kGrid || a == Algorithm::kNsga2)
    errors.push_back({"search.algorithm",
                      "search.multi_fidelity takes new configurations from random, sobol, tpe "
                      "or bayesian (tpe or bayesian: BOHB)"});
  if (spec.objectives.size() > 1)
    errors.push_back(
        {"search.multi_fidelity", "promotes by one objective; not available with several"});
}

void parse_search(const Json* j, const search::SearchSpace& space, SearchConfig& out,
                  std::vector<FieldError>& errors) {
  if (!j) return;
  Reader r(*j, "search", errors);
  auto algo = r.one_of("algorithm", {"grid", "random", "sobol", "bayesian", "tpe", "nsga2"});
  using search::Algorithm;
  if (algo) {
    static const std::map<std::string, Algorithm> kAlgos = {
        {"grid", Algorithm::kGrid},   {"random", Algorithm::kRandom},
        {"sobol", Algorithm::kSobol}, {"bayesian", Algorithm::kBayesian},
        {"tpe", Algorithm::kTpe},     {"nsga2", Algorithm::kNsga2}};
    out.sampler.algorithm = kAlgos.at(*algo);
  }
  if (auto n = r.integer("max_trials", 1, kMaxTrials, true)) out.max_trials = *n;
  if (auto c = r.integer("max_concurrent", 1, kMaxConcurrent)) out.max_concurrent = *c;
  if (auto s = r.integer("seed", 0, std::int64_t{1} << 53))
    out.sampler.seed = static_cast<std::uint64_t>(*s);
  if (auto n = r.integer("n_initial", 0, 100'000)) out.sampler.n_initial = static_cast<int>(*n);
  if (auto n = r.integer("population", 2, 10'000)) {
    out.sampler.population = static_cast<int>(*n);
    if (out.sampler.algorithm != Algorithm::kNsga2)
      r.error(r.at("population"), "applies to algorithm nsga2 only");
  }
  if (const Json* w = r.object("warm_start")) {
    Reader wr(*w, r.at("warm_start"), errors);
    if (const Json* ids = wr.array("sweeps", true)) {
      const std::string path = wr.at("sweeps");
      if (ids->empty() || ids->size() > 20)
        wr.error(path, fmt::format("expected 1 to 20 sweep ids, got {}", ids->size()));
      for (std::size_t i = 0; i < ids->size() && i < 20; ++i) {
        const Json& id = (*ids)[i];
        const std::string at = Reader::item(path, i);
        const bool ok = id.is_string() && !id.get<std::string>().empty() &&
                        id.get<std::string>().size() <= 64 &&
                        id.get<std::string>().find_first_not_of(
                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") ==
                            std::string::npos;
        if (!ok) {
          wr.expected(at, "a sweep id", id);
          continue;
        }
        if (std::find(out.warm_start_sweeps.begin(), out.warm_start_sweeps.end(),
                      id.get<std::string>()) != out.warm_start_sweeps.end())
          wr.error(at, "\"" + id.get<std::string>() + "\" is named twice");
        else
          out.warm_start_sweeps.push_back(id.get<std::string>());
      }
    }
    wr.unknown_keys("sweeps");
    if (out.sampler.algorithm != Algorithm::kBayesian && out.sampler.algorithm != Algorithm::kTpe &&
        !out.warm_start_sweeps.empty())
      errors.push_back({r.at("warm_start"),
                        "only the bayesian and tpe algorithms take a warm start (it replaces their "
                        "initial design); grid, random and sobol use no history"});
  }
  if (const Json* f = r.object("multi_fidelity"))
    parse_fidelity(*f, r.at("multi_fidelity"), out, errors);
  if (const Json* p = r.object("pbt")) parse_pbt(*p, r.at("pbt"), out, errors);
  r.unknown_keys(
      "algorithm, max_trials, max_concurrent, seed, n_initial, population, warm_start, "
      "multi_fidelity, pbt");
  if (out.sampler.algorithm == Algorithm::kGrid) {
    for (const auto& p : space.params)
      if (p.type == search::ParamType::kFloat && !p.step)
        errors.push_back(
            {"parameters." + p.name + ".step",
             "grid search needs a step for a float parameter (or make it categorical)"});
  }
}

void parse_early_stopping(const Json* j, std::optional<search::PrunerConfig>& out,
                          std::vector<FieldError>& errors) {
  if (!j) return;
  Reader r(*j, "early_stopping", errors);
  auto type = r.one_of("type", {"median", "asha"}, true);
  search::PrunerConfig c;
  if (type && *type == "median") {
    c.type = search::PrunerType::kMedian;
    if (auto w = r.integer("warmup_steps", 0, 1'000'000)) c.warmup_steps = *w;
    if (auto m = r.integer("min_trials", 1, 1'000'000)) c.min_trials = *m;
    r.unknown_keys("type, warmup_steps, min_trials");
  } else if (type) {
    c.type = search::PrunerType::kAsha;
    if (auto g = r.integer("grace_period", 1, 1'000'000)) c.grace_period = *g;
    if (auto f = r.number("reduction_factor")) {
      if (*f <= 1)
        r.error("early_stopping.reduction_factor", fmt::format("must be > 1, got {}", *f));
      else
        c.reduction_factor = *f;
    }
    if (auto m = r.integer("max_steps", 0, 1'000'000'000)) c.max_steps = *m;
    r.unknown_keys("type, grace_period, reduction_factor, max_steps");
  } else {
    return;
  }
  out = c;
}

}  // namespace

int TrialRecipe::slots() const {
  return std::max({1, gpus, data_parallel.replicas});
}

Result<SweepSpec> parse_spec(std::string_view json_text) {
  if (auto st = check_json_depth(json_text, ""); !st) return st.error();
  Json root;
  try {
    root = Json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {  // syntax errors and number overflow
    return Error::invalid("", fmt::format("the spec is not valid JSON: {}", e.what()));
  }
  if (!root.is_object()) return Error::invalid("", "the spec must be a JSON object");

  SweepSpec spec;
  spec.source = std::string(json_text);
  std::vector<FieldError> errors;
  Reader r(root, "", errors);

  if (auto name = r.string("name", true)) {
    spec.name = *name;
    if (name->empty() || name->size() > kMaxNameLength)
      r.error("name", fmt::format("must be 1 to {} characters", kMaxNameLength));
  }
  r.string("description");
  parse_objectives(r, spec, errors);
  parse_constraints(r, spec, errors);
  if (const Json* params = r.object("parameters", true)) {
    for (auto it = params->begin(); it != params->end(); ++it) {
      search::ParamSpec p;
      parse_parameter(it.key(), it.value(), "parameters." + it.key(), p, errors);
      spec.space.params.push_back(std::move(p));
    }
    order_parameters(spec.space.params, errors);
  }
  parse_search(r.object("search", true), spec.space, spec.search, errors);
  parse_early_stopping(r.object("early_stopping"), spec.early_stopping, errors);
  parse_trial(r.object("trial", true), spec.space, spec.trial, errors);
  if (const Json* ens = r.get("ensemble")) {
    EnsembleRecipe recipe;
    parse_ensemble_recipe(nlohmann::json::parse(ens->dump()), "ensemble", recipe, errors);
    // Refused now rather than after the whole search: the stage combines the
    // predictions that the built-in trainer, or a command trial told the shape
    // of its data, stores.
    if (spec.trial.kind == TrialKind::kSynthetic)
      errors.push_back({"ensemble",
                        "needs trials that predict: kind torch, or kind command with "
                        "trial.data (synthetic trials store no predictions)"});
    else if (spec.trial.kind == TrialKind::kCommand && !spec.trial.command.data)
      errors.push_back({"ensemble",
                        "a command trial's ensemble needs trial.data: the task, classes, "
                        "train_rows, validation_rows and features its prediction files "
                        "(HPO_OUTPUT_DIR) are checked against"});
    if (spec.trial.kind != TrialKind::kTorch) {
      for (const char* key : {"epochs", "subset"})
        if (ens->contains(key))
          errors.push_back(
              {std::string("ensemble.") + key, "applies to trials of kind torch only"});
    }
    spec.ensemble = std::move(recipe);
  }
  if (spec.trial.data_parallel.replicas > 1 && spec.trial.kind != TrialKind::kTorch)
    errors.push_back({"trial.data_parallel",
                      "applies to trials of kind torch only (a command "
                      "trial starts its own processes)"});
  check_several_objectives(spec, errors);
  check_fidelity(spec, errors);
  check_pbt(spec, errors);
  r.unknown_keys(
      "name, description, objective, objectives, constraints, parameters, search, early_stopping, "
      "trial, ensemble");

  if (!errors.empty()) {
    Error e{ErrorCode::kInvalidArgument, "", std::move(errors)};
    e.message = fmt::format("invalid sweep spec: {} problem{}: ", e.fields.size(),
                            e.fields.size() == 1 ? "" : "s");
    for (std::size_t i = 0; i < e.fields.size() && i < 5; ++i)
      e.message += (i ? "; " : "") + (e.fields[i].path.empty() ? "" : e.fields[i].path + ": ") +
                   e.fields[i].message;
    return e;
  }
  return spec;
}

std::vector<std::string> render_argv(const std::vector<std::string>& argv,
                                     const search::Params& params) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  for (const auto& arg : argv) {
    std::string s;
    for (std::size_t i = 0; i < arg.size(); ++i) {
      char c = arg[i];
      if ((c == '{' || c == '}') && i + 1 < arg.size() && arg[i + 1] == c) {
        s += c;
        ++i;
      } else if (c == '{') {
        auto close = arg.find('}', i);
        if (close == std::string::npos) {
          s += arg.substr(i);
          break;
        }
        auto it = params.find(arg.substr(i + 1, close - i - 1));
        if (it != params.end()) s += search::to_string(it->second);
        i = close;
      } else {
        s += c;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace hpo::trials
