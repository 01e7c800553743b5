// The sections of a sweep spec that parse_spec (spec.cpp) hands to their own
// files: the parameters (spec_space.cpp), the trial recipe (spec_trial.cpp), the
// search and early stopping (spec_search.cpp). Internal to those four files: it
// is included from nowhere else, so the rest of hpo sees only spec.hpp.
//
// Each parser appends one FieldError per problem and keeps going, as the whole
// spec does (spec.cpp).
#pragma once

#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "search/pruner.hpp"
#include "search/space.hpp"
#include "trials/json_fields.hpp"
#include "trials/spec/spec.hpp"

namespace hpo::trials::spec_sections {

// The spec is read with ordered_json so that the user's parameter order survives.
using Json = nlohmann::ordered_json;
using Reader = OrderedFieldReader;

// `parameters`: each parameter into `space`, then ordered parents first.
void parse_parameters(const Json& params, search::SearchSpace& space,
                      std::vector<FieldError>& errors);

// `trial` (nullptr when absent: the error is already recorded); its
// placeholders and references are checked against `space`.
void parse_trial(const Json* j, const search::SearchSpace& space, TrialRecipe& out,
                 std::vector<FieldError>& errors);

// `search` (nullptr when absent: the error is already recorded).
void parse_search(const Json* j, const search::SearchSpace& space, SearchConfig& out,
                  std::vector<FieldError>& errors);
void parse_early_stopping(const Json* j, std::optional<search::PrunerConfig>& out,
                          std::vector<FieldError>& errors);

// What search.multi_fidelity and search.pbt ask of the rest of the spec, once
// all of it is read.
void check_fidelity(const SweepSpec& spec, std::vector<FieldError>& errors);
void check_pbt(const SweepSpec& spec, std::vector<FieldError>& errors);

}  // namespace hpo::trials::spec_sections
