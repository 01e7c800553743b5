// Bagging plans: which training rows and which features one ensemble member sees.
//
// A plan is a pure function of (member seed, recipe fractions, data shape), so the
// scheduler records only the member's MemberSpec (in its trial's plan) and the
// worker recomputes the identical plan after loading the data; a retried or
// re-trained member draws exactly the same rows. Rows and features come from two
// independent streams derived from the member seed, so changing max_features does
// not change which rows a member gets.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "trials/spec/recipe/ensemble_recipe.hpp"
#include "trials/trial_plan.hpp"

namespace hpo::ensemble {

// What one member needs to rebuild its plan: part of its trial record.
using trials::MemberSpec;

// The member's spec: its seed is derive_seed(recipe.seed, member_index).
MemberSpec member_spec(const trials::EnsembleRecipe& recipe, int member_index);

struct BaggingPlan {
  int member_index = 0;
  std::uint64_t seed = 0;        // the member seed the plan was drawn from
  std::uint64_t train_seed = 0;  // for the trainer's own randomness (init, shuffling, dropout)
  std::int64_t n_rows = 0;       // shape of the data the plan was drawn for
  std::int64_t n_features = 0;
  std::vector<std::int64_t> rows;      // training rows, ascending; a row drawn twice appears twice
  std::vector<std::int64_t> features;  // feature columns, ascending, distinct
  std::vector<std::int64_t> oob_rows;  // out-of-bag: rows never drawn, ascending
};

// Rows per member: max(1, round(sample_fraction * n_rows)); 0 when n_rows is 0.
std::int64_t rows_per_member(double sample_fraction, std::int64_t n_rows);
// Features per member: fraction -> max(1, floor(f * n)); count > 1 -> min(count, n); 0 when n is 0.
std::int64_t features_per_member(double max_features, std::int64_t n_features);

BaggingPlan plan_member(const MemberSpec& spec, std::int64_t n_rows, std::int64_t n_features);
BaggingPlan plan_member(const trials::EnsembleRecipe& recipe, int member_index, std::int64_t n_rows,
                        std::int64_t n_features);

}  // namespace hpo::ensemble
