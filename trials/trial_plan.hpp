// TrialPlan: what the scheduler plans for a trial beyond its parameters, a
// typed part of the trial record (trial.hpp) with one codec, decoded once
// where the record is read (the store, the REST and job JSON):
//   - its place in a multi-fidelity or PBT schedule (search/lineage.hpp): the
//     budget, the rung or the member's generation, the trial it resumes;
//   - an ensemble member's bagging plan (MemberSpec; ensemble/bagging.hpp draws
//     its rows and features from it) and the search trial it retrains.
//
// The record's JSON object (Redis field `extra`, REST `extra`), one of:
//   {"budget": 9, "resource": "epochs", "bracket": 0, "rung": 2,
//    "resume_from": "<sweep>-12", "resume_number": 12}
//   {"budget": 8, "resource": "steps", "member": 3, "generation": 1,
//    "resume_from": "<sweep>-5", "resume_number": 5, "exploited": true}
//   {"member": 3, "seed": 1234567890123, "bootstrap": true, "sample_fraction": 1.0,
//    "max_features": 0.5, "epochs": 4, "subset": 1000, "base_trial": "<sweep>-7", "base_rank": 0}
// `resume_from` (absent for a new configuration) is the trial whose checkpoint
// the attempt goes on from until it stores its own; `exploited` when it is
// another PBT member's (whose parameters it explored).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "search/lineage.hpp"

namespace hpo::trials {

// An ensemble member's draw: its seed (derived from the ensemble's seed and
// its index) and the recipe's fractions.
struct MemberSpec {
  int member_index = 0;          // 0-based within the ensemble
  std::uint64_t seed = 0;        // member seed, derived from the ensemble seed and the index
  bool bootstrap = true;         // with replacement; false: subsample without replacement
  double sample_fraction = 1.0;  // (0, 1]
  double max_features = 1.0;     // (0, 1] fraction, or an integer count > 1 (see EnsembleRecipe)
  std::optional<std::int64_t> epochs;  // the member's training budget, when the recipe sets one
  std::optional<std::int64_t> subset;
  bool operator==(const MemberSpec&) const = default;
};

struct TrialPlan {
  std::optional<search::Lineage> lineage;  // a trial of a multi-fidelity or PBT schedule
  std::optional<MemberSpec> member;        // an ensemble member
  std::string base_trial;  // a member: the search trial whose configuration it trains, or ""
  int base_rank = -1;      // that trial's rank among the best configurations
  // A stored plan that did not decode: the field and why. An attempt of the
  // trial fails with it; the scheduler counts the trial in no schedule.
  std::string error;
  std::string unread;  // that plan's text, passed on and shown as it is (a JSON string)
  bool empty() const { return !lineage && !member && error.empty(); }
  bool operator==(const TrialPlan&) const = default;
};

// The plan as the record's JSON object; null for an empty plan; a plan that
// did not decode, its text as a JSON string (which decodes to the same error).
// `sweep_id` names the trial a lineage resumes ("<sweep>-<number>").
nlohmann::json plan_json(const TrialPlan& plan, std::string_view sweep_id);
// "" when empty; a plan that did not decode, its text.
std::string plan_to_json(const TrialPlan& plan, std::string_view sweep_id);
TrialPlan plan_from_json(const nlohmann::json& j);  // a string: its text (plan_from_text)
TrialPlan plan_from_text(std::string_view text);    // "": the empty plan

// The member's draw alone, as the ensemble manifest keeps it (its "bagging");
// errors name `path` and the field.
nlohmann::json member_json(const MemberSpec& spec);
Result<MemberSpec> member_from_json(const nlohmann::json& j, std::string_view path);

// The member's spec, or why the plan has none (a member's attempt fails with it).
Result<MemberSpec> member_spec_of(const TrialPlan& plan);

// The trial a lineage resumes, "<sweep>-<number>"; "" for none.
std::string resumed_trial_id(std::string_view sweep_id, const TrialPlan& plan);

// The budget as a command trial's HPO_BUDGET reads it: "9", "0.25".
std::string budget_text(double budget);

}  // namespace hpo::trials
