// How the ensemble stage steps (see ensemble_stage.hpp for why it is safe to
// repeat):
//
//  1. The sweep's trials must store predictions (torch, or command with
//     trial.data; parse_spec refuses anything else): anything else fails it.
//  2. The completed search trials are ranked (objective, ties to the lower
//     number). Member i trains with the best one's parameters (base best) or
//     the (i mod K)-th best's (base top_k K); its `extra` holds its bagging
//     spec (seed, fractions) plus the configuration it came from.
//  3. While fewer than `members` exist, members are created up to
//     search.max_concurrent active ones. kConflict on create means someone
//     else moved next_member on: the next step looks again.
//  4. When all exist and none is active: the completed members' validation
//     predictions and those of the best completed search trials (for
//     selection, stacking and the best single model) are loaded, checked for
//     alignment (same rows of the same file), evaluated by
//     ensemble::evaluate_ensemble (which chooses among the candidates); the
//     test and out-of-bag predictions then stream through, kStreamRows rows of
//     every model at a time (read as ranges of their files, never whole), for
//     the test scores and the out-of-bag estimate; the record and manifest are
//     stored. No completed member at all fails the sweep with the reason.
#include "scheduler/ensemble_stage.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/log.hpp"
#include "ensemble/bagging.hpp"
#include "ensemble/bagging_json.hpp"
#include "ensemble/evaluate.hpp"
#include "ensemble/manifest.hpp"
#include "ensemble/prediction_file.hpp"

namespace hpo::scheduler {
namespace {

using Json = nlohmann::json;
using trials::Trial;

// Search trials (best first) whose predictions join the members' as candidate models.
constexpr std::size_t kMaxLibraryTrials = 50;
// The test and out-of-bag predictions stream through this many rows of every model at a time.
constexpr std::int64_t kStreamRows = 4096;
// The candidates evaluate_ensemble scores the streamed rows with.
constexpr std::int64_t kCandidates = 4;
using trials::TrialState;

// One model the ensemble may combine: a completed member or search trial.
struct Model {
  const Trial* trial = nullptr;
  ensemble::PredictionFile validation;
  std::optional<ensemble::PredictionFileReader> test;
};

// A stored prediction file opened for reading a block of rows at a time
// (ranges of the file in the artifact folder, or of its value in Redis).
Result<std::optional<ensemble::PredictionFileReader>> open_predictions(trials::Store& store,
                                                                       const std::string& trial_id,
                                                                       const std::string& name) {
  using Opened = std::optional<ensemble::PredictionFileReader>;
  auto size = store.artifacts().artifact_size(trial_id, name);
  if (!size) return size.error();
  if (!*size || **size == 0) return Opened{};
  ensemble::ReadAt read = [&store, trial_id, name](std::int64_t offset, std::int64_t n,
                                                   char* out) -> Status {
    auto got = store.artifacts().read_artifact_range(trial_id, name, offset, n, out);
    if (!got) return got.error();
    if (!*got) return Error::unavailable(name + " of trial " + trial_id + " is gone");
    return {};
  };
  auto reader =
      ensemble::PredictionFileReader::open(std::move(read), **size, name + " of trial " + trial_id);
  if (!reader) return reader.error();
  return Opened{std::move(*reader)};
}

// The validation predictions, whole (the combination is fitted on them).
Result<std::optional<ensemble::PredictionFile>> load_predictions(trials::Store& store,
                                                                 const std::string& trial_id,
                                                                 const std::string& name) {
  auto reader = open_predictions(store, trial_id, name);
  if (!reader) return reader.error();
  if (!*reader) return std::optional<ensemble::PredictionFile>{};
  auto file = (*reader)->read_all();
  if (!file) return file.error();
  return std::optional<ensemble::PredictionFile>{std::move(*file)};
}

// Every model's test predictions, kStreamRows rows at a time; a block whose
// rows differ from the first model's is an error naming both trials.
class StreamedTestRows final : public ensemble::RowBlocks {
 public:
  explicit StreamedTestRows(const std::vector<Model>& models) : models_(models) {}
  Result<bool> next(std::vector<ensemble::Matrix>& out, ensemble::Targets& targets) override {
    const auto& first = *models_.front().test;
    if (next_ >= first.rows()) return false;
    out.resize(models_.size());
    for (std::size_t i = 0; i < models_.size(); ++i) {
      auto& labels = i == 0 ? labels_ : other_labels_;
      auto& ids = i == 0 ? ids_ : other_ids_;
      if (auto st = models_[i].test->read_rows(next_, kStreamRows, out[i], &labels, &ids); !st)
        return st.error();
      if (i > 0 && (labels != labels_ || ids != ids_))
        return Error::invalid(
            "test_predictions",
            fmt::format("the test predictions of trial {} are not on the same rows as trial {}'s "
                        "(rows {} to {})",
                        models_[i].trial->id, models_.front().trial->id, next_,
                        next_ + static_cast<std::int64_t>(ids_.size())));
    }
    targets = ensemble::targets_of(first.regression(), labels_);
    next_ += out.front().rows;
    return true;
  }

 private:
  const std::vector<Model>& models_;
  std::int64_t next_ = 0;
  std::vector<float> labels_, other_labels_;
  std::vector<std::int64_t> ids_, other_ids_;
};

// The members' out-of-bag predictions (rows = their plan's out-of-bag
// training rows, ascending), a range of kStreamRows training rows at a time:
// each member's file is read forward once, a block of its rows at a time.
class StreamedOob final : public ensemble::OobBlocks {
 public:
  StreamedOob(std::vector<ensemble::PredictionFileReader> files, std::vector<std::string> trials)
      : trials_(std::move(trials)) {
    for (auto& f : files) cursors_.push_back(Cursor{std::move(f)});
  }
  Result<bool> next(std::vector<ensemble::MemberOob>& members,
                    ensemble::Targets& targets) override {
    members.clear();
    std::int64_t first = -1;
    for (auto& c : cursors_) {
      if (auto st = fill(c); !st) return st.error();
      if (c.pos < c.ids.size() && (first < 0 || c.ids[c.pos] < first)) first = c.ids[c.pos];
    }
    if (first < 0) return false;
    const std::int64_t end = first + kStreamRows;
    std::vector<float> labels(static_cast<std::size_t>(kStreamRows), 0.0f);
    std::int64_t highest = first;
    for (std::size_t i = 0; i < cursors_.size(); ++i) {
      Cursor& c = cursors_[i];
      ensemble::MemberOob m;
      m.member = static_cast<int>(i);
      m.predictions = ensemble::Matrix(0, c.file.cols());
      for (;;) {
        if (auto st = fill(c); !st) return st.error();
        if (c.pos == c.ids.size() || c.ids[c.pos] >= end) break;
        const std::int64_t id = c.ids[c.pos];
        if (id < 0 || id <= c.last)
          return Error::invalid(
              "oob_predictions",
              fmt::format("the out-of-bag predictions of trial {} are not in ascending training "
                          "row order (row {} after {})",
                          trials_[i], id, c.last));
        c.last = id;
        m.rows.push_back(id - first);
        const float* row = c.values.row(static_cast<std::int64_t>(c.pos));
        m.predictions.data.insert(m.predictions.data.end(), row, row + c.file.cols());
        ++m.predictions.rows;
        labels[static_cast<std::size_t>(id - first)] = c.labels[c.pos];
        highest = std::max(highest, id);
        ++c.pos;
      }
      if (!m.rows.empty()) members.push_back(std::move(m));
    }
    labels.resize(static_cast<std::size_t>(highest - first + 1));
    targets = ensemble::targets_of(cursors_.front().file.regression(), labels);
    total_ = std::max(total_, highest + 1);
    return true;
  }
  std::int64_t rows_total() const override { return total_; }

 private:
  struct Cursor {
    ensemble::PredictionFileReader file;
    std::int64_t next_row = 0;  // the file's next row to read
    ensemble::Matrix values;    // the block read, from row pos on not yet used
    std::vector<float> labels;
    std::vector<std::int64_t> ids;
    std::size_t pos = 0;
    std::int64_t last = -1;  // the last training row taken
  };
  static Status fill(Cursor& c) {
    if (c.pos < c.ids.size() || c.next_row >= c.file.rows()) return {};
    if (auto st = c.file.read_rows(c.next_row, kStreamRows, c.values, &c.labels, &c.ids); !st)
      return st;
    c.next_row += c.values.rows;
    c.pos = 0;
    return {};
  }
  std::vector<Cursor> cursors_;
  std::vector<std::string> trials_;
  std::int64_t total_ = 0;
};

// Same rows of the same data part, same number of outputs.
bool aligned(const ensemble::PredictionFile& a, const ensemble::PredictionFile& b) {
  return a.regression == b.regression && a.values.rows == b.values.rows &&
         a.values.cols == b.values.cols && a.row_ids == b.row_ids && a.labels == b.labels;
}

// The members' predictions on their own out-of-bag training rows (artifact
// "oob_predictions", rows = BaggingPlan::oob_rows, labels = the rows' true
// targets), for the random-forest OOB estimate, opened for streaming. Used
// only when every member stored them in the validation predictions' shape
// (nullptr otherwise); the training targets come from the files' labels (rows
// no member left out are never scored).
Result<std::unique_ptr<StreamedOob>> open_oob(trials::Store& store,
                                              const std::vector<Model>& models,
                                              std::size_t member_models, bool regression,
                                              std::int64_t cols) {
  std::vector<ensemble::PredictionFileReader> files;
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < member_models; ++i) {
    auto f = open_predictions(store, models[i].trial->id, trials::artifact::kOobPredictions);
    if (!f) return f.error();
    if (!*f || (*f)->regression() != regression || (*f)->cols() != cols)
      return std::unique_ptr<StreamedOob>{};
    files.push_back(std::move(**f));
    ids.push_back(models[i].trial->id);
  }
  return std::make_unique<StreamedOob>(std::move(files), std::move(ids));
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

}  // namespace

EnsembleStage::EnsembleStage(std::string sweep_id, trials::SweepSpec spec,
                             std::int64_t memory_budget)
    : sweep_id_(std::move(sweep_id)), spec_(std::move(spec)), memory_budget_(memory_budget) {}

Result<EnsembleStage::PredictionMemory> EnsembleStage::prediction_bytes(
    trials::Store& store, const std::vector<const trials::Trial*>& trials) {
  PredictionMemory m;
  std::int64_t row_bytes = 0;  // one row of one model: values, label, row id
  for (const Trial* t : trials) {
    auto size = store.artifacts().artifact_size(t->id, trials::artifact::kValPredictions);
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

Result<bool> EnsembleStage::fail(trials::Store& store, const std::string& reason) {
  auto st = store.sweeps().finish_sweep(sweep_id_, trials::SweepState::kFailed, reason);
  if (!st && st.error().code != ErrorCode::kConflict) return st.error();
  log_warn("ensemble stage failed", {{"sweep", sweep_id_}, {"error", reason}});
  return true;
}

Result<bool> EnsembleStage::step(trials::Store& store, const trials::Sweep& sweep) {
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

Status EnsembleStage::load_configs(trials::Store& store) {
  auto page = store.trials().list_trials(sweep_id_, trials::TrialRole::kTrial, 0, trials::kAll);
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

Result<bool> EnsembleStage::create_members(trials::Store& store, const trials::Sweep& sweep) {
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
    Json extra = Json::parse(ensemble::member_spec_to_json(ensemble::member_spec(recipe, index)));
    if (!ranked_->empty()) {
      int k = recipe.base == trials::EnsembleRecipe::Base::kTopK
                  ? std::min<int>(recipe.top_k, static_cast<int>(ranked_->size()))
                  : 1;
      int rank = index % k;
      const Trial& base = (*ranked_)[rank];
      nt.params = base.params;
      extra["base_trial"] = base.id;
      extra["base_rank"] = rank;
    }
    nt.extra = extra.dump();
    auto created = store.trials().create_trial(nt);
    if (!created) {
      if (created.error().code == ErrorCode::kConflict) return false;  // look again next step
      return created.error();
    }
    log_info(
        "ensemble member queued",
        {{"sweep", sweep_id_}, {"trial", created->id}, {"base", extra.value("base_trial", "")}});
    ++next;
    ++active;
  }
  return false;
}

Result<bool> EnsembleStage::combine(trials::Store& store) {
  const auto& recipe = *spec_.ensemble;
  auto page = store.trials().list_trials(sweep_id_, trials::TrialRole::kMember, 0, trials::kAll);
  if (!page) return page.error();
  const auto& members = page->trials;
  if (members.empty()) return fail(store, "the ensemble stage created no members");

  // What loading them would take, from their sizes, before any is read.
  {
    std::vector<const Trial*> candidates;
    for (const auto& t : members)
      if (t.state == TrialState::kCompleted) candidates.push_back(&t);
    for (std::size_t i = 0; i < ranked_->size() && i < kMaxLibraryTrials; ++i)
      candidates.push_back(&(*ranked_)[i]);
    auto bytes = prediction_bytes(store, candidates);
    if (!bytes) return bytes.error();
    if (memory_budget_ > 0 && bytes->held + bytes->streamed > memory_budget_)
      return fail(
          store,
          fmt::format("combining the ensemble would take about {} MiB of scheduler memory (the "
                      "validation prediction files of {} models, {} MiB, held to fit the "
                      "combination on, and {} MiB of blocks their test and out-of-bag "
                      "predictions stream through), more than hpo-scheduler "
                      "--ensemble-memory-mb {}: raise it, or use fewer members or fewer "
                      "validation rows",
                      (bytes->held + bytes->streamed) >> 20, candidates.size(), bytes->held >> 20,
                      bytes->streamed >> 20, memory_budget_ >> 20));
  }
  Json not_used = Json::array();  // models left out, with the reason
  std::vector<Model> models;
  auto add = [&](const Trial& t) -> Status {
    auto val = load_predictions(store, t.id, trials::artifact::kValPredictions);
    if (!val) return val.error();
    if (!*val) {
      not_used.push_back({{"trial_id", t.id}, {"reason", "stored no validation predictions"}});
      return {};
    }
    auto test = open_predictions(store, t.id, trials::artifact::kTestPredictions);
    if (!test) return test.error();
    if (!models.empty() && !aligned(models.front().validation, **val)) {
      not_used.push_back({{"trial_id", t.id},
                          {"reason",
                           "its validation predictions are not on the same rows as "
                           "the first member's"}});
      return {};
    }
    models.push_back({&t, std::move(**val), std::move(*test)});
    return {};
  };
  Json failed = Json::array();
  int completed_members = 0;
  for (const auto& t : members) {
    if (t.state != TrialState::kCompleted) {
      failed.push_back(
          {{"trial_id", t.id}, {"state", trials::to_string(t.state)}, {"error", t.error}});
      continue;
    }
    ++completed_members;
    if (auto st = add(t); !st) return st.error();
  }
  std::size_t member_models = models.size();
  if (member_models == 0) {
    std::string first_error;
    for (const auto& t : members)
      if (!t.error.empty()) {
        first_error = fmt::format("; {}: {}", t.id, t.error);
        break;
      }
    if (completed_members == 0)
      return fail(store,
                  fmt::format("all {} ensemble members failed{}", members.size(), first_error));
    return fail(store, fmt::format("none of the {} completed ensemble members stored "
                                   "validation predictions",
                                   completed_members));
  }
  // The best completed search trials that stored predictions are candidate
  // models too: for selection, stacking and the best single model. Bounded, so
  // a sweep of many thousand trials does not load every prediction file.
  std::size_t library_trials = 0;
  std::int64_t beyond_library = 0;
  for (const auto& t : *ranked_) {
    if (library_trials == kMaxLibraryTrials) {
      ++beyond_library;
      continue;
    }
    const std::size_t before = models.size();
    if (auto st = add(t); !st) return st.error();
    library_trials += models.size() - before;
  }

  // Test scores only when every model predicted test rows of the same shape
  // (that they are the same rows is checked as they stream through).
  bool with_test = true;
  for (const auto& m : models)
    with_test = with_test && m.test && m.test->rows() == models.front().test->rows() &&
                m.test->cols() == models.front().validation.values.cols &&
                m.test->regression() == models.front().validation.regression;

  ensemble::EvaluationInput input;
  const bool regression = models.front().validation.regression;
  const std::int64_t n_outputs = models.front().validation.values.cols;
  input.validation_targets = models.front().validation.targets();
  for (auto& m : models) input.validation.push_back(std::move(m.validation.values));
  input.member_models = member_models;
  input.seed = recipe.seed;
  auto eval = ensemble::evaluate_ensemble(recipe, input);
  if (!eval) return fail(store, "combining the members failed: " + eval.error().message);
  // Rows that cannot be scored leave their scores out, saying why; a store
  // that is away is waited for (the step is repeated).
  auto streamed = [&](const Status& st, const char* what) -> Status {
    if (st) return {};
    if (st.error().code == ErrorCode::kUnavailable) return st;
    eval->warnings.push_back(fmt::format("no {}: {}", what, st.error().message));
    return {};
  };
  if (with_test) {
    StreamedTestRows rows(models);
    if (auto st = streamed(ensemble::score_rows(*eval, rows), "test scores"); !st)
      return st.error();
  }
  auto oob = open_oob(store, models, member_models, regression, n_outputs);
  if (!oob) return oob.error();
  if (*oob)
    if (auto st = streamed(ensemble::estimate_oob(*eval, **oob), "out-of-bag estimate"); !st)
      return st.error();

  ensemble::EnsembleManifest manifest;
  manifest.sweep_id = sweep_id_;
  manifest.task = input.validation_targets.task;
  manifest.n_outputs = n_outputs;
  manifest.combine = eval->combine;
  manifest.method = eval->method;
  if (eval->stacking) manifest.stacking_intercept = eval->stacking->intercept;
  if (spec_.trial.kind == trials::TrialKind::kCommand && spec_.trial.command.data)
    manifest.n_features = spec_.trial.command.data->features;
  for (std::size_t i = 0; i < models.size(); ++i) {
    const Trial& t = *models[i].trial;
    ensemble::ManifestMember mm;
    mm.trial_id = t.id;
    mm.kind = trials::to_string(t.role);
    mm.params = t.params;
    if (t.role == trials::TrialRole::kMember)
      if (auto spec = ensemble::member_spec_from_json(t.extra); spec) mm.bagging = *spec;
    mm.weight = eval->weights[i];
    // A member's plan summary: the data's width and its feature subset.
    if (t.role == trials::TrialRole::kMember) {
      auto plan = store.artifacts().get_artifact(t.id, trials::artifact::kBaggingPlan);
      if (!plan) return plan.error();
      if (*plan && !(*plan)->empty())
        if (auto summary = ensemble::plan_summary_from_json(**plan)) {
          if (manifest.n_features == 0) manifest.n_features = summary->n_features;
          if (static_cast<std::int64_t>(summary->features.size()) < summary->n_features)
            mm.features = summary->features;
        }
    }
    mm.artifact = t.id + "/model.pt";
    mm.metrics = eval->models[i];
    manifest.members.push_back(std::move(mm));
  }
  manifest.ensemble_metrics = eval->ensemble;
  manifest.best_single_trial_id = models[eval->best_model].trial->id;
  manifest.best_single_metrics = eval->models[eval->best_model];
  manifest.oob = eval->oob;

  // The record: the manifest of every model considered (weight 0 = not picked),
  // plus what happened to the members.
  Json record = Json::parse(ensemble::manifest_to_json(manifest));
  std::vector<ensemble::MetricSummary> member_metrics(eval->models.begin(),
                                                      eval->models.begin() + member_models);
  // The candidates the stage chose among, and why.
  Json candidates = Json::array();
  for (const auto& c : eval->candidates) {
    Json jc{{"name", c.name},
            {"detail", c.detail},
            {"cross_validated", c.cross_validated},
            {"cv_loss", c.cv_loss},
            {"validation", ensemble::scores_to_json(c.scores.validation)},
            {"test", ensemble::scores_to_json(c.scores.test)}};
    if (c.cv_accuracy) jc["cv_accuracy"] = *c.cv_accuracy;
    Json weights = Json::object();
    for (std::size_t i = 0; i < c.weights.size(); ++i)
      if (c.weights[i] != 0) weights[models[i].trial->id] = c.weights[i];
    if (c.name == "best_single" && weights.size() == 1)  // name the model, not its index
      jc["detail"] = "the lowest validation loss: " + weights.begin().key();
    jc["weights"] = std::move(weights);
    candidates.push_back(std::move(jc));
  }
  record["candidates"] = std::move(candidates);
  record["chosen"] = eval->method;
  record["choose"] = trials::to_string(recipe.choose);
  record["warnings"] = eval->warnings;
  record["members_requested"] = recipe.members;
  record["members_completed"] = completed_members;
  record["members_failed"] = std::move(failed);
  record["not_used"] = std::move(not_used);
  // Completed search trials past the best kMaxLibraryTrials: not loaded at all.
  record["search_trials_not_considered"] = beyond_library;
  record["mean_member"] = {{"validation", Json::object()}, {"test", Json::object()}};
  for (bool test : {false, true}) {
    ensemble::Scores s;
    for (auto field : {&ensemble::Scores::accuracy, &ensemble::Scores::log_loss,
                       &ensemble::Scores::mse, &ensemble::Scores::rmse})
      s.*field = mean_of(member_metrics, test, field);
    record["mean_member"][test ? "test" : "validation"] = ensemble::scores_to_json(s);
  }

  // The manifest keeps only the models with a weight (selection may skip some;
  // a stacking coefficient may be negative).
  std::erase_if(manifest.members, [](const auto& m) { return m.weight == 0; });
  auto& records = store.artifacts();
  if (auto st = records.put_sweep_record(sweep_id_, kEnsembleRecordArtifact, record.dump(2)); !st)
    return st.error();
  if (auto st = records.put_sweep_record(sweep_id_, kEnsembleManifestArtifact,
                                         ensemble::manifest_to_json(manifest));
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
                               {"best_single", manifest.best_single_trial_id}});
  return true;
}

}  // namespace hpo::scheduler
