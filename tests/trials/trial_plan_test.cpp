// The trial plan's one codec (trials/trial_plan.hpp): what the store writes
// is what every reader gets back, and a damaged record says which field.
#include <gtest/gtest.h>

#include "trials/trial_plan.hpp"

namespace hpo::trials {
namespace {

TrialPlan round_trip(const TrialPlan& plan) {
  return plan_from_text(plan_to_json(plan, "sw"));
}

TEST(TrialPlan, ARungRoundTripsAndNamesTheTrialItResumes) {
  TrialPlan plan;
  plan.lineage = search::Lineage{9, 1, 2, -1, 12, false, "epochs"};
  EXPECT_EQ(round_trip(plan), plan);
  const auto j = plan_json(plan, "sw");
  EXPECT_EQ(j["bracket"], 1);
  EXPECT_EQ(j["rung"], 2);
  EXPECT_EQ(j["resume_from"], "sw-12");
  EXPECT_EQ(j["resume_number"], 12);
  EXPECT_FALSE(j.contains("member"));
  EXPECT_EQ(resumed_trial_id("sw", plan), "sw-12");
  plan.lineage->resume = -1;  // a new configuration resumes nothing
  EXPECT_EQ(resumed_trial_id("sw", plan), "");
  EXPECT_FALSE(plan_json(plan, "sw").contains("resume_from"));
  EXPECT_EQ(round_trip(plan), plan);
}

TEST(TrialPlan, APbtIntervalRoundTripsWithItsGenerationAndExploit) {
  TrialPlan plan;
  plan.lineage = search::Lineage{8, 0, 3, 2, 5, true, "steps"};
  EXPECT_EQ(round_trip(plan), plan);
  const auto j = plan_json(plan, "sw");
  EXPECT_EQ(j["member"], 2);
  EXPECT_EQ(j["generation"], 3);
  EXPECT_EQ(j["exploited"], true);
  EXPECT_FALSE(j.contains("rung"));
}

TEST(TrialPlan, AMemberRoundTripsWithTheTrialItTrains) {
  TrialPlan plan;
  plan.member = MemberSpec{4, 1234567890123ULL, false, 0.5, 0.25, 6, 300};
  EXPECT_EQ(round_trip(plan), plan);
  plan.base_trial = "sw-7";
  plan.base_rank = 2;
  EXPECT_EQ(round_trip(plan), plan);
  EXPECT_EQ(member_spec_of(plan)->seed, 1234567890123ULL);
}

TEST(TrialPlan, AnEmptyPlanIsNoJsonAndNoError) {
  EXPECT_EQ(plan_to_json(TrialPlan{}, "sw"), "");
  EXPECT_TRUE(plan_json(TrialPlan{}, "sw").is_null());
  EXPECT_TRUE(plan_from_text("").empty());
  EXPECT_TRUE(plan_from_text(R"({"note": 1})").empty());  // nothing of a plan
  EXPECT_EQ(member_spec_of(TrialPlan{}).error().message, "extra: the trial has no member plan");
}

TEST(TrialPlan, ADamagedRecordNamesItsField) {
  EXPECT_EQ(plan_from_text("not json").error, "extra: expected a JSON object");
  EXPECT_EQ(plan_from_text("[1]").error, "extra: expected a JSON object");
  EXPECT_EQ(plan_from_text(R"({"budget": 0, "bracket": 0, "rung": 0})").error,
            "extra.budget: expected a positive number");
  EXPECT_EQ(plan_from_text(R"({"budget": 3, "bracket": 0, "rung": 99})").error,
            "extra.rung: expected an integer in [0, 64]");
  EXPECT_EQ(plan_from_text(R"({"budget": 3, "bracket": 0, "rung": 0, "resume_from": "x"})").error,
            "extra.resume_from: expected the id and number of the trial it resumes");
  EXPECT_EQ(plan_from_text(R"({"budget": 3, "member": 1, "generation": 0, "exploited": 1})").error,
            "extra.exploited: expected true or false");
  EXPECT_EQ(plan_from_text(R"({"member": 1, "seed": 4, "base_trial": 3, "base_rank": 0})").error,
            "extra.base_trial: expected the id and rank of the trial it trains");
  const TrialPlan bad = plan_from_text(R"({"member": 1, "seed": -4})");
  EXPECT_EQ(bad.error, "extra.seed: expected an integer seed in [0, 2^64)");
  EXPECT_FALSE(bad.member);
  EXPECT_EQ(member_spec_of(bad).error().message, bad.error);
}

// A damaged plan travels on as its text (the REST record shows it, a rank's
// job carries it): whoever decodes it again gets the same error.
TEST(TrialPlan, ADamagedPlanIsPassedOnAsItsText) {
  for (const char* text :
       {"not json", R"({"budget": 0, "bracket": 0, "rung": 0})", R"({"member": 1, "seed": -4})"}) {
    const TrialPlan bad = plan_from_text(text);
    ASSERT_FALSE(bad.error.empty()) << text;
    EXPECT_EQ(bad.unread, text);
    EXPECT_EQ(plan_json(bad, "sw"), nlohmann::json(text));
    EXPECT_EQ(plan_to_json(bad, "sw"), text);
    EXPECT_EQ(plan_from_json(plan_json(bad, "sw")), bad) << text;
    EXPECT_EQ(plan_from_text(plan_to_json(bad, "sw")), bad) << text;
  }
  // Valid JSON that is no valid plan, read from a JSON document.
  const auto j = nlohmann::json::parse(R"({"budget": -1, "bracket": 0, "rung": 0})");
  const TrialPlan bad = plan_from_json(j);
  EXPECT_EQ(bad.error, "extra.budget: expected a positive number");
  EXPECT_EQ(plan_from_json(plan_json(bad, "sw")), bad);
}

}  // namespace
}  // namespace hpo::trials
