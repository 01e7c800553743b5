// How the ensemble stage steps (see ensemble_stage.hpp for why it is safe to
// repeat):
//
//  1. The sweep's trials must store predictions (torch, or command with
//     trial.data; parse_spec refuses anything else): anything else fails it.
//  2. The completed search trials are ranked (objective, ties to the lower
//     number). Member i trains with the best one's parameters (base best) or
//     the (i mod K)-th best's (base top_k K); its plan holds its bagging
//     spec (seed, fractions) plus the configuration it came from.
//  3. While fewer than `members` exist, members are created up to
//     search.max_concurrent active ones. kConflict on create means someone
//     else moved next_member on: the next step looks again.
//  4. When all exist and none is active: the completed members' validation
//     predictions and those of the best completed search trials (for
//     selection, stacking and the best single model) are loaded, checked for
//     alignment (same rows of the same file), and the candidates
//     cross-validated (ensemble/evaluate.hpp). The incumbent, the record's
//     only best single model, is the sweep's best trial by its objective. The
//     out-of-bag predictions then stream through, kStreamRows rows of every
//     model at a time (read as ranges of their files, never whole), for the
//     out-of-bag estimate and, with a small validation set, as evidence; then
//     the choice (ensemble/decision.hpp); then the test rows stream through
//     for the test scores. The record and manifest are stored. No completed
//     member at all fails the sweep with the reason.
#include "scheduler/ensemble_stage.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/log.hpp"
#include "ensemble/bagging.hpp"
#include "ensemble/bagging_json.hpp"
#include "ensemble/evaluate.hpp"
#include "ensemble/manifest.hpp"
#include "ensemble/prediction_file.hpp"
#include "scheduler/ensemble_predictions.hpp"
#include "trials/artifacts.hpp"

namespace hpo::scheduler {
namespace {

using Json = nlohmann::json;
using ensemble_predictions::kStreamRows;
using ensemble_predictions::load_predictions;
using ensemble_predictions::Model;
using ensemble_predictions::open_oob;
using ensemble_predictions::open_predictions;
using ensemble_predictions::stream_test_rows;
using trials::Trial;

// Search trials (best first) whose predictions join the members' as candidate models.
constexpr std::size_t kMaxLibraryTrials = 50;
// The candidates evaluate_ensemble scores the streamed rows with.
constexpr std::int64_t kCandidates = 4;
using trials::TrialState;

// Same rows of the same data part, same number of outputs.
bool aligned(const ensemble::PredictionFile& a, const ensemble::PredictionFile& b) {
  return a.regression == b.regression && a.values.rows == b.values.rows &&
         a.values.cols == b.values.cols && a.row_ids == b.row_ids && a.labels == b.labels;
}

// Mean of one score over the models that have it.
std::optional<double> mean_of(const std::vector<ensemble::MetricSummary>& models, bool test,
                              std::optional<double> ensemble::Scores::*field) {
  double sum = 0;
  int n = 0;
  for (const auto& m : models) {
    const auto& v = (test ? m.test : m.validation).*field;
    if (v) sum += *v, ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

// The models the ensemble may combine, as loaded: the completed members'
// first, then the best search trials'. What was left out, and why, is kept for
// the record.
struct Library {
  std::vector<Model> models;
  std::size_t member_models = 0;  // models [0, member_models) are members
  Json not_used = Json::array();  // models left out, with the reason
  Json failed = Json::array();    // members that did not complete
  int completed_members = 0;
  std::int64_t beyond_library = 0;  // search trials past kMaxLibraryTrials
};

// Adds `t` to the library, unless it stored no validation predictions or they
// are not on the first model's rows (then `not_used` says why).
Status add_model(SweepRoles store, const Trial& t, Library& lib) {
  auto val = load_predictions(store, t.id, trials::artifact::kValPredictions);
  if (!val) return val.error();
  if (!*val) {
    lib.not_used.push_back({{"trial_id", t.id}, {"reason", "stored no validation predictions"}});
    return {};
  }
  auto test = open_predictions(store, t.id, trials::artifact::kTestPredictions);
  if (!test) return test.error();
  if (!lib.models.empty() && !aligned(lib.models.front().validation, **val)) {
    lib.not_used.push_back({{"trial_id", t.id},
                            {"reason",
                             "its validation predictions are not on the same rows as "
                             "the first member's"}});
    return {};
  }
  lib.models.push_back({&t, std::move(**val), std::move(*test)});
  return {};
}

// The completed members' models; the others are recorded as failed.
Status load_members(SweepRoles store, const std::vector<Trial>& members, Library& lib) {
  for (const auto& t : members) {
    if (t.state != TrialState::kCompleted) {
      lib.failed.push_back(
          {{"trial_id", t.id}, {"state", trials::to_string(t.state)}, {"error", t.error}});
      continue;
    }
    ++lib.completed_members;
    if (auto st = add_model(store, t, lib); !st) return st.error();
  }
  lib.member_models = lib.models.size();
  return {};
}

// Why no member can be combined, for failing the sweep with it.
std::string no_members_reason(const std::vector<Trial>& members, int completed_members) {
  std::string first_error;
  for (const auto& t : members)
    if (!t.error.empty()) {
      first_error = fmt::format("; {}: {}", t.id, t.error);
      break;
    }
  if (completed_members == 0)
    return fmt::format("all {} ensemble members failed{}", members.size(), first_error);
  return fmt::format(
      "none of the {} completed ensemble members stored "
      "validation predictions",
      completed_members);
}

// The best completed search trials that stored predictions are candidate
// models too: for selection, stacking and the best single model. Bounded, so
// a sweep of many thousand trials does not load every prediction file.
Status load_search_trials(SweepRoles store, const std::vector<Trial>& ranked, Library& lib) {
  std::size_t library_trials = 0;
  for (const auto& t : ranked) {
    if (library_trials == kMaxLibraryTrials) {
      ++lib.beyond_library;
      continue;
    }
    const std::size_t before = lib.models.size();
    if (auto st = add_model(store, t, lib); !st) return st.error();
    library_trials += lib.models.size() - before;
  }
  return {};
}

// Test scores only when every model predicted test rows of the same shape
// (that they are the same rows is checked as they stream through).
bool same_test_shape(const std::vector<Model>& models) {
  bool with_test = true;
  for (const auto& m : models)
    with_test = with_test && m.test && m.test->rows() == models.front().test->rows() &&
                m.test->cols() == models.front().validation.values.cols &&
                m.test->regression() == models.front().validation.regression;
  return with_test;
}

// The out-of-bag estimate, then the choice, then the test scores (when
// `with_test`), from the predictions streamed through; `regression` and
// `n_outputs` are the validation predictions' shape, which the out-of-bag files
// must have.
Status choose_and_score(SweepRoles store, const Library& lib, const trials::EnsembleRecipe& recipe,
                        bool with_test, bool regression, std::int64_t n_outputs,
                        ensemble::Evaluation& eval) {
  const auto& models = lib.models;
  // Rows that cannot be scored leave their scores out, saying why; a store
  // that is away is waited for (the step is repeated).
  auto streamed = [&](const Status& st, const char* what) -> Status {
    if (st) return {};
    if (st.error().code == ErrorCode::kUnavailable) return st;
    eval.warnings.push_back(fmt::format("no {}: {}", what, st.error().message));
    return {};
  };
  auto oob = open_oob(store, models, lib.member_models, regression, n_outputs);
  if (!oob) return oob.error();
  if (*oob)
    if (auto st = streamed(ensemble::estimate_oob(eval, **oob), "out-of-bag estimate"); !st)
      return st.error();
  if (auto st = ensemble::choose(eval, recipe); !st) return st.error();
  if (with_test) {
    auto rows = stream_test_rows(models);
    if (auto st = streamed(ensemble::score_rows(eval, *rows), "test scores"); !st)
      return st.error();
  }
  return {};
}

// The incumbent: the sweep's best trial by its objective, the first search
// trial in the library (loaded best first); else the best member by it. Its
// copies (members trained with its parameters: every member in an
// ensemble-only sweep) stand for it on their out-of-bag rows. A note when the
// sweep's best trial could not be the incumbent.
std::optional<std::string> set_incumbent(const Library& lib, const std::vector<Trial>& ranked,
                                         bool maximize, ensemble::EvaluationInput& input) {
  const auto& models = lib.models;
  auto copies_of = [&](const std::string& base_trial, bool every) {
    for (std::size_t m = 0; m < lib.member_models; ++m)
      if (every || models[m].trial->plan.base_trial == base_trial)
        input.incumbent_copies.push_back(static_cast<int>(m));
  };
  if (!ranked.empty() && models.size() > lib.member_models) {
    const Trial& best = *models[lib.member_models].trial;
    input.incumbent = lib.member_models;
    copies_of(best.id, false);
    if (ranked.front().id != best.id)
      return fmt::format(
          "the sweep's best trial {} has no usable validation predictions (see not_used): the "
          "best trial that has, {}, is the best single model",
          ranked.front().id, best.id);
    return std::nullopt;
  }
  std::optional<std::size_t> best;
  for (std::size_t m = 0; m < lib.member_models; ++m) {
    const auto& v = models[m].trial->value;
    const auto& b = best ? models[*best].trial->value : std::nullopt;
    if (v && (!b || (maximize ? *v > *b : *v < *b))) best = m;
  }
  input.incumbent = best;
  if (ranked.empty()) {  // ensemble-only: every member has the same (empty) parameters
    copies_of({}, true);
    return std::nullopt;
  }
  const auto considered = static_cast<std::int64_t>(ranked.size()) - lib.beyond_library;
  if (!best)  // evaluate_candidates takes the member with the lowest validation loss
    return fmt::format(
        "none of the {} search trials considered had usable validation predictions (see "
        "not_used) and no member reported the objective: the member with the lowest validation "
        "loss is the best single model",
        considered);
  const Trial& incumbent = *models[*best].trial;
  copies_of(incumbent.plan.base_trial, false);
  return fmt::format(
      "none of the {} search trials considered had usable validation predictions (see "
      "not_used): the best member by the objective, {} (objective {:g}, trained with trial {}'s "
      "parameters), is the best single model",
      considered, incumbent.id, *incumbent.value, incumbent.plan.base_trial);
}

// The manifest of every model considered, in the library's order (weight 0 =
// not picked); a member's entry also reads its stored bagging plan.
Result<ensemble::EnsembleManifest> make_manifest(SweepRoles store, const std::string& sweep_id,
                                                 const trials::SweepSpec& spec,
                                                 const ensemble::Evaluation& eval,
                                                 const std::vector<Model>& models,
                                                 ensemble::Targets::Task task,
                                                 std::int64_t n_outputs) {
  ensemble::EnsembleManifest manifest;
  manifest.sweep_id = sweep_id;
  manifest.task = task;
  manifest.n_outputs = n_outputs;
  manifest.combine = eval.combine;
  manifest.method = eval.method;
  if (eval.stacking) manifest.stacking_intercept = eval.stacking->intercept;
  if (spec.trial.kind == trials::TrialKind::kCommand && spec.trial.command.data)
    manifest.n_features = spec.trial.command.data->features;
  for (std::size_t i = 0; i < models.size(); ++i) {
    const Trial& t = *models[i].trial;
    ensemble::ManifestMember mm;
    mm.trial_id = t.id;
    mm.kind = trials::to_string(t.role);
    mm.params = t.params;
    if (t.role == trials::TrialRole::kMember) mm.bagging = t.plan.member;
    mm.weight = eval.weights[i];
    // A member's plan summary: the data's width and its feature subset.
    if (t.role == trials::TrialRole::kMember) {
      auto plan = store.artifacts.get_artifact(t.id, trials::artifact::kBaggingPlan);
      if (!plan) return plan.error();
      if (*plan && !(*plan)->empty())
        if (auto summary = ensemble::plan_summary_from_json(**plan)) {
          if (manifest.n_features == 0) manifest.n_features = summary->n_features;
          if (static_cast<std::int64_t>(summary->features.size()) < summary->n_features)
            mm.features = summary->features;
        }
    }
    mm.artifact = t.id + "/model.pt";
    mm.metrics = eval.models[i];
    manifest.members.push_back(std::move(mm));
  }
  manifest.ensemble_metrics = eval.ensemble;
  manifest.best_single_trial_id = models[eval.incumbent].trial->id;
  manifest.best_single_metrics = eval.models[eval.incumbent];
  manifest.oob = eval.oob;
  return manifest;
}

Json advantage_json(const ensemble::Advantage& a) {
  return {{"mean", a.mean}, {"se", a.se}, {"rows", a.rows}};
}

// Why the chosen candidate: the comparison with the best single model.
Json decision_json(const ensemble::Evaluation& eval, const trials::Objective& objective,
                   const std::string& best_single) {
  const auto& d = eval.decision;
  Json j{{"best_single", best_single},
         {"objective",
          {{"metric", objective.metric},
           {"scored_as", ensemble::loss_name(eval.objective.loss)},
           {"stand_in", eval.objective.stand_in}}},
         {"chosen", eval.method},
         {"compared", d.challenger == 0
                          ? Json(nullptr)
                          : Json(eval.candidates[static_cast<std::size_t>(d.challenger)].name)},
         {"decided", d.decided},
         {"reason", d.reason},
         {"validation_rows", eval.validation_rows},
         {"oob_rows", d.oob_rows}};
  if (d.challenger != 0) {
    j["loss_advantage"] = advantage_json(d.loss);
    j["objective_advantage"] = advantage_json(d.objective);
    // The noise: the margin it had to clear, in the objective's per-row loss
    // (`bar` standard errors of its paired difference).
    j["bar"] = d.bar;
    j["noise"] = d.bar * d.objective.se;
  }
  if (eval.test_advantage) j["test_advantage"] = advantage_json(*eval.test_advantage);
  return j;
}

// The candidates the stage chose among.
Json candidates_json(const ensemble::Evaluation& eval, const std::vector<Model>& models,
                     const std::string& metric) {
  Json candidates = Json::array();
  for (const auto& c : eval.candidates) {
    Json jc{{"name", c.name},
            {"detail", c.detail},
            {"cross_validated", c.cross_validated},
            {"cv_loss", c.cv_loss},
            {"validation", ensemble::scores_to_json(c.scores.validation)},
            {"test", ensemble::scores_to_json(c.scores.test)}};
    if (c.cv_accuracy) jc["cv_accuracy"] = *c.cv_accuracy;
    if (!c.untrusted.empty()) jc["untrusted"] = c.untrusted;
    Json weights = Json::object();
    for (std::size_t i = 0; i < c.weights.size(); ++i)
      if (c.weights[i] != 0) weights[models[i].trial->id] = c.weights[i];
    if (c.name == ensemble::candidate_name::kBestSingle && weights.size() == 1)  // its trial id
      jc["detail"] = fmt::format(
          "the sweep's best trial by {}: {}; its cross-validated loss is that of picking the "
          "best trial on each fold",
          metric, weights.begin().key());
    jc["weights"] = std::move(weights);
    candidates.push_back(std::move(jc));
  }
  return candidates;
}

// The record: the manifest of every model considered (weight 0 = not picked),
// plus what happened to the members; takes the library's left-out models.
Json make_record(const ensemble::EnsembleManifest& manifest, const trials::SweepSpec& spec,
                 const ensemble::Evaluation& eval, Library& lib) {
  const auto& recipe = *spec.ensemble;
  Json record = Json::parse(ensemble::manifest_to_json(manifest));
  std::vector<ensemble::MetricSummary> member_metrics(eval.models.begin(),
                                                      eval.models.begin() + lib.member_models);
  record["candidates"] = candidates_json(eval, lib.models, spec.objective.metric);
  record["chosen"] = eval.method;
  record["decision"] = decision_json(eval, spec.objective, manifest.best_single_trial_id);
  record["choose"] = trials::to_string(recipe.choose);
  record["warnings"] = eval.warnings;
  record["members_requested"] = recipe.members;
  record["members_completed"] = lib.completed_members;
  record["members_failed"] = std::move(lib.failed);
  record["not_used"] = std::move(lib.not_used);
  // Completed search trials past the best kMaxLibraryTrials: not loaded at all.
  record["search_trials_not_considered"] = lib.beyond_library;
  record["mean_member"] = {{"validation", Json::object()}, {"test", Json::object()}};
  for (bool test : {false, true}) {
    ensemble::Scores s;
    for (auto field : {&ensemble::Scores::accuracy, &ensemble::Scores::log_loss,
                       &ensemble::Scores::mse, &ensemble::Scores::rmse})
      s.*field = mean_of(member_metrics, test, field);
    record["mean_member"][test ? "test" : "validation"] = ensemble::scores_to_json(s);
  }
  return record;
}

}  // namespace

EnsembleStage::EnsembleStage(std::string sweep_id, trials::SweepSpec spec,
                             std::int64_t memory_budget)
    : sweep_id_(std::move(sweep_id)), spec_(std::move(spec)), memory_budget_(memory_budget) {}

Result<EnsembleStage::PredictionMemory> EnsembleStage::prediction_bytes(
    SweepRoles store, const std::vector<const trials::Trial*>& trials) {
  PredictionMemory m;
  std::int64_t row_bytes = 0;  // one row of one model: values, label, row id
  for (const Trial* t : trials) {
    auto size = store.artifacts.artifact_size(t->id, trials::artifact::kValPredictions);
    if (!size) return size.error();
    if (!*size) continue;
    m.held += **size;
    if (row_bytes == 0) {
      auto header = open_predictions(store, t->id, trials::artifact::kValPredictions);
      if (!header) return header.error();
      if (*header) row_bytes = (*header)->cols() * 4 + 12;
    }
  }
  // A block of every model's rows and of every candidate's combination, the
  // test's and the out-of-bag estimate's.
  m.streamed =
      2 * (static_cast<std::int64_t>(trials.size()) + kCandidates) * kStreamRows * row_bytes;
  return m;
}

Result<std::optional<std::string>> EnsembleStage::over_memory_budget(
    SweepRoles store, const std::vector<trials::Trial>& members) {
  // What loading them would take, from their sizes, before any is read.
  std::vector<const Trial*> candidates;
  for (const auto& t : members)
    if (t.state == TrialState::kCompleted) candidates.push_back(&t);
  for (std::size_t i = 0; i < ranked_->size() && i < kMaxLibraryTrials; ++i)
    candidates.push_back(&(*ranked_)[i]);
  auto bytes = prediction_bytes(store, candidates);
  if (!bytes) return bytes.error();
  if (memory_budget_ > 0 && bytes->held + bytes->streamed > memory_budget_)
    return std::optional<std::string>{
        fmt::format("combining the ensemble would take about {} MiB of scheduler memory (the "
                    "validation prediction files of {} models, {} MiB, held to fit the "
                    "combination on, and {} MiB of blocks their test and out-of-bag "
                    "predictions stream through), more than hpo-scheduler "
                    "--ensemble-memory-mb {}: raise it, or use fewer members or fewer "
                    "validation rows",
                    (bytes->held + bytes->streamed) >> 20, candidates.size(), bytes->held >> 20,
                    bytes->streamed >> 20, memory_budget_ >> 20)};
  return std::optional<std::string>{};
}

Result<bool> EnsembleStage::fail(SweepRoles store, const std::string& reason) {
  auto st = store.sweeps.finish_sweep(sweep_id_, trials::SweepState::kFailed, reason);
  if (!st && st.error().code != ErrorCode::kConflict) return st.error();
  log_warn("ensemble stage failed", {{"sweep", sweep_id_}, {"error", reason}});
  return true;
}

Result<bool> EnsembleStage::step(SweepRoles store, const trials::Sweep& sweep) {
  // parse_spec refuses an ensemble of trials that store no predictions; a spec
  // stored by an older version might still hold one.
  if (spec_.trial.kind == trials::TrialKind::kSynthetic ||
      (spec_.trial.kind == trials::TrialKind::kCommand && !spec_.trial.command.data))
    return fail(store,
                "the ensemble stage needs trials that store predictions: kind torch, or kind "
                "command with trial.data");
  if (!ranked_)
    if (auto st = load_configs(store); !st) return st.error();
  if (ranked_->empty() && !spec_.space.params.empty())
    return fail(store,
                spec_.constraints.empty()
                    ? "no search trial completed, so the ensemble members have no parameters "
                      "to train with"
                    : "no search trial completed within the constraints, so the ensemble "
                      "members have no parameters to train with");
  const auto& recipe = *spec_.ensemble;
  if (sweep.next_member >= recipe.members && sweep.member_counts.active() == 0)
    return combine(store);
  return create_members(store, sweep);
}

Status EnsembleStage::load_configs(SweepRoles store) {
  auto page = store.trials.list_trials(sweep_id_, trials::TrialRole::kTrial, 0, trials::kAll);
  if (!page) return page.error();
  std::vector<Trial> done;
  for (auto& t : page->trials)
    if (t.state == TrialState::kCompleted && t.value &&
        trials::feasible(spec_.constraints, t.metrics))  // only trials that keep the constraints
      done.push_back(std::move(t));
  bool maximize = spec_.objective.maximize;
  std::stable_sort(done.begin(), done.end(), [&](const Trial& a, const Trial& b) {
    if (*a.value != *b.value) return maximize ? *a.value > *b.value : *a.value < *b.value;
    return a.number < b.number;
  });
  ranked_ = std::move(done);
  return {};
}

Result<bool> EnsembleStage::create_members(SweepRoles store, const trials::Sweep& sweep) {
  const auto& recipe = *spec_.ensemble;
  std::int64_t active = sweep.member_counts.active();
  std::int64_t next = sweep.next_member;
  while (active < spec_.search.max_concurrent && next < recipe.members) {
    int index = static_cast<int>(next);
    trials::NewTrial nt;
    nt.sweep_id = sweep_id_;
    nt.role = trials::TrialRole::kMember;
    nt.number = next;
    nt.limit = recipe.members;
    nt.max_attempts = spec_.trial.max_attempts;
    nt.slots = spec_.trial.slots();
    nt.plan.member = ensemble::member_spec(recipe, index);
    if (!ranked_->empty()) {
      int k = recipe.base == trials::EnsembleRecipe::Base::kTopK
                  ? std::min<int>(recipe.top_k, static_cast<int>(ranked_->size()))
                  : 1;
      int rank = index % k;
      const Trial& base = (*ranked_)[rank];
      nt.params = base.params;
      nt.plan.base_trial = base.id;
      nt.plan.base_rank = rank;
    }
    auto created = store.trials.create_trial(nt);
    if (!created) {
      const ErrorCode code = created.error().code;  // kQuotaExceeded: the project's queue is full
      if (code == ErrorCode::kConflict || code == ErrorCode::kQuotaExceeded) return false;
      return created.error();
    }
    log_info("ensemble member queued",
             {{"sweep", sweep_id_}, {"trial", created->id}, {"base", nt.plan.base_trial}});
    ++next;
    ++active;
  }
  return false;
}

Result<bool> EnsembleStage::combine(SweepRoles store) {
  const auto& recipe = *spec_.ensemble;
  auto page = store.trials.list_trials(sweep_id_, trials::TrialRole::kMember, 0, trials::kAll);
  if (!page) return page.error();
  const auto& members = page->trials;
  if (members.empty()) return fail(store, "the ensemble stage created no members");

  auto too_big = over_memory_budget(store, members);
  if (!too_big) return too_big.error();
  if (*too_big) return fail(store, **too_big);
  Library lib;
  if (auto st = load_members(store, members, lib); !st) return st.error();
  if (lib.member_models == 0) return fail(store, no_members_reason(members, lib.completed_members));
  if (auto st = load_search_trials(store, *ranked_, lib); !st) return st.error();
  auto& models = lib.models;
  const bool with_test = same_test_shape(models);

  ensemble::EvaluationInput input;
  const bool regression = models.front().validation.regression;
  const std::int64_t n_outputs = models.front().validation.values.cols;
  input.validation_targets = models.front().validation.targets();
  for (auto& m : models) input.validation.push_back(std::move(m.validation.values));
  input.member_models = lib.member_models;
  input.seed = recipe.seed;
  input.objective = ensemble::objective_loss(spec_.objective.metric, !regression);
  auto note = set_incumbent(lib, *ranked_, spec_.objective.maximize, input);
  auto eval = ensemble::evaluate_candidates(recipe, input);
  if (!eval) return fail(store, "combining the members failed: " + eval.error().message);
  if (note) eval->warnings.push_back(*note);
  if (input.objective.stand_in)
    eval->warnings.push_back(
        fmt::format("the objective {} is not scored from predictions: {} stands in for it when a "
                    "combination is compared with the best single model",
                    spec_.objective.metric, ensemble::loss_name(input.objective.loss)));
  if (auto st = choose_and_score(store, lib, recipe, with_test, regression, n_outputs, *eval);
      !st) {
    if (st.error().code == ErrorCode::kUnavailable) return st.error();
    return fail(store, "combining the members failed: " + st.error().message);
  }

  auto manifest = make_manifest(store, sweep_id_, spec_, *eval, models,
                                input.validation_targets.task, n_outputs);
  if (!manifest) return manifest.error();
  Json record = make_record(*manifest, spec_, *eval, lib);

  // The manifest keeps only the models with a weight (selection may skip some;
  // a stacking coefficient may be negative).
  std::erase_if(manifest->members, [](const auto& m) { return m.weight == 0; });
  auto& records = store.artifacts;
  if (auto st = records.put_sweep_record(sweep_id_, kEnsembleRecordArtifact, record.dump(2)); !st)
    return st.error();
  if (auto st = records.put_sweep_record(sweep_id_, kEnsembleManifestArtifact,
                                         ensemble::manifest_to_json(*manifest));
      !st)
    return st.error();

  auto acc = [](const ensemble::Scores& s) {
    return s.accuracy ? fmt::format("{:.4f}", *s.accuracy) : std::string("-");
  };
  log_info("ensemble stored", {{"sweep", sweep_id_},
                               {"models", std::to_string(models.size())},
                               {"combine", trials::to_string(recipe.combine)},
                               {"chosen", eval->method},
                               {"val_accuracy", acc(eval->ensemble.validation)},
                               {"test_accuracy", acc(eval->ensemble.test)},
                               {"best_single", manifest->best_single_trial_id}});
  return true;
}

}  // namespace hpo::scheduler
