// The settings engine on a table of its own (the programs' tables are tested
// with them: tests/scheduler/config_test.cpp, tests/workers/agent/config_test.cpp).
#include "core/settings.hpp"

#include <gtest/gtest.h>

#include <map>

namespace hpo {
namespace {

struct Toy {
  std::string name = "default";
  bool loud = false;
  std::vector<std::string> paths;
  bool help = false;
};

std::vector<Setting<Toy>> table() {
  return {
      {"--name", "TOY_NAME", "name", SettingKind::kValue,
       [](Toy& t, const std::string&, const std::string& v) -> Status {
         if (v.empty()) return Error::invalid("name", "must not be empty");
         t.name = v;
         return {};
       }},
      {"--loud", "TOY_LOUD", "loud", SettingKind::kSwitch,
       [](Toy& t, const std::string&, const std::string& v) -> Status {
         t.loud = parse_setting_switch(v);
         return {};
       }},
      {"--path", "TOY_PATHS", "path", SettingKind::kList,
       [](Toy& t, const std::string&, const std::string& v) -> Status {
         t.paths.push_back(v);
         return {};
       },
       [](Toy& t) { t.paths.clear(); }, ':'},
  };
}

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

Result<Toy> load(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  Toy t;
  if (auto st = load_settings(table(), args, env_of(std::move(env)), false, t, t.help); !st)
    return st.error();
  return t;
}

TEST(Settings, FlagsBeatTheEnvironmentAndAListIsReplacedNotMerged) {
  auto t = load({}, {{"TOY_NAME", "env"}, {"TOY_PATHS", "/a:/b"}});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->name, "env");
  EXPECT_EQ(t->paths, (std::vector<std::string>{"/a", "/b"}));
  t = load({"--name=flag", "--path", "/c", "--path", "/d"},
           {{"TOY_NAME", "env"}, {"TOY_PATHS", "/a"}});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->name, "flag");
  EXPECT_EQ(t->paths, (std::vector<std::string>{"/c", "/d"}));
}

TEST(Settings, SwitchesTakeNoValueOnTheCommandLine) {
  auto t = load({"--loud", "--name", "x"});
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->loud);
  EXPECT_EQ(t->name, "x");
  EXPECT_FALSE(load({"--loud=0"})->loud);
  EXPECT_TRUE(load({}, {{"TOY_LOUD", "true"}})->loud);
}

TEST(Settings, ErrorsNameWhereTheValueCameFrom) {
  auto unknown = load({"--frobnicate"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().fields.at(0).path, "--frobnicate");
  auto missing = load({"--name"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().fields.at(0).path, "--name");
  std::int64_t n = 0;
  auto range = parse_setting_int("TOY_N", "99", 1, 10, n);
  ASSERT_FALSE(range.ok());
  EXPECT_EQ(range.error().fields.at(0).path, "TOY_N");
  EXPECT_TRUE(load({"--help", "--frobnicate"})->help);
}

}  // namespace
}  // namespace hpo
