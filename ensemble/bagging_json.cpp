#include "ensemble/bagging_json.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

namespace hpo::ensemble {

namespace {

nlohmann::json plan_head(const BaggingPlan& plan) {
  return {{"member", plan.member_index},    {"seed", plan.seed},
          {"train_seed", plan.train_seed},  {"n_rows", plan.n_rows},
          {"n_features", plan.n_features},  {"features", plan.features},
          {"rows_drawn", plan.rows.size()}, {"oob_count", plan.oob_rows.size()}};
}

}  // namespace

std::string bagging_file_json(const BaggingPlan& plan) {
  auto j = plan_head(plan);
  j["rows"] = plan.rows;
  j["oob_rows"] = plan.oob_rows;
  return j.dump();
}

std::string plan_summary_json(const BaggingPlan& plan) {
  return plan_head(plan).dump();
}

Result<PlanSummary> plan_summary_from_json(std::string_view json_text) {
  auto j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Error::invalid("bagging.json", "expected a JSON object");
  PlanSummary out;
  for (auto [key, field] : {std::pair{"n_rows", &out.n_rows}, {"n_features", &out.n_features}}) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer() || it->get<std::int64_t>() < 0)
      return Error::invalid(std::string("bagging.json.") + key, "expected an integer >= 0");
    *field = it->get<std::int64_t>();
  }
  auto f = j.find("features");
  if (f == j.end() || !f->is_array())
    return Error::invalid("bagging.json.features", "expected an array of column indices");
  for (const auto& v : *f) {
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 ||
        v.get<std::int64_t>() >= out.n_features)
      return Error::invalid("bagging.json.features", "expected column indices in [0, n_features)");
    out.features.push_back(v.get<std::int64_t>());
  }
  return out;
}

}  // namespace hpo::ensemble
