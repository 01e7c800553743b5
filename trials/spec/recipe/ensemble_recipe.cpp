// Parser of the `ensemble` spec section, through the field reader (json_fields.hpp): it checks
// every key and keeps going after a bad one, so one round trip reports every problem.
#include "trials/spec/recipe/ensemble_recipe.hpp"

#include <array>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "trials/json_fields.hpp"

namespace hpo::trials {

namespace {

using Combine = EnsembleRecipe::Combine;

// Indexed by Combine.
constexpr std::array<const char*, 6> kCombineNames{"hard_vote", "soft_vote", "mean",
                                                   "median",    "weighted",  "selection"};

// The section's grammar: null is not "absent" but a wrong value, and 2.0 is not an integer.
constexpr FieldRules kEnsembleRules{.null_is_absent = false, .floats_as_integers = false};

void read_base(FieldReader& r, const nlohmann::json& v, EnsembleRecipe& out,
               std::vector<FieldError>& errors) {
  if (v.is_string() && v.get<std::string>() == "best") {
    out.base = EnsembleRecipe::Base::kBest;
    return;
  }
  if (!v.is_object() || v.empty()) return r.expected(r.at("base"), "\"best\" or {\"top_k\": K}", v);
  FieldReader b(v, r.at("base"), errors, kEnsembleRules);
  if (v.contains("top_k")) out.base = EnsembleRecipe::Base::kTopK;
  if (auto k = b.integer("top_k", 1, EnsembleRecipe::kMaxMembers)) out.top_k = static_cast<int>(*k);
  b.unknown_keys("top_k");
}

// A fraction of the features in (0, 1], or a whole count of them above 1.
void read_max_features(FieldReader& r, const nlohmann::json& v, double& out) {
  double x = v.is_number() ? v.get<double>() : 0;
  if (!std::isfinite(x) || !(x > 0) || (x > 1 && (x != std::floor(x) || x > 1e15)))
    return r.expected(r.at("max_features"), "a fraction in (0, 1] or an integer feature count >= 1",
                      v);
  out = x;
}

// The whole uint64 range (a seed is bits, not a count), so not FieldReader::integer.
void read_seed(FieldReader& r, const nlohmann::json& v, std::uint64_t& out) {
  if (!v.is_number_integer()) return r.expected(r.at("seed"), "an integer", v);
  if (!v.is_number_unsigned() && v.get<std::int64_t>() < 0)
    return r.error(r.at("seed"),
                   fmt::format("{} is out of range: expected 0 to {}", FieldReader::describe(v),
                               std::numeric_limits<std::uint64_t>::max()));
  out = v.get<std::uint64_t>();
}

template <class Int>
void assign(std::optional<std::int64_t> v, Int& out) {
  if (v) out = static_cast<Int>(*v);
}

}  // namespace

std::span<const char* const> combine_names() {
  return kCombineNames;
}

const char* to_string(EnsembleRecipe::Combine c) {
  auto i = static_cast<std::size_t>(c);
  return i < kCombineNames.size() ? kCombineNames[i] : "?";
}

constexpr std::array<const char*, 5> kChooseNames = {"auto", "best_single", "bagged", "selection",
                                                     "stacking"};

const char* to_string(EnsembleRecipe::Choose c) {
  return kChooseNames[static_cast<std::size_t>(c)];
}

std::optional<EnsembleRecipe::Combine> parse_combine(std::string_view s) {
  for (std::size_t i = 0; i < kCombineNames.size(); ++i)
    if (s == kCombineNames[i]) return static_cast<Combine>(i);
  return std::nullopt;
}

void parse_ensemble_recipe(const nlohmann::json& j, const std::string& path, EnsembleRecipe& out,
                           std::vector<FieldError>& errors) {
  FieldReader r(j, path, errors, kEnsembleRules);
  if (!j.is_object()) return r.expected(path, "an object", j);
  assign(r.integer("members", 1, EnsembleRecipe::kMaxMembers), out.members);
  if (const nlohmann::json* v = r.get("base")) read_base(r, *v, out, errors);
  if (auto v = r.boolean("bootstrap")) out.bootstrap = *v;
  if (auto v = r.number("sample_fraction")) {
    if (*v > 0 && *v <= 1)
      out.sample_fraction = *v;
    else
      r.error(r.at("sample_fraction"),
              fmt::format("{} is out of range: expected more than 0, up to 1", *v));
  }
  if (const nlohmann::json* v = r.get("max_features")) read_max_features(r, *v, out.max_features);
  auto combine = r.one_of("combine", kCombineNames);
  if (combine) out.combine = *parse_combine(*combine);
  if (auto choose = r.one_of("choose", kChooseNames))
    for (std::size_t i = 0; i < kChooseNames.size(); ++i)
      if (*choose == kChooseNames[i]) out.choose = static_cast<EnsembleRecipe::Choose>(i);
  if (const nlohmann::json* v = r.get("seed")) read_seed(r, *v, out.seed);
  assign(r.integer("selection_rounds", 1, EnsembleRecipe::kMaxSelectionRounds),
         out.selection_rounds);
  assign(r.integer("selection_init", 0, EnsembleRecipe::kMaxSelectionRounds), out.selection_init);
  if (auto v = r.integer("epochs", 1, EnsembleRecipe::kMaxEpochs)) out.epochs = *v;
  if (auto v = r.integer("subset", 0, std::int64_t{1} << 40)) out.subset = *v;
  r.unknown_keys(
      "members, base, bootstrap, sample_fraction, max_features, combine, choose, seed, "
      "selection_rounds, selection_init, epochs, subset");

  // Cross-field checks; a field that failed to parse is already reported and not checked again.
  const bool has_selection_keys = j.contains("selection_rounds") || j.contains("selection_init");
  const bool combine_given = j.contains("combine");
  if (has_selection_keys && (combine || !combine_given) && out.combine != Combine::kSelection)
    r.error(r.at("combine"),
            fmt::format("expected \"selection\" when selection_rounds or selection_init "
                        "is given, got {}",
                        combine_given ? FieldReader::describe(j.at("combine"))
                                      : "the default \"soft_vote\""));
  if (out.selection_init > out.selection_rounds)
    r.error(r.at("selection_init"), fmt::format("expected at most selection_rounds ({}), got {}",
                                                out.selection_rounds, out.selection_init));
}

}  // namespace hpo::trials
