// Manifest codec. Reading checks every known field's type and reports the first
// problem with its JSON path; unknown keys are skipped (forward compatibility).
// Parameters and bagging specs reuse their own codecs (trials/spec.hpp,
// bagging_json.hpp) so there is one JSON form for each.
#include "ensemble/manifest.hpp"

#include <nlohmann/json.hpp>

#include "ensemble/bagging_json.hpp"
#include "trials/spec.hpp"

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

// Reads typed fields of one JSON object; the first problem is kept with its path.
class Reader {
 public:
  explicit Reader(std::optional<Error>& error) : error_(error) {}

  bool fail(const std::string& path, const std::string& message) {
    if (!error_) error_ = Error::invalid(path, message);
    return false;
  }
  bool ok() const { return !error_; }

  // The member `key` of `obj`, or nullptr when absent (an error if `required`).
  const json* find(const json& obj, const char* key, const std::string& path, bool required) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
      if (required) fail(path + "." + key, "required");
      return nullptr;
    }
    return &*it;
  }

  void string(const json& obj, const char* key, const std::string& path, std::string& out,
              bool required = false) {
    if (const json* v = find(obj, key, path, required))
      v->is_string() ? void(out = v->get<std::string>())
                     : void(fail(path + "." + key, "expected a string"));
  }

  void integer(const json& obj, const char* key, const std::string& path, std::int64_t& out,
               bool required = false) {
    if (const json* v = find(obj, key, path, required))
      v->is_number_integer() && v->get<std::int64_t>() >= 0
          ? void(out = v->get<std::int64_t>())
          : void(fail(path + "." + key, "expected an integer >= 0"));
  }

  void number(const json& obj, const char* key, const std::string& path,
              std::optional<double>& out) {
    if (const json* v = find(obj, key, path, false))
      v->is_number() ? void(out = v->get<double>())
                     : void(fail(path + "." + key, "expected a number"));
  }

  const json* object(const json& obj, const char* key, const std::string& path,
                     bool required = false) {
    const json* v = find(obj, key, path, required);
    if (v && !v->is_object()) {
      fail(path + "." + key, "expected an object");
      return nullptr;
    }
    return v;
  }

  Scores scores(const json* obj, const std::string& path) {
    Scores s;
    if (!obj) return s;
    number(*obj, "accuracy", path, s.accuracy);
    number(*obj, "log_loss", path, s.log_loss);
    number(*obj, "mse", path, s.mse);
    number(*obj, "rmse", path, s.rmse);
    return s;
  }

  MetricSummary summary(const json* obj, const std::string& path) {
    MetricSummary m;
    if (!obj) return m;
    m.validation = scores(object(*obj, "validation", path), path + ".validation");
    m.test = scores(object(*obj, "test", path), path + ".test");
    return m;
  }

 private:
  std::optional<Error>& error_;
};

void read_member(Reader& r, const json& j, const std::string& path, ManifestMember& m,
                 std::optional<Error>& error) {
  if (!j.is_object()) {
    r.fail(path, "expected an object");
    return;
  }
  r.string(j, "trial_id", path, m.trial_id, true);
  r.string(j, "kind", path, m.kind);
  if (m.kind != "member" && m.kind != "trial") r.fail(path + ".kind", "expected member or trial");
  if (const json* p = r.object(j, "params", path)) {
    auto params = trials::params_from_json(p->dump());
    if (params.ok())
      m.params = std::move(params).value();
    else
      r.fail(path + ".params" + params.error().fields.at(0).path.substr(6),
             params.error().fields.at(0).message);
  }
  if (const json* b = r.object(j, "bagging", path)) {
    auto spec = member_spec_from_json(b->dump());
    if (spec.ok())
      m.bagging = *spec;
    else
      r.fail(path + ".bagging" + spec.error().fields.at(0).path.substr(5),
             spec.error().fields.at(0).message);
  }
  if (const json* f = r.find(j, "features", path, false)) {
    bool good = f->is_array();
    for (std::size_t i = 0; good && i < f->size(); ++i) {
      good = (*f)[i].is_number_integer() && (*f)[i].get<std::int64_t>() >= 0;
      if (good) m.features.push_back((*f)[i].get<std::int64_t>());
    }
    if (!good) r.fail(path + ".features", "expected an array of feature indices >= 0");
  }
  std::optional<double> weight;
  r.number(j, "weight", path, weight);
  if (!weight && !error) r.fail(path + ".weight", "required");
  if (weight && !(*weight >= 0)) r.fail(path + ".weight", "expected a number >= 0");
  m.weight = weight.value_or(0);
  r.string(j, "artifact", path, m.artifact);
  m.metrics = r.summary(r.object(j, "metrics", path), path + ".metrics");
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
    if (m.bagging) jm["bagging"] = json::parse(member_spec_to_json(*m.bagging));
    members.push_back(std::move(jm));
  }
  json j{
      {"version", manifest.version},
      {"sweep_id", manifest.sweep_id},
      {"task", manifest.task == Targets::Task::kClassification ? "classification" : "regression"},
      {"n_features", manifest.n_features},
      {"n_outputs", manifest.n_outputs},
      {"combine", trials::to_string(manifest.combine)},
      {"members", std::move(members)},
      {"ensemble", summary_to_json(manifest.ensemble_metrics)},
      {"best_single", summary_to_json(manifest.best_single_metrics)}};
  j["best_single"]["trial_id"] = manifest.best_single_trial_id;
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
  std::optional<Error> error;
  Reader r(error);
  EnsembleManifest m;
  const std::string root = "manifest";
  std::int64_t version = 0;
  r.integer(j, "version", root, version, true);
  if (r.ok() && version != kManifestVersion)
    return Error::invalid("manifest.version", "expected " + std::to_string(kManifestVersion) +
                                                  ", got " + std::to_string(version));
  r.string(j, "sweep_id", root, m.sweep_id);
  std::string task = "classification";
  r.string(j, "task", root, task);
  if (task == "regression")
    m.task = Targets::Task::kRegression;
  else if (task != "classification")
    r.fail("manifest.task", "expected classification or regression");
  r.integer(j, "n_features", root, m.n_features, true);
  r.integer(j, "n_outputs", root, m.n_outputs, true);
  std::string combine;
  r.string(j, "combine", root, combine, true);
  if (auto c = trials::parse_combine(combine))
    m.combine = *c;
  else if (r.ok())
    r.fail("manifest.combine", "unknown rule \"" + combine + "\"");
  const json* members = r.find(j, "members", root, true);
  if (members && (!members->is_array() || members->empty()))
    r.fail("manifest.members", "expected a non-empty array");
  else if (members)
    for (std::size_t i = 0; i < members->size() && r.ok(); ++i)
      read_member(r, (*members)[i], "manifest.members[" + std::to_string(i) + "]",
                  m.members.emplace_back(), error);
  m.ensemble_metrics = r.summary(r.object(j, "ensemble", root), "manifest.ensemble");
  if (const json* best = r.object(j, "best_single", root)) {
    r.string(*best, "trial_id", "manifest.best_single", m.best_single_trial_id);
    m.best_single_metrics = r.summary(best, "manifest.best_single");
  }
  if (const json* oob = r.object(j, "oob", root)) {
    OobSummary o;
    r.integer(*oob, "rows_total", "manifest.oob", o.rows_total);
    r.integer(*oob, "rows_covered", "manifest.oob", o.rows_covered);
    o.scores = r.scores(r.object(*oob, "scores", "manifest.oob"), "manifest.oob.scores");
    m.oob = o;
  }
  if (error) return *error;
  return m;
}

std::unique_ptr<Combiner> combiner_for(const EnsembleManifest& manifest) {
  using C = trials::EnsembleRecipe::Combine;
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
