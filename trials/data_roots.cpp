#include "trials/data_roots.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

namespace hpo::trials {
namespace {

namespace fs = std::filesystem;

// "/a/b/../c/" -> "/a/c": lexical, without the trailing separator.
fs::path folded(const std::string& p) {
  fs::path n = fs::path(p).lexically_normal();
  if (n.has_filename() || n == n.root_path()) return n;
  return n.parent_path();  // "/a/c/" -> "/a/c"
}

}  // namespace

bool lexically_under(const std::string& path, const std::string& root) {
  fs::path p = folded(path), r = folded(root);
  if (!p.is_absolute() || !r.is_absolute()) return false;
  auto [pi, ri] = std::mismatch(p.begin(), p.end(), r.begin(), r.end());
  return ri == r.end() && pi != p.end();  // strictly below: the root itself is not a file
}

std::string describe_roots(const std::vector<std::string>& roots) {
  return fmt::format("{}", fmt::join(roots, ", "));
}

std::vector<FieldError> check_data_paths(const TorchDataRecipe& data,
                                         const std::vector<std::string>& roots) {
  std::vector<FieldError> errors;
  if (roots.empty()) return errors;
  for (const auto& field : data_paths(data)) {
    const std::string& where = field.first;
    const std::string* path = field.second;  // (a structured binding cannot be captured)
    const fs::path p(*path);
    if (p.is_absolute()) {
      bool inside = std::any_of(roots.begin(), roots.end(),
                                [&](const std::string& r) { return lexically_under(*path, r); });
      if (!inside)
        errors.push_back({where, fmt::format("'{}' is outside the data roots ({}); the "
                                             "scheduler's and workers' --data-root add one",
                                             *path, describe_roots(roots))});
      continue;
    }
    fs::path n = p.lexically_normal();
    if (n.empty() || *n.begin() == ".." || n == ".")
      errors.push_back({where, fmt::format("'{}' climbs out of the data roots with '..'", *path)});
  }
  return errors;
}

}  // namespace hpo::trials
