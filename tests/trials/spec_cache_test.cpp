// SpecCache: one parse per sweep per process, shared, bounded.
#include <gtest/gtest.h>

#include "trials/spec/spec_cache.hpp"

namespace hpo::trials {
namespace {

std::string spec_text(int max_trials) {
  return R"({"name": "c", "objective": {"metric": "value", "mode": "min"},
    "parameters": {"x": {"type": "float", "min": 0, "max": 1}},
    "search": {"algorithm": "random", "max_trials": )" +
         std::to_string(max_trials) + R"(}, "trial": {"kind": "synthetic", "function": "noop"}})";
}

TEST(SpecCache, ParsesEachSweepOnceAndSharesIt) {
  SpecCache cache;
  auto a = cache.get("s1", spec_text(7));
  ASSERT_TRUE(a.ok()) << a.error().message;
  auto b = cache.get("s1", spec_text(7));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->get(), b->get());  // the same object
  EXPECT_EQ((*a)->search.max_trials, 7);
  EXPECT_EQ(cache.parses(), 1);
  ASSERT_TRUE(cache.get("s2", spec_text(9)).ok());
  EXPECT_EQ(cache.parses(), 2);
}

TEST(SpecCache, APutSpecIsNotParsedAgainAndBadTextIsNotCached) {
  SpecCache cache;
  auto parsed = parse_spec(spec_text(3));
  ASSERT_TRUE(parsed.ok());
  cache.put("s1", std::make_shared<const SweepSpec>(*parsed));
  EXPECT_EQ((*cache.get("s1", "not even json"))->search.max_trials, 3);
  EXPECT_EQ(cache.find("s1")->search.max_trials, 3);
  EXPECT_EQ(cache.find("nope"), nullptr);
  EXPECT_EQ(cache.parses(), 0);
  auto bad = cache.get("s2", "{}");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_FALSE(cache.get("s2", "{}").ok());
  EXPECT_EQ(cache.parses(), 2);  // refused texts are parsed again, never cached
}

TEST(SpecCache, TheLeastRecentlyUsedFallOutPastTheCapacity) {
  SpecCache cache(2);
  ASSERT_TRUE(cache.get("a", spec_text(1)).ok());
  ASSERT_TRUE(cache.get("b", spec_text(2)).ok());
  ASSERT_TRUE(cache.get("a", spec_text(1)).ok());  // a is the most recent now
  ASSERT_TRUE(cache.get("c", spec_text(3)).ok());  // b falls out
  EXPECT_EQ(cache.parses(), 3);
  ASSERT_TRUE(cache.get("a", spec_text(1)).ok());
  EXPECT_EQ(cache.parses(), 3);
  ASSERT_TRUE(cache.get("b", spec_text(2)).ok());
  EXPECT_EQ(cache.parses(), 4);
}

}  // namespace
}  // namespace hpo::trials
