// The `search` and `early_stopping` sections of a sweep spec: the sampler and
// its budget, the warm start, the schedules (search.multi_fidelity, search.pbt)
// and the pruner; and what a schedule asks of the rest of the spec, checked once
// all of it is read (check_fidelity, check_pbt).
#include "trials/spec/spec_sections.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "trials/spec/spec_names.hpp"

namespace hpo::trials::spec_sections {

namespace {

constexpr std::int64_t kMaxTrials = 1'000'000;
constexpr std::int64_t kMaxConcurrent = 10'000;

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
  if (auto t = r.one_of("type", kScheduleNames.all(), true)) c.schedule = *kScheduleNames.parse(*t);
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

}  // namespace

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
  auto algo = r.one_of("algorithm", kAlgorithmNames.all());
  using search::Algorithm;
  if (algo) out.sampler.algorithm = *kAlgorithmNames.parse(*algo);
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
  auto type = r.one_of("type", kPrunerNames.all(), true);
  search::PrunerConfig c;
  if (type && kPrunerNames.parse(*type) == search::PrunerType::kMedian) {
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

}  // namespace hpo::trials::spec_sections
