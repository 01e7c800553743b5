// The `trial` section of a sweep spec: what runs a trial (kind command,
// synthetic or torch), its limits and resources, its data parallelism; and the
// recipe's own functions (the slots it takes, argv with its placeholders filled).
// Apart from the rest of the spec because each kind has its own grammar, checked
// against the parameters the space holds.
#include "trials/spec/spec_sections.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "search/test_functions.hpp"
#include "trials/placement.hpp"
#include "trials/spec/spec_names.hpp"

namespace hpo::trials {

namespace spec_sections {

namespace {

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

// trial.resources: what a worker must have to take an attempt (placement.hpp).
void parse_resources(const Json& res, TrialRecipe& out, std::vector<FieldError>& errors) {
  Reader rr(res, "trial.resources", errors);
  if (auto g = rr.number_in("gpus", 0, 64)) {
    // Whole devices, or a share of one in thousandths (trials/placement.hpp).
    const double thousandths = *g * kWholeShare;
    if (*g > 1 && *g != std::floor(*g))
      rr.error(rr.at("gpus"), fmt::format("{:g}: more than one GPU is a whole number of them; a "
                                          "share of one is below 1 (0.25, 0.5)",
                                          *g));
    else if (*g > 0 && *g < 1 &&
             (thousandths < 1 || std::fabs(thousandths - std::round(thousandths)) > 1e-6))
      rr.error(rr.at("gpus"), fmt::format("{:g}: a share of a GPU is counted in thousandths "
                                          "(0.001 to 0.999)",
                                          *g));
    else
      out.gpus = *g;
  }
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
    rr.error("trial.resources.gpus",
             "gpu_memory_gb and gpu_model need gpus: a share of one GPU (0.25) or whole GPUs (1, "
             "2, ...)");
  rr.unknown_keys("gpus, memory_gb, gpu_memory_gb, gpu_model, cpus, labels");
}

// trial.data_parallel: the ranks one attempt runs and how they exchange.
void parse_data_parallel(const Json& dp, TrialRecipe& out, std::vector<FieldError>& errors) {
  Reader rd(dp, "trial.data_parallel", errors);
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

// kind command: argv (its placeholders name parameters), env, cwd, data.
void parse_command(Reader& r, const search::SearchSpace& space, TrialRecipe& out,
                   std::vector<FieldError>& errors) {
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
  if (auto net = r.one_of("network", {"loopback", "host"}))
    out.command.host_network = *net == "host";
  r.unknown_keys(
      "kind, argv, env, cwd, data, network, timeout_s, max_attempts, resources, data_parallel");
}

// kind synthetic: a test function, whose inputs must be numeric parameters.
void parse_synthetic(Reader& r, const search::SearchSpace& space, TrialRecipe& out) {
  auto fn = r.one_of("function",
                     {"noop", "branin", "hartmann6", "rosenbrock", "ackley", "zdt1", "zdt2", "zdt3",
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
  if (auto c = r.one_of("curve", {"linear", "crossing"})) out.synthetic.crossing = *c == "crossing";
  r.unknown_keys(
      "kind, function, sleep_s, noise, steps, curve, timeout_s, max_attempts, resources, "
      "data_parallel");
}

// kind torch: the recipe reads its own keys (torch_recipe.hpp); what it
// references must be parameters.
void parse_torch(const Json& j, Reader& r, const search::SearchSpace& space, TrialRecipe& out,
                 std::vector<FieldError>& errors) {
  std::vector<std::string> consumed;
  parse_torch_recipe(j, "trial", out.torch, consumed, errors);
  for (const auto& k : consumed) r.mark_seen(k);
  for (const auto& ref : torch_recipe_param_refs(out.torch))
    if (!space.find(ref)) r.error("trial", fmt::format("\"{{{}}}\" names no parameter", ref));
  r.unknown_keys();
}

}  // namespace

void parse_trial(const Json* j, const search::SearchSpace& space, TrialRecipe& out,
                 std::vector<FieldError>& errors) {
  if (!j) return;
  Reader r(*j, "trial", errors);
  auto kind = r.one_of("kind", kTrialKindNames.all(), true);
  if (auto t = r.number_in("timeout_s", 0, 30 * 24 * 3600.0)) out.timeout_s = *t;
  if (auto a = r.integer("max_attempts", 1, 100)) out.max_attempts = static_cast<int>(*a);
  if (const Json* res = r.object("resources")) parse_resources(*res, out, errors);
  if (const Json* dp = r.object("data_parallel")) parse_data_parallel(*dp, out, errors);
  if (out.gpus > 0 && out.gpus < 1 && out.data_parallel.replicas > 1)
    r.error("trial.resources.gpus",
            fmt::format("{:g}: the ranks of a data-parallel trial (data_parallel.replicas {}) take "
                        "a whole GPU each; a share of one is for a trial of one rank",
                        out.gpus, out.data_parallel.replicas));
  if (!kind) {
    for (auto it = j->begin(); it != j->end(); ++it) r.mark_seen(it.key());
    return;
  }
  out.kind = *kTrialKindNames.parse(*kind);
  switch (out.kind) {
    case TrialKind::kCommand:
      parse_command(r, space, out, errors);
      break;
    case TrialKind::kSynthetic:
      parse_synthetic(r, space, out);
      break;
    case TrialKind::kTorch:
      parse_torch(*j, r, space, out, errors);
      break;
  }
}

}  // namespace spec_sections

int TrialRecipe::slots() const {
  return std::max({1, gpus >= 1 ? static_cast<int>(gpus) : 0, data_parallel.replicas});
}

namespace {

// One argv element rendered; nullopt when a placeholder names a parameter
// the trial does not have (an inactive conditional one).
std::optional<std::string> render_arg(const std::string& arg, const search::Params& params) {
  std::string s;
  for (std::size_t i = 0; i < arg.size(); ++i) {
    const char c = arg[i];
    if ((c == '{' || c == '}') && i + 1 < arg.size() && arg[i + 1] == c) {
      s += c;
      ++i;
    } else if (c == '{') {
      const auto close = arg.find('}', i);
      if (close == std::string::npos) {
        s += arg.substr(i);
        break;
      }
      const auto it = params.find(arg.substr(i + 1, close - i - 1));
      if (it == params.end()) return std::nullopt;
      s += search::to_string(it->second);
      i = close;
    } else {
      s += c;
    }
  }
  return s;
}

// A flag element that takes the next one as its value ("-m", "--momentum"):
// not a negative number ("-1", "-.5"), not a whole option ("--lr=0.1"), not
// "--", and no placeholder of its own.
bool plain_flag(const std::string& arg) {
  if (arg.size() < 2 || arg[0] != '-' || arg == "--") return false;
  if (std::isdigit(static_cast<unsigned char>(arg[1])) || arg[1] == '.') return false;
  return arg.find_first_of("={") == std::string::npos;
}

}  // namespace

std::vector<std::string> render_argv(const std::vector<std::string>& argv,
                                     const search::Params& params) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  for (std::size_t i = 0; i < argv.size(); ++i) {
    auto rendered = render_arg(argv[i], params);
    if (rendered) {
      out.push_back(std::move(*rendered));
      continue;
    }
    // An inactive parameter's element goes, and with a lone "{name}" the
    // flag just before it ("--momentum", "{momentum}"): the program sees
    // the option absent, as argparse's defaults expect.
    const bool lone = argv[i].front() == '{' && argv[i].back() == '}' &&
                      argv[i].find('{', 1) == std::string::npos;
    if (lone && i > 0 && plain_flag(argv[i - 1]) && !out.empty() && out.back() == argv[i - 1])
      out.pop_back();
  }
  return out;
}

}  // namespace hpo::trials
