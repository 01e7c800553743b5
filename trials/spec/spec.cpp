// Sweep spec parsing and validation.
//
// The spec is read with nlohmann::ordered_json so that the user's parameter
// order survives (grid order and the order of conditional parameters depend
// on it). Every object is read through a field reader (json_fields.hpp) that
// knows its JSON path, records each key it consumed and, at the end, reports the
// keys nobody asked for ("unknown key"). Errors are collected, never thrown: the
// caller gets all of them in one Error with one FieldError per problem.
//
// This file holds the top level (name, objectives, constraints, ensemble) and
// the checks across sections; each other section has a file of its own
// (spec_sections.hpp).
#include "trials/spec/spec.hpp"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "trials/json_fields.hpp"
#include "trials/json_limits.hpp"
#include "trials/spec/spec_sections.hpp"

namespace hpo::trials {

using SpecJson = spec_sections::Json;  // ordered: the user's key order
using spec_sections::Reader;

namespace {

constexpr std::size_t kMaxNameLength = 200;

Objective parse_objective(const SpecJson& j, const std::string& path,
                          std::vector<FieldError>& errors) {
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
    if (const SpecJson* obj = r.object("objective", true)) {
      spec.objective = parse_objective(*obj, "objective", errors);
      spec.objectives = {spec.objective};
    }
    return;
  }
  const SpecJson* list = r.array("objectives", true);
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
  const SpecJson* list = r.array("constraints");
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

}  // namespace

Result<SweepSpec> parse_spec(std::string_view json_text) {
  if (auto st = check_json_depth(json_text, ""); !st) return st.error();
  SpecJson root;
  try {
    root = SpecJson::parse(json_text);
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
  if (const SpecJson* params = r.object("parameters", true))
    spec_sections::parse_parameters(*params, spec.space, errors);
  spec_sections::parse_search(r.object("search", true), spec.space, spec.search, errors);
  spec_sections::parse_early_stopping(r.object("early_stopping"), spec.early_stopping, errors);
  spec_sections::parse_trial(r.object("trial", true), spec.space, spec.trial, errors);
  if (const SpecJson* ens = r.get("ensemble")) {
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
  spec_sections::check_fidelity(spec, errors);
  spec_sections::check_pbt(spec, errors);
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

}  // namespace hpo::trials
