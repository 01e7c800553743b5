// kind "torch": the built-in LibTorch trainer's recipe (model, data, optimiser).
// Parsed here (trials/ owns every spec struct) and run by workers/torch.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "trials/result.hpp"

namespace hpo::trials {

// Placeholder until the trainer lands: the recipe is kept as given.
struct TorchRecipe {
  std::string raw_json;
};

// Parses `trial` fields specific to kind "torch" from `j` (the `trial` object).
// Appends one FieldError per problem, paths prefixed by `path`.
// `consumed` receives the keys it handled so the caller can reject unknown ones.
void parse_torch_recipe(const nlohmann::json& j, const std::string& path, TorchRecipe& out,
                        std::vector<std::string>& consumed, std::vector<FieldError>& errors);

}  // namespace hpo::trials
