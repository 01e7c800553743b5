// Attempt directories (workers/agent/work_root.hpp): one live worker per
// root, fresh directories per attempt, and what a dead worker left removed
// without touching anything else.
#include "workers/agent/work_root.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace hpo::workers::agent {
namespace {

namespace fs = std::filesystem;

class WorkRootTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() /
            ("hpo-work-root-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(base_);
    fs::create_directories(base_);
  }
  void TearDown() override { fs::remove_all(base_); }

  static trials::Trial trial(std::string id, int attempt) {
    trials::Trial t;
    t.id = std::move(id);
    t.sweep_id = "s";
    t.attempt = attempt;
    return t;
  }

  fs::path base_;
};

TEST_F(WorkRootTest, ASecondWorkerOfTheSameRootIsRefused) {
  WorkRoot first((base_ / "w1").string(), "w1");
  ASSERT_TRUE(first.claim().ok());
  WorkRoot second((base_ / "w1").string(), "w1");
  auto st = second.claim();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kConflict);
  EXPECT_NE(st.error().message.find("--name (w1)"), std::string::npos) << st.error().message;
  first.unlock();
  EXPECT_TRUE(second.claim().ok()) << "the lock goes with the worker";
}

TEST_F(WorkRootTest, EachAttemptGetsAFreshDirectoryWithASafeName) {
  WorkRoot root((base_ / "w1").string(), "w1");
  ASSERT_TRUE(root.claim().ok());
  const std::string dir = root.make_attempt_dir(trial("t/../x", 2));
  ASSERT_FALSE(dir.empty());
  EXPECT_EQ(fs::path(dir).parent_path(), base_ / "w1") << dir;
  EXPECT_EQ(fs::path(dir).filename(), "t_.._x-a2");
  std::ofstream(fs::path(dir) / "left") << "x";
  EXPECT_EQ(root.make_attempt_dir(trial("t/../x", 2)), dir);
  EXPECT_FALSE(fs::exists(fs::path(dir) / "left")) << "a directory is made afresh";
  WorkRoot::remove(dir);
  EXPECT_FALSE(fs::exists(dir));
  WorkRoot none("", "w1");
  EXPECT_EQ(none.make_attempt_dir(trial("t", 0)), "");
}

TEST_F(WorkRootTest, ADeadWorkersAttemptDirectoriesGoAndNothingElse) {
  {
    WorkRoot dead((base_ / "dead").string(), "dead");
    ASSERT_TRUE(dead.claim().ok());
    ASSERT_FALSE(dead.make_attempt_dir(trial("t1", 0)).empty());
  }  // its lock is free now, its attempt directory left behind
  fs::create_directories(base_ / "dead" / "notes");      // not an attempt directory
  fs::create_directories(base_ / "stranger" / "t9-a1");  // no worker's lock file: not ours
  WorkRoot live_other((base_ / "other").string(), "other");
  ASSERT_TRUE(live_other.claim().ok());
  ASSERT_FALSE(live_other.make_attempt_dir(trial("t2", 0)).empty());

  WorkRoot root((base_ / "w1").string(), "w1");
  ASSERT_TRUE(root.claim().ok());
  EXPECT_FALSE(fs::exists(base_ / "dead" / "t1-a0"));
  EXPECT_TRUE(fs::exists(base_ / "dead" / "notes")) << "only attempt directories are removed";
  EXPECT_TRUE(fs::exists(base_ / "stranger" / "t9-a1"));
  EXPECT_TRUE(fs::exists(base_ / "other" / "t2-a0")) << "a live worker's directories stay";
}

}  // namespace
}  // namespace hpo::workers::agent
