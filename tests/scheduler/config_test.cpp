#include <algorithm>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "scheduler/config.hpp"

namespace hpo::scheduler {
namespace {

Result<SchedulerConfig> load(std::vector<std::string> args) {
  std::vector<char*> argv;
  static std::string prog = "hpo-scheduler";
  argv.push_back(prog.data());
  for (auto& a : args) argv.push_back(a.data());
  return load_scheduler_config(static_cast<int>(argv.size()), argv.data());
}

TEST(SchedulerConfig, FlagsOverrideEnvironmentOverrideDefaults) {
  ::unsetenv("HPO_LISTEN");
  auto c = load({});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->listen_host, "127.0.0.1");
  EXPECT_EQ(c->listen_port, 8080);
  ::setenv("HPO_LISTEN", "0.0.0.0:9000", 1);
  c = load({});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->listen_port, 9000);
  c = load({"--listen", "127.0.0.1:0", "--redis=redis://h:1", "--threads", "2"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->listen_port, 0);
  EXPECT_EQ(c->redis_url, "redis://h:1");
  EXPECT_EQ(c->handler_threads, 2);
  EXPECT_FALSE(c->auth_reads);
  c = load({"--auth-reads"});
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->auth_reads);
  ::unsetenv("HPO_LISTEN");
}

// Beyond loopback reads need the token unless --public-reads; a token file
// others can read is refused; --token on the command line is flagged.
TEST(SchedulerConfig, ReadsAreProtectedBeyondLoopbackAndTokenFilesMustBePrivate) {
  ::unsetenv("HPO_LISTEN");
  EXPECT_FALSE(load({"--listen", "127.0.0.1:0"})->auth_reads);
  EXPECT_TRUE(load({"--listen", "0.0.0.0:8080"})->auth_reads);
  EXPECT_FALSE(load({"--listen", "0.0.0.0:8080", "--public-reads"})->auth_reads);
  EXPECT_TRUE(load({"--token", "t"})->token_on_command_line);
  EXPECT_FALSE(load({})->token_on_command_line);
  char tmpl[] = "/tmp/hpo-token-XXXXXX";
  int fd = ::mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "secret\n", 7), 7);
  ::close(fd);
  ::chmod(tmpl, 0644);
  auto loose = load({"--token-file", tmpl});
  ASSERT_FALSE(loose.ok());
  EXPECT_EQ(loose.error().fields.at(0).path, "--token-file");
  EXPECT_NE(loose.error().message.find("chmod 600"), std::string::npos);
  ::chmod(tmpl, 0600);
  auto tight = load({"--token-file", tmpl});
  ASSERT_TRUE(tight.ok()) << tight.error().message;
  EXPECT_EQ(tight->token, "secret");
  ::unlink(tmpl);
}

TEST(SchedulerConfig, BadFlagsNameTheFlag) {
  auto c = load({"--listen", "nonsense"});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().fields.at(0).path, "--listen");
  c = load({"--threads", "0"});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().fields.at(0).path, "--threads");
  c = load({"--frobnicate"});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().fields.at(0).path, "--frobnicate");
  c = load({"--redis"});
  ASSERT_FALSE(c.ok());
}

// The limits of issue 39: each has a default, a flag and an environment
// variable, in the units the flag says; a value out of range names the flag.
TEST(SchedulerConfig, LimitsHaveDefaultsAndFlags) {
  auto c = load({});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->controller_threads, 8);
  EXPECT_EQ(c->max_report_bytes, std::int64_t{16} << 20);
  EXPECT_EQ(c->max_releases, 20);
  EXPECT_EQ(c->sse_queue_bytes, std::int64_t{4} << 20);
  EXPECT_EQ(c->ensemble_memory_bytes, std::int64_t{2} << 30);
  EXPECT_EQ(c->max_event_bytes, 4096);
  EXPECT_EQ(c->max_events, 100'000);
  c = load({"--controller-threads", "3", "--max-report-mb", "0", "--max-releases", "5",
            "--sse-queue-mb", "1", "--ensemble-memory-mb", "512", "--max-event-kb", "16",
            "--max-events", "5000"});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->controller_threads, 3);
  EXPECT_EQ(c->max_report_bytes, 0);
  EXPECT_EQ(c->max_releases, 5);
  EXPECT_EQ(c->sse_queue_bytes, std::int64_t{1} << 20);
  EXPECT_EQ(c->ensemble_memory_bytes, std::int64_t{512} << 20);
  EXPECT_EQ(c->max_event_bytes, 16 << 10);
  EXPECT_EQ(c->max_events, 5000);
  ::setenv("HPO_CONTROLLER_THREADS", "2", 1);
  c = load({});
  ::unsetenv("HPO_CONTROLLER_THREADS");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->controller_threads, 2);
  for (const char* flag :
       {"--controller-threads", "--sse-queue-mb", "--max-event-kb", "--max-events"}) {
    c = load({flag, "0"});
    ASSERT_FALSE(c.ok()) << flag;
    EXPECT_EQ(c.error().fields.at(0).path, flag);
  }
}

// The one settings engine's order: defaults < --config file < environment <
// flags; a list from a later source replaces the file's; a key the file
// should not have names the file and the key.
TEST(SchedulerConfig, ConfigFileSitsBelowTheEnvironmentAndTheFlags) {
  char path[] = "/tmp/hpo-config-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string file =
      R"({"listen": "127.0.0.1:7000", "threads": 3, "prefix": "f:", "data_root": "/f/a:/f/b"})";
  ASSERT_EQ(::write(fd, file.data(), file.size()), static_cast<ssize_t>(file.size()));
  ::close(fd);
  auto c = load({"--config", path});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->listen_port, 7000);
  EXPECT_EQ(c->handler_threads, 3);
  EXPECT_EQ(c->prefix, "f:");
  EXPECT_EQ(c->data_roots, (std::vector<std::string>{"/f/a", "/f/b"}));
  ::setenv("HPO_PREFIX", "env:", 1);
  ::setenv("HPO_DATA_ROOTS", "/env", 1);
  c = load({"--config", path, "--threads", "5"});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->prefix, "env:");
  EXPECT_EQ(c->handler_threads, 5);
  EXPECT_EQ(c->listen_port, 7000);
  EXPECT_EQ(c->data_roots, std::vector<std::string>{"/env"});
  ::unsetenv("HPO_PREFIX");
  ::unsetenv("HPO_DATA_ROOTS");
  const std::string bad = R"({"frobnicate": 1})";
  fd = ::open(path, O_WRONLY | O_TRUNC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, bad.data(), bad.size()), static_cast<ssize_t>(bad.size()));
  ::close(fd);
  auto refused = load({"--config", path});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().fields.at(0).path, std::string(path) + ": frobnicate");
  ::unlink(path);
}

TEST(SchedulerConfig, DataRootsRepeatReplaceAndDefaultToTheDatasetFolder) {
  EXPECT_EQ(load({})->data_roots, std::vector<std::string>{"/usr/share/datasets"});
  auto c = load({"--data-root", "/srv/a", "--data-root=/srv/b"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->data_roots, (std::vector<std::string>{"/srv/a", "/srv/b"}));
  ::setenv("HPO_DATA_ROOTS", "/env/a:/env/b", 1);
  EXPECT_EQ(load({})->data_roots, (std::vector<std::string>{"/env/a", "/env/b"}));
  EXPECT_EQ(load({"--data-root", "/flag"})->data_roots, std::vector<std::string>{"/flag"});
  ::unsetenv("HPO_DATA_ROOTS");
  auto relative = load({"--data-root", "data"});
  ASSERT_FALSE(relative.ok());
  EXPECT_NE(relative.error().message.find("--data-root"), std::string::npos);
  EXPECT_NE(relative.error().message.find("absolute"), std::string::npos);
}

TEST(SchedulerConfig, AllowedHostsDefaultToLocalNamesAndStarTurnsTheCheckOff) {
  auto c = load({"--listen", "hpo.internal:8080"});
  ASSERT_TRUE(c.ok());
  const auto& h = c->allowed_hosts;
  EXPECT_NE(std::find(h.begin(), h.end(), "localhost"), h.end());
  EXPECT_NE(std::find(h.begin(), h.end(), "hpo.internal"), h.end());
  c = load({"--allowed-host", "a.example", "--allowed-host=b.example"});
  EXPECT_NE(std::find(c->allowed_hosts.begin(), c->allowed_hosts.end(), "b.example"),
            c->allowed_hosts.end());
  EXPECT_TRUE(load({"--allowed-host", "*"})->allowed_hosts.empty());
  EXPECT_FALSE(load({"--allowed-host", "a/b"}).ok());
}

}  // namespace
}  // namespace hpo::scheduler
