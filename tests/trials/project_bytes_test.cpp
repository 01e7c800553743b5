// Bytes per project, in the Functions themselves (a real redis-server): what
// a project keeps in Redis and in the artifact folder is counted where it is
// written and bounded by its limits (its own, else the pool's default). Each
// test makes the write a hostile member's trial would (outputs, reports, a
// log, a submit, an import, a checkpoint streamed to the artifact folder),
// checks it is refused or left out with an error naming the limit, that the
// project's count stays within it, and that another project is untouched.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/test_store.hpp"
#include "trials/access.hpp"
#include "trials/store.hpp"

namespace hpo::trials {
namespace {

constexpr std::int64_t kLeaseMs = 60'000;

class ProjectBytes : public ::testing::Test {
 protected:
  hpo::testing::TestStore db;
  redis::RedisStore& store = db.store;

  void project(const std::string& name, std::int64_t max_store, std::int64_t max_file = 0) {
    ProjectRecord p{name, 1, 0, {}, {}};
    p.limits.max_store_bytes = max_store;
    p.limits.max_file_bytes = max_file;
    ASSERT_TRUE(store.create_project(p).ok());
  }
  ProjectRecord record(const std::string& name) {
    auto all = store.list_projects();
    EXPECT_TRUE(all.ok());
    for (const auto& p : *all)
      if (p.name == name) return p;
    ADD_FAILURE() << "no project " << name;
    return {};
  }
  std::int64_t store_bytes(const std::string& name) { return record(name).use.store_bytes; }
  // A running sweep of `project` with one trial, claimed by "w": its id.
  std::string running_trial(const std::string& project, int max_attempts = 1) {
    NewSweep s{"s", R"({"search":{}})", false};
    s.project = project;
    auto id = store.create_sweep(s);
    EXPECT_TRUE(id.ok()) << id.error().message;
    NewTrial t;
    t.sweep_id = *id;
    t.limit = 10;
    t.params = {{"x", search::Value(1.0)}};
    t.max_attempts = max_attempts;
    EXPECT_TRUE(store.create_trial(t).ok());
    auto c = store.claim("w", 1, kLeaseMs);
    EXPECT_TRUE(c.ok() && *c);
    return (*c)->trial.id;
  }
};

TEST_F(ProjectBytes, AnOutputPastTheProjectsStoreLimitIsRefusedAndNothingIsKept) {
  project("small", 64 << 10);
  project("other", 0);
  const std::string tid = running_trial("small");
  const std::string sixteen(16 << 10, 'x');
  int kept = 0;
  Status last;
  for (int i = 0;
       i < 8 &&
       (last = store.put_artifact(tid, 0, "w", "output." + std::to_string(i), sixteen)).ok();
       ++i)
    ++kept;
  ASSERT_FALSE(last.ok());
  EXPECT_EQ(last.error().code, ErrorCode::kQuotaExceeded);
  EXPECT_NE(last.error().message.find("max_store_bytes"), std::string::npos)
      << last.error().message;
  EXPECT_NE(last.error().message.find("small"), std::string::npos);
  EXPECT_EQ(kept, 3);  // the spec and params take some of the 64 KiB
  EXPECT_FALSE(*store.get_artifact(tid, "output." + std::to_string(kept)));
  EXPECT_LE(store_bytes("small"), 64 << 10);
  // Rewriting an output with bytes of the same size needs no more room.
  EXPECT_TRUE(store.put_artifact(tid, 0, "w", "output.0", std::string(16 << 10, 'y')).ok());
  // Another project's trial writes as before.
  const std::string theirs = running_trial("other");
  EXPECT_TRUE(store.put_artifact(theirs, 0, "w", "output.big", std::string(256 << 10, 'z')).ok());
  EXPECT_GE(store_bytes("other"), 256 << 10);
}

TEST_F(ProjectBytes, ReportsAndALogPastTheLimitAreLeftOutButTheResultIsKept) {
  project("small", 24 << 10);
  const std::string tid = running_trial("small");
  // Reports of ~1 KiB each (a metric with a long name), as a worker sends them.
  for (int i = 0; i < 60; ++i)
    ASSERT_TRUE(
        store.report(tid, 0, "w", StepReport{i, {{"loss", 0.5}, {std::string(900, 'k'), 1.0}}})
            .ok());
  auto dropped = store.client().command({"HGET", db.prefix + "trial:" + tid, "reports_dropped"});
  ASSERT_TRUE(dropped.ok() && !dropped->is_nil());
  EXPECT_LE(store_bytes("small"), 24 << 10);
  auto page = store.get_reports(tid, 0, kAll);
  ASSERT_TRUE(page.ok());
  EXPECT_GT(page->total, 10);
  EXPECT_EQ(page->total + std::stoll(dropped->str), 60);
  // The log does not fit; the completion and its value do.
  TrialResult r;
  r.value = 0.25;
  r.metrics = {{"loss", 0.25}};
  auto done = store.complete_batch("w", {Completion{tid, 0, r, std::string(32 << 10, 'l')}});
  ASSERT_TRUE(done.ok());
  ASSERT_TRUE((*done)[0].ok()) << (*done)[0].error().message;
  auto trial = store.get_trial(tid);
  ASSERT_TRUE(trial.ok());
  EXPECT_EQ(trial->state, TrialState::kCompleted);
  EXPECT_EQ(trial->value, 0.25);
  EXPECT_FALSE(*store.get_artifact(tid, "log.txt"));
}

TEST_F(ProjectBytes, ASubmitOrAnImportPastTheLimitIsRefusedNamingIt) {
  project("small", 16 << 10);
  NewSweep big{"big", R"({"note":")" + std::string(20 << 10, 'n') + "\"}", false};
  big.project = "small";
  auto refused = store.create_sweep(big);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kQuotaExceeded);
  EXPECT_NE(refused.error().message.find("max_store_bytes"), std::string::npos);
  NewSweep imported{"imported", "{}", false};
  imported.project = "small";
  std::vector<ImportedTrial> rows(200);
  for (auto& row : rows) {
    row.params = {{"x", search::Value(std::string(100, 'v'))}};
    row.value = 1;
  }
  auto import = store.import_sweep(imported, rows);
  ASSERT_FALSE(import.ok());
  EXPECT_EQ(import.error().code, ErrorCode::kQuotaExceeded);
  EXPECT_NE(import.error().message.find("import of 200 trials"), std::string::npos);
  auto sweeps = store.list_sweeps_in({"small"}, 0, kAll);
  ASSERT_TRUE(sweeps.ok());
  EXPECT_TRUE(sweeps->empty());
  EXPECT_EQ(store_bytes("small"), 0);
  // A smaller import fits, and counts.
  rows.resize(20);
  auto fits = store.import_sweep(imported, rows);
  ASSERT_TRUE(fits.ok()) << fits.error().message;
  EXPECT_GT(store_bytes("small"), 20 * 100);
}

TEST_F(ProjectBytes, DeletingASweepGivesItsBytesBack) {
  project("p", 0);
  const std::string tid = running_trial("p");
  ASSERT_TRUE(store.put_artifact(tid, 0, "w", "output.a", std::string(4096, 'a')).ok());
  ASSERT_TRUE(store.report(tid, 0, "w", StepReport{0, {{"loss", 1.0}}}).ok());
  TrialResult r;
  r.value = 1;
  ASSERT_TRUE(store.complete(tid, 0, "w", r).ok());
  EXPECT_GT(store_bytes("p"), 4096);
  const std::string sid = store.get_trial(tid)->sweep_id;
  ASSERT_TRUE(store.finish_sweep(sid, SweepState::kFinished, "").ok());
  ASSERT_TRUE(store.delete_sweep(sid).ok());
  EXPECT_EQ(store_bytes("p"), 0);
}

TEST_F(ProjectBytes, ThePoolsDefaultHoldsForProjectsWithoutTheirOwn) {
  redis::RedisStore::PoolLimits pool;
  pool.project_store_bytes = 32 << 10;
  ASSERT_TRUE(store.announce_limits(pool).ok());
  project("plain", 0);
  project("roomy", 1 << 20);
  EXPECT_EQ(record("plain").store_bytes_limit, 32 << 10);
  EXPECT_EQ(record("roomy").store_bytes_limit, 1 << 20);
  const std::string a = running_trial("plain");
  auto refused = store.put_artifact(a, 0, "w", "output.x", std::string(40 << 10, 'x'));
  EXPECT_EQ(refused.error().code, ErrorCode::kQuotaExceeded);
  const std::string b = running_trial("roomy");
  EXPECT_TRUE(store.put_artifact(b, 0, "w", "output.x", std::string(40 << 10, 'x')).ok());
  pool.project_store_bytes = 0;  // none
  ASSERT_TRUE(store.announce_limits(pool).ok());
  EXPECT_EQ(record("plain").store_bytes_limit, 0);
  EXPECT_TRUE(store.put_artifact(a, 0, "w", "output.x", std::string(40 << 10, 'x')).ok());
}

TEST_F(ProjectBytes, ASchedulerStartMeasuresSweepsMadeBeforeBytesWereCounted) {
  project("p", 0);
  const std::string tid = running_trial("p", 2);
  ASSERT_TRUE(store.put_artifact(tid, 0, "w", "output.a", std::string(1000, 'a')).ok());
  ASSERT_TRUE(store.report(tid, 0, "w", StepReport{0, {{"loss", 1.0}}}).ok());
  TrialResult failed;
  failed.outcome = TrialState::kFailed;
  failed.error = "first attempt failed";
  ASSERT_TRUE(store.complete(tid, 0, "w", failed).ok());  // retried: its error replaced later
  ASSERT_TRUE(store.claim("w", 1, kLeaseMs).ok());
  TrialResult r;
  r.value = 1;
  r.metrics = {{"loss", 1.0}};
  ASSERT_TRUE(store.complete(tid, 1, "w", r).ok());
  const std::int64_t counted = store_bytes("p");
  ASSERT_GT(counted, 1000);
  // An earlier version's sweep: no counts at all.
  auto& raw = store.client();
  const std::string sid = store.get_trial(tid)->sweep_id;
  ASSERT_TRUE(raw.command({"HDEL", db.prefix + "sweep:" + sid, "store_bytes", "file_bytes",
                           "bytes_counted"})
                  .ok());
  ASSERT_TRUE(raw.command({"HDEL", db.prefix + "project_use:p", "store_bytes"}).ok());
  ASSERT_EQ(store_bytes("p"), 0);
  ASSERT_TRUE(store.bootstrap("admin", token_digest("secret"), "default").ok());
  EXPECT_EQ(store_bytes("p"), counted);
}

class ProjectFileBytes : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hpo-project-bytes-XXXXXX";
    folder_ = ::mkdtemp(tmpl);
    auto c = redis::RedisStoreConfig{};
    c.url = *redis::RedisUrl::parse(hpo::testing::test_store_server().url());
    c.prefix = hpo::testing::fresh_store_prefix();
    c.artifact_dir = folder_;
    store_ = std::make_unique<redis::RedisStore>(c);
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }
  std::int64_t files_in_folder() {
    std::int64_t n = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(folder_))
      n += e.is_regular_file() ? 1 : 0;
    return n;
  }
  std::string folder_;
  std::unique_ptr<redis::RedisStore> store_;
};

TEST_F(ProjectFileBytes, AStreamPastMaxFileBytesStopsAtTheLimitAndLeavesNoFile) {
  ProjectRecord p{"small", 1, 0, {}, {}};
  p.limits.max_file_bytes = 3 << 20;
  ASSERT_TRUE(store_->create_project(p).ok());
  NewSweep s{"s", "{}", false};
  s.project = "small";
  NewTrial t;
  t.sweep_id = *store_->create_sweep(s);
  t.limit = 10;
  ASSERT_TRUE(store_->create_trial(t).ok());
  const std::string tid = (*store_->claim("w", 1, kLeaseMs))->trial.id;
  // A checkpoint of 2 MiB fits, and a new one of the same size replaces it.
  auto two_mib = [](char c) {
    return [c](ByteSink& out) -> Status {
      for (int i = 0; i < 2; ++i)
        if (auto st = out.write(std::string(1 << 20, c)); !st) return st;
      return {};
    };
  };
  ASSERT_TRUE(store_->put_artifact_stream(tid, 0, "w", "checkpoint", two_mib('a')).ok());
  ASSERT_TRUE(store_->put_artifact_stream(tid, 0, "w", "checkpoint", two_mib('b')).ok());
  // A producer that would write forever (a hostile trial's output folder) is stopped.
  std::int64_t offered = 0;
  auto endless = [&](ByteSink& out) -> Status {
    for (;;) {
      if (auto st = out.write(std::string(1 << 20, 'e')); !st) return st;
      offered += 1 << 20;
      if (offered > (std::int64_t{64} << 20)) return Error::internal("the cap did not hold");
    }
  };
  auto st = store_->put_artifact_stream(tid, 0, "w", "output.run.tar", endless);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kQuotaExceeded) << st.error().message;
  EXPECT_NE(st.error().message.find("max_file_bytes"), std::string::npos);
  EXPECT_LE(offered, 1 << 20);
  EXPECT_EQ(files_in_folder(), 1);  // the checkpoint alone: no partial file left
  auto all = store_->list_projects();
  for (const auto& q : *all)
    if (q.name == "small") {
      EXPECT_EQ(q.use.file_bytes, 2 << 20);
      EXPECT_EQ(q.file_bytes_limit, 3 << 20);
    }
}

}  // namespace
}  // namespace hpo::trials
