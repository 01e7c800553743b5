// Data roots: the folders a sweep's dataset files may come from.
//
// A torch recipe names files the worker opens (trial.data.train, ...). Without
// a limit, anyone who may submit could have a worker read any file it can
// (keys, other users' data) and learn from the errors whether it exists. So
// the scheduler and every worker keep a list of roots (`--data-root`,
// repeatable; the Debian dataset folder by default, and on a worker its own
// work folder, where a sweep's own files live) and refuse paths outside them:
//   - at submit (here, lexically: the scheduler need not see the workers'
//     files): an absolute path must lie under a root once `.` and `..` are
//     folded; a relative path (looked up under each root by the worker) must
//     not climb out with `..`;
//   - on the worker (workers/torch/dataset.hpp, confine_data_paths): the file,
//     symlinks resolved, must lie under a root, also resolved.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "trials/spec/recipe/torch_recipe.hpp"

namespace hpo::trials {

inline constexpr char kDefaultDataRoot[] = "/usr/share/datasets";

// The non-empty data paths of a recipe (TorchDataRecipe) or of one trial's
// resolved data (ResolvedData), with their JSON paths ("trial.data.train", ...).
template <class Data>
auto data_paths(Data& d) {
  using Ptr = decltype(&d.train);
  std::vector<std::pair<std::string, Ptr>> out;
  auto add = [&](const char* key, Ptr p) {
    if (!p->empty()) out.emplace_back(std::string("trial.data.") + key, p);
  };
  add("train_images", &d.train_images);
  add("train_labels", &d.train_labels);
  add("validation_images", &d.validation_images);
  add("validation_labels", &d.validation_labels);
  add("test_images", &d.test_images);
  add("test_labels", &d.test_labels);
  add("train", &d.train);
  add("validation", &d.validation);
  add("test", &d.test);
  return out;
}

// Whether `path` (absolute) lies under `root` (absolute), lexically, after
// folding `.`, `..` and repeated slashes in both.
bool lexically_under(const std::string& path, const std::string& root);

// One FieldError per data path of `data` that lies outside every root, by the
// rules above. `roots` empty: nothing is refused (confinement off).
std::vector<FieldError> check_data_paths(const TorchDataRecipe& data,
                                         const std::vector<std::string>& roots);

// "a, b, c" for error messages.
std::string describe_roots(const std::vector<std::string>& roots);

}  // namespace hpo::trials
