// The spec enums' name tables (trials/spec/spec_names.hpp): every value has one
// name, each name reads back as its value, and nothing else reads.
#include "trials/spec/spec_names.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace hpo::trials {
namespace {

template <class E, std::size_t N>
void expect_round_trip(const NameTable<E, N>& table) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < N; ++i) {
    const E value = static_cast<E>(i);
    const std::string name = table(value);
    EXPECT_TRUE(seen.insert(name).second) << name << " names two values";
    EXPECT_EQ(table.parse(name), value) << name;
  }
  EXPECT_EQ(table.all().size(), N);
  EXPECT_FALSE(table.parse("").has_value());
  EXPECT_FALSE(table.parse(std::string(table(static_cast<E>(0))) + "x").has_value());
}

TEST(SpecNames, EveryValueHasOneNameThatReadsBack) {
  expect_round_trip(kAlgorithmNames);
  expect_round_trip(kTrialKindNames);
  expect_round_trip(kPrunerNames);
  expect_round_trip(kScheduleNames);
  EXPECT_STREQ(kAlgorithmNames(search::Algorithm::kTpe), "tpe");
  EXPECT_STREQ(kTrialKindNames(TrialKind::kCommand), "command");
  EXPECT_STREQ(kScheduleNames(search::Schedule::kHyperband), "hyperband");
}

TEST(SpecNames, TheParserAcceptsExactlyTheTablesNames) {
  for (const char* name : kAlgorithmNames.all()) {
    std::string spec = R"({"name": "n", "objective": {"metric": "value", "mode": "min"},
      "parameters": {"x1": {"type": "float", "min": 0, "max": 1, "step": 0.5},
                     "x2": {"type": "float", "min": 0, "max": 1, "step": 0.5}},
      "search": {"algorithm": ")" +
                       std::string(name) + R"(", "max_trials": 4},
      "trial": {"kind": "synthetic", "function": "branin"}})";
    auto parsed = parse_spec(spec);
    ASSERT_TRUE(parsed.ok()) << name << ": " << parsed.error().message;
    EXPECT_STREQ(kAlgorithmNames(parsed->search.sampler.algorithm), name);
  }
}

}  // namespace
}  // namespace hpo::trials
