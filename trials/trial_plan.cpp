#include "trials/trial_plan.hpp"

#include <cmath>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "trials/spec/recipe/ensemble_recipe.hpp"

namespace hpo::trials {
namespace {

using Json = nlohmann::json;

Result<search::Lineage> lineage_from_json(const Json& j) {
  search::Lineage r;
  const auto& b = j["budget"];
  if (!b.is_number() || !(b.get<double>() > 0) || !std::isfinite(b.get<double>()))
    return Error::invalid("extra.budget", "expected a positive number");
  r.budget = b.get<double>();
  if (auto it = j.find("resource"); it != j.end() && it->is_string()) r.resource = *it;
  auto small = [&](const char* key, std::int64_t hi) -> Result<int> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer() || it->get<std::int64_t>() < 0 ||
        it->get<std::int64_t>() > hi)
      return Error::invalid(std::string("extra.") + key,
                            fmt::format("expected an integer in [0, {}]", hi));
    return it->get<int>();
  };
  if (j.contains("member")) {
    auto m = small("member", 100'000);
    if (!m) return m.error();
    auto g = small("generation", 1'000'000);
    if (!g) return g.error();
    r.member = *m;
    r.rung = *g;
    if (auto it = j.find("exploited"); it != j.end()) {
      if (!it->is_boolean()) return Error::invalid("extra.exploited", "expected true or false");
      r.exploited = it->get<bool>();
    }
  } else {
    auto b = small("bracket", 64);
    if (!b) return b.error();
    auto g = small("rung", 64);
    if (!g) return g.error();
    r.bracket = *b;
    r.rung = *g;
  }
  if (auto it = j.find("resume_from"); it != j.end()) {
    auto n = j.find("resume_number");
    if (!it->is_string() || it->get<std::string>().empty() || n == j.end() ||
        !n->is_number_integer() || n->get<std::int64_t>() < 0)
      return Error::invalid("extra.resume_from",
                            "expected the id and number of the trial it resumes");
    r.resume = n->get<std::int64_t>();
  }
  return r;
}

Json lineage_json(const search::Lineage& r, std::string_view sweep_id) {
  Json j = {{"budget", r.budget}, {"resource", r.resource}};
  if (r.member >= 0) {
    j["member"] = r.member;
    j["generation"] = r.rung;
    if (r.exploited) j["exploited"] = true;
  } else {
    j["bracket"] = r.bracket;
    j["rung"] = r.rung;
  }
  if (r.resume >= 0) {
    j["resume_from"] = fmt::format("{}-{}", sweep_id, r.resume);
    j["resume_number"] = r.resume;
  }
  return j;
}

}  // namespace

Json member_json(const MemberSpec& spec) {
  Json j{{"member", spec.member_index},
         {"seed", spec.seed},
         {"bootstrap", spec.bootstrap},
         {"sample_fraction", spec.sample_fraction},
         {"max_features", spec.max_features}};
  if (spec.epochs) j["epochs"] = *spec.epochs;
  if (spec.subset) j["subset"] = *spec.subset;
  return j;
}

Result<MemberSpec> member_from_json(const Json& j, std::string_view path) {
  const std::string at(path);
  if (!j.is_object()) return Error::invalid(at, "expected a JSON object");
  MemberSpec spec;
  auto member = j.find("member");
  if (member == j.end() || !member->is_number_integer() || member->get<std::int64_t>() < 0 ||
      member->get<std::int64_t>() > EnsembleRecipe::kMaxMembers)
    return Error::invalid(at + ".member", "expected a member index >= 0");
  spec.member_index = member->get<int>();
  auto seed = j.find("seed");
  if (seed == j.end() || !seed->is_number_unsigned())
    return Error::invalid(at + ".seed", "expected an integer seed in [0, 2^64)");
  spec.seed = seed->get<std::uint64_t>();
  if (auto it = j.find("bootstrap"); it != j.end()) {
    if (!it->is_boolean()) return Error::invalid(at + ".bootstrap", "expected true or false");
    spec.bootstrap = it->get<bool>();
  }
  if (auto it = j.find("sample_fraction"); it != j.end()) {
    if (!it->is_number() || !(it->get<double>() > 0 && it->get<double>() <= 1))
      return Error::invalid(at + ".sample_fraction", "expected a number in (0, 1]");
    spec.sample_fraction = it->get<double>();
  }
  if (auto it = j.find("max_features"); it != j.end()) {
    if (!it->is_number() || !(it->get<double>() > 0) || !std::isfinite(it->get<double>()))
      return Error::invalid(at + ".max_features", "expected a positive number");
    spec.max_features = it->get<double>();
  }
  if (auto it = j.find("epochs"); it != j.end()) {
    if (!it->is_number_integer() || it->get<std::int64_t>() < 1)
      return Error::invalid(at + ".epochs", "expected an integer >= 1");
    spec.epochs = it->get<std::int64_t>();
  }
  if (auto it = j.find("subset"); it != j.end()) {
    if (!it->is_number_integer() || it->get<std::int64_t>() < 0)
      return Error::invalid(at + ".subset", "expected an integer >= 0");
    spec.subset = it->get<std::int64_t>();
  }
  return spec;
}

Json plan_json(const TrialPlan& plan, std::string_view sweep_id) {
  if (!plan.error.empty()) return plan.unread;
  if (plan.lineage) return lineage_json(*plan.lineage, sweep_id);
  if (!plan.member) return nullptr;
  Json j = member_json(*plan.member);
  if (!plan.base_trial.empty()) {
    j["base_trial"] = plan.base_trial;
    j["base_rank"] = plan.base_rank;
  }
  return j;
}

std::string plan_to_json(const TrialPlan& plan, std::string_view sweep_id) {
  if (!plan.error.empty()) return plan.unread;
  Json j = plan_json(plan, sweep_id);
  return j.is_null() ? std::string() : j.dump();
}

namespace {

// The plan in `j`, or the error of its first field that does not decode.
TrialPlan decode_plan(const Json& j) {
  TrialPlan plan;
  if (j.is_null()) return plan;
  if (!j.is_object()) {
    plan.error = "extra: expected a JSON object";
    return plan;
  }
  if (j.contains("budget")) {
    auto lineage = lineage_from_json(j);
    if (lineage)
      plan.lineage = std::move(lineage).value();
    else
      plan.error = lineage.error().message;
    return plan;
  }
  if (!j.contains("member") && !j.contains("seed")) return plan;  // nothing of a plan
  auto member = member_from_json(j, "extra");
  if (!member) {
    plan.error = member.error().message;
    return plan;
  }
  plan.member = *member;
  if (auto it = j.find("base_trial"); it != j.end()) {
    auto rank = j.find("base_rank");
    if (!it->is_string() || rank == j.end() || !rank->is_number_integer() ||
        rank->get<std::int64_t>() < 0 || rank->get<std::int64_t>() > EnsembleRecipe::kMaxMembers) {
      plan.error = "extra.base_trial: expected the id and rank of the trial it trains";
      plan.member.reset();
      return plan;
    }
    plan.base_trial = it->get<std::string>();
    plan.base_rank = rank->get<int>();
  }
  return plan;
}

// A plan that does not decode keeps nothing it decoded, only its text.
TrialPlan keep_unread(TrialPlan plan, std::string text) {
  if (plan.error.empty()) return plan;
  plan.lineage.reset();
  plan.member.reset();
  plan.unread = std::move(text);
  return plan;
}

}  // namespace

TrialPlan plan_from_json(const Json& j) {
  if (j.is_string()) return plan_from_text(j.get<std::string>());
  return keep_unread(decode_plan(j), j.dump());
}

TrialPlan plan_from_text(std::string_view text) {
  if (text.empty()) return {};
  auto j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  TrialPlan plan;
  if (j.is_discarded())
    plan.error = "extra: expected a JSON object";
  else
    plan = decode_plan(j);
  return keep_unread(std::move(plan), std::string(text));
}

Result<MemberSpec> member_spec_of(const TrialPlan& plan) {
  if (plan.member) return *plan.member;
  if (!plan.error.empty()) return Error{ErrorCode::kInvalidArgument, plan.error, {}};
  return Error::invalid("extra", "the trial has no member plan");
}

std::string resumed_trial_id(std::string_view sweep_id, const TrialPlan& plan) {
  if (!plan.lineage || plan.lineage->resume < 0) return {};
  return fmt::format("{}-{}", sweep_id, plan.lineage->resume);
}

std::string budget_text(double budget) {
  if (std::floor(budget) == budget && std::fabs(budget) < 1e15)
    return fmt::format("{}", static_cast<std::int64_t>(budget));
  return fmt::format("{}", budget);
}

}  // namespace hpo::trials
