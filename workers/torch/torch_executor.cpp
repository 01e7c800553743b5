// The torch executor turns one trial into a training run and its outcome into
// a TrialResult. Everything a user can get wrong (a parameter value the recipe
// cannot use, a missing file, a model that does not fit the data, a diverging
// loss) fails the trial without a retry: the same attempt would fail again.
// Only a failure to store the artifacts (Redis away) is retryable.
#include "workers/torch/torch_executor.hpp"

#include <fmt/format.h>

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
  data.train = tt::gather(data.train, plan.rows);
  options.seed = plan.train_seed;
  if (data.sample_shape.size() == 1 && static_cast<std::int64_t>(plan.features.size()) < features) {
    tt::select_features(data, plan.features);
    options.feature_index = plan.features;
  } else if (data.sample_shape.size() != 1 && spec->max_features < 1.0) {
    reporter.log(
        "torch: feature subspaces apply to tabular data only; this member uses all pixels");
  }
  reporter.log(fmt::format("torch: ensemble member {} trains on {} bootstrap rows, {} features",
                           plan.member_index, plan.rows.size(), data.sample_shape[0]));
  return {};
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

  auto out = tt::train_model(*config, *data, options, reporter);
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
      auto r = failed(out.error);
      r.metrics = out.metrics;
      return r;
    }
    case tt::TrainOutput::End::kCompleted:
      break;
  }

  const std::pair<const char*, std::string> artifacts[] = {
      {"model.pt", std::move(out.model_bytes)},
      {"val_predictions", tt::encode_predictions(out.val_predictions)},
      {"test_predictions", out.has_test ? tt::encode_predictions(out.test_predictions) : ""}};
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
