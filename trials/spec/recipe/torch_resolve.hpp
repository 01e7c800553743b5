// What the torch recipe's parser (torch_recipe.cpp) shares with its resolution
// (torch_resolve.cpp): the value checks, which the parser runs on the literals
// at submit, and the names of the types that both put in their messages.
// Internal to those two files: the rest of hpo sees only torch_recipe.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/result.hpp"
#include "trials/spec/recipe/torch_recipe.hpp"

namespace hpo::trials::torch_resolve {

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, std::int64_t>) return "an integer";
  if constexpr (std::is_same_v<T, double>) return "a number";
  if constexpr (std::is_same_v<T, bool>) return "a boolean";
  return "a string";
}

// resolve()'s value checks on the recipe's literals, at paths under `path`: a
// field that names a parameter keeps its default and goes unchecked (resolve()
// checks it for each trial).
std::vector<FieldError> literal_errors(const TorchRecipe& recipe, const std::string& path);

}  // namespace hpo::trials::torch_resolve
