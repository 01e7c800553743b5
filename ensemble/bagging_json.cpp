#include "ensemble/bagging_json.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

namespace hpo::ensemble {

std::string member_spec_to_json(const MemberSpec& spec) {
  nlohmann::json j{{"member", spec.member_index},
                   {"seed", spec.seed},
                   {"bootstrap", spec.bootstrap},
                   {"sample_fraction", spec.sample_fraction},
                   {"max_features", spec.max_features}};
  if (spec.epochs) j["epochs"] = *spec.epochs;
  if (spec.subset) j["subset"] = *spec.subset;
  return j.dump();
}

Result<MemberSpec> member_spec_from_json(std::string_view json_text) {
  auto j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Error::invalid("extra", "expected a JSON object");
  MemberSpec spec;
  auto member = j.find("member");
  if (member == j.end() || !member->is_number_integer() || member->get<std::int64_t>() < 0 ||
      member->get<std::int64_t>() > trials::EnsembleRecipe::kMaxMembers)
    return Error::invalid("extra.member", "expected a member index >= 0");
  spec.member_index = member->get<int>();
  auto seed = j.find("seed");
  if (seed == j.end() || !seed->is_number_unsigned())
    return Error::invalid("extra.seed", "expected an integer seed in [0, 2^64)");
  spec.seed = seed->get<std::uint64_t>();
  if (auto it = j.find("bootstrap"); it != j.end()) {
    if (!it->is_boolean()) return Error::invalid("extra.bootstrap", "expected true or false");
    spec.bootstrap = it->get<bool>();
  }
  if (auto it = j.find("sample_fraction"); it != j.end()) {
    if (!it->is_number() || !(it->get<double>() > 0 && it->get<double>() <= 1))
      return Error::invalid("extra.sample_fraction", "expected a number in (0, 1]");
    spec.sample_fraction = it->get<double>();
  }
  if (auto it = j.find("max_features"); it != j.end()) {
    if (!it->is_number() || !(it->get<double>() > 0) || !std::isfinite(it->get<double>()))
      return Error::invalid("extra.max_features", "expected a positive number");
    spec.max_features = it->get<double>();
  }
  if (auto it = j.find("epochs"); it != j.end()) {
    if (!it->is_number_integer() || it->get<std::int64_t>() < 1)
      return Error::invalid("extra.epochs", "expected an integer >= 1");
    spec.epochs = it->get<std::int64_t>();
  }
  if (auto it = j.find("subset"); it != j.end()) {
    if (!it->is_number_integer() || it->get<std::int64_t>() < 0)
      return Error::invalid("extra.subset", "expected an integer >= 0");
    spec.subset = it->get<std::int64_t>();
  }
  return spec;
}

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
