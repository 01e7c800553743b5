// The rank job and result codecs: what the executor writes, the rank reads
// back field for field, and the other way round; bad texts name the field.
#include <gtest/gtest.h>

#include <cmath>

#include "workers/torch/rank_job.hpp"

namespace hpo::workers::torch_trainer {
namespace {

TEST(RankJob, RoundTripsEveryField) {
  RankJob job;
  job.spec = R"({"name": "x"})";
  job.trial.id = "s-3";
  job.trial.sweep_id = "s";
  job.trial.role = hpo::trials::TrialRole::kMember;
  job.trial.attempt = 2;
  job.trial.params = {{"lr", 0.01}, {"layers", std::int64_t{3}}, {"act", std::string("relu")}};
  job.trial.plan.member = trials::MemberSpec{1, 42, true, 0.8, 0.5, std::nullopt, 100};
  job.world = 4;
  job.threads = 2;
  job.gpus = {0, 3};
  job.store = "/w/store";
  job.out = "/w";
  job.timeout_ms = 1234;
  job.data_roots = {"/usr/share/datasets", "/w"};
  auto back = decode_rank_job(encode_rank_job(job));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->spec, job.spec);
  EXPECT_EQ(back->trial.id, "s-3");
  EXPECT_EQ(back->trial.sweep_id, "s");
  EXPECT_EQ(back->trial.role, trials::TrialRole::kMember);
  EXPECT_EQ(back->trial.attempt, 2);
  EXPECT_EQ(back->trial.params, job.trial.params);
  EXPECT_EQ(back->trial.plan, job.trial.plan);
  EXPECT_EQ(back->world, 4);
  EXPECT_EQ(back->threads, 2);
  EXPECT_EQ(back->gpus, job.gpus);
  EXPECT_EQ(back->store, "/w/store");
  EXPECT_EQ(back->out, "/w");
  EXPECT_EQ(back->timeout_ms, 1234);
  EXPECT_EQ(back->data_roots, job.data_roots);
  // A plan that did not decode reaches the ranks with its error (they fail
  // the attempt with it), not as no plan.
  job.trial.plan = trials::plan_from_text(R"({"budget": 0, "bracket": 0, "rung": 0})");
  ASSERT_FALSE(job.trial.plan.error.empty());
  back = decode_rank_job(encode_rank_job(job));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->trial.plan, job.trial.plan);
}

TEST(RankJob, BadTextsNameTheField) {
  EXPECT_FALSE(decode_rank_job("[]").ok());
  auto wrong = decode_rank_job(R"({"world": "four", "trial": {}})");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message.find("job.world"), std::string::npos) << wrong.error().message;
  auto no_trial = decode_rank_job(R"({"world": 2})");
  ASSERT_FALSE(no_trial.ok());
  EXPECT_NE(no_trial.error().message.find("job.trial"), std::string::npos);
  EXPECT_FALSE(decode_rank_job(R"({"world": 0, "trial": {}})").ok());
}

TEST(RankResult, RoundTripsAndLeavesNonFiniteMetricsOut) {
  RankResult r{"completed",
               "",
               false,
               {{"val_loss", 0.25}, {"nan", std::nan("")}},
               {"model.pt", "val_predictions"}};
  auto back = decode_rank_result(encode_rank_result(r));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->end, "completed");
  EXPECT_FALSE(back->retryable);
  EXPECT_EQ(back->metrics, (trials::Metrics{{"val_loss", 0.25}}));
  EXPECT_EQ(back->artifacts, r.artifacts);
  EXPECT_FALSE(decode_rank_result("not json").ok());
}

}  // namespace
}  // namespace hpo::workers::torch_trainer
