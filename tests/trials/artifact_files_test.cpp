// The artifact folder from a hostile tenant's side: what a trial that could
// write beneath the folder (a worker that is not root runs trials as
// itself), or a holder of the worker's Redis credential, would try in order
// to read what is not theirs through the scheduler's reads. Each attack is
// made on the files or on Redis as the attacker would make it, then read
// back through the store as the REST download, the ensemble's range reads
// and the export do; each read is refused with a message that names the
// artifact and neither a path nor a size, and the secret never comes back.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/redis_server.hpp"
#include "trials/artifact_dir.hpp"
#include "trials/redis/redis_store.hpp"

namespace hpo::trials {
namespace {

using redis::RedisStore;
using redis::RedisStoreConfig;

// A secret of the scheduler's host (its token file), as long as the
// artifact it is swapped for: only the size used to be checked.
constexpr char kSecret[] = "hpo-token-0123456789abcdef0123456789abcdef\n";
constexpr std::size_t kSecretBytes = sizeof kSecret - 1;

class ArtifactFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hpo-artifact-files-XXXXXX";
    home_ = ::mkdtemp(tmpl);
    folder_ = home_ + "/artifacts";
    std::filesystem::create_directories(folder_);
    secret_ = home_ + "/token";
    std::ofstream(secret_) << kSecret;
    RedisStoreConfig config;
    config.url = *redis::RedisUrl::parse(server_.url());
    config.prefix = "a:";
    config.artifact_dir = folder_;
    store_ = std::make_unique<RedisStore>(config);
    sweep_ = *store_->create_sweep(NewSweep{"victim", "{}", false});
    first_ = trial(0);
    second_ = trial(1);
    ASSERT_EQ(store_->claim_batch("w1", slots_only_offer(2), 2, 60000)->claims.size(), 2u);
    stored_ = std::string(kSecretBytes, 'o');
    ASSERT_TRUE(store_->put_artifact(first_, 0, "w1", "output.result.txt", stored_).ok());
    ASSERT_TRUE(store_->put_artifact(second_, 0, "w1", "output.result.txt", "other bytes").ok());
    file_ = store_->locate_artifact(first_, "output.result.txt").value()->path;
    ASSERT_TRUE(std::filesystem::is_regular_file(file_));
  }
  void TearDown() override { std::filesystem::remove_all(home_); }

  std::string trial(int number) {
    NewTrial nt;
    nt.sweep_id = sweep_;
    nt.number = number;
    nt.limit = 10;
    nt.params = {{"i", number}};
    return store_->create_trial(nt)->id;
  }

  // Every way the scheduler reads a trial's artifact is refused, names the
  // artifact, and shows neither a path, a size nor the secret.
  void expect_refused(const std::string& trial_id, const std::string& how) {
    SCOPED_TRACE(how);
    // The whole message: the artifact and the trial, no path, no size.
    const std::string expected = "artifact output.result.txt of trial " + trial_id +
                                 " does not match what was stored (the log says why)";
    auto check = [&](const Error& e) { EXPECT_EQ(e.message, expected); };
    auto whole = store_->get_artifact(trial_id, "output.result.txt");
    ASSERT_FALSE(whole.ok()) << "served: " << (*whole).value_or("");
    check(whole.error());
    auto at = store_->locate_artifact(trial_id, "output.result.txt");  // the REST download
    ASSERT_FALSE(at.ok());
    check(at.error());
    std::string part(8, '\0');
    auto range = store_->read_artifact_range(trial_id, "output.result.txt", 0, 8, part.data());
    ASSERT_FALSE(range.ok()) << "served: " << part;
    check(range.error());
    StringSink streamed(1 << 20, "export");
    auto exported = store_->read_artifact(trial_id, "output.result.txt", streamed);
    EXPECT_FALSE(exported.ok());
    EXPECT_EQ(streamed.bytes().find("hpo-token"), std::string::npos);
  }

  hpo::testing::RedisServer server_;
  std::unique_ptr<RedisStore> store_;
  std::string home_, folder_, secret_, sweep_, first_, second_, stored_, file_;
};

TEST_F(ArtifactFiles, StoredBytesAreServed) {
  EXPECT_EQ(store_->get_artifact(first_, "output.result.txt").value().value_or(""), stored_);
  auto at = store_->locate_artifact(first_, "output.result.txt");
  ASSERT_TRUE(at.ok() && *at);
  ASSERT_TRUE((*at)->file && *(*at)->file);
  std::string back(kSecretBytes, '\0');
  ASSERT_EQ(::pread((*at)->file->get(), back.data(), back.size(), 0),
            static_cast<ssize_t>(back.size()));
  EXPECT_EQ(back, stored_);
}

TEST_F(ArtifactFiles, ASymbolicLinkToTheTokenFileIsNotFollowed) {
  std::filesystem::remove(file_);
  std::filesystem::create_symlink(secret_, file_);
  expect_refused(first_, "the file swapped for a link");
}

TEST_F(ArtifactFiles, AHardLinkToTheTokenFileFailsItsHash) {
  std::filesystem::remove(file_);
  std::filesystem::create_hard_link(secret_, file_);
  expect_refused(first_, "the file swapped for a hard link of the same size");
}

TEST_F(ArtifactFiles, ALinkedTrialFolderIsNotFollowed) {
  // The trial's folder swapped for a link to a folder the attacker filled.
  const std::filesystem::path trial_folder = std::filesystem::path(file_).parent_path();
  const std::string decoy = home_ + "/decoy";
  std::filesystem::create_directories(decoy);
  std::filesystem::create_symlink(secret_,
                                  decoy + "/" + std::filesystem::path(file_).filename().string());
  std::filesystem::remove_all(trial_folder);
  std::filesystem::create_directory_symlink(decoy, trial_folder);
  expect_refused(first_, "the trial's folder swapped for a link");
}

TEST_F(ArtifactFiles, APlantedFifoIsRefusedWithoutHanging) {
  std::filesystem::remove(file_);
  ASSERT_EQ(::mkfifo(file_.c_str(), 0666), 0);
  expect_refused(first_, "the file swapped for a FIFO nobody writes");
}

TEST_F(ArtifactFiles, BytesChangedAfterTheyWereStoredAreNotServed) {
  // Read once (and found good), then rewritten in place with the secret.
  ASSERT_TRUE(store_->get_artifact(first_, "output.result.txt").ok());
  {
    std::ofstream out(file_, std::ios::in | std::ios::out | std::ios::binary);
    out << kSecret;
  }
  expect_refused(first_, "the file rewritten in place, same size");
}

TEST_F(ArtifactFiles, AForgedReferenceCannotNameAnotherTrialsFile) {
  // The worker credential writes references: one for the second trial that
  // names the first trial's file (its path, size and hash are all right).
  auto original = store_->client().command({"GET", "a:artifact:" + first_ + ":output.result.txt"});
  ASSERT_TRUE(original.ok());
  ASSERT_TRUE(store_->client()
                  .command({"SET", "a:artifact:" + second_ + ":output.result.txt", original->str})
                  .ok());
  expect_refused(second_, "a reference naming another trial's file");
  // Nor anything outside the folder, however it is spelled.
  const std::string outside = encode_file_reference("../token", kSecretBytes, sha256_hex(kSecret));
  ASSERT_TRUE(store_->client()
                  .command({"SET", "a:artifact:" + second_ + ":output.result.txt", outside})
                  .ok());
  EXPECT_FALSE(store_->get_artifact(second_, "output.result.txt").ok());
}

TEST_F(ArtifactFiles, ASweepRecordIsNeverReadFromAFile) {
  // A sweep's records live in Redis; a reference planted there is refused.
  auto original = store_->client().command({"GET", "a:artifact:" + first_ + ":output.result.txt"});
  ASSERT_TRUE(store_->client()
                  .command({"SET", "a:sweep_artifact:" + sweep_ + ":ensemble.json", original->str})
                  .ok());
  auto got = store_->get_sweep_artifact(sweep_, "ensemble.json");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().message.find("does not match what was stored"), std::string::npos);
}

TEST_F(ArtifactFiles, NoWriteOrRemovalFollowsALinkedFolder) {
  // A trial folder swapped for a link to elsewhere: the next write is
  // refused rather than sent there, and old versions there are not removed.
  const std::filesystem::path trial_folder = std::filesystem::path(file_).parent_path();
  const std::string elsewhere = home_ + "/elsewhere";
  std::filesystem::create_directories(elsewhere);
  const std::string bait = elsewhere + "/checkpoint." + std::string(64, 'a');
  std::ofstream(bait) << "keep me";
  std::filesystem::remove_all(trial_folder);
  std::filesystem::create_directory_symlink(elsewhere, trial_folder);
  auto written = store_->put_artifact(first_, 0, "w1", "checkpoint", "epoch 1");
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.error().message.find("cannot make the artifact folder"), std::string::npos)
      << written.error().message;
  EXPECT_TRUE(std::filesystem::exists(bait));
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(elsewhere)) ++entries;
  EXPECT_EQ(entries, 1u) << "a write went through the link";
}

}  // namespace
}  // namespace hpo::trials
