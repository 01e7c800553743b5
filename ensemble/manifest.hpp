// The ensemble manifest: everything needed to rebuild and use a finished ensemble
// without Redis — which models, trained how (parameters, seeds, feature subsets),
// combined how (rule and weights), and how well they did.
//
// It is what `hpo predict` reads and what an exported ensemble directory holds
// beside the members' model files (`artifact` paths are relative to the manifest).
// One JSON document, versioned; readers ignore keys they do not know so a newer
// writer's additions do not break an older reader, but a different `version` is
// refused.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.hpp"
#include "ensemble/bagging.hpp"
#include "ensemble/combiners.hpp"
#include "ensemble/metrics.hpp"
#include "search/space.hpp"
#include "trials/spec/recipe/ensemble_recipe.hpp"

namespace hpo::ensemble {

inline constexpr int kManifestVersion = 1;

// Validation and test scores of one model or of the ensemble.
struct MetricSummary {
  Scores validation;
  Scores test;
};

struct ManifestMember {
  std::string trial_id;         // the trial that trained it
  std::string kind = "member";  // "member" (bagged) or "trial" (a search trial, selection)
  search::Params params;
  std::optional<MemberSpec> bagging;   // bagged members: seed and fractions (rebuilds the plan)
  std::vector<std::int64_t> features;  // feature columns it was trained on; empty = all
  double weight = 0;     // in the combination; weights sum to 1 (stacking: a coefficient, any sign)
  std::string artifact;  // model file, relative to the manifest's directory
  MetricSummary metrics;
};

struct OobSummary {
  std::int64_t rows_total = 0;
  std::int64_t rows_covered = 0;
  Scores scores;
};

struct EnsembleManifest {
  int version = kManifestVersion;
  std::string sweep_id;
  Targets::Task task = Targets::Task::kClassification;
  std::int64_t n_features = 0;  // flattened input features the members expect
  std::int64_t n_outputs = 0;   // classes (classification) or outputs (regression)
  trials::EnsembleRecipe::Combine combine = trials::EnsembleRecipe::Combine::kSoftVote;
  // The candidate the stage chose (ensemble/evaluate.hpp): best_single, bagged,
  // selection (weights as `combine` says) or stacking (members' weights are the
  // meta-model's coefficients, with `stacking_intercept`; see stacking.hpp).
  std::string method = "bagged";
  std::vector<double> stacking_intercept;
  std::vector<ManifestMember> members;
  MetricSummary ensemble_metrics;
  // The best single model: the sweep's best trial by its objective, the
  // incumbent every combination was compared with (ensemble/decision.hpp).
  std::string best_single_trial_id;
  MetricSummary best_single_metrics;
  std::optional<OobSummary> oob;
};

std::string manifest_to_json(const EnsembleManifest& manifest);
// One set of scores as the manifest writes it: {"accuracy": ..., "log_loss": ...}, absent ones left
// out.
nlohmann::json scores_to_json(const Scores& scores);
// Errors name the JSON path of the offending field ("members[2].weight").
Result<EnsembleManifest> manifest_from_json(std::string_view json_text);

// The combiner that reproduces the manifest's ensemble: hard vote and median as such, every
// weighted-mean rule (soft vote, mean, weighted, selection) with the recorded weights.
std::unique_ptr<Combiner> combiner_for(const EnsembleManifest& manifest);

}  // namespace hpo::ensemble
