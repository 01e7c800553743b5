// JSON of a member's bagging plan, as its trial's files read it. (The member's
// spec, its seed and fractions, is part of the trial record: trials/trial_plan.hpp.)
//
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "ensemble/bagging.hpp"

namespace hpo::ensemble {

// The plan a command trial's member reads from HPO_BAGGING_FILE:
//   {"member": 3, "seed": ..., "train_seed": ..., "n_rows": 800, "n_features": 12,
//    "rows": [0, 0, 3, ...], "features": [1, 4, ...], "oob_rows": [1, 2, ...]}
// rows: the bootstrap draw, ascending, repeats kept; features and oob_rows ascending.
std::string bagging_file_json(const BaggingPlan& plan);
// The same without the row lists: what a member stores as its "bagging.json"
// artifact (the ensemble record lists each member's feature subset from it).
std::string plan_summary_json(const BaggingPlan& plan);
struct PlanSummary {
  std::int64_t n_rows = 0;
  std::int64_t n_features = 0;
  std::vector<std::int64_t> features;
};
Result<PlanSummary> plan_summary_from_json(std::string_view json_text);

}  // namespace hpo::ensemble
