#include "trials/ensemble_recipe.hpp"

#include <nlohmann/json.hpp>

namespace hpo::trials {

// Placeholder until the ensemble stage lands.
void parse_ensemble_recipe(const nlohmann::json& j, const std::string& path, EnsembleRecipe& out,
                           std::vector<FieldError>& errors) {
  if (!j.is_object()) errors.push_back({path, "expected an object"});
  out.raw_json = j.dump();
}

}  // namespace hpo::trials
