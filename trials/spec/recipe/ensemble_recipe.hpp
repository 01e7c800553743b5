// The `ensemble` section of a sweep spec: bagged members trained after the search stage.
//
// JSON form (every key optional; see ensemble/README.md):
//   "ensemble": {"members": 8, "base": "best" | {"top_k": 3}, "bootstrap": true,
//                "sample_fraction": 1.0, "max_features": 1.0,
//                "combine": "hard_vote" | "soft_vote" | "mean" | "median" | "weighted" |
//                "selection", "choose": "auto" | "best_single" | "bagged" | "selection" |
//                "stacking", "seed": 0, "selection_rounds": 50, "selection_init": 1,
//                "epochs": 8, "subset": 0}
// Parsed once here; the scheduler and ensemble/ only ever see the struct.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.hpp"

namespace hpo::trials {

struct EnsembleRecipe {
  // Which parameters the members are trained with.
  enum class Base {
    kBest,  // every member with the best search trial's parameters
    kTopK,  // member i with the (i mod top_k)-th best configuration
  };
  // How member predictions become the ensemble's prediction (ensemble/combiners.hpp).
  enum class Combine { kHardVote, kSoftVote, kMean, kMedian, kWeighted, kSelection };
  // Which candidate the stage returns (ensemble/evaluate.hpp): the sweep's best trial
  // unless a combination beats it beyond the noise (auto, ensemble/decision.hpp), or the
  // one named.
  enum class Choose { kAuto, kBestSingle, kBagged, kSelection, kStacking };

  static constexpr int kMaxMembers = 1000;
  static constexpr int kMaxSelectionRounds = 10000;

  int members = 8;  // number of bagged members, [1, kMaxMembers]
  Base base = Base::kBest;
  int top_k = 1;          // configurations cycled through when base == kTopK, [1, kMaxMembers]
  bool bootstrap = true;  // rows drawn with replacement; false: a subsample without replacement
  double sample_fraction = 1.0;  // rows per member as a fraction of the training rows, (0, 1]
  // Features per member (random subspace, as a random forest): a value in (0, 1] is a fraction
  // of the features (floor, at least 1); an integer > 1 is an absolute count (capped at the
  // number of features). 1.0 = every feature (no subspace).
  double max_features = 1.0;
  Combine combine = Combine::kSoftVote;  // how the bagged members are combined
  Choose choose = Choose::kAuto;
  std::uint64_t seed = 0;     // ensemble seed; member seeds are derived from it and the index
  int selection_rounds = 50;  // combine == kSelection: greedy rounds (Caruana et al.)
  int selection_init = 1;     // combine == kSelection: start from the N best models, [0, rounds]
  // The members' training budget when it differs from the search trials' (search cheaply on a
  // subset for a few epochs, then train the members in full). Kind torch only; absent: the
  // trial recipe's `epochs` / `data.subset`. subset 0 = every training row.
  std::optional<std::int64_t> epochs;  // [1, kMaxEpochs]
  std::optional<std::int64_t> subset;  // [0, 2^40]
  static constexpr std::int64_t kMaxEpochs = 100000;
};

const char* to_string(EnsembleRecipe::Combine c);  // "hard_vote", "soft_vote", ...
const char* to_string(EnsembleRecipe::Choose c);   // "auto", "best_single", "bagged", ...
std::optional<EnsembleRecipe::Combine> parse_combine(std::string_view s);
std::span<const char* const> combine_names();  // every rule's name, in the enum's order

// Parses the `ensemble` object `j`; appends one FieldError per problem (paths prefixed by `path`,
// e.g. "ensemble.members"). Unknown keys, wrong types and out-of-range values are errors; `out`
// keeps the defaults for fields that are absent or bad.
void parse_ensemble_recipe(const nlohmann::json& j, const std::string& path, EnsembleRecipe& out,
                           std::vector<FieldError>& errors);

}  // namespace hpo::trials
