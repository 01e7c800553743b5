// hpo-worker's configuration (defaults < environment < flags) and the
// CUDA_VISIBLE_DEVICES parsing of the GPU inventory.
#include <gtest/gtest.h>

#include <map>

#include "workers/config.hpp"
#include "workers/gpu_inventory.hpp"

namespace hpo::workers {
namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* k) -> const char* {
    auto it = vars.find(k);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(WorkerConfig, DefaultsWhenNothingIsGiven) {
  auto c = load_config({}, env_of({}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->redis_url, "");
  EXPECT_FALSE(c->slots.has_value());
  EXPECT_EQ(c->lease_ms, 30000);
  EXPECT_EQ(c->prefix, "hpo:");
  EXPECT_DOUBLE_EQ(c->kill_grace_s, 5.0);
}

TEST(WorkerConfig, ANoticeUrlAndItsHeadersAreCheckedWhenRead) {
  auto c = load_config({"--notice-url", "http://169.254.169.254/metadata/scheduledevents",
                        "--notice-header", "Metadata: true"},
                       env_of({}));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->notice_url, "http://169.254.169.254/metadata/scheduledevents");
  ASSERT_EQ(c->notice_headers.size(), 1u);
  EXPECT_EQ(c->notice_headers[0].first, "Metadata");
  EXPECT_EQ(c->notice_headers[0].second, "true");
  auto tls = load_config({"--notice-url", "https://169.254.169.254/"}, env_of({}));
  ASSERT_FALSE(tls.ok());
  EXPECT_NE(tls.error().message.find("--notice-url"), std::string::npos) << tls.error().message;
  EXPECT_NE(tls.error().message.find("https://169.254.169.254/"), std::string::npos);
  auto header = load_config({}, env_of({{"HPO_NOTICE_HEADERS", "Metadata-Flavor"}}));
  ASSERT_FALSE(header.ok());
  EXPECT_NE(header.error().message.find("Metadata-Flavor"), std::string::npos);
}

TEST(WorkerConfig, EnvironmentOverridesDefaultsAndFlagsOverrideEnvironment) {
  auto env =
      env_of({{"HPO_REDIS", "redis://env:1"}, {"HPO_SLOTS", "3"}, {"HPO_WORKER_NAME", "w-env"}});
  auto c =
      load_config({"--slots", "2", "--name=w-flag", "--lease-ms", "900", "--threads", "4"}, env);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->redis_url, "redis://env:1");
  EXPECT_EQ(c->slots, 2);
  EXPECT_EQ(c->name, "w-flag");
  EXPECT_EQ(c->lease_ms, 900);
  EXPECT_EQ(c->threads, 4);
}

TEST(WorkerConfig, BadValuesNameTheFlagOrVariable) {
  auto c1 = load_config({"--slots", "zero"}, env_of({}));
  ASSERT_FALSE(c1.ok());
  EXPECT_EQ(c1.error().fields.at(0).path, "--slots");
  auto c2 = load_config({}, env_of({{"HPO_LEASE_MS", "5"}}));
  ASSERT_FALSE(c2.ok());
  EXPECT_EQ(c2.error().fields.at(0).path, "HPO_LEASE_MS");
  EXPECT_FALSE(load_config({"--bogus"}, env_of({})).ok());
  EXPECT_FALSE(load_config({"--redis"}, env_of({})).ok());
  EXPECT_TRUE(load_config({"--help"}, env_of({}))->help);
}

TEST(WorkerConfig, UsageListsEveryFlag) {
  std::string u = usage();
  for (const char* flag : {"--redis", "--slots", "--name", "--threads", "--lease-ms", "--prefix",
                           "--kill-grace-s", "--help"})
    EXPECT_NE(u.find(flag), std::string::npos) << flag;
}

TEST(GpuInventory, VisibleDevicesFollowCudaRules) {
  EXPECT_FALSE(parse_visible_devices(nullptr, 4).has_value());
  EXPECT_TRUE(parse_visible_devices("", 4)->empty());
  auto v = parse_visible_devices("2,0", 4);
  ASSERT_EQ(v->size(), 2u);
  EXPECT_EQ(*(*v)[0].index, 2);
  EXPECT_EQ(*(*v)[1].index, 0);
  EXPECT_EQ(parse_visible_devices("1,7,2", 4)->size(), 1u);  // stops at the invalid 7
  EXPECT_TRUE(parse_visible_devices("-1", 4)->empty());
  auto u = parse_visible_devices("GPU-8f0e1234", 1);
  ASSERT_EQ(u->size(), 1u);
  EXPECT_EQ((*u)[0].uuid, "GPU-8f0e1234");
}

TEST(GpuInventory, NoDriverMeansAnEmptyListNotAFailure) {
  GpuInventory gpus;  // on hosts without libnvidia-ml this must simply be empty
  if (!gpus.available()) {
    EXPECT_EQ(gpus.count(), 0);
  }
  for (const auto& g : gpus.snapshot()) EXPECT_FALSE(g.name.empty());
}

TEST(WorkerConfig, DataRootsRepeatAndFlagsReplaceTheEnvironment) {
  auto none = load_config({}, [](const char*) -> const char* { return nullptr; });
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->data_roots.empty());  // main fills in the defaults
  auto env = [](const char* k) -> const char* {
    return std::string_view(k) == "HPO_DATA_ROOTS" ? "/e1:/e2" : nullptr;
  };
  EXPECT_EQ(load_config({}, env)->data_roots, (std::vector<std::string>{"/e1", "/e2"}));
  auto flags = load_config({"--data-root", "/f1", "--data-root=/f2"}, env);
  ASSERT_TRUE(flags.ok());
  EXPECT_EQ(flags->data_roots, (std::vector<std::string>{"/f1", "/f2"}));
  auto bad = load_config({"--data-root", "rel"}, env);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("absolute"), std::string::npos);
}

}  // namespace
}  // namespace hpo::workers
