// Manifest codec. Reading goes through the field reader (trials/json_fields.hpp): it
// checks every known field's type and reports the first problem with its JSON path;
// unknown keys are skipped (forward compatibility).
// Parameters and bagging specs reuse their own codecs (trials/spec/spec.hpp,
// bagging_json.hpp) so there is one JSON form for each.
#include "ensemble/manifest.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ensemble/bagging_json.hpp"
#include "ensemble/decision.hpp"
#include "ensemble/stacking.hpp"
#include "trials/json_fields.hpp"
#include "trials/json_limits.hpp"
#include "trials/spec/spec.hpp"

namespace hpo::ensemble {

nlohmann::json scores_to_json(const Scores& s) {
  nlohmann::json j = nlohmann::json::object();
  if (s.accuracy) j["accuracy"] = *s.accuracy;
  if (s.log_loss) j["log_loss"] = *s.log_loss;
  if (s.mse) j["mse"] = *s.mse;
  if (s.rmse) j["rmse"] = *s.rmse;
  return j;
}

namespace {

using nlohmann::json;

json summary_to_json(const MetricSummary& m) {
  return {{"validation", scores_to_json(m.validation)}, {"test", scores_to_json(m.test)}};
}

// The manifest's grammar: null is an absent key, 2.0 is not an integer.
constexpr trials::FieldRules kRules{.floats_as_integers = false};
constexpr std::int64_t kMaxInt = std::numeric_limits<std::int64_t>::max();

// A reader of `obj`, the object at `key` in `r`'s; when that is absent or not an object
// (nullptr, already reported), an empty one, so every field keeps its default.
trials::FieldReader child(trials::FieldReader& r, const json* obj, const char* key,
                          std::vector<FieldError>& errors) {
  static const json kEmpty = json::object();
  return trials::FieldReader(obj ? *obj : kEmpty, r.at(key), errors, kRules);
}

Scores read_scores(trials::FieldReader& parent, const char* key, std::vector<FieldError>& errors) {
  const json* obj = parent.object(key);
  auto r = child(parent, obj, key, errors);
  Scores s;
  s.accuracy = r.number("accuracy");
  s.log_loss = r.number("log_loss");
  s.mse = r.number("mse");
  s.rmse = r.number("rmse");
  return s;
}

// {"validation": scores, "test": scores} in the object `r` reads.
MetricSummary read_summary(trials::FieldReader& r, std::vector<FieldError>& errors) {
  MetricSummary m;
  m.validation = read_scores(r, "validation", errors);
  m.test = read_scores(r, "test", errors);
  return m;
}

void read_member(const json& j, const std::string& path, ManifestMember& m, bool stacking,
                 std::vector<FieldError>& errors) {
  trials::FieldReader r(j, path, errors, kRules);
  if (!j.is_object()) return r.expected(path, "an object", j);
  if (auto id = r.string("trial_id", true)) m.trial_id = *id;
  if (auto kind = r.one_of("kind", {"member", "trial"})) m.kind = *kind;
  if (const json* p = r.object("params")) {
    auto params = trials::params_from_json(p->dump());
    if (params.ok())
      m.params = std::move(params).value();
    else
      r.error(r.at("params") + params.error().fields.at(0).path.substr(6),
              params.error().fields.at(0).message);
  }
  if (const json* b = r.object("bagging")) {
    auto spec = trials::member_from_json(*b, r.at("bagging"));
    if (spec.ok())
      m.bagging = *spec;
    else
      r.error(spec.error().fields.at(0).path, spec.error().fields.at(0).message);
  }
  if (const json* f = r.get("features")) {
    bool good = f->is_array();
    for (std::size_t i = 0; good && i < f->size(); ++i) {
      auto index = trials::json_int64((*f)[i]);
      good = (*f)[i].is_number_integer() && index && *index >= 0;
      if (good) m.features.push_back(*index);
    }
    if (!good) r.expected(r.at("features"), "an array of feature indices >= 0", *f);
  }
  if (auto weight = r.number("weight", true)) {
    if (*weight >= 0 || stacking)
      m.weight = *weight;
    else
      r.error(r.at("weight"), fmt::format("must be >= 0, got {}", *weight));
  }
  if (auto artifact = r.string("artifact")) m.artifact = *artifact;
  const json* metrics = r.object("metrics");
  auto rm = child(r, metrics, "metrics", errors);
  m.metrics = read_summary(rm, errors);
}

}  // namespace

std::string manifest_to_json(const EnsembleManifest& manifest) {
  json members = json::array();
  for (const auto& m : manifest.members) {
    json jm{{"trial_id", m.trial_id},
            {"kind", m.kind},
            {"params", json::parse(trials::params_to_json(m.params))},
            {"features", m.features},
            {"weight", m.weight},
            {"artifact", m.artifact},
            {"metrics", summary_to_json(m.metrics)}};
    if (m.bagging) jm["bagging"] = trials::member_json(*m.bagging);
    members.push_back(std::move(jm));
  }
  json j{
      {"version", manifest.version},
      {"sweep_id", manifest.sweep_id},
      {"task", manifest.task == Targets::Task::kClassification ? "classification" : "regression"},
      {"n_features", manifest.n_features},
      {"n_outputs", manifest.n_outputs},
      {"combine", trials::to_string(manifest.combine)},
      {"method", manifest.method},
      {"members", std::move(members)},
      {"ensemble", summary_to_json(manifest.ensemble_metrics)},
      {"best_single", summary_to_json(manifest.best_single_metrics)}};
  j["best_single"]["trial_id"] = manifest.best_single_trial_id;
  if (manifest.method == candidate_name::kStacking)
    j["stacking"] = {{"intercept", manifest.stacking_intercept}};
  if (manifest.oob)
    j["oob"] = {{"rows_total", manifest.oob->rows_total},
                {"rows_covered", manifest.oob->rows_covered},
                {"scores", scores_to_json(manifest.oob->scores)}};
  return j.dump(2);
}

Result<EnsembleManifest> manifest_from_json(std::string_view json_text) {
  json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Error::invalid("manifest", "expected a JSON object");
  // Every field is read, each problem recorded; the caller gets the first.
  std::vector<FieldError> errors;
  trials::FieldReader r(j, "manifest", errors, kRules);
  EnsembleManifest m;
  auto version = r.integer("version", 0, kMaxInt, true);
  if (version && *version != kManifestVersion)
    return Error::invalid("manifest.version", "expected " + std::to_string(kManifestVersion) +
                                                  ", got " + std::to_string(*version));
  if (auto id = r.string("sweep_id")) m.sweep_id = *id;
  if (auto task = r.one_of("task", {"classification", "regression"}))
    m.task = *task == "regression" ? Targets::Task::kRegression : Targets::Task::kClassification;
  if (auto n = r.integer("n_features", 0, kMaxInt, true)) m.n_features = *n;
  if (auto n = r.integer("n_outputs", 0, kMaxInt, true)) m.n_outputs = *n;
  if (auto c = r.one_of("combine", trials::combine_names(), true))
    m.combine = *trials::parse_combine(*c);
  // Absent in manifests written before the stage chose among candidates: bagged.
  // (The names are string literals: data() ends in a NUL.)
  if (auto method =
          r.one_of("method", {candidate_name::kBestSingle.data(), candidate_name::kBagged.data(),
                              candidate_name::kSelection.data(), candidate_name::kStacking.data()}))
    m.method = *method;
  const bool stacking = m.method == candidate_name::kStacking;
  if (stacking) {
    const json* st = r.object("stacking", true);
    auto rs = child(r, st, "stacking", errors);
    if (const json* b = rs.array("intercept", true)) {
      for (const auto& v : *b)
        if (v.is_number() && std::isfinite(v.get<double>()))
          m.stacking_intercept.push_back(v.get<double>());
        else
          rs.expected(rs.at("intercept"), "an array of numbers", *b);
    }
  }
  const json* members = r.array("members", true);
  if (members && members->empty())
    r.error(r.at("members"), "must not be empty");
  else if (members)
    for (std::size_t i = 0; i < members->size() && r.ok(); ++i)
      read_member((*members)[i], trials::FieldReader::item(r.at("members"), i),
                  m.members.emplace_back(), stacking, errors);
  auto re = child(r, r.object("ensemble"), "ensemble", errors);
  m.ensemble_metrics = read_summary(re, errors);
  if (const json* best = r.object("best_single")) {
    auto rb = child(r, best, "best_single", errors);
    if (auto id = rb.string("trial_id")) m.best_single_trial_id = *id;
    m.best_single_metrics = read_summary(rb, errors);
  }
  if (const json* oob = r.object("oob")) {
    auto ro = child(r, oob, "oob", errors);
    OobSummary o;
    if (auto n = ro.integer("rows_total", 0, kMaxInt)) o.rows_total = *n;
    if (auto n = ro.integer("rows_covered", 0, kMaxInt)) o.rows_covered = *n;
    o.scores = read_scores(ro, "scores", errors);
    m.oob = o;
  }
  if (!errors.empty()) return Error::invalid(errors.front().path, errors.front().message);
  return m;
}

std::unique_ptr<Combiner> combiner_for(const EnsembleManifest& manifest) {
  using C = trials::EnsembleRecipe::Combine;
  if (manifest.method == candidate_name::kStacking) {
    StackingModel model;
    model.regression = manifest.task == Targets::Task::kRegression;
    for (const auto& m : manifest.members) model.coefficients.push_back(m.weight);
    model.intercept = manifest.stacking_intercept;
    return std::make_unique<StackingCombiner>(std::move(model));
  }
  if (manifest.combine == C::kHardVote || manifest.combine == C::kMedian) {
    trials::EnsembleRecipe recipe;
    recipe.combine = manifest.combine;
    return make_combiner(recipe);
  }
  std::vector<double> weights;
  for (const auto& m : manifest.members) weights.push_back(m.weight);
  return std::make_unique<WeightedMeanCombiner>(std::move(weights));
}

}  // namespace hpo::ensemble
