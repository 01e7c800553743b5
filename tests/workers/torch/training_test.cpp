// Real (tiny) trainings through TorchExecutor: a generated CSV, or a few
// hundred Fashion-MNIST images for one epoch.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>
#include <cstdlib>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "ensemble/bagging.hpp"
#include "tests/workers/torch/test_files.hpp"
#include "trials/trial_plan.hpp"
#include "workers/torch/blas_core.hpp"
#include "workers/torch/predictions.hpp"
#include "workers/torch/torch_executor.hpp"

namespace hpo::workers::torch_trainer {
namespace {

using nlohmann::json;
using testing::FakeReporter;
using testing::TempDir;

const std::string kFashion = "/usr/share/datasets/fashion-mnist/";

trials::SweepSpec spec_for(const json& trial, const std::string& metric = "val_accuracy") {
  trials::SweepSpec spec;
  spec.objective.metric = metric;
  spec.objective.maximize = true;
  spec.trial.kind = trials::TrialKind::kTorch;
  std::vector<std::string> consumed;
  std::vector<FieldError> errors;
  trials::parse_torch_recipe(trial, "trial", spec.trial.torch, consumed, errors);
  for (const auto& e : errors) ADD_FAILURE() << e.path << ": " << e.message;
  return spec;
}

TrialTask task_for(const trials::SweepSpec& spec, search::Params params = {}) {
  TrialTask t;
  t.spec = &spec;
  t.trial.id = "s-0";
  t.trial.params = std::move(params);
  t.threads = 2;
  return t;
}

json blobs_trial(const std::string& train) {
  return {
      {"task", "classification"},
      {"model", {{"type", "mlp"}, {"hidden", 16}, {"depth", 1}, {"dropout", "{dropout}"}}},
      {"data",
       {{"format", "csv"}, {"train", train}, {"target", "label"}, {"validation_fraction", 0.25}}},
      {"optimizer", {{"type", "{opt}"}, {"lr", "{lr}"}, {"momentum", 0.9}}},
      {"batch_size", 16},
      {"epochs", 3},
      {"seed", 3}};
}

// The task of an ensemble member with `member`'s bagging plan and budget.
TrialTask member_task(const trials::SweepSpec& spec, const search::Params& params,
                      const ensemble::MemberSpec& member) {
  auto task = task_for(spec, params);
  task.trial.role = hpo::trials::TrialRole::kMember;
  task.trial.plan.member = member;
  return task;
}

// The trainer on the calling thread (these specs are built piecewise, without
// the JSON text a rank process would parse); the worker's own path, every
// trial in a process, is tested by IsolatedTrials below.
TorchExecutorOptions in_process() {
  TorchExecutorOptions o;
  o.isolate = false;
  return o;
}

class TorchTraining : public ::testing::Test {
 protected:
  TempDir dir;
  TorchExecutor executor{std::make_shared<DatasetCache>(), in_process()};
  search::Params params{{"dropout", 0.1}, {"opt", std::string("sgd")}, {"lr", 0.05}};
};

TEST_F(TorchTraining, LearnsACsvTaskAndStoresArtifacts) {
  auto spec = spec_for(blobs_trial(dir.write("t.csv", testing::blobs_csv(300, 1))));
  FakeReporter rep;
  auto r = executor.run(task_for(spec, params), rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  ASSERT_EQ(rep.reports.size(), 3u);
  EXPECT_EQ(rep.reports[2].first, 3);
  EXPECT_GT(r.metrics.at("val_accuracy"), 0.9);
  EXPECT_EQ(r.value, r.metrics.at("val_accuracy"));
  EXPECT_EQ(r.metrics.at("accuracy"), r.metrics.at("val_accuracy"));
  ASSERT_NE(rep.artifact("model.pt"), nullptr);
  EXPECT_GT(rep.artifact("model.pt")->size(), 500u);
  ASSERT_NE(rep.artifact("val_predictions"), nullptr);
  EXPECT_EQ(rep.artifact("test_predictions"), nullptr);  // no test file
  auto m = decode_predictions(*rep.artifact("val_predictions"));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->rows, 75);
  EXPECT_EQ(m->cols, 3);
  double row_sum = m->values[0] + m->values[1] + m->values[2];
  EXPECT_NEAR(row_sum, 1.0, 1e-5);  // probabilities
}

TEST_F(TorchTraining, IsReproducibleWithASeed) {
  auto trial = blobs_trial(dir.write("t.csv", testing::blobs_csv(300, 1)));
  auto spec = spec_for(trial);
  FakeReporter a, b;
  auto ra = executor.run(task_for(spec, params), a);
  auto rb = executor.run(task_for(spec, params), b);
  ASSERT_EQ(ra.outcome, trials::TrialState::kCompleted) << ra.error;
  EXPECT_EQ(ra.metrics.at("val_loss"), rb.metrics.at("val_loss"));
  EXPECT_EQ(*a.artifact("val_predictions"), *b.artifact("val_predictions"));
  EXPECT_EQ(executor.cache().loads(), 1u);  // the second trial used the cached table
  trial["seed"] = 4;
  auto other = spec_for(trial);
  FakeReporter c;
  auto rc = executor.run(task_for(other, params), c);
  EXPECT_NE(rc.metrics.at("val_loss"), ra.metrics.at("val_loss"));
}

// A drain stops a training between two batches with a checkpoint (after the
// one of every finished epoch); the next attempt resumes from it and ends bit
// for bit where an uninterrupted training ends: metrics and predictions (one
// thread; dropout and momentum included, whose state the checkpoint carries).
TEST_F(TorchTraining, AResumedTrainingEndsBitForBitAsAnUninterruptedOne) {
  auto trial = blobs_trial(dir.write("t.csv", testing::blobs_csv(400, 1)));
  trial["epochs"] = 4;
  auto spec = spec_for(trial);
  auto task = task_for(spec, params);
  task.threads = 1;
  FakeReporter whole;
  auto uninterrupted = executor.run(task, whole);
  ASSERT_EQ(uninterrupted.outcome, trials::TrialState::kCompleted) << uninterrupted.error;
  EXPECT_EQ(whole.count("checkpoint"), 3);  // after epochs 1, 2 and 3
  // 300 training rows in batches of 16: 19 a epoch; stop in the second one.
  for (int checks : {25, 19 + 19 + 1}) {
    FakeReporter first;
    first.stop_with = StopReason::kShutdown;
    first.stop_after_checks = checks;
    auto stopped = executor.run(task, first);
    ASSERT_EQ(stopped.outcome, trials::TrialState::kFailed);
    EXPECT_TRUE(stopped.retryable);
    ASSERT_NE(first.artifact("checkpoint"), nullptr);
    EXPECT_EQ(first.artifact("val_predictions"), nullptr);
    FakeReporter second;
    second.artifacts = {{"checkpoint", *first.get_artifact("checkpoint").value()}};
    auto resumed = executor.run(task, second);
    ASSERT_EQ(resumed.outcome, trials::TrialState::kCompleted) << resumed.error;
    EXPECT_TRUE(second.logged({"resuming from a checkpoint"}));
    EXPECT_LT(second.reports.size(), whole.reports.size());  // the earlier epochs were not redone
    EXPECT_EQ(resumed.metrics.at("val_loss"), uninterrupted.metrics.at("val_loss")) << checks;
    EXPECT_EQ(resumed.metrics.at("train_loss"), uninterrupted.metrics.at("train_loss")) << checks;
    EXPECT_EQ(*second.artifact("val_predictions"), *whole.artifact("val_predictions")) << checks;
    EXPECT_EQ(*second.artifact("model.pt"), *whole.artifact("model.pt")) << checks;
  }
  // A checkpoint that is not one fails the attempt with the reason, not the worker.
  FakeReporter garbage;
  garbage.artifacts = {{"checkpoint", "not a checkpoint"}};
  auto bad = executor.run(task, garbage);
  EXPECT_EQ(bad.outcome, trials::TrialState::kFailed);
  EXPECT_NE(bad.error.find("checkpoint"), std::string::npos) << bad.error;
}

// search.multi_fidelity over epochs: a rung's budget replaces the recipe's
// epochs and its last epoch is checkpointed too; the promotion, handed that
// checkpoint, trains only the epochs above it and ends exactly where an
// uninterrupted training of its budget does.
TEST_F(TorchTraining, APromotionResumesTheRungBelowAndEndsAsOneTrainingWould) {
  auto trial = blobs_trial(dir.write("t.csv", testing::blobs_csv(400, 1)));
  trial["epochs"] = 9;  // replaced by the budgets
  auto spec = spec_for(trial);
  search::FidelityConfig fid;
  fid.resource = "epochs";
  fid.min_budget = 2;
  fid.max_budget = 4;
  fid.reduction_factor = 2;
  spec.search.fidelity = fid;
  auto task = task_for(spec, params);
  task.threads = 1;
  task.trial.sweep_id = "s";  // the rung below is trial 0 of sweep "s": "s-0"
  task.trial.plan.lineage = search::Lineage{4, 0, 1, -1, -1, false, "epochs"};
  FakeReporter whole;
  auto uninterrupted = executor.run(task, whole);
  ASSERT_EQ(uninterrupted.outcome, trials::TrialState::kCompleted) << uninterrupted.error;
  EXPECT_EQ(whole.reports.size(), 4u);
  EXPECT_EQ(whole.count("checkpoint"), 3);  // the full budget: none after the last epoch

  task.trial.plan.lineage = search::Lineage{2, 0, 0, -1, -1, false, "epochs"};

  FakeReporter rung;
  auto paused = executor.run(task, rung);
  ASSERT_EQ(paused.outcome, trials::TrialState::kCompleted) << paused.error;
  EXPECT_EQ(rung.reports.size(), 2u);
  EXPECT_EQ(rung.count("checkpoint"), 2);  // its last epoch too
  // The promotion resumes s-0.
  task.trial.plan.lineage = search::Lineage{4, 0, 1, -1, 0, false, "epochs"};
  FakeReporter promoted;
  promoted.artifacts = {{"checkpoint", *rung.get_artifact("checkpoint").value()}};
  auto resumed = executor.run(task, promoted);
  ASSERT_EQ(resumed.outcome, trials::TrialState::kCompleted) << resumed.error;
  EXPECT_TRUE(promoted.logged({"resuming from a checkpoint at epoch 3"}));
  EXPECT_EQ(promoted.reports.size(), 2u);  // epochs 3 and 4 only
  EXPECT_EQ(resumed.metrics.at("val_loss"), uninterrupted.metrics.at("val_loss"));
  EXPECT_EQ(*promoted.artifact("model.pt"), *whole.artifact("model.pt"));
}

// Dropout masks come from the trial's seed alone: two trials training at the same
// time in one process (two slots) give exactly what each gives alone.
TEST_F(TorchTraining, ConcurrentTrialsWithDropoutStayReproducible) {
  auto spec = spec_for(blobs_trial(dir.write("t.csv", testing::blobs_csv(600, 1))));
  search::Params heavy{{"dropout", 0.5}, {"opt", std::string("sgd")}, {"lr", 0.05}};
  FakeReporter alone;
  ASSERT_EQ(executor.run(task_for(spec, heavy), alone).outcome, trials::TrialState::kCompleted);
  for (int round = 0; round < 3; ++round) {
    FakeReporter a, b;
    std::thread other([&] { executor.run(task_for(spec, heavy), b); });
    executor.run(task_for(spec, heavy), a);
    other.join();
    ASSERT_NE(a.artifact("val_predictions"), nullptr);
    ASSERT_NE(b.artifact("val_predictions"), nullptr);
    EXPECT_EQ(*a.artifact("val_predictions"), *alone.artifact("val_predictions")) << round;
    EXPECT_EQ(*b.artifact("val_predictions"), *alone.artifact("val_predictions")) << round;
  }
}

TEST_F(TorchTraining, RegressionReportsRmse) {
  json trial = {{"task", "regression"},
                {"model", {{"type", "mlp"}, {"layers", {16}}}},
                {"data",
                 {{"format", "csv"},
                  {"train", dir.write("r.csv", testing::linear_csv(400, 2))},
                  {"target", "y"},
                  {"test", dir.write("rt.csv", testing::linear_csv(50, 3))}}},
                {"optimizer", {{"type", "adam"}, {"lr", 0.02}}},
                {"schedule", {{"type", "step"}, {"step_size", 10}, {"gamma", 0.5}}},
                {"batch_size", 32},
                {"epochs", 20}};
  auto spec = spec_for(trial, "rmse");
  FakeReporter rep;
  auto r = executor.run(task_for(spec), rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  // y has std ~3.6; a fitted model gets well below that.
  EXPECT_LT(r.metrics.at("rmse"), 1.0);
  EXPECT_LT(r.metrics.at("test_rmse"), 1.0);
  EXPECT_LT(rep.reports.back().second.at("val_loss"), rep.reports.front().second.at("val_loss"));
  auto m = decode_predictions(*rep.artifact("test_predictions"));
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->regression);
  EXPECT_EQ(m->rows, 50);
}

TEST_F(TorchTraining, NanLossFailsWithoutRetry) {
  json trial = {{"task", "regression"},
                {"model", {{"type", "mlp"}, {"layers", {16}}}},
                {"data",
                 {{"format", "csv"},
                  {"train", dir.write("r.csv", testing::linear_csv(200, 2, 1e6))},
                  {"target", "y"}}},
                {"optimizer", {{"type", "sgd"}, {"lr", 1e3}}},
                {"epochs", 50}};
  auto spec = spec_for(trial, "rmse");
  FakeReporter rep;
  auto r = executor.run(task_for(spec), rep);
  EXPECT_EQ(r.outcome, trials::TrialState::kFailed);
  EXPECT_FALSE(r.retryable);
  EXPECT_NE(r.error.find("diverged"), std::string::npos) << r.error;
  EXPECT_LT(rep.reports.size(), 50u);
}

TEST_F(TorchTraining, PruneBetweenBatchesStopsWithinABatch) {
  auto spec = spec_for(blobs_trial(dir.write("t.csv", testing::blobs_csv(3000, 1))));
  FakeReporter rep;
  rep.stop_after_checks = 5;  // the 5th check between batches says "pruned"
  auto r = executor.run(task_for(spec, params), rep);
  EXPECT_EQ(r.outcome, trials::TrialState::kPruned) << r.error;
  EXPECT_EQ(rep.checks, 5);  // it stopped at the check that turned, mid-epoch
  EXPECT_TRUE(rep.reports.empty());
  EXPECT_TRUE(rep.artifacts.empty());
}

TEST_F(TorchTraining, PruneAfterAReportStops) {
  auto trial = blobs_trial(dir.write("t.csv", testing::blobs_csv(300, 1)));
  trial["epochs"] = 10000;
  auto spec = spec_for(trial);
  FakeReporter rep;
  rep.stop_after_reports = 2;
  auto r = executor.run(task_for(spec, params), rep);  // 10,000 epochs unless it stops
  EXPECT_EQ(r.outcome, trials::TrialState::kPruned);
  EXPECT_EQ(rep.reports.size(), 2u);  // it stopped at the report that asked
}

TEST_F(TorchTraining, BadInputsFailWithAClearReason) {
  auto trial = blobs_trial(dir.file("missing.csv"));
  auto spec = spec_for(trial);
  FakeReporter rep;
  auto r = executor.run(task_for(spec, params), rep);
  EXPECT_EQ(r.outcome, trials::TrialState::kFailed);
  EXPECT_FALSE(r.retryable);
  EXPECT_NE(r.error.find("missing.csv"), std::string::npos) << r.error;

  auto good = spec_for(blobs_trial(dir.write("t.csv", testing::blobs_csv(30, 1))));
  auto no_param = executor.run(task_for(good, {{"opt", std::string("sgd")}, {"lr", 0.1}}), rep);
  EXPECT_EQ(no_param.outcome, trials::TrialState::kFailed);
  EXPECT_NE(no_param.error.find("trial.model.dropout"), std::string::npos) << no_param.error;

  auto wrong_metric = spec_for(blobs_trial(dir.file("t.csv")), "f1");
  auto m = executor.run(task_for(wrong_metric, params), rep);
  EXPECT_EQ(m.outcome, trials::TrialState::kFailed);
  EXPECT_NE(m.error.find("'f1'"), std::string::npos) << m.error;
}

TEST_F(TorchTraining, EnsembleMemberTrainsOnItsBootstrapRows) {
  auto spec = spec_for(blobs_trial(dir.write("t.csv", testing::blobs_csv(300, 1))));
  ensemble::MemberSpec member;
  member.member_index = 2;
  member.seed = 99;
  member.max_features = 0.5;
  FakeReporter rep;
  auto r = executor.run(member_task(spec, params, member), rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  EXPECT_TRUE(rep.logged({"member 2", "2 features"}));
  // Same validation rows as a plain trial: the combiner can line members up.
  FakeReporter plain;
  executor.run(task_for(spec, params), plain);
  auto a = decode_predictions(*rep.artifact("val_predictions"));
  auto b = decode_predictions(*plain.artifact("val_predictions"));
  EXPECT_EQ(a->row_ids, b->row_ids);
  EXPECT_NE(a->values, b->values);

  // Its out-of-bag rows, predicted: exactly the training rows its bootstrap did not draw.
  auto config = trials::resolve(spec.trial.torch, params);
  ASSERT_TRUE(config.ok());
  DatasetCache cache;
  auto data = prepare_data(config->data, config->task, cache);
  ASSERT_TRUE(data.ok()) << data.error().message;
  auto plan = ensemble::plan_member(member, data->train.rows, data->sample_shape[0]);
  ASSERT_FALSE(plan.oob_rows.empty());
  ASSERT_NE(rep.artifact("oob_predictions"), nullptr);
  auto oob = decode_predictions(*rep.artifact("oob_predictions"));
  ASSERT_TRUE(oob.ok()) << oob.error().message;
  EXPECT_EQ(oob->row_ids, plan.oob_rows);
  EXPECT_EQ(oob->rows, static_cast<std::int64_t>(plan.oob_rows.size()));
  EXPECT_EQ(oob->cols, a->cols);
  for (std::size_t k = 0; k < plan.oob_rows.size(); ++k)
    EXPECT_EQ(oob->labels[k], data->train.y[static_cast<std::size_t>(plan.oob_rows[k])]);
  // A plain trial has no out-of-bag rows.
  EXPECT_EQ(plain.artifact("oob_predictions"), nullptr);
}

TEST_F(TorchTraining, EnsembleMemberUsesTheEnsemblesTrainingBudget) {
  auto spec = spec_for(blobs_trial(dir.write("t.csv", testing::blobs_csv(300, 1))));
  ensemble::MemberSpec member;
  member.seed = 5;
  member.epochs = 5;
  member.subset = 200;
  FakeReporter rep;
  auto r = executor.run(member_task(spec, params, member), rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  EXPECT_EQ(rep.reports.size(), 5u);  // one per epoch of the member's budget (the recipe says 3)
  EXPECT_EQ(r.metrics.at("epoch"), 5.0);
  EXPECT_TRUE(rep.logged({"150 train / 50 validation"}));  // 200 rows, a quarter validation
}

// A data-parallel sweep spec (parsed, so its JSON travels to the rank processes).
// `overrides` replaces fields of the trial section.
trials::SweepSpec parallel_spec(const std::string& train_csv, int epochs, int replicas = 2,
                                const json& overrides = json::object()) {
  json trial = blobs_trial(train_csv);
  trial["kind"] = "torch";
  trial["epochs"] = epochs;
  trial["data_parallel"] = {{"replicas", replicas}, {"mode", "allreduce"}};
  trial.update(overrides);
  json j = {{"name", "dp"},
            {"objective", {{"metric", "val_accuracy"}, {"mode", "max"}}},
            {"parameters",
             {{"lr", {{"type", "float"}, {"min", 0.01}, {"max", 0.1}}},
              {"opt", {{"type", "categorical"}, {"values", {"sgd"}}}},
              {"dropout", {{"type", "float"}, {"min", 0.0}, {"max", 0.3}}}}},
            {"search", {{"algorithm", "random"}, {"max_trials", 1}}},
            {"trial", trial}};
  auto spec = trials::parse_spec(j.dump());
  EXPECT_TRUE(spec.ok()) << spec.error().message;
  return spec.ok() ? std::move(spec).value() : trials::SweepSpec{};
}

// The pid the executor logged for `rank` ("... rank R of K started (pid P)"), or -1.
pid_t rank_pid(const FakeReporter& rep, int rank) {
  const std::string key = "rank " + std::to_string(rank) + " of ";
  for (const auto& l : rep.logs)
    if (auto at = l.find(key); at != std::string::npos)
      if (auto p = l.find("(pid ", at); p != std::string::npos) return std::stoi(l.substr(p + 5));
  return -1;
}

class DataParallelTrials : public TorchTraining {
 protected:
  TorchExecutor ranks{std::make_shared<DatasetCache>(),
                      TorchExecutorOptions{HPO_TRAIN_RANK_PATH, std::chrono::seconds(20), 20}};
};

// Single-replica trials in the worker's default: a process of their own.
class IsolatedTrials : public TorchTraining {
 protected:
  // A single-replica trial of `epochs` epochs on 300 blobs rows through `executor`.
  trials::TrialResult run_blobs(TorchExecutor& executor, int epochs, FakeReporter& rep) {
    auto spec = parallel_spec(dir.write("t.csv", testing::blobs_csv(300, 1)), epochs, 1);
    auto task = task_for(spec, params);
    task.work_dir = dir.file("");
    return executor.run(task, rep);
  }

  TorchExecutor isolated{std::make_shared<DatasetCache>(),
                         TorchExecutorOptions{HPO_TRAIN_RANK_PATH, std::chrono::seconds(20), 20}};
};

TEST_F(IsolatedTrials, ATrialTrainsInAProcessOfItsOwn) {
  FakeReporter rep;
  auto r = run_blobs(isolated, 3, rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  EXPECT_EQ(rep.reports.size(), 3u);
  EXPECT_GT(r.metrics.at("val_accuracy"), 0.9);
  EXPECT_NE(rep.artifact("model.pt"), nullptr);
  const pid_t p0 = rank_pid(rep, 0);
  ASSERT_GT(p0, 0);
  EXPECT_NE(p0, ::getpid());
  EXPECT_NE(::kill(p0, 0), 0);  // reaped
}

// The worker's path: the rank process leaves its checkpoints for the executor
// to store, stops with one on SIGUSR1 (a drain), and the next attempt's
// process resumes from the stored one and ends where an uninterrupted run does.
TEST_F(IsolatedTrials, ADrainedTrialResumesInTheNextAttemptsProcess) {
  auto spec = parallel_spec(dir.write("t.csv", testing::blobs_csv(2000, 1)), 40, 1);
  auto task = task_for(spec, params);
  task.threads = 1;
  task.work_dir = dir.file("");
  FakeReporter whole;
  auto uninterrupted = isolated.run(task, whole);
  ASSERT_EQ(uninterrupted.outcome, trials::TrialState::kCompleted) << uninterrupted.error;
  EXPECT_EQ(whole.count("checkpoint"), 39);
  FakeReporter first;
  first.on_report = [&](std::int64_t step) {
    if (step == 2) first.stopped = StopReason::kShutdown;  // the drain begins
  };
  auto stopped = isolated.run(task, first);
  ASSERT_EQ(stopped.outcome, trials::TrialState::kFailed) << "finished before the drain reached it";
  EXPECT_TRUE(stopped.retryable);
  ASSERT_GE(first.count("checkpoint"), 2);
  FakeReporter second;
  second.artifacts = {{"checkpoint", *first.get_artifact("checkpoint").value()}};
  auto resumed = isolated.run(task, second);
  ASSERT_EQ(resumed.outcome, trials::TrialState::kCompleted) << resumed.error;
  EXPECT_TRUE(second.logged({"resuming from a checkpoint"}));
  EXPECT_EQ(resumed.metrics.at("val_loss"), uninterrupted.metrics.at("val_loss"));
  EXPECT_EQ(*second.artifact("val_predictions"), *whole.artifact("val_predictions"));
}

// A poison trial (a model far beyond its memory limit) fails alone, with the
// reason, while a healthy trial trains beside it in the same executor process.
TEST_F(IsolatedTrials, APoisonTrialFailsAloneWithItsReason) {
  auto healthy = parallel_spec(dir.write("t.csv", testing::blobs_csv(2000, 1)), 20, 1);
  auto poison = parallel_spec(dir.file("t.csv"), 3, 1,
                              {{"model", {{"type", "mlp"}, {"layers", {30000, 30000}}}},
                               {"resources", {{"memory_gb", 1}}}});

  FakeReporter healthy_rep;
  trials::TrialResult healthy_result;
  std::thread beside([&] {
    auto task = task_for(healthy, params);
    task.work_dir = dir.file("");
    healthy_result = isolated.run(task, healthy_rep);
  });
  FakeReporter rep;
  auto task = task_for(poison, params);
  task.trial.id = "s-1";  // its own attempt directory, as on a worker
  task.work_dir = dir.file("");
  auto r = isolated.run(task, rep);
  beside.join();
  EXPECT_EQ(r.outcome, trials::TrialState::kFailed);
  // 30000 x 30000 float32 weights are 3.4 GiB: the allocation fails under the
  // 1 GiB limit (a LibTorch error, not retried) or the process dies (retried).
  const bool named =
      r.error.find("memory") != std::string::npos || r.error.find("alloc") != std::string::npos;
  EXPECT_TRUE(named) << r.error;
  EXPECT_EQ(healthy_result.outcome, trials::TrialState::kCompleted) << healthy_result.error;
  EXPECT_EQ(healthy_rep.reports.size(), 20u);
}

// Trials take processes started ahead (LibTorch already loaded), the pool
// starts the next one at once, and a trial's memory limit still reaches the
// process it took (set after the start, with prlimit).
// An executor whose trials take their processes from `pool` (filled here).
TorchExecutor started_ahead(const std::shared_ptr<StandbyRanks>& pool) {
  TorchExecutorOptions o{HPO_TRAIN_RANK_PATH, std::chrono::seconds(20), 20};
  o.standby = pool;
  TorchExecutor executor{std::make_shared<DatasetCache>(), o};
  executor.prestart();
  return executor;
}

// Without an artifact folder a model whose weights the store cannot keep is
// not trained at all (its model.pt would be refused at the end, every
// attempt): the trial fails at once, saying how big it is and what to do.
TEST_F(IsolatedTrials, AModelTheStoreCannotKeepIsNotTrained) {
  auto big = parallel_spec(dir.write("t.csv", testing::blobs_csv(300, 1)), 3, 1,
                           {{"model", {{"type", "mlp"}, {"layers", {9000, 9000}}}}});
  FakeReporter rep;
  rep.inline_limit = std::int64_t{256} << 20;
  auto task = task_for(big, params);
  task.work_dir = dir.file("");
  auto r = isolated.run(task, rep);
  EXPECT_EQ(r.outcome, trials::TrialState::kFailed);
  EXPECT_FALSE(r.retryable);
  EXPECT_NE(r.error.find("weighs about 309 MiB"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("--artifacts"), std::string::npos) << r.error;
  EXPECT_TRUE(rep.reports.empty());
}

// A checkpoint the store refuses (too large without an artifact folder) ends
// the attempt at once, failed and not retried, instead of training on
// without the protection the next attempt would resume from.
TEST_F(IsolatedTrials, ACheckpointTheStoreRefusesFailsTheAttempt) {
  auto spec = parallel_spec(dir.write("t.csv", testing::blobs_csv(300, 1)), 50, 1);
  FakeReporter rep;
  rep.inline_limit = 1000;  // the model's hidden layers weigh nothing; its checkpoint more
  auto task = task_for(spec, params);
  task.work_dir = dir.file("");
  auto r = isolated.run(task, rep);
  EXPECT_EQ(r.outcome, trials::TrialState::kFailed);
  EXPECT_FALSE(r.retryable);
  EXPECT_NE(r.error.find("could not be stored"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("--artifacts"), std::string::npos) << r.error;
  EXPECT_LT(rep.reports.size(), 50u);
}

TEST_F(IsolatedTrials, TrialsTakeProcessesStartedAheadAndThePoolRefills) {
  auto pool = std::make_shared<StandbyRanks>(1, 2);
  TorchExecutor ahead = started_ahead(pool);
  ASSERT_EQ(pool->ready(), 1u);
  auto spec = parallel_spec(dir.write("t.csv", testing::blobs_csv(300, 1)), 3, 1);
  for (int i = 0; i < 2; ++i) {
    FakeReporter rep;
    auto task = task_for(spec, params);
    task.trial.id = "s-" + std::to_string(i);
    task.work_dir = dir.file("");
    auto r = ahead.run(task, rep);
    ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
    EXPECT_EQ(rep.reports.size(), 3u);
    EXPECT_GT(r.metrics.at("val_accuracy"), 0.9);
    EXPECT_TRUE(rep.logged({"training process started ahead"}));
    EXPECT_EQ(pool->ready(), 1u);  // the next one is waiting
  }
  auto poison = parallel_spec(dir.file("t.csv"), 3, 1,
                              {{"model", {{"type", "mlp"}, {"layers", {30000, 30000}}}},
                               {"resources", {{"memory_gb", 1}}}});
  FakeReporter rep;
  auto task = task_for(poison, params);
  task.trial.id = "s-9";
  task.work_dir = dir.file("");
  auto r = ahead.run(task, rep);
  EXPECT_TRUE(rep.logged({"training process started ahead"}));
  EXPECT_EQ(r.outcome, trials::TrialState::kFailed);
  const bool named =
      r.error.find("memory") != std::string::npos || r.error.find("alloc") != std::string::npos;
  EXPECT_TRUE(named) << r.error;
}

// A trial with other threads than the pool's starts its own process.
TEST_F(IsolatedTrials, ATrialWithOtherThreadsStartsItsOwnProcess) {
  auto pool = std::make_shared<StandbyRanks>(1, 1);
  TorchExecutor ahead = started_ahead(pool);
  auto spec = parallel_spec(dir.write("t.csv", testing::blobs_csv(300, 1)), 2, 1);
  FakeReporter rep;
  auto task = task_for(spec, params);  // 2 threads
  task.work_dir = dir.file("");
  auto r = ahead.run(task, rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  EXPECT_FALSE(rep.logged({"started ahead"}));
  EXPECT_TRUE(rep.logged({"rank 0 of 1 started (pid "}));
  EXPECT_EQ(pool->ready(), 1u);  // still waiting for a trial of its kind
}

// The executor's OPENBLAS_CORETYPE reaches the trial's process, whose OpenBLAS loads those
// kernels (the process logs which), and the process trains with them. An OPENBLAS_CORETYPE
// the worker itself was started with is the user's choice and wins (some machines set one).
TEST_F(IsolatedTrials, TheTrialsProcessLoadsTheKernelsItIsGiven) {
  const auto core = hpo::workers::best_blas_core(hpo::workers::cpu_features());
  if (core.empty() || hpo::workers::loaded_blas_core().empty())
    GTEST_SKIP() << "no AVX or no OpenBLAS here";
  TorchExecutorOptions o{HPO_TRAIN_RANK_PATH, std::chrono::seconds(20), 20};
  o.blas_core = core;
  TorchExecutor executor{std::make_shared<DatasetCache>(), o};
  FakeReporter rep;
  auto r = run_blobs(executor, 2, rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  EXPECT_GT(r.metrics.at("val_accuracy"), 0.9);
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  const std::string expected = user && *user ? std::string(user) : core;
  std::string lines;
  for (const auto& l : rep.logs) lines += l + "\n";
  EXPECT_TRUE(rep.logged({"torch: OpenBLAS kernels " + expected})) << expected << " in:\n" << lines;
}

TEST_F(DataParallelTrials, RunsItsRanksAsProcesses) {
  auto spec = parallel_spec(dir.write("t.csv", testing::blobs_csv(300, 1)), 3);
  FakeReporter rep;
  auto task = task_for(spec, params);
  task.work_dir = dir.file("");
  auto r = ranks.run(task, rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  EXPECT_EQ(rep.reports.size(), 3u);  // rank 0 only
  EXPECT_GT(r.metrics.at("val_accuracy"), 0.9);
  EXPECT_NE(rep.artifact("model.pt"), nullptr);
  EXPECT_NE(rep.artifact("val_predictions"), nullptr);
  const pid_t p0 = rank_pid(rep, 0), p1 = rank_pid(rep, 1);
  ASSERT_GT(p0, 0);
  ASSERT_GT(p1, 0);
  EXPECT_NE(p0, ::getpid());  // separate processes, and both reaped
  EXPECT_NE(::kill(p0, 0), 0);
  EXPECT_NE(::kill(p1, 0), 0);
  EXPECT_TRUE(rep.logged({"data-parallel, 2 ranks"}));  // rank 0's own log line came through
}

TEST_F(DataParallelTrials, AKilledRankFailsTheAttemptPromptlyAndTheRetryCompletes) {
  auto spec = parallel_spec(dir.write("t.csv", testing::blobs_csv(2000, 1)), 30);
  FakeReporter rep;
  rep.on_report = [&](std::int64_t step) {
    if (step != 1) return;
    const pid_t victim = rank_pid(rep, 1);
    ASSERT_GT(victim, 0);
    ::kill(victim, SIGKILL);
  };
  auto task = task_for(spec, params);
  task.work_dir = dir.file("");
  auto r = ranks.run(task, rep);
  EXPECT_EQ(r.outcome, trials::TrialState::kFailed);
  EXPECT_TRUE(r.retryable);
  EXPECT_NE(r.error.find("rank 1 of 2 killed by signal 9"), std::string::npos) << r.error;
  EXPECT_LT(rep.reports.size(), 30u);  // the survivor did not train on to the end
  const pid_t p0 = rank_pid(rep, 0);
  ASSERT_GT(p0, 0);
  EXPECT_NE(::kill(p0, 0), 0);  // rank 0 did not outlive the attempt

  // The retry: the next attempt of the same trial runs to the end.
  FakeReporter again;
  task.trial.attempt = 1;
  auto retry = ranks.run(task, again);
  ASSERT_EQ(retry.outcome, trials::TrialState::kCompleted) << retry.error;
  EXPECT_EQ(again.reports.size(), 30u);
  EXPECT_NE(again.artifact("model.pt"), nullptr);
}

TEST_F(DataParallelTrials, PruningStopsEveryRank) {
  auto spec = parallel_spec(dir.write("t.csv", testing::blobs_csv(2000, 1)), 200);
  FakeReporter rep;
  rep.stop_after_reports = 2;
  auto task = task_for(spec, params);
  task.work_dir = dir.file("");
  auto r = ranks.run(task, rep);
  EXPECT_EQ(r.outcome, trials::TrialState::kPruned) << r.error;
  EXPECT_LT(rep.reports.size(), 200u);
  const pid_t p1 = rank_pid(rep, 1);
  ASSERT_GT(p1, 0);
  EXPECT_NE(::kill(p1, 0), 0);
}

TEST_F(DataParallelTrials, ABadConfigFailsWithoutRetry) {
  auto spec = parallel_spec(dir.file("missing.csv"), 2);
  FakeReporter rep;
  auto task = task_for(spec, params);
  task.work_dir = dir.file("");
  auto r = ranks.run(task, rep);
  EXPECT_EQ(r.outcome, trials::TrialState::kFailed);
  EXPECT_FALSE(r.retryable);
  EXPECT_NE(r.error.find("missing.csv"), std::string::npos) << r.error;
}

TEST_F(TorchTraining, ASweepSpecParsesAndItsTrialsRun) {
  json j = {{"name", "blobs"},
            {"objective", {{"metric", "accuracy"}, {"mode", "max"}}},
            {"parameters",
             {{"lr", {{"type", "float"}, {"min", 0.01}, {"max", 0.1}, {"log", true}}},
              {"opt", {{"type", "categorical"}, {"values", {"sgd", "adam"}}}},
              {"dropout", {{"type", "float"}, {"min", 0.0}, {"max", 0.3}}}}},
            {"search", {{"algorithm", "random"}, {"max_trials", 2}}},
            {"trial", blobs_trial(dir.write("t.csv", testing::blobs_csv(300, 1)))}};
  j["trial"]["kind"] = "torch";
  auto spec = trials::parse_spec(j.dump());
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  FakeReporter rep;
  auto r = executor.run(task_for(*spec, params), rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  EXPECT_EQ(r.value, r.metrics.at("accuracy"));

  j["trial"]["optimizer"]["lr"] = "{learning_rate}";  // names no parameter
  j["trial"]["model"]["dropout"] = 2;                 // out of range
  auto bad = trials::parse_spec(j.dump());
  ASSERT_FALSE(bad.ok());
  auto has = [&](const std::string& path) {
    for (const auto& f : bad.error().fields)
      if (f.path == path) return true;
    return false;
  };
  EXPECT_TRUE(has("trial.model.dropout")) << bad.error().message;
  EXPECT_NE(bad.error().message.find("learning_rate"), std::string::npos) << bad.error().message;
}

TEST(TorchExamples, TheFashionMnistExampleParses) {
  std::ifstream in(std::string(HPO_SOURCE_DIR) + "/examples/fashion_mnist_mlp.json");
  ASSERT_TRUE(in) << "examples/fashion_mnist_mlp.json";
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto spec = trials::parse_spec(text);
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->trial.kind, trials::TrialKind::kTorch);
  search::Params params{{"lr", 0.01},
                        {"width", std::int64_t{128}},
                        {"depth", std::int64_t{2}},
                        {"dropout", 0.1},
                        {"opt", std::string("adam")}};
  auto config = trials::resolve(spec->trial.torch, params);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->model.layers, (std::vector<std::int64_t>{128, 128}));
}

TEST(TorchExamples, TheEnsembleExampleParsesAndResolves) {
  std::ifstream in(std::string(HPO_SOURCE_DIR) + "/examples/fashion_mnist_ensemble.json");
  ASSERT_TRUE(in) << "examples/fashion_mnist_ensemble.json";
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto spec = trials::parse_spec(text);
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  ASSERT_TRUE(spec->ensemble.has_value());
  EXPECT_EQ(spec->ensemble->members, 8);
  EXPECT_EQ(spec->ensemble->epochs, 8);  // members train longer, on every row
  EXPECT_EQ(spec->ensemble->subset, 0);
  auto config = trials::resolve(spec->trial.torch,
                                {{"lr", 0.002}, {"dropout", 0.3}, {"dense", std::int64_t{256}}});
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->model.type, trials::ModelType::kCnn);
  EXPECT_EQ(config->model.dense, (std::vector<std::int64_t>{256}));
}

TEST(TorchFashionMnist, CnnBeatsChanceOnAFewHundredImages) {
  if (!std::filesystem::exists(kFashion + "train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  json trial = {{"task", "classification"},
                {"model",
                 {{"type", "cnn"},
                  {"channels", {8, 16}},
                  {"kernel", 3},
                  {"pool", "each"},
                  {"batch_norm", true},
                  {"dense", {32}}}},
                {"data",
                 {{"format", "idx"},
                  {"train_images", kFashion + "train-images-idx3-ubyte.gz"},
                  {"train_labels", kFashion + "train-labels-idx1-ubyte.gz"},
                  {"test_images", kFashion + "t10k-images-idx3-ubyte.gz"},
                  {"test_labels", kFashion + "t10k-labels-idx1-ubyte.gz"},
                  {"subset", 600},
                  {"test_subset", 200},
                  {"validation_fraction", 0.2}}},
                {"optimizer", {{"type", "adam"}, {"lr", 0.003}}},
                {"batch_size", 32},
                {"epochs", 2}};
  auto spec = spec_for(trial, "val_accuracy");
  TorchExecutor executor{std::make_shared<DatasetCache>(), in_process()};
  FakeReporter rep;
  auto r = executor.run(task_for(spec), rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  EXPECT_GT(r.metrics.at("val_accuracy"), 0.4);  // chance: 0.1
  EXPECT_GT(r.metrics.at("test_accuracy"), 0.4);
  auto m = decode_predictions(*rep.artifact("test_predictions"));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->rows, 200);
  EXPECT_EQ(m->cols, 10);
}

}  // namespace
}  // namespace hpo::workers::torch_trainer
