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

}  // namespace hpo::ensemble
