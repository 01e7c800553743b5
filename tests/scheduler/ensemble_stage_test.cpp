// EnsembleStage driven through SweepController against the real RedisStore
// (tests/support/test_store.hpp, through the sweep fixture): members are
// created with the right parameters and bagging seeds, never more than
// max_concurrent at once, retried like trials after a lost lease, the record
// is written from the members' prediction artifacts when all are done; every
// member failing, or trials that store no predictions, fail the sweep with the
// reason; a fresh stage (a restarted scheduler) repeats no member.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include <cmath>
#include <functional>
#include <set>

#include <nlohmann/json.hpp>

#include "ensemble/bagging.hpp"
#include "ensemble/bagging_json.hpp"
#include "ensemble/evaluate.hpp"
#include "ensemble/manifest.hpp"
#include "ensemble/prediction_file.hpp"
#include "ensemble/rng.hpp"
#include "scheduler/ensemble_stage.hpp"
#include "scheduler/sweep_controller.hpp"
#include "tests/scheduler/sweep_fixture.hpp"
#include "tests/support/redis_server.hpp"
#include "trials/store.hpp"

namespace hpo::scheduler {
namespace {

using Json = nlohmann::json;

constexpr int kRows = 200, kClasses = 3;

// choose "bagged": the stage returns the bagged combination (what most tests
// here look at); the candidates are tested with "auto".
Json torch_spec(int members, const Json& base, const std::string& combine = "soft_vote",
                const std::string& choose = "bagged") {
  return {
      {"name", "ens"},
      {"objective", {{"metric", "val_accuracy"}, {"mode", "max"}}},
      {"parameters", {{"lr", {{"type", "float"}, {"min", 0.001}, {"max", 0.1}}}}},
      {"search", {{"algorithm", "random"}, {"max_trials", 4}, {"max_concurrent", 2}, {"seed", 3}}},
      {"trial",
       {{"kind", "torch"},
        {"model", {{"type", "mlp"}}},
        {"data", {{"format", "csv"}, {"train", "/nonexistent.csv"}, {"target", "y"}}},
        {"optimizer", {{"lr", "{lr}"}}},
        {"max_attempts", 3}}},
      {"ensemble",
       {{"members", members},
        {"base", base},
        {"combine", combine},
        {"choose", choose},
        {"seed", 42}}}};
}

std::vector<int> labels() {
  std::vector<int> y(kRows);
  for (int r = 0; r < kRows; ++r) y[r] = r % kClasses;
  return y;
}

// A model that is right on ~70% of the rows, wrong differently per seed.
std::string predictions(std::uint64_t seed) {
  ensemble::PredictionFile f;
  f.values = ensemble::Matrix(kRows, kClasses, 0.1f);
  ensemble::Rng rng(seed);
  auto y = labels();
  for (int r = 0; r < kRows; ++r) {
    int c = rng.next() % 10 < 7 ? y[r] : static_cast<int>(rng.next() % kClasses);
    f.values(r, c) = 0.8f;
    f.labels.push_back(static_cast<float>(y[r]));
    f.row_ids.push_back(r);
  }
  return ensemble::encode_prediction_file(f);
}

struct Fixture : testing::SweepFixture {
  std::unique_ptr<SweepController> controller;

  explicit Fixture(const Json& j) : SweepFixture(j.dump()) { restart(); }
  // A fresh controller and stage, as a restarted scheduler builds them.
  void restart(std::int64_t memory_budget = kDefaultEnsembleMemory) {
    controller = std::make_unique<SweepController>(sweep_id, spec);
    controller->set_ensemble_stage(std::make_unique<EnsembleStage>(sweep_id, spec, memory_budget));
  }
  bool step() {
    auto alive = controller->step(store);
    EXPECT_TRUE(alive.ok()) << alive.error().message;
    return alive.ok() && *alive;
  }
  Json record() {
    auto bytes = store.get_sweep_artifact(sweep_id, kEnsembleRecordArtifact);
    if (!bytes.ok() || !*bytes) return Json();
    return Json::parse(**bytes);
  }
};

// Search trials: value = lr (so the ranking is known); members: predictions by seed.
trials::TrialResult train(trials::TrialQueue& store, const trials::Trial& t) {
  trials::TrialResult r;
  r.outcome = trials::TrialState::kCompleted;
  // An ensemble-only sweep's members have no parameters.
  r.value = t.params.count("lr") ? std::get<double>(t.params.at("lr")) : 0.5;
  r.metrics["val_accuracy"] = *r.value;
  std::uint64_t seed = t.role == hpo::trials::TrialRole::kMember ? 1000 + t.number : t.number;
  EXPECT_TRUE(
      store.put_artifact(t.id, t.attempt, t.worker, "val_predictions", predictions(seed)).ok());
  EXPECT_TRUE(
      store.put_artifact(t.id, t.attempt, t.worker, "test_predictions", predictions(seed + 7))
          .ok());
  return r;
}

// Runs the sweep to its end; checks the member concurrency after every step.
void run_to_end(Fixture& f, const testing::TrialRun& run) {
  for (int rounds = 0; rounds < 200; ++rounds) {
    if (!f.step()) return;
    auto s = f.sweep();
    EXPECT_LE(s.member_counts.active(), f.spec.search.max_concurrent);
    f.work_one(run);
  }
  ADD_FAILURE() << "the sweep did not end";
}

std::vector<trials::Trial> ranked_search_trials(Fixture& f) {
  auto page = f.store.list_trials(f.sweep_id, hpo::trials::TrialRole::kTrial, 0, trials::kAll);
  std::vector<trials::Trial> out = page->trials;
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return *a.value > *b.value; });
  return out;
}

TEST(EnsembleStage, TopKMembersGetParamsSeedsAndTheRecordIsStored) {
  Fixture f(torch_spec(5, {{"top_k", 2}}));
  run_to_end(f, [&](const trials::Trial& t) { return train(f.store, t); });
  auto s = f.sweep();
  ASSERT_EQ(s.state, trials::SweepState::kFinished) << s.error;
  EXPECT_EQ(s.stage, trials::SweepStage::kDone);
  EXPECT_EQ(s.member_counts.completed, 5);

  auto ranked = ranked_search_trials(f);
  auto members = f.store.list_trials(f.sweep_id, hpo::trials::TrialRole::kMember, 0, trials::kAll);
  ASSERT_EQ(members->trials.size(), 5u);
  std::set<std::uint64_t> seeds;
  for (const auto& m : members->trials) {
    const auto& base = ranked[m.number % 2];
    EXPECT_EQ(m.params, base.params) << m.id;
    EXPECT_EQ(m.max_attempts, 3);
    EXPECT_EQ(m.slots, 1);
    Json extra = trials::plan_json(m.plan, m.sweep_id);  // as REST shows it
    EXPECT_EQ(extra["member"], m.number);
    EXPECT_EQ(extra["seed"].get<std::uint64_t>(),
              ensemble::member_spec(*f.spec.ensemble, static_cast<int>(m.number)).seed);
    EXPECT_EQ(extra["base_trial"], base.id);
    seeds.insert(extra["seed"].get<std::uint64_t>());
  }
  EXPECT_EQ(seeds.size(), 5u);

  Json rec = f.record();
  ASSERT_TRUE(rec.is_object());
  EXPECT_EQ(rec["combine"], "soft_vote");
  EXPECT_EQ(rec["members_completed"], 5);
  EXPECT_EQ(rec["chosen"], "bagged");
  ASSERT_EQ(rec["members"].size(), 9u);  // 5 members + 4 search trials (weight 0)
  double weights = 0, mean_test = 0;
  for (const auto& m : rec["members"]) {
    if (m["kind"] == "trial") {
      EXPECT_EQ(m["weight"].get<double>(), 0.0);
      continue;
    }
    weights += m["weight"].get<double>();
    mean_test += m["metrics"]["test"]["accuracy"].get<double>() / 5;
    EXPECT_EQ(m["kind"], "member");
  }
  EXPECT_NEAR(weights, 1.0, 1e-9);
  EXPECT_NEAR(rec["mean_member"]["test"]["accuracy"].get<double>(), mean_test, 1e-9);
  // Five independent 70%-right members: the soft vote beats their mean.
  EXPECT_GT(rec["ensemble"]["test"]["accuracy"].get<double>(), mean_test);
  EXPECT_TRUE(rec["best_single"]["trial_id"].is_string());
  auto manifest = f.store.get_sweep_artifact(f.sweep_id, kEnsembleManifestArtifact);
  ASSERT_TRUE(manifest.ok() && *manifest);
  // The sweep owns its records: none is left with a member.
  auto on_member = f.store.get_artifact(members->trials[0].id, kEnsembleManifestArtifact);
  ASSERT_TRUE(on_member.ok());
  EXPECT_FALSE(on_member->has_value());
  auto parsed = ensemble::manifest_from_json(**manifest);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->members.size(), 5u);
  ASSERT_TRUE(parsed->members[0].bagging.has_value());
}

// choose "auto": every candidate is cross-validated and recorded, the
// manifest is the winner's; members' plan summaries fill the data's width and
// their feature subsets. One search trial is perfect, and its val_accuracy
// says so: it is the sweep's best and the record's one best single model. The
// combinations that lean on it are sharper (a lower loss) but cannot lower its
// error rate, so it is kept, and the decision says why.
TEST(EnsembleStage, TheStageChoosesAmongCandidatesAndRecordsThem) {
  Json j = torch_spec(4, "best", "soft_vote", "auto");
  j["ensemble"]["max_features"] = 0.5;
  Fixture f(j);
  std::string perfect;
  run_to_end(f, [&](const trials::Trial& t) {
    auto r = train(f.store, t);
    if (t.role == hpo::trials::TrialRole::kMember) {
      auto spec = trials::member_spec_of(t.plan);
      EXPECT_TRUE(spec.ok());
      auto plan = ensemble::plan_member(*spec, 120, 8);
      EXPECT_TRUE(f.store
                      .put_artifact(t.id, t.attempt, t.worker, "bagging.json",
                                    ensemble::plan_summary_json(plan))
                      .ok());
    } else if (t.number == 2) {  // one search trial is much better than the rest
      perfect = t.id;
      r.value = 1.0;
      r.metrics["val_accuracy"] = 1.0;
      ensemble::PredictionFile good;
      good.values = ensemble::Matrix(kRows, kClasses, 0.025f);
      for (int r = 0; r < kRows; ++r) {
        good.values(r, r % kClasses) = 0.95f;
        good.labels.push_back(static_cast<float>(r % kClasses));
        good.row_ids.push_back(r);
      }
      for (const char* name : {"val_predictions", "test_predictions"})
        EXPECT_TRUE(f.store
                        .put_artifact(t.id, t.attempt, t.worker, name,
                                      ensemble::encode_prediction_file(good))
                        .ok());
    }
    return r;
  });
  ASSERT_EQ(f.sweep().state, trials::SweepState::kFinished) << f.sweep().error;
  Json rec = f.record();
  ASSERT_EQ(rec["candidates"].size(), 4u) << rec.dump(2);
  std::vector<std::string> names;
  for (const auto& c : rec["candidates"]) names.push_back(c["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"best_single", "bagged", "selection", "stacking"}));
  // One best single model: the sweep's best trial by val_accuracy, everywhere.
  const std::string best = f.sweep().best->trial_id;
  EXPECT_EQ(best, perfect);
  EXPECT_EQ(best, ranked_search_trials(f).front().id);
  EXPECT_EQ(rec["best_single"]["trial_id"], best);
  EXPECT_EQ(rec["decision"]["best_single"], best);
  EXPECT_EQ(rec["candidates"][0]["weights"], Json({{best, 1.0}})) << rec["candidates"][0].dump();
  const std::string detail = rec["candidates"][0]["detail"];
  EXPECT_NE(detail.find("the sweep's best trial by val_accuracy: " + best), std::string::npos)
      << detail;
  // Its cv_loss is the pick procedure's, not the incumbent's own.
  EXPECT_NE(detail.find("picking the best trial on each fold"), std::string::npos) << detail;
  // A sharper combination of it has a lower loss, but no lower error rate
  // (the user's objective): the best single model is kept, decided.
  const Json& d = rec["decision"];
  EXPECT_EQ(rec["chosen"], "best_single") << d.dump(2);
  EXPECT_TRUE(d["decided"].get<bool>()) << d.dump(2);
  EXPECT_EQ(d["chosen"], rec["chosen"]);
  ASSERT_TRUE(d["compared"].is_string()) << d.dump(2);
  EXPECT_NE(d["compared"], "bagged");  // 70%-right members are no rival for it
  EXPECT_EQ(d["objective"]["scored_as"], "error_rate");
  EXPECT_GT(d["loss_advantage"]["mean"].get<double>(), 0.0);
  EXPECT_LE(d["objective_advantage"]["mean"].get<double>(), 0.0);
  EXPECT_NE(d["reason"].get<std::string>().find("no better error_rate"), std::string::npos);
  EXPECT_EQ(d["bar"], 2.0);
  EXPECT_DOUBLE_EQ(d["noise"].get<double>(), 2 * d["objective_advantage"]["se"].get<double>());
  EXPECT_EQ(d["validation_rows"], kRows);
  ASSERT_TRUE(d.contains("test_advantage")) << d.dump(2);
  EXPECT_EQ(rec["method"], rec["chosen"]);
  EXPECT_EQ(rec["choose"], "auto");
  EXPECT_TRUE(rec["warnings"].is_array());
  EXPECT_EQ(rec["n_features"], 8);
  for (const auto& m : rec["members"]) {
    if (m["kind"] == "member") {
      EXPECT_EQ(m["features"].size(), 4u) << m.dump();
    }
  }
  EXPECT_GE(rec["ensemble"]["test"]["accuracy"].get<double>(), 0.99);
  auto manifest = f.store.get_sweep_artifact(f.sweep_id, kEnsembleManifestArtifact);
  ASSERT_TRUE(manifest.ok() && *manifest);
  auto parsed = ensemble::manifest_from_json(**manifest);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->method, rec["chosen"].get<std::string>());
  for (const auto& m : parsed->members) EXPECT_NE(m.weight, 0.0) << m.trial_id;
}

// The case, through the stage: a tiny validation set (27 rows), the
// sweep's best trial wrong on two of them, another trial certain and right on
// all 27 but poor on the test rows. The stage keeps the best trial, the
// record's only best single model.
TEST(EnsembleStage, KeepsTheIncumbentOnATinyValidationSet) {
  constexpr int kTiny = 27;
  // Two-class predictions, wrong on the rows `wrong` and on about `percent_wrong` % of the others.
  auto file = [](int rows, const std::vector<int>& wrong, unsigned percent_wrong, float confidence,
                 std::uint64_t seed) {
    ensemble::PredictionFile p;
    p.values = ensemble::Matrix(rows, 2, 0.0f);
    ensemble::Rng rng(seed);
    for (int r = 0; r < rows; ++r) {
      const int y = r % 2;
      const bool is_wrong = std::find(wrong.begin(), wrong.end(), r) != wrong.end() ||
                            rng.next() % 100 < percent_wrong;
      const int said = is_wrong ? 1 - y : y;
      p.values(r, said) = confidence;
      p.values(r, 1 - said) = 1 - confidence;
      p.labels.push_back(static_cast<float>(y));
      p.row_ids.push_back(r);
    }
    return ensemble::encode_prediction_file(p);
  };
  Json j = torch_spec(4, "best", "soft_vote", "auto");
  Fixture f(j);
  std::string best_id, lucky_id;
  run_to_end(f, [&](const trials::Trial& t) {
    trials::TrialResult r;
    r.outcome = trials::TrialState::kCompleted;
    r.value =
        t.role == trials::TrialRole::kMember ? 0.7 : 0.5 + 0.1 * static_cast<double>(t.number);
    if (t.number == 1 && t.role == trials::TrialRole::kTrial) r.value = 0.1;  // the lucky one
    r.metrics["val_accuracy"] = *r.value;
    std::string val, test;
    if (t.role == trials::TrialRole::kMember) {  // 70% right
      val = file(kTiny, {}, 30, 0.7f, 500 + t.number);
      test = file(400, {}, 30, 0.7f, 900 + t.number);
    } else if (t.number == 1) {  // certain, right on every validation row, 20% wrong on test
      lucky_id = t.id;
      val = file(kTiny, {}, 0, 1.0f, 1);
      test = file(400, {}, 20, 1.0f, 77);
    } else {  // wrong on two validation rows, 5% on test
      val = file(kTiny, {3, 17}, 0, 0.8f, 1);
      test = file(400, {}, 5, 0.8f, 40 + t.number);
    }
    EXPECT_TRUE(f.store.put_artifact(t.id, t.attempt, t.worker, "val_predictions", val).ok());
    EXPECT_TRUE(f.store.put_artifact(t.id, t.attempt, t.worker, "test_predictions", test).ok());
    return r;
  });
  ASSERT_EQ(f.sweep().state, trials::SweepState::kFinished) << f.sweep().error;
  best_id = f.sweep().best->trial_id;
  ASSERT_NE(best_id, lucky_id);
  Json rec = f.record();
  EXPECT_EQ(rec["chosen"], "best_single") << rec["decision"].dump(2);
  EXPECT_EQ(rec["best_single"]["trial_id"], best_id);
  EXPECT_EQ(rec["decision"]["best_single"], best_id);
  EXPECT_EQ(rec["decision"]["validation_rows"], kTiny);
  EXPECT_EQ(rec["ensemble"]["test"]["accuracy"], rec["best_single"]["test"]["accuracy"]);
  double lucky_test = -1;
  for (const auto& m : rec["members"])
    if (m["trial_id"] == lucky_id) lucky_test = m["metrics"]["test"]["accuracy"];
  EXPECT_LT(lucky_test, rec["ensemble"]["test"]["accuracy"].get<double>());
}

// An ensemble-only sweep (no parameters): no search trial, the members are the sweep.
TEST(EnsembleStage, AnEnsembleOnlySweepRunsNoSearchTrials) {
  Json j = torch_spec(3, "best");
  j["parameters"] = Json::object();
  j["trial"]["optimizer"]["lr"] = 0.01;
  Fixture f(j);
  run_to_end(f, [&](const trials::Trial& t) { return train(f.store, t); });
  auto s = f.sweep();
  ASSERT_EQ(s.state, trials::SweepState::kFinished) << s.error;
  EXPECT_EQ(s.next_number, 0);
  EXPECT_EQ(s.counts.finished(), 0);
  EXPECT_EQ(s.member_counts.completed, 3);
  EXPECT_EQ(f.record()["members_completed"], 3);
}

// Search trials ran, but none stored validation predictions: the incumbent is
// the best member by the objective (the first trained with the best trial's
// parameters), and the record says why.
TEST(EnsembleStage, WithoutUsableSearchTrialPredictionsTheBestMemberIsTheIncumbent) {
  Fixture f(torch_spec(4, {{"top_k", 2}}, "soft_vote", "auto"));
  run_to_end(f, [&](const trials::Trial& t) {
    if (t.role == trials::TrialRole::kMember) return train(f.store, t);  // value: its base's lr
    trials::TrialResult r;  // completed, but no predictions stored
    r.outcome = trials::TrialState::kCompleted;
    r.value = std::get<double>(t.params.at("lr"));
    r.metrics["val_accuracy"] = *r.value;
    return r;
  });
  ASSERT_EQ(f.sweep().state, trials::SweepState::kFinished) << f.sweep().error;
  const auto ranked = ranked_search_trials(f);
  ASSERT_EQ(ranked.size(), 4u);
  auto members = f.store.list_trials(f.sweep_id, hpo::trials::TrialRole::kMember, 0, trials::kAll);
  ASSERT_TRUE(members.ok());
  std::string incumbent;
  for (const auto& m : members->trials)
    if (m.plan.base_trial == ranked.front().id) {
      incumbent = m.id;
      break;
    }
  ASSERT_FALSE(incumbent.empty());
  Json rec = f.record();
  EXPECT_EQ(rec["best_single"]["trial_id"], incumbent) << rec.dump(2);
  EXPECT_EQ(rec["decision"]["best_single"], incumbent);
  EXPECT_EQ(rec["not_used"].size(), 4u) << rec["not_used"].dump();
  std::string w;
  for (const auto& x : rec["warnings"])
    if (x.get<std::string>().find("search trials considered") != std::string::npos) w = x;
  EXPECT_NE(w.find("none of the 4 search trials considered had usable validation predictions"),
            std::string::npos)
      << rec["warnings"].dump();
  EXPECT_NE(w.find("the best member by the objective, " + incumbent), std::string::npos) << w;
  EXPECT_NE(w.find("trained with trial " + ranked.front().id + "'s parameters"), std::string::npos)
      << w;
}

TEST(EnsembleStage, BaseBestGivesEveryMemberTheBestParams) {
  Fixture f(torch_spec(3, "best"));
  run_to_end(f, [&](const trials::Trial& t) { return train(f.store, t); });
  ASSERT_EQ(f.sweep().state, trials::SweepState::kFinished);
  auto best = ranked_search_trials(f).front();
  EXPECT_EQ(f.sweep().best->trial_id, best.id);
  auto members = f.store.list_trials(f.sweep_id, hpo::trials::TrialRole::kMember, 0, trials::kAll);
  ASSERT_EQ(members->trials.size(), 3u);
  for (const auto& m : members->trials) EXPECT_EQ(m.params, best.params);
}

TEST(EnsembleStage, SelectionConsidersSearchTrialsToo) {
  Fixture f(torch_spec(3, "best", "selection"));
  run_to_end(f, [&](const trials::Trial& t) { return train(f.store, t); });
  ASSERT_EQ(f.sweep().state, trials::SweepState::kFinished) << f.sweep().error;
  Json rec = f.record();
  ASSERT_EQ(rec["members"].size(), 3u + 4u);  // 3 members + 4 search trials
  int trial_models = 0;
  for (const auto& m : rec["members"]) trial_models += m["kind"] == "trial";
  EXPECT_EQ(trial_models, 4);
}

// Member m leaves training rows r < 90 with (r + m) % 3 == 0 out of its bag and
// predicts them (about 70% right).
std::string oob_predictions(std::int64_t member) {
  ensemble::PredictionFile f;
  ensemble::Rng rng(77 + member);
  for (std::int64_t r = 0; r < 90; ++r) {
    if ((r + member) % 3 != 0) continue;
    f.row_ids.push_back(r);
    f.labels.push_back(static_cast<float>(r % kClasses));
  }
  f.values = ensemble::Matrix(static_cast<std::int64_t>(f.row_ids.size()), kClasses, 0.1f);
  for (std::int64_t i = 0; i < f.values.rows; ++i) {
    int y = static_cast<int>(f.labels[i]);
    f.values(i, rng.next() % 10 < 7 ? y : static_cast<int>(rng.next() % kClasses)) = 0.8f;
  }
  return ensemble::encode_prediction_file(f);
}

TEST(EnsembleStage, OobEstimateWhenEveryMemberStoredOobPredictions) {
  Fixture f(torch_spec(4, "best"));
  run_to_end(f, [&](const trials::Trial& t) {
    if (t.role == hpo::trials::TrialRole::kMember) {
      EXPECT_TRUE(
          f.store
              .put_artifact(t.id, t.attempt, t.worker, "oob_predictions", oob_predictions(t.number))
              .ok());
    }
    return train(f.store, t);
  });
  ASSERT_EQ(f.sweep().state, trials::SweepState::kFinished) << f.sweep().error;
  Json rec = f.record();
  ASSERT_TRUE(rec["oob"].is_object()) << rec.dump(2);
  // Rows up to 89 exist; with 4 members every row is out of bag for at least one.
  EXPECT_EQ(rec["oob"]["rows_total"], 90);
  EXPECT_EQ(rec["oob"]["rows_covered"], 90);
  double acc = rec["oob"]["scores"]["accuracy"].get<double>();
  EXPECT_GT(acc, 0.5);
  EXPECT_LE(acc, 1.0);
}

// Many test and out-of-bag rows (several blocks of the stage's stream): each
// model's file is read a block of rows at a time, so the ensemble combines
// within a memory budget smaller than its prediction files, and every score
// is the one the whole files held in memory give.
std::string many_rows(std::uint64_t seed, std::int64_t rows, std::int64_t member = -1) {
  ensemble::PredictionFile f;
  ensemble::Rng rng(seed);
  for (std::int64_t r = 0; r < rows; ++r) {
    if (member >= 0 && (r + member) % 3 != 0) continue;  // a member's out-of-bag rows
    f.row_ids.push_back(r);
    f.labels.push_back(static_cast<float>(r % kClasses));
  }
  f.values = ensemble::Matrix(static_cast<std::int64_t>(f.row_ids.size()), kClasses, 0.1f);
  for (std::int64_t i = 0; i < f.values.rows; ++i) {
    int y = static_cast<int>(f.labels[static_cast<std::size_t>(i)]);
    f.values(i, rng.next() % 10 < 7 ? y : static_cast<int>(rng.next() % kClasses)) = 0.8f;
  }
  return ensemble::encode_prediction_file(f);
}

TEST(EnsembleStage, TestAndOobPredictionsStreamThroughABudgetSmallerThanTheirFiles) {
  constexpr std::int64_t kTestRows = 50'000, kTrainRows = 30'000;
  Fixture f(torch_spec(3, "best"));
  // Held: 7 validation files of 200 rows; streamed: blocks of 4096 rows. The
  // 7 test files alone are 8.4 MB, and 3 out-of-bag files 2.4 MB more.
  f.restart(/*memory_budget=*/std::int64_t{4} << 20);
  std::map<std::string, std::string> test_files, oob_files;
  run_to_end(f, [&](const trials::Trial& t) {
    auto r = train(f.store, t);
    const bool member = t.role == hpo::trials::TrialRole::kMember;
    test_files[t.id] = many_rows(500 + t.number + (member ? 100 : 0), kTestRows);
    EXPECT_TRUE(
        f.store.put_artifact(t.id, t.attempt, t.worker, "test_predictions", test_files[t.id]).ok());
    if (member) {
      oob_files[t.id] = many_rows(900 + t.number, kTrainRows, t.number);
      EXPECT_TRUE(
          f.store.put_artifact(t.id, t.attempt, t.worker, "oob_predictions", oob_files[t.id]).ok());
    }
    return r;
  });
  ASSERT_EQ(f.sweep().state, trials::SweepState::kFinished) << f.sweep().error;
  Json rec = f.record();

  // The same evaluation with every file whole in memory.
  auto members = f.store.list_trials(f.sweep_id, hpo::trials::TrialRole::kMember, 0, trials::kAll);
  ASSERT_TRUE(members.ok());
  ensemble::EvaluationInput in;
  std::vector<std::string> order;
  auto add = [&](const trials::Trial& t) {
    auto val = f.store.get_artifact(t.id, "val_predictions");
    auto v = ensemble::decode_prediction_file(**val);
    auto test = ensemble::decode_prediction_file(test_files.at(t.id));
    ASSERT_TRUE(v.ok() && test.ok());
    in.validation_targets = v->targets();
    in.test_targets = test->targets();
    in.validation.push_back(v->values);
    in.test.push_back(test->values);
    order.push_back(t.id);
  };
  for (const auto& t : members->trials) add(t);
  in.member_models = order.size();
  std::int64_t rows_total = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    auto oob = ensemble::decode_prediction_file(oob_files.at(order[i]));
    ASSERT_TRUE(oob.ok());
    rows_total = std::max(rows_total, oob->row_ids.back() + 1);
    in.oob.push_back({static_cast<int>(i), oob->row_ids, oob->values});
  }
  std::vector<int> train_labels(static_cast<std::size_t>(rows_total));
  for (std::int64_t r = 0; r < rows_total; ++r) train_labels[r] = static_cast<int>(r % kClasses);
  in.train_targets = ensemble::Targets::classes(train_labels);
  for (const auto& t : ranked_search_trials(f)) add(t);
  in.seed = f.spec.ensemble->seed;
  auto whole = ensemble::evaluate_ensemble(*f.spec.ensemble, in);
  ASSERT_TRUE(whole.ok()) << whole.error().message;

  EXPECT_NEAR(rec["ensemble"]["test"]["accuracy"].get<double>(), *whole->ensemble.test.accuracy,
              1e-9);
  EXPECT_NEAR(rec["ensemble"]["test"]["log_loss"].get<double>(), *whole->ensemble.test.log_loss,
              1e-9);
  for (const auto& m : rec["members"]) {
    auto at = std::find(order.begin(), order.end(), m["trial_id"].get<std::string>());
    ASSERT_NE(at, order.end());
    EXPECT_NEAR(m["metrics"]["test"]["accuracy"].get<double>(),
                *whole->models[static_cast<std::size_t>(at - order.begin())].test.accuracy, 1e-9);
  }
  ASSERT_TRUE(rec["oob"].is_object()) << rec.dump(2);
  EXPECT_EQ(rec["oob"]["rows_total"], whole->oob->rows_total);
  EXPECT_EQ(rec["oob"]["rows_covered"], whole->oob->rows_covered);
  EXPECT_NEAR(rec["oob"]["scores"]["accuracy"].get<double>(), *whole->oob->scores.accuracy, 1e-9);
  EXPECT_NEAR(rec["oob"]["scores"]["log_loss"].get<double>(), *whole->oob->scores.log_loss, 1e-9);
}

// Test predictions whose rows part ways in a later block: the ensemble is
// still stored, without test scores, saying which trials differ.
TEST(EnsembleStage, TestRowsThatDifferMidwayLeaveTheTestScoresOutSayingWhy) {
  Fixture f(torch_spec(2, "best"));
  run_to_end(f, [&](const trials::Trial& t) {
    auto r = train(f.store, t);
    ensemble::PredictionFile p = *ensemble::decode_prediction_file(many_rows(t.number, 10'000));
    if (t.role == hpo::trials::TrialRole::kMember && t.number == 1) p.row_ids[9'000] = 123'456;
    EXPECT_TRUE(f.store
                    .put_artifact(t.id, t.attempt, t.worker, "test_predictions",
                                  ensemble::encode_prediction_file(p))
                    .ok());
    return r;
  });
  ASSERT_EQ(f.sweep().state, trials::SweepState::kFinished) << f.sweep().error;
  Json rec = f.record();
  EXPECT_FALSE(rec["ensemble"]["test"].contains("accuracy")) << rec["ensemble"].dump();
  std::string w;
  for (const auto& x : rec["warnings"])
    if (x.get<std::string>().find("no test scores") != std::string::npos) w = x;
  EXPECT_NE(w.find("test predictions of trial"), std::string::npos) << rec["warnings"].dump();
  EXPECT_NE(w.find("not on the same rows"), std::string::npos) << w;
}

TEST(EnsembleStage, NoOobEstimateWithoutOobPredictions) {
  Fixture f(torch_spec(2, "best"));
  run_to_end(f, [&](const trials::Trial& t) { return train(f.store, t); });
  EXPECT_FALSE(f.record().contains("oob"));
}

TEST(EnsembleStage, LostLeaseRetriesTheMemberAndStillEndsWithAllMembers) {
  Fixture f(torch_spec(4, "best"));
  // Search stage.
  while (f.sweep().stage == trials::SweepStage::kSearch) {
    ASSERT_TRUE(f.step());
    f.work_one([&](const trials::Trial& t) { return train(f.store, t); });
  }
  ASSERT_TRUE(f.step());  // first members
  // A worker claims a member and dies: its lease lapses and the reaper re-queues
  // it. The lease is 1 ms of the store's clock (Redis TIME, which a test cannot
  // move), so it lapses at once; the reaper is called until it has handled it,
  // counting every lease it handled on the way: exactly this one.
  auto c = f.store.claim("dead", 1, /*lease_ms=*/1);
  ASSERT_TRUE(c.ok() && *c);
  ASSERT_EQ((*c)->trial.role, hpo::trials::TrialRole::kMember);
  std::string lost = (*c)->trial.id;
  int reaped = 0;
  ASSERT_TRUE(hpo::testing::wait_for([&] {
    auto n = f.store.reap(100, 0);
    EXPECT_TRUE(n.ok()) << n.error().message;
    if (n.ok()) reaped += *n;
    return reaped >= 1;
  }));
  ASSERT_EQ(reaped, 1);
  EXPECT_EQ(f.store.get_trial(lost)->attempt, 1);
  EXPECT_EQ(f.store.get_trial(lost)->state, trials::TrialState::kQueued);
  // The dead worker's late artifacts and result are refused (fencing).
  EXPECT_EQ(f.store.put_artifact(lost, 0, "dead", "val_predictions", predictions(1)).error().code,
            ErrorCode::kLeaseLost);
  trials::TrialResult late;
  late.outcome = trials::TrialState::kCompleted;
  late.value = 1;
  EXPECT_FALSE(f.store.complete(lost, 0, "dead", late).ok());
  f.restart();  // and the scheduler restarts too
  run_to_end(f, [&](const trials::Trial& t) { return train(f.store, t); });
  auto s = f.sweep();
  ASSERT_EQ(s.state, trials::SweepState::kFinished) << s.error;
  EXPECT_EQ(s.next_member, 4);
  EXPECT_EQ(s.member_counts.completed, 4);
  EXPECT_EQ(f.store.get_trial(lost)->state, trials::TrialState::kCompleted);
  EXPECT_EQ(f.record()["members_completed"], 4);
}

// Combining loads every candidate's predictions into the scheduler: past
// --ensemble-memory-mb (counted from the stored sizes before any is read)
// the sweep fails with the sizes and the flag, and nothing is loaded.
TEST(EnsembleStage, AnEnsembleOverItsMemoryBudgetFailsSayingSo) {
  Fixture f(torch_spec(3, "best"));
  f.restart(/*memory_budget=*/4096);
  run_to_end(f, [&](const trials::Trial& t) { return train(f.store, t); });
  auto s = f.sweep();
  EXPECT_EQ(s.state, trials::SweepState::kFailed);
  EXPECT_NE(s.error.find("--ensemble-memory-mb 0"), std::string::npos) << s.error;
  EXPECT_NE(s.error.find("prediction files of"), std::string::npos) << s.error;
  EXPECT_TRUE(f.record().is_null());
}

TEST(EnsembleStage, EveryMemberFailedFailsTheSweep) {
  Fixture f(torch_spec(3, "best"));
  run_to_end(f, [&](const trials::Trial& t) {
    if (t.role == hpo::trials::TrialRole::kTrial) return train(f.store, t);
    trials::TrialResult r;
    r.outcome = trials::TrialState::kFailed;
    r.error = "training diverged";
    r.retryable = false;
    return r;
  });
  auto s = f.sweep();
  EXPECT_EQ(s.state, trials::SweepState::kFailed);
  EXPECT_NE(s.error.find("all 3 ensemble members failed"), std::string::npos) << s.error;
  EXPECT_NE(s.error.find("training diverged"), std::string::npos) << s.error;
  EXPECT_EQ(s.member_counts.failed, 3);
}

}  // namespace
}  // namespace hpo::scheduler
