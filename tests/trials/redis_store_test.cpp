// RedisStore against a real redis-server: the conformance suite, then what only
// a real server can show (racing claims over several connections, kill -9 of
// the server, timeouts, functions flushed under our feet).
#include "trials/redis/redis_store.hpp"

#include <hiredis/hiredis.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "tests/support/redis_server.hpp"
#include "tests/trials/store_conformance.hpp"

namespace hpo::trials::conformance {
namespace {

using hpo::testing::RedisServer;
using redis::RedisStore;
using redis::RedisStoreConfig;

RedisServer& shared_server() {
  static RedisServer server;  // one per executable; each test has its own key prefix
  return server;
}

RedisStoreConfig config_for(const RedisServer& server, const std::string& prefix) {
  RedisStoreConfig c;
  c.url = *redis::RedisUrl::parse(server.url());
  c.prefix = prefix;
  c.command_timeout = std::chrono::milliseconds(2000);
  return c;
}

std::string unique_prefix() {
  static std::atomic<int> n{0};
  return "t" + std::to_string(n++) + ":";
}

struct RedisEnv {
  static constexpr std::int64_t kLeaseMs = 150;
  RedisStore redis_store{config_for(shared_server(), unique_prefix())};
  AllRoles& store() { return redis_store; }
  void advance(std::int64_t) {}  // real time passes while the test polls
  // An outage of `ms`: the test waits out that much real (and server) time.
  void pass(std::int64_t ms) { hpo::testing::let_time_pass(std::chrono::milliseconds(ms + 20)); }
};

// The same suite with trials' artifacts as files in a folder (--artifacts).
struct RedisFilesEnv : RedisEnv {
  static std::string folder() {
    static const struct Folder {
      std::string path;
      Folder() {
        char tmpl[] = "/tmp/hpo-artifacts-XXXXXX";
        path = ::mkdtemp(tmpl);
      }
      ~Folder() { std::filesystem::remove_all(path); }
    } dir;
    return dir.path;
  }
  RedisFilesEnv() { redis_store.use_artifact_dir(folder()); }
};

using Envs = ::testing::Types<RedisEnv, RedisFilesEnv>;
INSTANTIATE_TYPED_TEST_SUITE_P(Redis, StoreConformance, Envs);

Trial add(RedisStore& store, const std::string& sweep, std::int64_t number, int slots = 1) {
  NewTrial nt;
  nt.sweep_id = sweep;
  nt.number = number;
  nt.slots = slots;
  nt.limit = 1'000'000;
  nt.params = {{"i", number}};
  auto t = store.create_trial(nt);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? *t : Trial{};
}

TEST(RedisStore, RacingWorkersNeverClaimTheSameTrial) {
  const std::string prefix = unique_prefix();
  RedisStore setup(config_for(shared_server(), prefix));
  auto sweep = setup.create_sweep(NewSweep{"race", "{}", false});
  ASSERT_TRUE(sweep.ok());
  constexpr int kTrials = 200, kThreads = 4;
  for (int i = 0; i < kTrials; ++i) add(setup, *sweep, i);

  std::mutex mu;
  std::map<std::string, int> claimed;  // trial -> times claimed
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kThreads; ++w) {
    threads.emplace_back([&, w] {
      RedisStore store(config_for(shared_server(), prefix));  // one connection per thread
      std::string name = "w" + std::to_string(w);
      for (;;) {
        auto c = store.claim(name, 1, 60'000);
        if (!c.ok()) {
          ++errors;
          return;
        }
        if (!c->has_value()) return;
        const Trial& t = (*c)->trial;
        {
          std::lock_guard lock(mu);
          ++claimed[t.id];
        }
        TrialResult r;
        r.value = static_cast<double>(t.number);
        if (!store.complete(t.id, t.attempt, name, r).ok()) ++errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(claimed.size(), static_cast<size_t>(kTrials));
  for (const auto& [id, n] : claimed) EXPECT_EQ(n, 1) << id;
  auto s = setup.get_sweep(*sweep);
  EXPECT_EQ(s->counts.completed, kTrials);
  EXPECT_EQ(s->counts.active(), 0);
  EXPECT_EQ(s->best->value, 0);
}

TEST(RedisStore, SurvivesKillDashNineAndReconnectsByItself) {
  RedisServer server;  // its own server: we are going to kill it
  RedisStore store(config_for(server, "hpo:"));
  auto sweep = store.create_sweep(NewSweep{"durable", R"({"k":1})", true});
  ASSERT_TRUE(sweep.ok()) << sweep.error().message;
  add(store, *sweep, 0);

  server.kill();
  auto down = store.get_sweep(*sweep);
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().code, ErrorCode::kUnavailable);
  server.restart();

  // The same store object reconnects on its own (after its back-off).
  ASSERT_TRUE(hpo::testing::wait_for([&] { return store.get_sweep(*sweep).ok(); }));
  auto s = store.get_sweep(*sweep);
  EXPECT_EQ(s->name, "durable");
  EXPECT_EQ(s->spec_json, R"({"k":1})");
  EXPECT_EQ(s->counts.queued, 1);
  auto c = store.claim("w1", 1, 60'000);  // the functions survived too (AOF)
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_TRUE(c->has_value());
  EXPECT_EQ((*c)->trial.id, *sweep + "-0");
}

TEST(RedisStore, ReloadsFunctionsAfterAFlush) {
  RedisStore store(config_for(shared_server(), unique_prefix()));
  ASSERT_TRUE(store.create_sweep(NewSweep{"a", "{}", false}).ok());
  auto flushed = store.client().command({"FUNCTION", "FLUSH"});
  ASSERT_TRUE(flushed.ok());
  ASSERT_FALSE(flushed->is_error()) << flushed->str;
  auto again = store.create_sweep(NewSweep{"b", "{}", false});
  ASSERT_TRUE(again.ok()) << again.error().message;
}

TEST(RedisStore, TimedOutCommandDropsTheConnection) {
  RedisStoreConfig config = config_for(shared_server(), unique_prefix());
  config.command_timeout = std::chrono::milliseconds(100);
  RedisStore store(config);
  const std::string list = store.prefix() + "never-pushed";
  // BLPOP blocks for 2 s on the server; the client gives up after 100 ms.
  auto r = store.client().command({"BLPOP", list, "2"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_FALSE(store.client().connected());
  // A fresh connection: the late BLPOP reply never reaches the next command.
  ASSERT_TRUE(hpo::testing::wait_for([&] {
    auto pong = store.client().command({"ECHO", "mine"});
    return pong.ok() && pong->str == "mine";
  }));
}

TEST(RedisStore, SelectsTheDatabaseOfTheUrl) {
  RedisStoreConfig config = config_for(shared_server(), unique_prefix());
  config.url.db = 5;
  RedisStore store(config);
  auto id = store.create_sweep(NewSweep{"in-db-5", "{}", false});
  ASSERT_TRUE(id.ok()) << id.error().message;
  redis::RedisClient db0(config_for(shared_server(), "").url);
  auto in0 = db0.command({"EXISTS", store.prefix() + "sweep:" + *id});
  ASSERT_TRUE(in0.ok());
  EXPECT_EQ(in0->integer, 0);
  ASSERT_TRUE(db0.command({"SELECT", "5"}).ok());
  EXPECT_EQ(db0.command({"EXISTS", store.prefix() + "sweep:" + *id})->integer, 1);
}

// Upgrades: a process whose functions are older than the server's is refused
// with both versions named and leaves the newer functions in place; one whose
// functions are newer (or a library from before versions) replaces them.
TEST(RedisStore, AnOlderProgramIsRefusedByNewerFunctionsAndNeverReplacesThem) {
  RedisServer own;  // its own server: the test replaces the library
  const std::string& ours = redis::functions_code();
  const int mine = redis::functions_version(ours);
  ASSERT_GE(mine, 2);
  EXPECT_EQ(redis::functions_version("#!lua name=hpo_v1\n--[[ before versions ]]\n"), 1);
  const std::string tag = "-- hpo-functions-version: " + std::to_string(mine);
  ASSERT_NE(ours.find(tag), std::string::npos);
  auto with_version = [&](const std::string& line) {
    std::string text = ours;
    text.replace(text.find(tag), tag.size(), line);
    return text;
  };
  auto held = [&](redis::RedisClient& c) {
    auto list = c.command({"FUNCTION", "LIST", "LIBRARYNAME", "hpo_v1", "WITHCODE"});
    for (const auto& lib : list->elements)
      for (size_t i = 0; i + 1 < lib.elements.size(); i += 2)
        if (lib.elements[i].str == "library_code") return lib.elements[i + 1].str;
    return std::string();
  };
  redis::RedisClient admin(config_for(own, "").url);

  // A newer hpo loaded its functions.
  const std::string newer = with_version("-- hpo-functions-version: " + std::to_string(mine + 1));
  ASSERT_FALSE(admin.command({"FUNCTION", "LOAD", "REPLACE", newer})->is_error());
  RedisStore old(config_for(own, unique_prefix()));
  auto r = old.create_sweep(NewSweep{"from an old worker", "{}", false});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kConflict);
  EXPECT_NE(r.error().message.find(
                fmt::format("functions version {}, newer than this program's {}", mine + 1, mine)),
            std::string::npos)
      << r.error().message;
  EXPECT_EQ(held(admin), newer);

  // A library from before versions (or an older one) is replaced.
  ASSERT_FALSE(admin.command({"FUNCTION", "LOAD", "REPLACE", with_version("--")})->is_error());
  RedisStore current(config_for(own, unique_prefix()));
  auto id = current.create_sweep(NewSweep{"from this version", "{}", false});
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(held(admin), ours);
}

TEST(RedisStore, UserDataIsNeverAFormatString) {
  RedisStore store(config_for(shared_server(), unique_prefix()));
  const std::string name = "%s %n %b\r\n*3\r\n$3\r\nDEL";
  auto id = store.create_sweep(NewSweep{name, R"({"a":"%d"})", false});
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(store.get_sweep(*id)->name, name);
}

TEST(RedisStore, OversizedArtifactIsRefused) {
  RedisStoreConfig config = config_for(shared_server(), unique_prefix());
  config.max_artifact_bytes = 16;
  RedisStore store(config);
  auto sweep = store.create_sweep(NewSweep{"a", "{}", false});
  Trial t = add(store, *sweep, 0);
  auto s = store.put_record(t.id, "big", std::string(17, 'x'));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kPayloadTooLarge);
  EXPECT_FALSE(store.get_artifact(t.id, "big")->has_value());
}

// --artifacts: the bytes are a file under DIR/<sweep>/<trial>/, Redis holds
// only a reference; a stale attempt's write leaves no file; a replaced
// checkpoint's file goes; a torn or changed file is an error naming it, never
// wrong bytes; the sweep's folder goes with the sweep.
TEST(RedisStore, WithAnArtifactFolderRedisHoldsOnlyReferences) {
  char tmpl[] = "/tmp/hpo-artifacts-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  RedisStoreConfig config = config_for(shared_server(), unique_prefix());
  config.artifact_dir = dir;
  RedisStore store(config);
  auto sweep = store.create_sweep(NewSweep{"files", "{}", false});
  ASSERT_TRUE(sweep.ok());
  Trial t = add(store, *sweep, 0);
  auto claimed = store.claim_batch("w1", slots_only_offer(1), 1, 60000);
  ASSERT_TRUE(claimed.ok() && claimed->claims.size() == 1);
  std::string model(3 << 20, '\0');
  for (std::size_t i = 0; i < model.size(); ++i) model[i] = static_cast<char>(i * 131 % 251);
  ASSERT_TRUE(store.put_artifact(t.id, 0, "w1", "model.pt", model).ok());
  auto raw = store.client().command({"GET", config.prefix + "artifact:" + t.id + ":model.pt"});
  ASSERT_TRUE(raw.ok());
  EXPECT_LT(raw->str.size(), 300u) << "Redis holds the bytes, not a reference";
  EXPECT_EQ(raw->str.rfind("hpo-artifact-file/1\n", 0), 0u);
  const std::string trial_dir = dir + "/" + *sweep + "/" + t.id;
  auto files = [&] {
    std::vector<std::string> out;
    if (std::filesystem::exists(trial_dir))
      for (const auto& e : std::filesystem::directory_iterator(trial_dir))
        out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  };
  ASSERT_EQ(files().size(), 1u);
  EXPECT_EQ(files()[0].rfind("model.pt.", 0), 0u) << files()[0];
  EXPECT_EQ(**store.get_artifact(t.id, "model.pt"), model);

  // A checkpoint replaced by the next one: one file, the newest.
  ASSERT_TRUE(store.put_artifact(t.id, 0, "w1", "checkpoint", "epoch 1").ok());
  ASSERT_TRUE(store.put_artifact(t.id, 0, "w1", "checkpoint", "epoch 2").ok());
  EXPECT_EQ(files().size(), 2u);
  EXPECT_EQ(**store.get_artifact(t.id, "checkpoint"), "epoch 2");

  // The lease moves on: the old attempt's write is refused and leaves nothing.
  ASSERT_TRUE(store.release(t.id, 0, "w1", "test", true).ok());
  ASSERT_TRUE(store.claim_batch("w2", slots_only_offer(1), 1, 60000).ok());
  EXPECT_EQ(store.put_artifact(t.id, 0, "w1", "checkpoint", "stale").error().code,
            ErrorCode::kLeaseLost);
  EXPECT_EQ(files().size(), 2u);
  EXPECT_EQ(**store.get_artifact(t.id, "checkpoint"), "epoch 2");

  // A torn copy, then a changed one: errors that name the artifact (the
  // file, its size and the reason go to the log only: tests/trials/artifact_files_test.cpp).
  const std::string model_file = trial_dir + "/" + files()[1];
  ASSERT_EQ(files()[1].rfind("model.pt.", 0), 0u);
  std::filesystem::resize_file(model_file, 1000);
  auto torn = store.get_artifact(t.id, "model.pt");
  ASSERT_FALSE(torn.ok());
  EXPECT_NE(torn.error().message.find("artifact model.pt of trial " + t.id +
                                      " does not match what was stored"),
            std::string::npos)
      << torn.error().message;
  std::filesystem::resize_file(model_file, model.size());
  auto changed = store.get_artifact(t.id, "model.pt");
  ASSERT_FALSE(changed.ok());
  EXPECT_NE(changed.error().message.find("does not match what was stored"), std::string::npos)
      << changed.error().message;

  // A process without the folder is told what it lacks.
  RedisStore without(config_for(shared_server(), config.prefix));
  auto lacking = without.get_artifact(t.id, "checkpoint");
  ASSERT_FALSE(lacking.ok());
  EXPECT_NE(lacking.error().message.find("--artifacts"), std::string::npos)
      << lacking.error().message;

  // The sweep's folder goes with the sweep.
  TrialResult done;
  done.outcome = TrialState::kCompleted;
  done.value = 1;
  ASSERT_TRUE(store.complete(t.id, 1, "w2", done).ok());
  ASSERT_TRUE(store.cancel_sweep(*sweep).ok());
  ASSERT_TRUE(store.delete_sweep(*sweep).ok());
  EXPECT_FALSE(std::filesystem::exists(dir + "/" + *sweep));
  std::filesystem::remove_all(dir);
}

// Pieces of a known pattern, `total` bytes in all, and a sink that checks
// what comes back without keeping it.
ByteProducer pattern(std::int64_t total, std::int64_t fail_after = -1) {
  return [=](ByteSink& out) -> Status {
    std::string piece(kStreamChunk, '\0');
    for (std::int64_t at = 0; at < total; at += static_cast<std::int64_t>(piece.size())) {
      if (fail_after >= 0 && at >= fail_after) return Error::invalid("producer", "gave up");
      const auto n = static_cast<std::size_t>(std::min<std::int64_t>(total - at, piece.size()));
      for (std::size_t i = 0; i < n; ++i) piece[i] = static_cast<char>((at + i) * 131 % 251);
      if (auto st = out.write(std::string_view(piece).substr(0, n)); !st) return st;
    }
    return Status{};
  };
}
struct PatternCheck final : ByteSink {
  std::int64_t size = 0;
  bool same = true;
  Status write(std::string_view bytes) override {
    for (char c : bytes) same = same && c == static_cast<char>(size++ * 131 % 251);
    return {};
  }
};

// Without an artifact folder an artifact streamed in pieces is gathered up to
// the store's limit, and one byte more is refused with nothing stored; with a
// folder there is no limit but the disk, the bytes never sit whole in memory,
// and a producer that fails half-way leaves no file and the last reference.
TEST(RedisStore, StreamedArtifactsHaveNoLimitButTheDiskWithAFolder) {
  RedisStoreConfig config = config_for(shared_server(), unique_prefix());
  config.max_artifact_bytes = 1000;
  RedisStore store(config);
  auto sweep = store.create_sweep(NewSweep{"stream", "{}", false});
  Trial t = add(store, *sweep, 0);
  ASSERT_TRUE(store.claim_batch("w1", slots_only_offer(1), 1, 60000).ok());
  EXPECT_EQ(store.inline_artifact_limit(), 1000);
  ASSERT_TRUE(store.put_artifact_stream(t.id, 0, "w1", "checkpoint", pattern(1000)).ok());
  auto over = store.put_artifact_stream(t.id, 0, "w1", "checkpoint", pattern(1001));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, ErrorCode::kPayloadTooLarge);
  EXPECT_NE(over.error().message.find("1000 bytes"), std::string::npos) << over.error().message;
  PatternCheck inline_back;
  ASSERT_TRUE(*store.read_artifact(t.id, "checkpoint", inline_back));
  EXPECT_EQ(inline_back.size, 1000);
  EXPECT_TRUE(inline_back.same);

  char tmpl[] = "/tmp/hpo-artifacts-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  store.use_artifact_dir(dir);
  EXPECT_EQ(store.inline_artifact_limit(), 0);
  const std::int64_t big = 40 * static_cast<std::int64_t>(kStreamChunk) + 3;
  ASSERT_TRUE(store.put_artifact_stream(t.id, 0, "w1", "checkpoint", pattern(big)).ok());
  PatternCheck back;
  auto found = store.read_artifact(t.id, "checkpoint", back);
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_TRUE(*found);
  EXPECT_EQ(back.size, big);
  EXPECT_TRUE(back.same);
  auto at = store.locate_artifact(t.id, "checkpoint");
  ASSERT_TRUE(at.ok() && *at);
  EXPECT_TRUE((*at)->is_file);
  EXPECT_EQ(std::filesystem::file_size((*at)->path), static_cast<std::uintmax_t>(big));

  auto gave_up = store.put_artifact_stream(t.id, 0, "w1", "checkpoint", pattern(big, 5 << 20));
  ASSERT_FALSE(gave_up.ok());
  EXPECT_NE(gave_up.error().message.find("gave up"), std::string::npos);
  std::size_t files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) ++files;
  EXPECT_EQ(files, 1u) << "a failed stream left a file behind";
  PatternCheck still;
  ASSERT_TRUE(*store.read_artifact(t.id, "checkpoint", still));
  EXPECT_EQ(still.size, big);
  std::filesystem::remove_all(dir);
}

// A replaced artifact's file is removed only once the new reference is
// durable: when the replicas do not confirm it, a failover may still bring
// back the old reference, so its file stays.
TEST(RedisStore, AReplacedFileStaysUntilTheNewReferenceIsDurable) {
  char tmpl[] = "/tmp/hpo-artifacts-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  RedisStoreConfig config = config_for(shared_server(), unique_prefix());
  config.artifact_dir = dir;
  RedisStore store(config);
  auto sweep = store.create_sweep(NewSweep{"durable", "{}", false});
  Trial t = add(store, *sweep, 0);
  ASSERT_TRUE(store.claim_batch("w1", slots_only_offer(1), 1, 60000).ok());
  ASSERT_TRUE(store.put_artifact(t.id, 0, "w1", "checkpoint", "epoch 1").ok());
  auto first = store.locate_artifact(t.id, "checkpoint");
  ASSERT_TRUE(first.ok() && *first);
  // The same prefix, now asking for a replica that the test server has not.
  RedisStoreConfig wanting = config;
  wanting.url.wait_replicas = 1;
  wanting.url.replica_timeout_ms = 20;
  wanting.url.pause_without_replicas = true;
  RedisStore strict(wanting);
  auto st = strict.put_artifact(t.id, 0, "w1", "checkpoint", "epoch 2");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kUnavailable);
  EXPECT_TRUE(std::filesystem::exists((*first)->path)) << "removed before the new one was durable";
  // Durable, the next replacement removes every older version.
  ASSERT_TRUE(store.put_artifact(t.id, 0, "w1", "checkpoint", "epoch 3").ok());
  EXPECT_FALSE(std::filesystem::exists((*first)->path));
  std::filesystem::remove_all(dir);
}

// The scheduler marks its artifact folder and announces the mark; a worker
// uses a folder (announced, or its own --artifacts) only when it finds that
// mark there: an empty mount point or another folder at the path is refused
// with a message naming it, and nothing is written there.
TEST(RedisStore, AWorkerUsesAnArtifactFolderOnlyWithThePoolsMarker) {
  auto temp = [] {
    char tmpl[] = "/tmp/hpo-artifacts-XXXXXX";
    return std::string(::mkdtemp(tmpl));
  };
  const std::string pool = temp(), unmounted = temp(), other = temp();
  auto marker = claim_marker(pool);
  ASSERT_TRUE(marker.ok()) << marker.error().message;
  EXPECT_EQ(*claim_marker(pool), *marker);  // kept across restarts
  const std::string prefix = unique_prefix();
  RedisStore scheduler(config_for(shared_server(), prefix));
  ASSERT_TRUE(scheduler.announce_artifact_dir(pool, *marker).ok());

  RedisStore worker(config_for(shared_server(), prefix));
  ASSERT_TRUE(worker.adopt_pool_artifact_dir("").ok());
  EXPECT_EQ(worker.inline_artifact_limit(), 0);  // files: no limit but the disk

  RedisStore empty_mount(config_for(shared_server(), prefix));
  auto refused = empty_mount.adopt_pool_artifact_dir(unmounted);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(refused.error().message.find(unmounted), std::string::npos);
  EXPECT_NE(refused.error().message.find("no marker"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(empty_mount.inline_artifact_limit(), 0);  // still Redis

  ASSERT_TRUE(claim_marker(other).ok());
  RedisStore elsewhere(config_for(shared_server(), prefix));
  refused = elsewhere.adopt_pool_artifact_dir(other);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("says"), std::string::npos) << refused.error().message;
  for (const auto& d : {pool, unmounted, other}) std::filesystem::remove_all(d);
}

// Bytes kept in Redis that look like a reference come back as they were.
TEST(RedisStore, InlineBytesThatLookLikeAReferenceRoundTrip) {
  RedisStore store(config_for(shared_server(), unique_prefix()));
  auto sweep = store.create_sweep(NewSweep{"inline", "{}", false});
  Trial t = add(store, *sweep, 0);
  ASSERT_TRUE(store.claim_batch("w1", slots_only_offer(1), 1, 60000).ok());
  for (std::string bytes :
       {std::string("hpo-artifact-file/1\n{\"path\":\"x\",\"size\":1,"
                    "\"sha256\":\"y\"}"),
        std::string("hpo-artifact-inline/1\nabc"), std::string("hpo-artifact-")}) {
    ASSERT_TRUE(store.put_artifact(t.id, 0, "w1", "odd", bytes).ok());
    auto got = store.get_artifact(t.id, "odd");
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(**got, bytes);
    ASSERT_TRUE(store.put_record(t.id, "rec", bytes).ok());
    EXPECT_EQ(**store.get_artifact(t.id, "rec"), bytes);
  }
}

// A range of an artifact without the rest (the ensemble stage's blocks of
// rows): of bytes in Redis, large or small, escaped or not, and of a file in
// the artifact folder; past the end is an error naming the range; none is false.
TEST(RedisStore, ARangeOfAnArtifactIsReadWithoutTheRest) {
  char tmpl[] = "/tmp/hpo-artifacts-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  for (bool folder : {false, true}) {
    RedisStoreConfig config = config_for(shared_server(), unique_prefix());
    if (folder) config.artifact_dir = dir;
    RedisStore store(config);
    auto sweep = store.create_sweep(NewSweep{"ranges", "{}", false});
    Trial t = add(store, *sweep, 0);
    ASSERT_TRUE(store.claim_batch("w1", slots_only_offer(1), 1, 60000).ok());
    std::string large(100'000, '\0');
    for (std::size_t i = 0; i < large.size(); ++i) large[i] = static_cast<char>(i * 7 % 253);
    for (const std::string& bytes :
         {large, std::string("small bytes"), "hpo-artifact-inline/1\n" + large,
          "hpo-artifact-" + std::string("x")}) {
      ASSERT_TRUE(store.put_artifact(t.id, 0, "w1", "preds", bytes).ok());
      const auto size = static_cast<std::int64_t>(bytes.size());
      for (auto [offset, n] : {std::pair<std::int64_t, std::int64_t>{0, 5},
                               {size - 5, 5},
                               {size / 2, size / 3},
                               {size, 0}}) {
        std::string out(static_cast<std::size_t>(n), '?');
        auto got = store.read_artifact_range(t.id, "preds", offset, n, out.data());
        ASSERT_TRUE(got.ok()) << got.error().message;
        EXPECT_TRUE(*got);
        EXPECT_EQ(out, bytes.substr(static_cast<std::size_t>(offset), static_cast<std::size_t>(n)))
            << "folder " << folder << " size " << size << " offset " << offset;
      }
      char one = 0;
      auto past = store.read_artifact_range(t.id, "preds", size, 1, &one);
      ASSERT_FALSE(past.ok());
      EXPECT_NE(past.error().message.find("bytes " + std::to_string(size)), std::string::npos)
          << past.error().message;
    }
    char one = 0;
    auto none = store.read_artifact_range(t.id, "absent", 0, 1, &one);
    ASSERT_TRUE(none.ok()) << none.error().message;
    EXPECT_FALSE(*none);
  }
  std::filesystem::remove_all(dir);
}

// Data written by a version with one shared queue: the first claim splits it
// into per-sweep queues and nothing queued is lost.
TEST(RedisStore, ASharedQueueFromAnEarlierVersionIsMigrated) {
  const std::string prefix = unique_prefix();
  RedisStore store(config_for(shared_server(), prefix));
  auto sweep = store.create_sweep(NewSweep{"a", "{}", false});
  Trial t0 = add(store, *sweep, 0), t1 = add(store, *sweep, 1);
  redisContext* c = redisConnect("127.0.0.1", shared_server().port());
  ASSERT_TRUE(c && !c->err);
  for (const char* cmd : {"DEL %squeue:%s", "LREM %sready 0 %s", "SREM %sready:set %s"}) {
    auto* r = static_cast<redisReply*>(redisCommand(c, cmd, prefix.c_str(), sweep->c_str()));
    freeReplyObject(r);
  }
  for (const auto& id : {t0.id, t1.id}) {
    auto* r =
        static_cast<redisReply*>(redisCommand(c, "RPUSH %squeue %s", prefix.c_str(), id.c_str()));
    freeReplyObject(r);
  }
  redisFree(c);
  EXPECT_EQ((*store.claim("w", 1, 60'000))->trial.id, t0.id);
  EXPECT_EQ((*store.claim("w", 1, 60'000))->trial.id, t1.id);
  EXPECT_FALSE(store.claim("w", 1, 60'000)->has_value());
}

// Earlier versions recorded an attempt when it was claimed: its end rewrites
// that record (one record per attempt, not two), and it is listed once while
// it runs.
TEST(RedisStore, AnAttemptRecordedAtItsClaimByAnEarlierVersionIsRewrittenAtItsEnd) {
  const std::string prefix = unique_prefix();
  RedisStore store(config_for(shared_server(), prefix));
  auto sweep = store.create_sweep(NewSweep{"a", "{}", false});
  Trial t = add(store, *sweep, 0);
  auto c = store.claim("w", 1, 60'000);
  ASSERT_TRUE(c.ok() && c->has_value());
  redisContext* rc = redisConnect("127.0.0.1", shared_server().port());
  ASSERT_TRUE(rc && !rc->err);
  const std::string legacy = R"({"attempt":0,"worker":"w","started_ms":)" +
                             std::to_string((*c)->trial.started_ms) +
                             R"(,"ended_ms":0,"outcome":"running","error":""})";
  auto* r = static_cast<redisReply*>(
      redisCommand(rc, "RPUSH %sattempts:%s %s", prefix.c_str(), t.id.c_str(), legacy.c_str()));
  freeReplyObject(r);
  redisFree(rc);
  auto running = store.get_attempts(t.id);
  ASSERT_TRUE(running.ok()) << running.error().message;
  ASSERT_EQ(running->size(), 1u);
  EXPECT_EQ((*running)[0].outcome, "running");
  TrialResult done;
  done.value = 1;
  ASSERT_TRUE(store.complete(t.id, 0, "w", done).ok());
  auto ended = store.get_attempts(t.id);
  ASSERT_EQ(ended->size(), 1u);
  EXPECT_EQ((*ended)[0].outcome, "completed");
  EXPECT_EQ((*ended)[0].worker, "w");
  EXPECT_GT((*ended)[0].ended_ms, 0);
}

TEST(RedisStore, ReportsPastTheCapAreNotStored) {
  RedisStoreConfig config = config_for(shared_server(), unique_prefix());
  config.max_reports_per_trial = 3;
  RedisStore store(config);
  auto sweep = store.create_sweep(NewSweep{"a", "{}", false});
  Trial t = add(store, *sweep, 0);
  ASSERT_TRUE(store.claim("w", 1, 60'000).ok());
  ASSERT_TRUE(store.set_control(t.id, Control::kPrune).ok());
  for (int step = 0; step < 5; ++step) {
    StepReport r;
    r.step = step;
    r.metrics = {{"loss", 1.0 / (step + 1)}};
    auto c = store.report(t.id, 0, "w", r);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(*c, Control::kPrune);  // the worker still hears the scheduler
  }
  auto reports = store.get_reports(t.id, 0, kAll);
  ASSERT_TRUE(reports.ok());
  ASSERT_EQ(reports->reports.size(), 3u);
  EXPECT_EQ(reports->reports.back().step, 2);
}

// Bounded in bytes too: metrics with long names fill a trial's report bytes
// (the scheduler's --max-report-mb, announced in the deployment hash) long
// before the count cap; the rest are counted, not stored. An event whose
// data is larger than 4 KiB carries a note of its size instead.
TEST(RedisStore, ReportsPastTheByteCapAreNotStoredAndEventsStaySmall) {
  const std::string prefix = unique_prefix();
  RedisStore store(config_for(shared_server(), prefix));
  ASSERT_TRUE(store.announce_limits({3000, 20}).ok());
  auto sweep = store.create_sweep(NewSweep{"a", "{}", false});
  Trial t = add(store, *sweep, 0);
  ASSERT_TRUE(store.claim("w", 1, 60'000).ok());
  for (int step = 0; step < 10; ++step) {
    StepReport r;
    r.step = step;
    for (int k = 0; k < 8; ++k) r.metrics[std::string(100, static_cast<char>('a' + k))] = step;
    ASSERT_TRUE(store.report(t.id, 0, "w", r).ok());
  }
  auto reports = store.get_reports(t.id, 0, kAll);
  ASSERT_TRUE(reports.ok());
  EXPECT_GE(reports->reports.size(), 2u);
  EXPECT_LE(reports->reports.size(), 3u);  // ~900 bytes each
  auto dropped = store.client().command({"HGET", prefix + "trial:" + t.id, "reports_dropped"});
  ASSERT_TRUE(dropped.ok());
  EXPECT_EQ(std::stoll(dropped->str), 10 - static_cast<long long>(reports->reports.size()));

  StepReport wide;
  wide.step = 99;
  for (int k = 0; k < 60; ++k)
    wide.metrics["metric_" + std::string(80, 'x') + std::to_string(k)] = k;
  ASSERT_TRUE(store.report(t.id, 0, "w", wide).ok());
  auto events = store.read_events("0", 100000, 0);
  ASSERT_TRUE(events.ok());
  ASSERT_FALSE(events->empty());
  const auto& last = events->back();
  EXPECT_EQ(last.type, "trial.reported");
  EXPECT_LE(last.data.size(), 4096u);
  EXPECT_NE(last.data.find("\"truncated\":true"), std::string::npos) << last.data;
}

// The event stream's bounds are the scheduler's flags (--max-event-kb,
// --max-events, announced in the deployment hash): an event's data over the
// smaller bound is replaced by its size, and the stream keeps about the
// number of events asked for.
TEST(RedisStore, TheEventStreamKeepsTheAnnouncedBounds) {
  const std::string prefix = unique_prefix();
  RedisStore store(config_for(shared_server(), prefix));
  RedisStore::PoolLimits limits;
  limits.max_event_bytes = 1024;
  limits.max_events = 1000;
  ASSERT_TRUE(store.announce_limits(limits).ok());
  auto sweep = store.create_sweep(NewSweep{"a", "{}", false});
  Trial t = add(store, *sweep, 0);
  ASSERT_TRUE(store.claim("w", 1, 60'000).ok());
  StepReport mid;  // about 2 KiB of data: under the default bound, over this one
  mid.step = 1;
  for (int k = 0; k < 20; ++k)
    mid.metrics["metric_" + std::string(80, 'x') + std::to_string(k)] = k;
  ASSERT_TRUE(store.report(t.id, 0, "w", mid).ok());
  auto events = store.read_events("0", 100000, 0);
  ASSERT_TRUE(events.ok());
  ASSERT_FALSE(events->empty());
  EXPECT_EQ(events->back().type, "trial.reported");
  EXPECT_NE(events->back().data.find("\"truncated\":true"), std::string::npos)
      << events->back().data;
  for (int i = 0; i < 1500; ++i)
    ASSERT_TRUE(store.create_sweep(NewSweep{"s" + std::to_string(i), "{}", false}).ok());
  auto len = store.client().command({"XLEN", prefix + "events"});
  ASSERT_TRUE(len.ok());
  EXPECT_GE(len->integer, 1000);
  EXPECT_LT(len->integer, 1300) << "trimmed near max_events (MAXLEN ~ trims whole nodes)";
}

TEST(RedisStore, BlockingReadWakesOnNewEvent) {
  const std::string prefix = unique_prefix();
  RedisStore reader_store(config_for(shared_server(), prefix));
  RedisStore writer(config_for(shared_server(), prefix));
  ASSERT_TRUE(writer.create_sweep(NewSweep{"first", "{}", false}).ok());
  auto start = reader_store.read_events("0", 100, 0);
  ASSERT_TRUE(start.ok());
  ASSERT_EQ(start->size(), 1u);
  std::atomic<bool> got{false};
  std::thread reader([&] {
    auto ev = reader_store.read_events(start->back().id, 10, 10'000);
    got = ev.ok() && ev->size() == 1 && (*ev)[0].type == "sweep.created";
  });
  ASSERT_TRUE(writer.create_sweep(NewSweep{"second", "{}", false}).ok());
  reader.join();
  EXPECT_TRUE(got.load());
}

// A sweep whose trials are gangs of `ranks`, `per_host` on each worker.
NewSweep gang_sweep(int ranks, int per_host) {
  NewSweep ns{"gang", R"({"name":"gang"})", false};
  ns.needs.slots = ranks;
  ns.needs.ranks = ranks;
  ns.needs.per_host = per_host;
  return ns;
}

// Gangs (trials/placement.hpp): a 4-rank trial, 2 per host, on two 2-slot
// workers. The claimer leads with ranks 0-1; the other worker's next claim
// hands it ranks 2-3 before anything else; the follower's rank lease keeps
// the leader's lease; a draining follower asks the leader to release; once it lapses the leader's
// heartbeat fails the attempt, which is queued again whole.
TEST(RedisStore, AGangIsPlacedAcrossWorkersTogetherAndFailsWholeWhenAFollowerIsLost) {
  const std::string prefix = unique_prefix();
  RedisStore store(config_for(shared_server(), prefix));
  auto sweep = store.create_sweep(gang_sweep(4, 2));
  ASSERT_TRUE(sweep.ok()) << sweep.error().message;
  NewTrial nt;
  nt.sweep_id = *sweep;
  nt.limit = 10;
  nt.slots = 4;
  nt.max_attempts = 3;
  nt.params = {{"lr", 0.1}};
  ASSERT_TRUE(store.create_trial(nt).ok());
  for (const char* w : {"a", "b"}) {
    WorkerInfo info;
    info.name = w;
    info.slots = 2;
    ASSERT_TRUE(store.put_worker(info, 60000).ok());
  }
  const Offer two = slots_only_offer(2);
  constexpr std::int64_t kLease = 400;

  // b alone: a has recorded no offer yet, so the gang does not fit; nothing
  // is claimed, and b's offer (two free slots) is recorded.
  auto got = store.claim_batch("b", two, 2, kLease);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_TRUE(got->claims.empty());
  // a's claim places the gang: a leads, b follows.
  got = store.claim_batch("a", two, 2, kLease);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->claims.size(), 1u);
  const Trial led = got->claims[0].trial;                     // a copy: `got` is reused
  EXPECT_EQ(led.slots, 2);                                    // the leader's own share
  EXPECT_EQ(got->claims[0].slots, (std::vector<int>{0, 1}));  // on these of a's slots
  auto layout = gang_from_json(led.gang);
  ASSERT_TRUE(layout.ok()) << led.gang;
  EXPECT_EQ(layout->world, 4);
  ASSERT_EQ(layout->parts.size(), 2u);
  EXPECT_EQ(layout->parts[0].worker, "a");
  EXPECT_EQ(layout->parts[1].worker, "b");
  EXPECT_EQ(layout->parts[1].first, 2);
  EXPECT_EQ(layout->parts[1].count, 2);
  EXPECT_EQ(store.get_trial(led.id)->gang, led.gang);

  // b's next claim: its share first; its two slots are then taken.
  got = store.claim_batch("b", two, 2, kLease);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->claims.empty());
  ASSERT_EQ(got->ranks.size(), 1u);
  const RankShare share = got->ranks[0];
  EXPECT_EQ(share.trial.id, led.id);
  EXPECT_EQ(share.trial.attempt, 0);
  EXPECT_EQ(share.trial.params.at("lr"), search::Value(0.1));
  EXPECT_EQ(share.first, 2);
  EXPECT_EQ(share.count, 2);
  EXPECT_EQ(share.world, 4);
  EXPECT_EQ(share.leader, "a");
  EXPECT_EQ(share.slots, (std::vector<int>{0, 1}));  // the claim placed b's ranks on these
  // Handed out again until b renews its rank lease (a claim reply lost on
  // the way must not lose the share), on the same slots, then no more. Here
  // the reply was lost: b's offer still has both slots free, so b can start
  // the share on them, and the claim takes them out of b's offer (it claims
  // nothing else, though a queued trial would fit two free slots).
  auto plain = store.create_sweep(NewSweep{"plain", "{}", false});
  ASSERT_TRUE(plain.ok());
  add(store, *plain, 0);
  got = store.claim_batch("b", two, 2, kLease);
  ASSERT_EQ(got->ranks.size(), 1u);
  EXPECT_EQ(got->ranks[0].trial.id, led.id);
  EXPECT_EQ(got->ranks[0].first, 2);
  EXPECT_EQ(got->ranks[0].slots, (std::vector<int>{0, 1}));
  EXPECT_TRUE(got->claims.empty()) << "the share's slots are not offered twice";
  ASSERT_TRUE(store.cancel_sweep(*plain).ok());  // out of the way of what follows
  // b got that reply and booked them: the share comes again, b's offer is full.
  Offer full = two;
  full.slots = 0;
  got = store.claim_batch("b", full, 2, kLease);
  ASSERT_EQ(got->ranks.size(), 1u);
  EXPECT_EQ(got->ranks[0].slots, (std::vector<int>{0, 1}));
  ASSERT_TRUE(*store.rank_heartbeat(led.id, 0, "b", kLease));
  EXPECT_TRUE(store.claim_batch("b", two, 2, kLease)->ranks.empty());

  // The rendezvous: only the lease holder publishes; the follower reads it.
  EXPECT_EQ(store.publish_rendezvous(led.id, 0, "b", "10.0.0.2:1", 60000).error().code,
            ErrorCode::kLeaseLost);
  ASSERT_TRUE(store.publish_rendezvous(led.id, 0, "a", "10.0.0.1:29500", 60000).ok());
  EXPECT_EQ(store.rendezvous(led.id, 0, "b")->value_or(""), "10.0.0.1:29500");
  EXPECT_FALSE(store.rendezvous(led.id, 1, "b")->has_value());
  // A worker given no share of the gang neither reads its address nor gets a
  // rank lease by asking for one.
  EXPECT_FALSE(store.rendezvous(led.id, 0, "c")->has_value());
  EXPECT_FALSE(*store.rank_heartbeat(led.id, 0, "c", kLease));
  EXPECT_FALSE(store.rendezvous(led.id, 0, "c")->has_value());

  // While b renews its rank lease, a's heartbeat holds.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(*store.rank_heartbeat(led.id, 0, "b", kLease));
    ASSERT_TRUE(store.heartbeat(led.id, 0, "a", kLease).ok());
    hpo::testing::let_time_pass(std::chrono::milliseconds(kLease / 2));
  }
  // b drains (its notice): it asks the leader, through the trial's control,
  // to stop the gang and release it; only a worker with a rank lease of the
  // running attempt may.
  EXPECT_FALSE(*store.release_gang(led.id, 0, "c"));
  EXPECT_FALSE(*store.release_gang(led.id, 1, "b"));
  ASSERT_TRUE(*store.release_gang(led.id, 0, "b"));
  EXPECT_EQ(*store.heartbeat(led.id, 0, "a", kLease), Control::kRelease);
  EXPECT_EQ(store.get_trial(led.id)->control, Control::kRelease);

  // b goes silent: once its rank lease lapsed, a's heartbeat is refused and
  // the attempt is over everywhere (b's renewal says so too).
  Result<Control> beat = Control::kNone;
  ASSERT_TRUE(hpo::testing::wait_for(
      [&] {
        beat = store.heartbeat(led.id, 0, "a", kLease);
        return !beat.ok();
      },
      std::chrono::seconds(10)));
  EXPECT_EQ(beat.error().code, ErrorCode::kLeaseLost);
  EXPECT_NE(beat.error().message.find("ranks 2-3 on worker b lost"), std::string::npos)
      << beat.error().message;
  auto after = store.get_trial(led.id);
  EXPECT_EQ(after->state, TrialState::kQueued);
  EXPECT_EQ(after->attempt, 1);
  EXPECT_FALSE(*store.rank_heartbeat(led.id, 0, "b", kLease));
  auto attempts = store.get_attempts(led.id);
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ((*attempts)[0].outcome, "rank_lost");
}

// A 4-rank gang over two 2-slot workers, placed: a leads, b holds its share.
struct PlacedGang {
  std::string trial;
  std::string sweep;
};
PlacedGang place_gang(RedisStore& store, std::int64_t lease_ms) {
  auto sweep = store.create_sweep(gang_sweep(4, 2));
  NewTrial nt;
  nt.sweep_id = *sweep;
  nt.limit = 10;
  nt.slots = 4;
  nt.max_attempts = 3;
  EXPECT_TRUE(store.create_trial(nt).ok());
  for (const char* w : {"a", "b"}) {
    WorkerInfo info;
    info.name = w;
    info.slots = 2;
    EXPECT_TRUE(store.put_worker(info, 60000).ok());
  }
  EXPECT_TRUE(store.claim_batch("b", slots_only_offer(2), 2, lease_ms)->claims.empty());
  auto got = store.claim_batch("a", slots_only_offer(2), 2, lease_ms);
  EXPECT_TRUE(got.ok() && got->claims.size() == 1u);
  const std::string id = got->claims.empty() ? "" : got->claims[0].trial.id;
  got = store.claim_batch("b", slots_only_offer(2), 2, lease_ms);
  EXPECT_TRUE(got.ok() && got->ranks.size() == 1u);
  return {id, *sweep};
}

// A Redis stall (nobody renews anything while it lasts): the reaper's outage
// rule gives every trial lease one more term, and a follower's rank lease
// too, so the leader's first heartbeat after it (before the reaper's pass,
// or after) does not end a healthy gang.
TEST(RedisStore, RankLeasesSurviveAnOutageLikeTrialLeases) {
  RedisStore store(config_for(shared_server(), unique_prefix()));
  constexpr std::int64_t kLease = 300, kOutage = 400;
  const PlacedGang g = place_gang(store, kLease);
  ASSERT_FALSE(g.trial.empty());
  ASSERT_TRUE(*store.rank_heartbeat(g.trial, 0, "b", kLease));
  ASSERT_TRUE(store.reap(100, kOutage).ok());  // the reaper's last pass before the stall
  hpo::testing::let_time_pass(std::chrono::milliseconds(2 * kLease + kOutage));
  // The leader's heartbeat comes first: b's rank lease lapsed in the stall.
  auto beat = store.heartbeat(g.trial, 0, "a", kLease);
  ASSERT_TRUE(beat.ok()) << beat.error().message;
  ASSERT_TRUE(store.reap(100, kOutage).ok());  // the outage's extension
  EXPECT_TRUE(*store.rank_heartbeat(g.trial, 0, "b", kLease));
  EXPECT_TRUE(store.heartbeat(g.trial, 0, "a", kLease).ok());
  EXPECT_EQ(store.get_trial(g.trial)->state, TrialState::kRunning);
  EXPECT_EQ(store.get_trial(g.trial)->attempt, 0);
}

// A draining worker, and one that has exited, take no new gang share: the
// gang waits instead of being placed on them.
TEST(RedisStore, ADrainingOrExitedWorkerTakesNoGangShare) {
  for (const bool exited : {false, true}) {
    SCOPED_TRACE(exited ? "exited" : "draining");
    RedisStore store(config_for(shared_server(), unique_prefix()));
    auto sweep = store.create_sweep(gang_sweep(4, 2));
    NewTrial nt;
    nt.sweep_id = *sweep;
    nt.limit = 10;
    nt.slots = 4;
    ASSERT_TRUE(store.create_trial(nt).ok());
    WorkerInfo a, b;
    a.name = "a", b.name = "b";
    a.slots = b.slots = 2;
    a.instance = "ia", b.instance = "ib";
    ASSERT_TRUE(store.put_worker(a, 60000).ok());
    ASSERT_TRUE(store.put_worker(b, 60000).ok());
    ASSERT_TRUE(store.claim_batch("b", slots_only_offer(2), 2, 60000)->claims.empty());
    if (exited) {
      ASSERT_TRUE(store.remove_worker("b", "ib").ok());
    } else {
      b.draining = true;
      ASSERT_TRUE(store.put_worker(b, 60000).ok());
    }
    auto got = store.claim_batch("a", slots_only_offer(2), 2, 60000);
    ASSERT_TRUE(got.ok());
    EXPECT_TRUE(got->claims.empty())
        << "the gang was placed on " << (exited ? "an exited" : "a draining") << " worker";
    auto workers = store.list_workers();
    ASSERT_TRUE(workers.ok());
    EXPECT_EQ(workers->size(), exited ? 1u : 2u);
  }
}

// Two live workers of one name on two hosts would release each other's
// trials forever: the second is refused, naming the first's host; the same
// name restarted on the same host (a crash, within the entry's life) is not;
// and only the process that registered a name removes it.
TEST(RedisStore, ASecondWorkerOfTheSameNameOnAnotherHostIsRefused) {
  RedisStore store(config_for(shared_server(), unique_prefix()));
  WorkerInfo first;
  first.name = "gpu-1";
  first.host = "host-a";
  first.instance = "one";
  ASSERT_TRUE(store.put_worker(first, 60000).ok());
  WorkerInfo second = first;
  second.host = "host-b";
  second.instance = "two";
  auto st = store.put_worker(second, 60000);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kConflict);
  EXPECT_NE(st.error().message.find("already runs on host host-a"), std::string::npos)
      << st.error().message;
  EXPECT_EQ(store.list_workers()->front().host, "host-a");
  WorkerInfo restarted = first;
  restarted.instance = "three";
  EXPECT_TRUE(store.put_worker(restarted, 60000).ok());
  ASSERT_TRUE(store.remove_worker("gpu-1", "one").ok());  // not its instance any more
  EXPECT_EQ(store.list_workers()->size(), 1u);
  ASSERT_TRUE(store.remove_worker("gpu-1", "three").ok());
  EXPECT_TRUE(store.list_workers()->empty());
}

// A trial given back more often than the pool allows (hosts preempted faster
// than it checkpoints) fails with the reason instead of circling forever; the
// pool's own glitches (a claim that did not fit, a lost claim reply) do not count.
// Placement is decided by the claim alone: it names the worker's slots each
// attempt takes (the worker books those). A GPU request takes the lowest free
// slots whose GPU matches; any other the free CPU slots first, then the
// highest free GPU slots; cores and memory are subtracted as it goes.
TEST(RedisStore, AClaimNamesTheSlotsItTakesAndWhatIsLeft) {
  RedisStore store(config_for(shared_server(), unique_prefix()));
  const GpuDevice t4{"tesla t4", 15360}, a100{"nvidia a100-sxm4-80gb", 81920};
  auto sweep_with = [&](ResourceRequest needs) {
    NewSweep ns{"placed", "{}", false};
    ns.needs = std::move(needs);
    return *store.create_sweep(ns);
  };
  ResourceRequest gpu;
  gpu.slots = gpu.gpus = 1;
  gpu.gpu_model = "A100";
  gpu.cpus = 6;
  gpu.memory_gb = 20;
  const std::string gpu_sweep = sweep_with(gpu), cpu_sweep = sweep_with(ResourceRequest{});
  Offer o;  // slot 0 a T4, slot 1 an A100, slot 2 a CPU slot; 16 cores, 64 GB
  o.slots = o.total_slots = 3;
  o.free = {0, 1, 2};
  o.gpus = o.all_gpus = {t4, a100};
  o.cpus = o.total_cpus = 16;
  o.memory_gb = o.total_memory_gb = 64;
  add(store, gpu_sweep, 0);
  auto got = store.claim_batch("w", o, 1, 60000);
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(got->claims.size(), 1u);
  EXPECT_EQ(got->claims[0].slots, std::vector<int>{1});  // the A100's slot
  // The offer the claim leaves (recorded for gangs) is what the rule says.
  auto left = [&] {
    redisContext* c = redisConnect("127.0.0.1", shared_server().port());
    auto* r = static_cast<redisReply*>(
        redisCommand(c, "HGET %s %s", (store.prefix() + "offers").c_str(), "w"));
    std::string text = r && r->type == REDIS_REPLY_STRING ? std::string(r->str, r->len) : "";
    if (r) freeReplyObject(r);
    redisFree(c);
    return nlohmann::json::parse(text);
  };
  auto rest = left();
  EXPECT_EQ(rest["slots"], 2);
  EXPECT_EQ(rest["free"], nlohmann::json({0, 2}));
  EXPECT_EQ(rest["gpus"].size(), 1u);
  EXPECT_EQ(rest["gpus"][0]["model"], "tesla t4");
  EXPECT_DOUBLE_EQ(rest["cpus"].get<double>(), 10);
  EXPECT_DOUBLE_EQ(rest["memory_gb"].get<double>(), 44);
  // The one A100 is taken: a second A100 trial does not fit what is left.
  add(store, gpu_sweep, 1);
  o.slots = 2;
  o.free = {0, 2};
  o.gpus = {t4};
  o.cpus = 10;
  o.memory_gb = 44;
  got = store.claim_batch("w", o, 1, 60000);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->claims.empty());
  ASSERT_TRUE(store.cancel_sweep(gpu_sweep).ok());
  // A request without GPUs takes the CPU slot first, then the last GPU slot.
  add(store, cpu_sweep, 0);
  add(store, cpu_sweep, 1);
  got = store.claim_batch("w", o, 2, 60000);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->claims.size(), 2u);
  EXPECT_EQ(got->claims[0].slots, std::vector<int>{2});
  EXPECT_EQ(got->claims[1].slots, std::vector<int>{0});
  rest = left();
  EXPECT_EQ(rest["slots"], 0);
  EXPECT_TRUE(rest["gpus"].empty());
  // An offer that counts two free slots but lists one leases no two-slot
  // trial: a claim never names fewer slots than its trial asks.
  ResourceRequest two;
  two.slots = 2;
  const std::string two_sweep = sweep_with(two);
  add(store, two_sweep, 0, 2);
  Offer odd;
  odd.slots = 2;
  odd.total_slots = 3;
  odd.free = {2};
  odd.all_gpus = {t4, a100};
  got = store.claim_batch("w", odd, 1, 60000);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_TRUE(got->claims.empty());
  odd.free = {0, 2};  // both listed: it is leased, on those two
  got = store.claim_batch("w", odd, 1, 60000);
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(got->claims.size(), 1u);
  EXPECT_EQ(got->claims[0].slots, (std::vector<int>{0, 2}));
}

// Whatever a worker holds, in any order, each claim's slots are free, as many
// as the trial asks, and the ones the rule picks (written out again here).
TEST(RedisStore, AClaimNamesTheSlotsByTheRule) {
  RedisStore store(config_for(shared_server(), unique_prefix()));
  const GpuDevice t4{"tesla t4", 15360}, a100{"nvidia a100-sxm4-80gb", 81920};
  const std::vector<GpuDevice> gpus{t4, a100, t4, a100};  // slots 0-3; 4-5 are CPU slots
  struct Kind {
    ResourceRequest need;
    std::string sweep;
    std::int64_t next = 0;  // its next trial's number
  };
  std::vector<Kind> kinds;
  for (int n = 1; n <= 3; ++n) {
    ResourceRequest r;
    r.slots = n;
    kinds.push_back({r, "", 0});
  }
  for (const char* model : {"", "a100"})
    for (int n = 1; n <= 2; ++n) {
      ResourceRequest r;
      r.slots = r.gpus = n;
      r.gpu_model = model;
      kinds.push_back({r, "", 0});
    }
  for (auto& k : kinds) {
    NewSweep ns{"rule", "{}", false};
    ns.needs = k.need;
    k.sweep = *store.create_sweep(ns);
  }
  // The rule, as the test states it.
  auto expected = [&](const ResourceRequest& r, const std::vector<bool>& free) {
    std::vector<int> out;
    auto want = [&](int i) {
      if (static_cast<int>(out.size()) < r.slots && free[static_cast<std::size_t>(i)])
        out.push_back(i);
    };
    if (r.gpus > 0) {
      for (int i = 0; i < 4; ++i)
        if (gpu_matches(r, gpus[static_cast<std::size_t>(i)])) want(i);
    } else {
      for (int i = 4; i < 6; ++i) want(i);
      for (int i = 3; i >= 0; --i) want(i);
    }
    std::sort(out.begin(), out.end());
    return static_cast<int>(out.size()) == r.slots ? out : std::vector<int>{};
  };
  std::mt19937 rng(7);
  std::vector<bool> free(6, true);
  std::vector<std::vector<int>> held;
  int claims = 0;
  for (int step = 0; step < 300; ++step) {
    if (!held.empty() && rng() % 3 == 0) {
      const auto i = rng() % held.size();
      for (int s : held[i]) free[static_cast<std::size_t>(s)] = true;
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    Kind& k = kinds[rng() % kinds.size()];
    const std::vector<int> want = expected(k.need, free);
    if (want.empty()) continue;  // what does not fit is not queued (no reservations here)
    NewTrial nt;
    nt.sweep_id = k.sweep;
    nt.number = k.next++;
    nt.limit = 1'000'000;
    nt.slots = k.need.slots;
    ASSERT_TRUE(store.create_trial(nt).ok());
    Offer o;
    o.total_slots = 6;
    o.all_gpus = gpus;
    for (int i = 0; i < 6; ++i)
      if (free[static_cast<std::size_t>(i)]) {
        o.free.push_back(i);
        if (i < 4) o.gpus.push_back(gpus[static_cast<std::size_t>(i)]);
      }
    o.slots = static_cast<int>(o.free.size());
    auto got = store.claim_batch("w", o, 1, 60000);
    ASSERT_TRUE(got.ok()) << got.error().message;
    ASSERT_EQ(got->claims.size(), 1u) << "step " << step;
    EXPECT_EQ(got->claims[0].slots, want) << "step " << step;
    for (int s : got->claims[0].slots) {
      ASSERT_TRUE(free[static_cast<std::size_t>(s)]) << "step " << step;
      free[static_cast<std::size_t>(s)] = false;
    }
    held.push_back(got->claims[0].slots);
    ++claims;
  }
  EXPECT_GT(claims, 50);
}

TEST(RedisStore, ATrialReleasedPastTheBoundFails) {
  RedisStore store(config_for(shared_server(), unique_prefix()));
  ASSERT_TRUE(store.announce_limits({16 << 20, 2}).ok());
  auto sweep = store.create_sweep(NewSweep{"preempted", "{}", false});
  Trial t = add(store, *sweep, 0);
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto c = store.claim("w", 1, 60'000);
    ASSERT_TRUE(c.ok() && c->has_value()) << attempt;
    const bool preempted = attempt >= 2;
    ASSERT_TRUE(
        store.release(t.id, attempt, "w", preempted ? "preempted" : "did not fit", preempted).ok());
    if (attempt < 4) {
      EXPECT_EQ(store.get_trial(t.id)->state, TrialState::kQueued) << attempt;
    }
  }
  auto after = store.get_trial(t.id);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->state, TrialState::kFailed);
  EXPECT_NE(after->error.find("given back 3 times"), std::string::npos) << after->error;
  EXPECT_NE(after->error.find("--max-releases 2"), std::string::npos) << after->error;
}

// A worker alone cannot run a gang with per_host, and the gang reserves the
// workers of its plan: once passed over, b's claims take nothing else until
// the gang is placed, so narrow trials do not starve it.
TEST(RedisStore, AGangPassedOverReservesTheWorkersOfItsPlan) {
  const std::string prefix = unique_prefix();
  RedisStore store(config_for(shared_server(), prefix));
  auto gang_id = store.create_sweep(gang_sweep(2, 1));
  auto narrow_id = store.create_sweep(NewSweep{"narrow", R"({"name":"narrow"})", false});
  ASSERT_TRUE(gang_id.ok() && narrow_id.ok());
  NewTrial wide;
  wide.sweep_id = *gang_id;
  wide.limit = 10;
  wide.slots = 2;
  ASSERT_TRUE(store.create_trial(wide).ok());
  for (int i = 0; i < 20; ++i) add(store, *narrow_id, i);
  for (const char* w : {"a", "b"}) {
    WorkerInfo info;
    info.name = w;
    info.slots = 1;
    ASSERT_TRUE(store.put_worker(info, 60000).ok());
  }
  constexpr std::int64_t kLease = 60000;
  Offer busy = slots_only_offer(1);  // b is busy: 1 slot in all, none free
  busy.slots = 0;
  ASSERT_TRUE(store.claim_batch("b", busy, 1, kLease).ok());  // records b's offer
  // a claims while b is busy: narrow trials fill a twice, then a reserves the
  // gang, for itself and for b.
  int narrow = 0, rounds = 0;
  for (; rounds < 6; ++rounds) {
    auto got = store.claim_batch("a", slots_only_offer(1), 1, kLease);
    ASSERT_TRUE(got.ok());
    if (got->claims.empty()) break;
    ++narrow;
    EXPECT_EQ(got->claims[0].trial.sweep_id, *narrow_id);
    ASSERT_TRUE(store
                    .complete(got->claims[0].trial.id, got->claims[0].trial.attempt, "a",
                              TrialResult{TrialState::kCompleted, 1.0, {}, ""})
                    .ok());
  }
  EXPECT_EQ(narrow, 2);
  // b frees its slot: it is held for the gang, so it takes no narrow trial...
  auto got = store.claim_batch("b", slots_only_offer(1), 1, kLease);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->claims.empty());
  // ... and a's next claim places the gang over a and b.
  got = store.claim_batch("a", slots_only_offer(1), 1, kLease);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->claims.size(), 1u);
  EXPECT_EQ(got->claims[0].trial.sweep_id, *gang_id);
  auto layout = gang_from_json(got->claims[0].trial.gang);
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(layout->parts.size(), 2u);
  got = store.claim_batch("b", slots_only_offer(1), 1, kLease);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->ranks.size(), 1u);
  EXPECT_TRUE(got->claims.empty());  // its one slot went to its share
}

}  // namespace
}  // namespace hpo::trials::conformance
