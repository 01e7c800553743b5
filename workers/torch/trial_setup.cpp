#include "workers/torch/trial_setup.hpp"

#include <fmt/format.h>

#include "ensemble/bagging.hpp"
#include "ensemble/bagging_json.hpp"
#include "trials/artifacts.hpp"
#include "trials/trial_plan.hpp"

namespace hpo::workers::torch_trainer {
namespace {

// An ensemble member trains on its bagging plan's rows (and feature subset for
// tabular data); its seed comes from the plan, so every member differs.
Status apply_member_plan(const ensemble::MemberSpec& spec, PreparedData& data,
                         TrainOptions& options, std::string& summary, Reporter& reporter) {
  const std::int64_t features = data.sample_shape.size() == 1 ? data.sample_shape[0] : 1;
  auto plan = ensemble::plan_member(spec, data.train.rows, features);
  summary = ensemble::plan_summary_json(plan);
  data.oob = gather(data.train, plan.oob_rows);
  data.oob.row_ids = plan.oob_rows;  // training-row indices, as the OOB estimate expects
  data.has_oob = true;
  data.train = gather(data.train, plan.rows);
  options.seed = plan.train_seed;
  if (data.sample_shape.size() == 1 && static_cast<std::int64_t>(plan.features.size()) < features) {
    select_features(data, plan.features);
    options.feature_index = plan.features;
    options.input_features = features;
  } else if (data.sample_shape.size() != 1 && spec.max_features < 1.0) {
    reporter.log(
        "torch: feature subspaces apply to tabular data only; this member uses all pixels");
  }
  reporter.log(fmt::format("torch: ensemble member {} trains on {} bootstrap rows, {} features",
                           plan.member_index, plan.rows.size(), data.sample_shape[0]));
  return {};
}

}  // namespace

Result<TrialSetup> setup_trial(const trials::SweepSpec& spec, const trials::Trial& trial,
                               int threads, int gpu, DatasetCache& cache, Reporter& reporter,
                               const std::vector<std::string>& data_roots) {
  auto config = trials::resolve(spec.trial.torch, trial.params);
  if (!config) return config.error();
  // An ensemble member: its bagging plan, and the ensemble's own training budget when it sets one.
  const std::optional<ensemble::MemberSpec>& member = trial.plan.member;
  if (trial.role == trials::TrialRole::kMember && !member) {
    auto m = trials::member_spec_of(trial.plan);
    return Error{m.error().code, "ensemble member plan: " + m.error().message, m.error().fields};
  }
  if (member && member->epochs) config->epochs = *member->epochs;
  if (member && member->subset) config->data.subset = *member->subset;
  // A multi-fidelity trial (trials/trial_plan.hpp): its rung's budget replaces the
  // recipe's epochs or training rows; below the largest budget its last
  // epoch is checkpointed too, for the promotion that resumes it.
  bool pause_at_end = false;
  if (const auto& fid = spec.search.fidelity; fid && trial.role == trials::TrialRole::kTrial) {
    if (!trial.plan.error.empty())
      return Error{ErrorCode::kInvalidArgument, "multi-fidelity record: " + trial.plan.error, {}};
    if (const auto& rung = trial.plan.lineage) {
      const auto budget = static_cast<std::int64_t>(rung->budget);
      if (fid->resource == "epochs") config->epochs = budget;
      if (fid->resource == "subset") config->data.subset = budget;
      pause_at_end = fid->resource == "epochs" && rung->budget < fid->max_budget;
    }
  }
  if (auto st = confine_data_paths(config->data, data_roots); !st) return st.error();
  auto data = prepare_data(config->data, config->task, cache);
  if (!data) return data.error();

  TrialSetup setup{std::move(config).value(), std::move(data).value(), {}};
  setup.options.threads = threads;
  setup.options.gpu = gpu;
  setup.options.seed = static_cast<std::uint64_t>(setup.config.seed);
  setup.options.checkpoint_last = pause_at_end;
  if (member)
    if (auto st =
            apply_member_plan(*member, setup.data, setup.options, setup.plan_summary, reporter);
        !st)
      return st.error();
  return setup;
}

std::vector<std::pair<std::string, std::string>> artifacts_of(TrainOutput& out,
                                                              const std::string& plan_summary) {
  std::vector<std::pair<std::string, std::string>> artifacts;
  if (!plan_summary.empty()) artifacts.emplace_back(trials::artifact::kBaggingPlan, plan_summary);
  if (!out.model_bytes.empty())
    artifacts.emplace_back(trials::artifact::kModel, std::move(out.model_bytes));
  artifacts.emplace_back(trials::artifact::kValPredictions,
                         encode_predictions(out.val_predictions));
  if (out.has_test)
    artifacts.emplace_back(trials::artifact::kTestPredictions,
                           encode_predictions(out.test_predictions));
  if (out.has_oob)
    artifacts.emplace_back(trials::artifact::kOobPredictions,
                           encode_predictions(out.oob_predictions));
  return artifacts;
}

}  // namespace hpo::workers::torch_trainer
