// Real-sized artifacts through the real service (scheduler with --artifacts,
// workers, REST): a command trial's 1 GiB checkpoint is stored while it runs,
// its worker is drained, and the next attempt on another worker finds the
// same bytes; neither worker's memory grows by the checkpoint's size on the
// way (it is streamed); the REST download serves ranges of it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/support/cluster.hpp"
#include "tests/support/process.hpp"
#include "tests/support/tabular.hpp"
#include "trials/artifact_dir.hpp"

namespace hpo::e2e {
namespace {

using Json = nlohmann::json;
using hpo::testing::Cluster;
using hpo::testing::Process;
using hpo::testing::wait_for;
using namespace std::chrono_literals;

constexpr std::int64_t kCheckpointBytes = std::int64_t{1} << 30;

// The most memory the process has held at once (VmHWM), in bytes.
std::int64_t peak_rss(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return -1;
}

// First attempt: writes SIZE random bytes and their SHA-256 into
// HPO_CHECKPOINT_DIR, says so, reports, then trains "forever". A later
// attempt checks the bytes it finds there and ends with resumed = 1.
constexpr char kTrial[] = R"(#!/bin/sh
ck="$HPO_CHECKPOINT_DIR"
if [ -f "$ck/weights.sum" ]; then
  cd "$ck" || exit 3
  if sha256sum -c --status weights.sum; then ok=1; else ok=0; fi
  echo "hpo-metric {\"final\": true, \"resumed\": $ok, \"bytes\": $(stat -c %s weights.bin)}"
  exit 0
fi
mkdir -p "$ck/model"
head -c "$SIZE" /dev/urandom > "$ck/model/weights.bin" || exit 4
mv "$ck/model/weights.bin" "$ck/weights.bin"
(cd "$ck" && sha256sum weights.bin > weights.sum)
echo hpo-checkpoint
echo 'hpo-metric {"step": 0, "resumed": 0}'
while :; do sleep 0.2; done
)";

TEST(LargeArtifacts, ADrainedTrialResumesFromItsOneGibCheckpointOnAnotherWorker) {
  Cluster c;
  const std::string artifacts = c.home() + "/artifacts";
  std::filesystem::create_directories(artifacts);
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler({"--artifacts", artifacts}));
  const std::string script = c.home() + "/big_checkpoint.sh";
  {
    std::ofstream(script) << kTrial;
    std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  }
  Json spec = {{"name", "one gib checkpoint"},
               {"objective", {{"metric", "resumed"}, {"mode", "max"}}},
               {"parameters", {{"x", {{"type", "categorical"}, {"values", {1}}}}}},
               {"search", {{"algorithm", "grid"}, {"max_trials", 1}}},
               {"trial",
                {{"kind", "command"},
                 {"argv", {script}},
                 {"env", {{"SIZE", std::to_string(kCheckpointBytes)}}},
                 {"max_attempts", 2},
                 {"timeout_s", 600}}}};
  Process& first = c.start_worker("first", 1, 1500, {"--drain-grace-s", "0"});
  const std::int64_t idle = [&] {
    std::int64_t rss = -1;
    wait_for(
        [&] {
          const Json workers = c.get("/api/workers");
          return (rss = peak_rss(first.pid())) > 0 && workers.is_object() &&
                 !workers["workers"].empty();
        },
        30s);
    return rss;
  }();
  const std::string id = c.submit(spec);
  ASSERT_FALSE(id.empty());
  const std::string trial = id + "-0";
  // The report after `hpo-checkpoint` comes once the checkpoint is stored.
  ASSERT_TRUE(wait_for(
      [&] {
        Json t = c.get("/api/trials/" + trial);
        return t.is_object() && !t["reports"].empty();
      },
      300s))
      << c.logs();
  const std::int64_t first_peak = peak_rss(first.pid());

  // A range of the stored checkpoint, over REST: 206, the bytes asked for.
  auto head = c.api().request("GET", "/api/trials/" + trial + "/artifacts/checkpoint", "",
                              {{"Range", "bytes=0-19"}});
  ASSERT_TRUE(head.ok()) << head.error().message;
  EXPECT_EQ(head->status, 206) << head->body;
  EXPECT_EQ(head->body, "hpo-checkpoint-dir 1");
  const std::string total = head->header("content-range");
  EXPECT_EQ(total.rfind("bytes 0-19/", 0), 0u) << total;
  EXPECT_GT(std::stoll(total.substr(total.find('/') + 1)), kCheckpointBytes);
  EXPECT_EQ(head->header("x-content-sha256").size(), 64u);

  first.kill(SIGTERM);  // a drain: the trial is released, no failure counted
  EXPECT_EQ(first.wait(60s), 0) << c.logs();
  Json detail = c.get("/api/trials/" + trial);
  EXPECT_EQ(detail["state"], "queued") << detail.dump(2);

  Process& second = c.start_worker("second", 1, 1500);
  Json sweep = c.wait_finished(id, 300s);
  ASSERT_EQ(sweep.value("state", ""), "finished") << sweep.dump(2) << c.logs();
  detail = c.get("/api/trials/" + trial);
  ASSERT_EQ(detail["state"], "completed") << detail.dump(2) << c.logs();
  EXPECT_EQ(detail["worker"], "second");
  EXPECT_EQ(detail["metrics"]["resumed"], 1) << detail.dump(2);
  EXPECT_EQ(detail["metrics"]["bytes"].get<double>(), static_cast<double>(kCheckpointBytes));
  EXPECT_EQ(detail["attempts"][0]["outcome"], "released") << detail.dump(2);
  const std::int64_t second_peak = peak_rss(second.pid());

  // Streamed: neither worker held the gigabyte (the old, whole-in-memory
  // path peaked at twice it).
  EXPECT_LT(first_peak - idle, 256 << 20) << "idle " << idle << ", peak " << first_peak;
  EXPECT_LT(second_peak - idle, 256 << 20) << "idle " << idle << ", peak " << second_peak;
  std::printf(
      "[ figures ] 1 GiB checkpoint: worker peak RSS %.0f MiB storing, %.0f MiB restoring "
      "(idle %.0f MiB)\n",
      first_peak / 1048576.0, second_peak / 1048576.0, idle / 1048576.0);
}

// A torch model over 256 MiB (the most an artifact may have in Redis alone):
// with the artifact folder it trains, is stored and downloads whole, its
// bytes the ones the checksum names; without the folder the same spec is
// refused at submit, naming the model and the flag.
TEST(LargeArtifacts, ATorchModelOverTheRedisCapCompletesAndDownloadsWhole) {
  if (!std::filesystem::exists(hpo::testing::kBinaryDir + "/workers/hpo-train-rank"))
    GTEST_SKIP() << "built without LibTorch";
  Cluster c;
  const std::string artifacts = c.home() + "/artifacts";
  std::filesystem::create_directories(artifacts);
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler({"--artifacts", artifacts}));
  const std::string train = c.home() + "/big-model.csv";
  hpo::testing::write_tabular_csv(train, 96, 5);
  // 8,500 x 8,500 between the two hidden layers: 72e6 weights, ~289 MB.
  Json spec = {
      {"name", "a model over the cap"},
      {"objective", {{"metric", "val_accuracy"}, {"mode", "max"}}},
      {"parameters", {{"lr", {{"type", "categorical"}, {"values", {0.001}}}}}},
      {"search", {{"algorithm", "grid"}, {"max_trials", 1}}},
      {"trial",
       {{"kind", "torch"},
        {"task", "classification"},
        {"model", {{"type", "mlp"}, {"hidden", 8500}, {"depth", 2}}},
        {"data",
         {{"format", "csv"}, {"train", train}, {"target", "y"}, {"validation_fraction", 0.25}}},
        {"optimizer", {{"type", "sgd"}, {"lr", "{lr}"}}},
        {"batch_size", 48},
        {"epochs", 1},
        {"max_attempts", 1},
        {"timeout_s", 900}}}};
  c.start_worker("big", 1);
  const std::string id = c.submit(spec);
  ASSERT_FALSE(id.empty());
  Json sweep = c.wait_finished(id, 900s);
  ASSERT_EQ(sweep.value("state", ""), "finished") << sweep.dump(2) << c.logs();
  Json trial = c.get("/api/trials/" + id + "-0");
  ASSERT_EQ(trial["state"], "completed") << trial.dump(2) << c.logs();

  // Downloaded streamed (never whole in the client's memory either), checked.
  struct Hashing final : ByteSink {
    trials::Sha256 sha;
    std::int64_t size = 0;
    Status write(std::string_view b) override {
      sha.update(b);
      size += static_cast<std::int64_t>(b.size());
      return {};
    }
  } got;
  auto r = c.api().download("/api/trials/" + id + "-0/artifacts/model.pt", got);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_GT(got.size, std::int64_t{256} << 20);
  EXPECT_EQ(std::to_string(got.size), r->header("content-length"));
  EXPECT_EQ(got.sha.hex(), r->header("x-content-sha256"));

  // The same spec on a pool without an artifact folder: refused at submit.
  Cluster plain;
  ASSERT_NO_FATAL_FAILURE(plain.start_scheduler({"--data-root", c.home()}));
  auto refused = plain.api().post("/api/sweeps", spec.dump());
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->status, 400) << refused->body;
  EXPECT_NE(refused->body.find("trial.model"), std::string::npos) << refused->body;
  EXPECT_NE(refused->body.find("--artifacts"), std::string::npos) << refused->body;
  std::printf("[ figures ] torch model.pt of %.0f MiB stored and downloaded whole\n",
              got.size / 1048576.0);
}

}  // namespace
}  // namespace hpo::e2e
