// Bootstrap draws count how often each row was drawn (one pass, no sort); the
// without-replacement subsample and the feature subspace use Floyd's algorithm,
// which needs exactly k draws for k of n items, whatever k.
#include "ensemble/bagging.hpp"

#include <algorithm>
#include <cmath>

#include "ensemble/rng.hpp"

namespace hpo::ensemble {

namespace {

constexpr std::uint64_t kRowsStream = 1;
constexpr std::uint64_t kFeaturesStream = 2;
constexpr std::uint64_t kTrainStream = 3;

// Marks k distinct items of [0, n), uniformly among all k-subsets (Floyd 1987).
std::vector<char> choose_distinct(std::int64_t n, std::int64_t k, Rng& rng) {
  std::vector<char> chosen(static_cast<std::size_t>(n), 0);
  if (k >= n) {
    std::fill(chosen.begin(), chosen.end(), 1);
    return chosen;
  }
  for (std::int64_t j = n - k; j < n; ++j) {
    auto t = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(j) + 1));
    chosen[static_cast<std::size_t>(chosen[t] ? j : t)] = 1;
  }
  return chosen;
}

}  // namespace

MemberSpec member_spec(const trials::EnsembleRecipe& recipe, int member_index) {
  return MemberSpec{member_index,
                    derive_seed(recipe.seed, static_cast<std::uint64_t>(member_index)),
                    recipe.bootstrap, recipe.sample_fraction, recipe.max_features,
                    recipe.epochs,    recipe.subset};
}

std::int64_t rows_per_member(double sample_fraction, std::int64_t n_rows) {
  if (n_rows <= 0) return 0;
  auto k = static_cast<std::int64_t>(std::llround(sample_fraction * static_cast<double>(n_rows)));
  return std::clamp<std::int64_t>(k, 1, n_rows);
}

std::int64_t features_per_member(double max_features, std::int64_t n_features) {
  if (n_features <= 0) return 0;
  double k = max_features > 1 ? max_features : std::floor(max_features * n_features);
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::min(k, 9e18)), 1, n_features);
}

BaggingPlan plan_member(const MemberSpec& spec, std::int64_t n_rows, std::int64_t n_features) {
  BaggingPlan plan;
  plan.member_index = spec.member_index;
  plan.seed = spec.seed;
  plan.train_seed = derive_seed(spec.seed, kTrainStream);
  plan.n_rows = std::max<std::int64_t>(n_rows, 0);
  plan.n_features = std::max<std::int64_t>(n_features, 0);

  Rng row_rng(derive_seed(spec.seed, kRowsStream));
  const std::int64_t k = rows_per_member(spec.sample_fraction, plan.n_rows);
  std::vector<std::int64_t> drawn(static_cast<std::size_t>(plan.n_rows), 0);
  if (spec.bootstrap) {
    for (std::int64_t i = 0; i < k; ++i) ++drawn[row_rng.below(static_cast<std::uint64_t>(n_rows))];
  } else {
    auto chosen = choose_distinct(plan.n_rows, k, row_rng);
    std::copy(chosen.begin(), chosen.end(), drawn.begin());
  }
  plan.rows.reserve(static_cast<std::size_t>(k));
  for (std::int64_t r = 0; r < plan.n_rows; ++r) {
    if (drawn[r] == 0) plan.oob_rows.push_back(r);
    plan.rows.insert(plan.rows.end(), static_cast<std::size_t>(drawn[r]), r);
  }

  Rng feature_rng(derive_seed(spec.seed, kFeaturesStream));
  auto chosen = choose_distinct(
      plan.n_features, features_per_member(spec.max_features, plan.n_features), feature_rng);
  for (std::int64_t f = 0; f < plan.n_features; ++f)
    if (chosen[f]) plan.features.push_back(f);
  return plan;
}

BaggingPlan plan_member(const trials::EnsembleRecipe& recipe, int member_index, std::int64_t n_rows,
                        std::int64_t n_features) {
  return plan_member(member_spec(recipe, member_index), n_rows, n_features);
}

}  // namespace hpo::ensemble
