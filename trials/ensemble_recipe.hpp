// The `ensemble` section of a sweep spec: bagged members after the search stage.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "trials/result.hpp"

namespace hpo::trials {

// Placeholder until the ensemble stage lands.
struct EnsembleRecipe {
  std::string raw_json;
};

// Parses the `ensemble` object `j`; appends one FieldError per problem (paths prefixed by `path`).
void parse_ensemble_recipe(const nlohmann::json& j, const std::string& path, EnsembleRecipe& out,
                           std::vector<FieldError>& errors);

}  // namespace hpo::trials
