// The collectives of data-parallel training (trainer.cpp, data_parallel.cpp)
// with k = 2 ranks as threads of this process, each with its own ParallelGroup
// (FileStore rendezvous; sums through shared memory, and through
// ProcessGroupGloo over loopback in gradient buckets: every test runs on both
// transports): the code the
// hpo-train-rank processes run, with the ranks' outputs side by side in memory
// so their parameters can be compared. The processes themselves are tested in
// training_test.cpp (DataParallelTrials) and tests/e2e/data_parallel_e2e_test.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "tests/workers/torch/test_files.hpp"
#include "workers/torch/data_parallel.hpp"
#include "workers/torch/trainer.hpp"

namespace hpo::workers::torch_trainer {
namespace {

using testing::FakeReporter;
using testing::TempDir;

const std::string kFashion = "/usr/share/datasets/fashion-mnist/";

class DataParallel : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kFashion + "train-images-idx3-ubyte.gz"))
      GTEST_SKIP() << "dataset-fashion-mnist is not installed";
    cfg.model.layers = {64};
    cfg.optimizer.lr = 0.05;
    cfg.optimizer.momentum = 0.9;
    cfg.batch_size = 64;
    cfg.epochs = 2;
    cfg.data.format = "idx";
    cfg.data.train_images = kFashion + "train-images-idx3-ubyte.gz";
    cfg.data.train_labels = kFashion + "train-labels-idx1-ubyte.gz";
    cfg.data.subset = 2000;
    cfg.data.validation_fraction = 0.25;
    auto d = prepare_data(cfg.data, cfg.task, cache);
    ASSERT_TRUE(d.ok()) << d.error().message;
    data = std::move(d).value();
  }

  struct Rank {
    TrainOutput out;
    FakeReporter reporter;
  };

  // Runs `world` ranks concurrently; `tweak(rank, config, reporter)` may change one rank.
  std::vector<Rank> run(
      int world, bool average, int every = 1,
      std::function<void(int, trials::ResolvedTorchConfig&, FakeReporter&)> tweak = {},
      std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    std::vector<Rank> ranks(static_cast<std::size_t>(world));
    std::string store = dir.file("store-" + std::to_string(runs++));
    std::vector<std::thread> threads;
    for (int r = 0; r < world; ++r)
      threads.emplace_back([&, r] {
        auto c = cfg;
        auto& rank = ranks[static_cast<std::size_t>(r)];
        if (tweak) tweak(r, c, rank.reporter);
        RankConfig rc{r, world, store, average, every, timeout};
        rc.transport = GetParam();
        rc.bucket_mb = 0.1;  // Gloo: the mlp's 784x64 weights in a bucket, the rest in others
        auto group = ParallelGroup::connect(rc);
        ASSERT_TRUE(group.ok()) << group.error().message;
        TrainOptions o;
        o.threads = 1;
        o.seed = 11;
        o.group = group->get();
        rank.out = train_model(c, data, o, rank.reporter);
      });
    for (auto& t : threads) t.join();
    return ranks;
  }

  TempDir dir;
  DatasetCache cache;
  trials::ResolvedTorchConfig cfg;
  PreparedData data;
  int runs = 0;
};

TEST_P(DataParallel, AllreduceKeepsRanksIdenticalAndMatchesOneRank) {
  auto two = run(2, false);
  ASSERT_EQ(two[0].out.end, TrainOutput::End::kCompleted) << two[0].out.error;
  ASSERT_EQ(two[1].out.end, TrainOutput::End::kCompleted) << two[1].out.error;
  EXPECT_EQ(two[0].out.model_bytes, two[1].out.model_bytes);  // identical parameters
  EXPECT_EQ(two[0].reporter.reports.size(), 2u);              // rank 0 reports
  EXPECT_TRUE(two[1].reporter.reports.empty());
  // What keeping in step cost, and in how many all-reduces a step: one through shared memory,
  // a bucket per 0.1 MB (started during backward) through Gloo.
  EXPECT_GT(two[0].out.metrics.at("sync_ms_per_step"), 0);
  EXPECT_GT(two[0].out.metrics.at("step_ms"), two[0].out.metrics.at("sync_ms_per_step"));
  EXPECT_EQ(two[0].out.metrics.at("gradient_buckets"), GetParam() == "gloo" ? 2 : 1);
  auto one = run(1, false);
  ASSERT_EQ(one[0].out.end, TrainOutput::End::kCompleted) << one[0].out.error;
  const double a2 = two[0].out.metrics.at("val_accuracy"),
               a1 = one[0].out.metrics.at("val_accuracy");
  EXPECT_GT(a1, 0.6);
  EXPECT_NEAR(a2, a1, 0.01);
}

TEST_P(DataParallel, ParameterAveragingTrains) {
  auto two = run(2, true, 4);
  ASSERT_EQ(two[0].out.end, TrainOutput::End::kCompleted) << two[0].out.error;
  ASSERT_EQ(two[1].out.end, TrainOutput::End::kCompleted) << two[1].out.error;
  EXPECT_EQ(two[0].out.model_bytes, two[1].out.model_bytes);  // averaged at the epoch end
  EXPECT_GT(two[0].out.metrics.at("val_accuracy"), 0.6);
}

TEST_P(DataParallel, RankZerosPruneStopsEveryRank) {
  cfg.epochs = 50;
  auto two = run(2, false, 1, [](int r, auto&, FakeReporter& rep) {
    if (r == 0) rep.stop_after_reports = 1;
  });
  EXPECT_EQ(two[0].out.end, TrainOutput::End::kStopped);
  EXPECT_EQ(two[1].out.end, TrainOutput::End::kStopped);
}

TEST_P(DataParallel, ALostRankFailsTheOthersWithinTheTimeout) {
  auto two = run(
      2, false, 1,
      [](int r, trials::ResolvedTorchConfig& c, FakeReporter&) {
        if (r == 1) c.epochs = 1;  // rank 1 leaves after one epoch
      },
      std::chrono::seconds(3));
  EXPECT_EQ(two[0].out.end, TrainOutput::End::kFailed);
  EXPECT_FALSE(two[0].out.error.empty());  // the rank timeout (3 s) ended it, not the epochs
}

INSTANTIATE_TEST_SUITE_P(Transports, DataParallel, ::testing::Values("shm", "gloo"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace hpo::workers::torch_trainer
