#include "trials/torch_recipe.hpp"

#include <nlohmann/json.hpp>

namespace hpo::trials {

// Placeholder until the trainer lands: keeps the whole `trial` object.
void parse_torch_recipe(const nlohmann::json& j, const std::string& path, TorchRecipe& out,
                        std::vector<std::string>& consumed, std::vector<FieldError>& errors) {
  (void)path;
  (void)errors;
  out.raw_json = j.dump();
  for (auto it = j.begin(); it != j.end(); ++it) consumed.push_back(it.key());
}

}  // namespace hpo::trials
