// Parser of the `ensemble` spec section. It checks every key and keeps going after a bad one, so
// one round trip reports every problem; each message names the value it got and what it expected.
#include "trials/ensemble_recipe.hpp"

#include <array>
#include <cmath>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace hpo::trials {

namespace {

using Combine = EnsembleRecipe::Combine;

constexpr std::array<std::pair<Combine, const char*>, 6> kCombineNames{{
    {Combine::kHardVote, "hard_vote"},
    {Combine::kSoftVote, "soft_vote"},
    {Combine::kMean, "mean"},
    {Combine::kMedian, "median"},
    {Combine::kWeighted, "weighted"},
    {Combine::kSelection, "selection"},
}};

// The offending value as the user wrote it, shortened so a huge value cannot flood the message.
std::string shown(const nlohmann::json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

class Reader {
 public:
  Reader(const std::string& path, std::vector<FieldError>& errors) : path_(path), errors_(errors) {}

  void fail(const std::string& key, const nlohmann::json& v, const std::string& expected) {
    errors_.push_back({path_ + "." + key, fmt::format("expected {}, got {}", expected, shown(v))});
  }

  void integer(const nlohmann::json& v, const std::string& key, int lo, int hi, int& out) {
    std::string expected = fmt::format("an integer in [{}, {}]", lo, hi);
    if (!v.is_number_integer()) return fail(key, v, expected);
    // A huge unsigned value must not wrap into range when read as a signed one.
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
      return fail(key, v, expected);
    if (v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi) return fail(key, v, expected);
    out = static_cast<int>(v.get<std::int64_t>());
  }

  void count(const nlohmann::json& v, const std::string& key, std::int64_t lo, std::int64_t hi,
             std::optional<std::int64_t>& out) {
    std::string expected = fmt::format("an integer in [{}, {}]", lo, hi);
    if (!v.is_number_integer()) return fail(key, v, expected);
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
      return fail(key, v, expected);
    if (v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi) return fail(key, v, expected);
    out = v.get<std::int64_t>();
  }

  void boolean(const nlohmann::json& v, const std::string& key, bool& out) {
    if (!v.is_boolean()) return fail(key, v, "true or false");
    out = v.get<bool>();
  }

  void fraction(const nlohmann::json& v, const std::string& key, double& out) {
    const char* expected = "a number in (0, 1]";
    if (!v.is_number()) return fail(key, v, expected);
    double x = v.get<double>();
    if (!(x > 0 && x <= 1)) return fail(key, v, expected);
    out = x;
  }

  void max_features(const nlohmann::json& v, const std::string& key, double& out) {
    const char* expected = "a fraction in (0, 1] or an integer feature count >= 1";
    if (!v.is_number()) return fail(key, v, expected);
    double x = v.get<double>();
    if (!std::isfinite(x) || !(x > 0)) return fail(key, v, expected);
    if (x > 1 && (x != std::floor(x) || x > 1e15)) return fail(key, v, expected);
    out = x;
  }

  void seed(const nlohmann::json& v, const std::string& key, std::uint64_t& out) {
    if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<std::int64_t>() < 0))
      return fail(key, v, "an integer in [0, 2^64)");
    out = v.get<std::uint64_t>();
  }

  void combine(const nlohmann::json& v, const std::string& key, Combine& out) {
    const char* expected =
        "one of \"hard_vote\", \"soft_vote\", \"mean\", \"median\", \"weighted\", \"selection\"";
    if (!v.is_string()) return fail(key, v, expected);
    auto c = parse_combine(v.get<std::string>());
    if (!c) return fail(key, v, expected);
    out = *c;
  }

  void base(const nlohmann::json& v, const std::string& key, EnsembleRecipe& out) {
    const char* expected = "\"best\" or {\"top_k\": K}";
    if (v.is_string()) {
      if (v.get<std::string>() != "best") return fail(key, v, expected);
      out.base = EnsembleRecipe::Base::kBest;
      return;
    }
    if (!v.is_object() || v.empty()) return fail(key, v, expected);
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (it.key() != "top_k") {
        errors_.push_back({path_ + "." + key + "." + it.key(),
                           "unknown key; expected {\"top_k\": K} or \"best\""});
        continue;
      }
      out.base = EnsembleRecipe::Base::kTopK;
      integer(it.value(), key + ".top_k", 1, EnsembleRecipe::kMaxMembers, out.top_k);
    }
  }

 private:
  const std::string& path_;
  std::vector<FieldError>& errors_;
};

}  // namespace

const char* to_string(EnsembleRecipe::Combine c) {
  for (const auto& [value, name] : kCombineNames)
    if (value == c) return name;
  return "?";
}

std::optional<EnsembleRecipe::Combine> parse_combine(std::string_view s) {
  for (const auto& [value, name] : kCombineNames)
    if (s == name) return value;
  return std::nullopt;
}

void parse_ensemble_recipe(const nlohmann::json& j, const std::string& path, EnsembleRecipe& out,
                           std::vector<FieldError>& errors) {
  if (!j.is_object()) {
    errors.push_back({path, fmt::format("expected an object, got {}", shown(j))});
    return;
  }
  Reader r(path, errors);
  bool has_selection_keys = false;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& v = it.value();
    if (key == "members")
      r.integer(v, key, 1, EnsembleRecipe::kMaxMembers, out.members);
    else if (key == "base")
      r.base(v, key, out);
    else if (key == "bootstrap")
      r.boolean(v, key, out.bootstrap);
    else if (key == "sample_fraction")
      r.fraction(v, key, out.sample_fraction);
    else if (key == "max_features")
      r.max_features(v, key, out.max_features);
    else if (key == "combine")
      r.combine(v, key, out.combine);
    else if (key == "seed")
      r.seed(v, key, out.seed);
    else if (key == "selection_rounds") {
      has_selection_keys = true;
      r.integer(v, key, 1, EnsembleRecipe::kMaxSelectionRounds, out.selection_rounds);
    } else if (key == "selection_init") {
      has_selection_keys = true;
      r.integer(v, key, 0, EnsembleRecipe::kMaxSelectionRounds, out.selection_init);
    } else if (key == "epochs") {
      r.count(v, key, 1, EnsembleRecipe::kMaxEpochs, out.epochs);
    } else if (key == "subset") {
      r.count(v, key, 0, std::int64_t{1} << 40, out.subset);
    } else {
      errors.push_back({path + "." + key,
                        "unknown key; expected one of members, base, bootstrap, sample_fraction, "
                        "max_features, combine, seed, selection_rounds, selection_init, epochs, "
                        "subset"});
    }
  }
  // Cross-field checks; a field that failed to parse is already reported and not checked again.
  const bool combine_given = j.contains("combine");
  const bool combine_bad = combine_given && (!j["combine"].is_string() ||
                                             !parse_combine(j["combine"].get<std::string>()));
  if (has_selection_keys && !combine_bad && out.combine != Combine::kSelection)
    errors.push_back(
        {path + ".combine",
         fmt::format("expected \"selection\" when selection_rounds or selection_init "
                     "is given, got {}",
                     combine_given ? shown(j["combine"]) : "the default \"soft_vote\"")});
  if (out.selection_init > out.selection_rounds)
    errors.push_back(
        {path + ".selection_init", fmt::format("expected at most selection_rounds ({}), got {}",
                                               out.selection_rounds, out.selection_init)});
}

}  // namespace hpo::trials
