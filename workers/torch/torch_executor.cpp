// The torch executor turns one trial into a training run and its outcome into
// a TrialResult. Everything a user can get wrong (a parameter value the recipe
// cannot use, a missing file, a model that does not fit the data, a diverging
// loss) fails the trial without a retry: the same attempt would fail again.
// Only a failure to store the artifacts (Redis away) or a lost data-parallel
// rank is retryable.
//
// Data-parallel trials (trial.data_parallel.replicas = k > 1) run their k ranks
// as threads of this process, each with its own ParallelGroup (Gloo over
// loopback) and its share of the slot's threads (GPU r of the slots on CUDA);
// rank 0 runs on the caller's thread with the real reporter, the others follow
// its stop_reason(). Threads rather than processes: the agent already owns the
// k slots and a rank's failure surfaces as an exception in its own thread.
#include "workers/torch/torch_executor.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "ensemble/bagging.hpp"
#include "ensemble/bagging_json.hpp"
#include "workers/outcome.hpp"
#include "workers/torch/trainer.hpp"

namespace hpo::workers {
namespace {

namespace tt = torch_trainer;

trials::TrialResult failed(std::string error, bool retryable = false) {
  trials::TrialResult r;
  r.outcome = trials::TrialState::kFailed;
  r.error = std::move(error);
  r.retryable = retryable;
  return r;
}

// An ensemble member trains on its bagging plan's rows (and feature subset for
// tabular data); its seed comes from the plan, so every member differs.
Status apply_member_plan(const trials::Trial& trial, tt::PreparedData& data,
                         tt::TrainOptions& options, Reporter& reporter) {
  auto spec = ensemble::member_spec_from_json(trial.extra);
  if (!spec) {
    if (trial.kind == "member") return spec.error();
    return {};  // an `extra` of some other kind: not ours
  }
  const std::int64_t features = data.sample_shape.size() == 1 ? data.sample_shape[0] : 1;
  auto plan = ensemble::plan_member(*spec, data.train.rows, features);
  data.oob = tt::gather(data.train, plan.oob_rows);
  data.oob.row_ids = plan.oob_rows;  // training-row indices, as the OOB estimate expects
  data.has_oob = true;
  data.train = tt::gather(data.train, plan.rows);
  options.seed = plan.train_seed;
  if (data.sample_shape.size() == 1 && static_cast<std::int64_t>(plan.features.size()) < features) {
    tt::select_features(data, plan.features);
    options.feature_index = plan.features;
    options.input_features = features;
  } else if (data.sample_shape.size() != 1 && spec->max_features < 1.0) {
    reporter.log(
        "torch: feature subspaces apply to tabular data only; this member uses all pixels");
  }
  reporter.log(fmt::format("torch: ensemble member {} trains on {} bootstrap rows, {} features",
                           plan.member_index, plan.rows.size(), data.sample_shape[0]));
  return {};
}

// Ranks > 0: no reports or artifacts of their own; they stop when rank 0's trial does.
class RankReporter : public Reporter {
 public:
  explicit RankReporter(const Reporter& main) : main_(main) {}
  bool report(std::int64_t, const trials::Metrics&) override { return true; }
  StopReason stop_reason() const override { return main_.stop_reason(); }
  void log(std::string_view) override {}
  Status put_artifact(const std::string&, const std::string&) override { return {}; }

 private:
  const Reporter& main_;
};

constexpr std::chrono::seconds kRankTimeout{60};

tt::TrainOutput train_data_parallel(const trials::ResolvedTorchConfig& config,
                                    const tt::PreparedData& data, const tt::TrainOptions& options,
                                    const trials::DataParallel& dp, const TrialTask& task,
                                    Reporter& reporter) {
  const int k = dp.replicas;
  namespace fs = std::filesystem;
  const fs::path dir = task.work_dir.empty() ? fs::temp_directory_path() : fs::path(task.work_dir);
  const std::string store =
      (dir / fmt::format("c10d-{}-{}-{}", task.trial.id, task.trial.attempt, ::getpid())).string();
  std::error_code ignored;
  fs::remove(store, ignored);
  std::vector<tt::TrainOutput> outs(static_cast<std::size_t>(k));
  auto rank_main = [&](int r, Reporter& rep) {
    auto group = tt::ParallelGroup::connect(
        {r, k, store, dp.average, dp.average_every, std::chrono::milliseconds(kRankTimeout)});
    auto& out = outs[static_cast<std::size_t>(r)];
    if (!group) {
      out.end = tt::TrainOutput::End::kFailed;
      out.error = group.error().message;
      return;
    }
    auto o = options;
    o.threads = std::max(1, options.threads / k);
    if (r < static_cast<int>(task.gpus.size())) o.gpu = task.gpus[static_cast<std::size_t>(r)];
    o.group = group->get();
    out = tt::train_model(config, data, o, rep);
  };
  RankReporter follower(reporter);
  std::vector<std::thread> ranks;
  for (int r = 1; r < k; ++r) ranks.emplace_back(rank_main, r, std::ref(follower));
  rank_main(0, reporter);
  for (auto& t : ranks) t.join();
  fs::remove(store, ignored);
  for (int r = 0; r < k; ++r) {
    auto& out = outs[static_cast<std::size_t>(r)];
    if (out.end == tt::TrainOutput::End::kFailed) {
      out.error = fmt::format("data-parallel rank {} of {}: {}", r, k, out.error);
      return std::move(out);
    }
  }
  return std::move(outs[0]);
}

}  // namespace

TorchExecutor::TorchExecutor() : cache_(std::make_shared<tt::DatasetCache>()) {}
TorchExecutor::TorchExecutor(std::shared_ptr<tt::DatasetCache> cache) : cache_(std::move(cache)) {}

trials::TrialResult TorchExecutor::run(const TrialTask& task, Reporter& reporter) {
  if (!task.spec || task.spec->trial.kind != trials::TrialKind::kTorch)
    return failed("torch executor: the trial's spec is not of kind torch");
  const auto& spec = *task.spec;
  auto config = trials::resolve(spec.trial.torch, task.trial.params);
  if (!config) return failed(config.error().message);
  if (task.trial.kind == "member")  // the ensemble's own training budget, when it sets one
    if (auto member = ensemble::member_spec_from_json(task.trial.extra); member) {
      if (member->epochs) config->epochs = *member->epochs;
      if (member->subset) config->data.subset = *member->subset;
    }
  auto data = tt::prepare_data(config->data, config->task, *cache_);
  if (!data) return failed(data.error().message);

  tt::TrainOptions options;
  options.threads = task.threads;
  options.gpu = task.gpus.empty() ? -1 : task.gpus.front();
  options.seed = static_cast<std::uint64_t>(config->seed);
  if (!task.trial.extra.empty())
    if (auto st = apply_member_plan(task.trial, *data, options, reporter); !st)
      return failed("ensemble member plan: " + st.error().message);
  reporter.log(fmt::format("torch: {} train / {} validation / {} test rows, {} threads{}",
                           data->train.rows, data->validation.rows, data->test.rows,
                           options.threads,
                           options.gpu >= 0 ? fmt::format(", gpu {}", options.gpu) : ""));

  const auto& dp = spec.trial.data_parallel;
  auto out = dp.replicas > 1 ? train_data_parallel(*config, *data, options, dp, task, reporter)
                             : tt::train_model(*config, *data, options, reporter);
  switch (out.end) {
    case tt::TrainOutput::End::kStopped: {
      auto reason = reporter.stop_reason();
      auto r = stopped_result(reason == StopReason::kNone ? StopReason::kPruned : reason,
                              spec.trial.timeout_s);
      r.metrics = out.metrics;
      return r;
    }
    case tt::TrainOutput::End::kDiverged:
    case tt::TrainOutput::End::kFailed: {
      // A lost rank (timeout, closed connection) may well succeed on a retry.
      auto r = failed(out.error,
                      /*retryable=*/dp.replicas > 1 && out.end == tt::TrainOutput::End::kFailed);
      r.metrics = out.metrics;
      return r;
    }
    case tt::TrainOutput::End::kCompleted:
      break;
  }

  const std::pair<const char*, std::string> artifacts[] = {
      {"model.pt", std::move(out.model_bytes)},
      {"val_predictions", tt::encode_predictions(out.val_predictions)},
      {"test_predictions", out.has_test ? tt::encode_predictions(out.test_predictions) : ""},
      {"oob_predictions", out.has_oob ? tt::encode_predictions(out.oob_predictions) : ""}};
  for (const auto& [name, bytes] : artifacts) {
    if (bytes.empty()) continue;
    if (auto st = reporter.put_artifact(name, bytes); !st)
      return failed(
          fmt::format("storing artifact {} ({} bytes): {}", name, bytes.size(), st.error().message),
          /*retryable=*/true);
  }

  trials::TrialResult r;
  r.outcome = trials::TrialState::kCompleted;
  r.metrics = std::move(out.metrics);
  auto it = r.metrics.find(spec.objective.metric);
  if (it == r.metrics.end()) {
    std::string names;
    for (const auto& [name, v] : r.metrics) names += (names.empty() ? "" : ", ") + name;
    auto f = failed(fmt::format("the objective metric '{}' is not reported by kind torch ({})",
                                spec.objective.metric, names));
    f.metrics = std::move(r.metrics);
    return f;
  }
  r.value = it->second;
  return r;
}

}  // namespace hpo::workers
