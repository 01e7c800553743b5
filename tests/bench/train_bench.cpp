// Training throughput of the built-in trainer (workers/torch) on Fashion-MNIST:
// the whole trainer (train_model: shuffling, batch gathering, optimiser, loss
// read-back, stop checks) against a bare forward+backward+step loop over
// pre-made batches of the same model, to show the trainer's own overhead.
// train_bench.sh runs this and the Python reference side by side.
//
//   train_bench [threads=2] [mlp_rows=60000] [cnn_rows=6400]
//   train_bench dp [threads=2] [rows=60000] [rounds=3]: data-parallel at equal
//   total threads (see dp_scaling), through TorchExecutor's rank processes.
//   train_bench where [threads=2] [rows=60000] [rounds=3]: one trial on this
//   thread and in a rank process, alternately.
// HPO_BENCH_GPU=N trains on cuda:N (train_gpu_check.sh; needs a CUDA LibTorch).
// Prints: RESULT <name> <samples_per_s>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <filesystem>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "trials/spec/spec.hpp"
#include "workers/torch/blas_core.hpp"
#include "workers/torch/model.hpp"
#include "workers/torch/torch_executor.hpp"
#include "workers/torch/trainer.hpp"

namespace tt = hpo::workers::torch_trainer;
namespace trials = hpo::trials;

namespace {

const std::string kData = "/usr/share/datasets/fashion-mnist/";

class NullReporter : public hpo::workers::Reporter {
 public:
  bool report(std::int64_t, const trials::Metrics&) override { return true; }
  hpo::workers::StopReason stop_reason() const override { return hpo::workers::StopReason::kNone; }
  void log(std::string_view) override {}
  hpo::Status put_artifact(const std::string&, const std::string&) override { return {}; }
};

trials::ResolvedTorchConfig config(bool cnn) {
  trials::ResolvedTorchConfig c;
  if (cnn) {
    c.model.type = trials::ModelType::kCnn;  // conv32-conv64-pool-fc128-fc10
    c.model.channels = {32, 64};
    c.model.kernel = 3;
    c.model.same_padding = false;
    c.model.pool = trials::PoolMode::kLast;
    c.model.dense = {128};
  } else {
    c.model.layers = {256, 128};  // 784-256-128-10
  }
  c.optimizer.lr = 0.01;
  c.optimizer.momentum = 0.9;
  c.batch_size = 128;
  c.epochs = 1;
  return c;
}

// The same rows the trainer sees, as pre-made batches; forward, loss, backward, step.
double bare_loop(const trials::ResolvedTorchConfig& c, const tt::PreparedData& d,
                 torch::Device device) {
  torch::manual_seed(0);
  auto model = *tt::build_model(c.model, d.sample_shape, d.num_classes);
  model->to(device);
  auto opt = tt::make_optimizer(c.optimizer, model->parameters());
  std::vector<std::int64_t> shape{d.train.rows};
  shape.insert(shape.end(), d.sample_shape.begin(), d.sample_shape.end());
  auto x = torch::from_blob(const_cast<float*>(d.train.x.data()), shape).clone();
  auto y = torch::from_blob(const_cast<float*>(d.train.y.data()), {d.train.rows}).to(torch::kLong);
  std::vector<std::pair<torch::Tensor, torch::Tensor>> batches;
  for (std::int64_t s = 0; s < d.train.rows; s += c.batch_size) {
    auto len = std::min(c.batch_size, d.train.rows - s);
    batches.emplace_back(x.narrow(0, s, len).to(device).contiguous(),
                         y.narrow(0, s, len).to(device).contiguous());
  }
  auto t0 = std::chrono::steady_clock::now();
  for (auto& [xb, yb] : batches) {
    opt->zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model->forward(xb), yb);
    loss.backward();
    opt->step();
  }
  if (device.is_cuda()) torch::cuda::synchronize();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<double>(d.train.rows) / s;
}

// Reports go nowhere; the log (the ranks' pids, rank 0's lines) to stderr.
class LogReporter : public NullReporter {
 public:
  void log(std::string_view line) override {
    std::fprintf(stderr, "  %.*s\n", static_cast<int>(line.size()), line.data());
  }
  hpo::Status put_artifact(const std::string&, const std::string&) override { return {}; }
};

// Through the worker's real path: TorchExecutor, k = 1 trains on this thread
// with `threads` threads, k = 2 runs two hpo-train-rank processes sharing them.
nlohmann::json mlp_trial(std::int64_t rows) {
  return {{"kind", "torch"},
          {"model", {{"type", "mlp"}, {"layers", {256, 128}}}},
          {"data",
           {{"format", "idx"},
            {"train_images", kData + "train-images-idx3-ubyte.gz"},
            {"train_labels", kData + "train-labels-idx1-ubyte.gz"},
            {"subset", rows},
            {"validation_fraction", 0.1}}},
          {"optimizer", {{"type", "sgd"}, {"lr", "{lr}"}, {"momentum", 0.9}}},
          {"batch_size", 128},
          {"epochs", 2}};
}

// One trial of `trial` through `executor` with `threads`; its result.
trials::TrialResult run_trial(hpo::workers::TorchExecutor& executor, const nlohmann::json& trial,
                              int threads, const std::string& id) {
  nlohmann::json j = {{"name", "bench"},
                      {"objective", {{"metric", "val_accuracy"}, {"mode", "max"}}},
                      {"parameters", {{"lr", {{"type", "categorical"}, {"values", {0.01}}}}}},
                      {"search", {{"algorithm", "grid"}, {"max_trials", 1}}},
                      {"trial", trial}};
  auto spec = trials::parse_spec(j.dump());
  if (!spec) {
    trials::TrialResult r;
    r.outcome = trials::TrialState::kFailed;
    r.error = spec.error().message;
    return r;
  }
  hpo::workers::TrialTask task;
  task.spec = &*spec;
  task.trial.id = id;
  task.trial.params = {{"lr", 0.01}};
  task.threads = threads;
  task.work_dir = std::filesystem::temp_directory_path().string();
  LogReporter reporter;
  return executor.run(task, reporter);
}

// The same single-rank mlp trial on this thread and in an hpo-train-rank process (the
// worker's way), alternately `rounds` times: what the process around a trial costs. Both
// run with this process's OpenBLAS kernels (set OPENBLAS_CORETYPE to choose them).
int where(int threads, std::int64_t rows, int rounds) {
  auto cache = std::make_shared<tt::DatasetCache>();
  hpo::workers::TorchExecutorOptions inproc{HPO_TRAIN_RANK_PATH};
  inproc.isolate = false;
  hpo::workers::TorchExecutor here(cache, inproc), apart(cache, {HPO_TRAIN_RANK_PATH});
  for (int i = 0; i < rounds; ++i)
    for (auto* e : {&here, &apart}) {
      auto r = run_trial(*e, mlp_trial(rows), threads, "where");
      if (r.outcome != trials::TrialState::kCompleted) {
        std::fprintf(stderr, "%s\n", r.error.c_str());
        return 1;
      }
      std::printf("RESULT %s %.1f\n", e == &here ? "in_process" : "rank_process",
                  r.metrics.at("train_samples_per_s"));
      std::fflush(stdout);
    }
  return 0;
}

// The worker's executor options: trial processes get the OpenBLAS kernels hpo-worker gives.
hpo::workers::TorchExecutorOptions worker_options() {
  hpo::workers::TorchExecutorOptions o{HPO_TRAIN_RANK_PATH};
  o.blas_core = hpo::workers::trial_blas_core();
  return o;
}

// Data-parallel at equal total threads, through the worker's path (TorchExecutor:
// hpo-train-rank processes over ProcessGroupGloo), the mlp for 2 epochs: one rank with
// `threads` threads, then 2 ranks of threads / 2 each: gradient all-reduce through shared
// memory (the default on CPU) and through Gloo (buckets of bucket_mb overlapping backward,
// and one bucket: no overlap), and parameter averaging every H = 8 steps (shm, Gloo). Rounds
// alternate the configurations. Prints per configuration and round: RESULT dp <name> <samples/s>
// <val_accuracy> <step ms> <sync ms per step>.
int dp_scaling(int threads, std::int64_t rows, int rounds) {
  struct Config {
    const char* name;
    nlohmann::json data_parallel;
  };
  const std::vector<Config> configs = {
      {"1-rank", {{"replicas", 1}}},
      {"allreduce-shm", {{"replicas", 2}, {"mode", "allreduce"}}},
      {"allreduce-gloo-buckets",
       {{"replicas", 2}, {"mode", "allreduce"}, {"transport", "gloo"}, {"bucket_mb", 0.125}}},
      {"allreduce-gloo-1-bucket",
       {{"replicas", 2}, {"mode", "allreduce"}, {"transport", "gloo"}, {"bucket_mb", 1024}}},
      {"average-H8-shm", {{"replicas", 2}, {"mode", "average"}, {"average_every", 8}}},
      {"average-H8-gloo",
       {{"replicas", 2}, {"mode", "average"}, {"average_every", 8}, {"transport", "gloo"}}}};
  hpo::workers::TorchExecutor executor(std::make_shared<tt::DatasetCache>(), worker_options());
  for (int round = 0; round < rounds; ++round)
    for (const auto& c : configs) {
      auto trial = mlp_trial(rows);
      trial["data_parallel"] = c.data_parallel;
      auto r = run_trial(executor, trial, threads, std::string("dp-") + c.name);
      if (r.outcome != trials::TrialState::kCompleted) {
        std::fprintf(stderr, "%s: %s\n", c.name, r.error.c_str());
        return 1;
      }
      auto metric = [&](const char* k) {
        auto it = r.metrics.find(k);
        return it == r.metrics.end() ? 0.0 : it->second;
      };
      std::printf("RESULT dp %s %.1f %.4f %.3f %.3f\n", c.name, metric("train_samples_per_s"),
                  metric("val_accuracy"), metric("step_ms"), metric("sync_ms_per_step"));
      std::fflush(stdout);
    }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "where")
    return where(argc > 2 ? std::atoi(argv[2]) : 2, argc > 3 ? std::atoll(argv[3]) : 60000,
                 argc > 4 ? std::atoi(argv[4]) : 3);
  if (argc > 1 && std::string(argv[1]) == "dp")
    return dp_scaling(argc > 2 ? std::atoi(argv[2]) : 2, argc > 3 ? std::atoll(argv[3]) : 60000,
                      argc > 4 ? std::atoi(argv[4]) : 3);
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const std::int64_t mlp_rows = argc > 2 ? std::atoll(argv[2]) : 60000;
  const std::int64_t cnn_rows = argc > 3 ? std::atoll(argv[3]) : 6400;
  const char* gpu_env = std::getenv("HPO_BENCH_GPU");
  const int gpu = gpu_env ? std::atoi(gpu_env) : -1;
  const bool cuda = gpu >= 0 && torch::cuda::is_available();
  const torch::Device device = cuda
                                   ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(gpu))
                                   : torch::Device(torch::kCPU);
  std::printf("DEVICE %s\n", device.str().c_str());
  if (gpu >= 0 && !cuda) std::fprintf(stderr, "warning: no CUDA in this LibTorch; on CPU\n");
  tt::DatasetCache cache;
  NullReporter reporter;
  for (bool cnn : {false, true}) {
    const char* name = cnn ? "cnn" : "mlp";
    auto c = config(cnn);
    c.data.format = "idx";
    c.data.train_images = kData + "train-images-idx3-ubyte.gz";
    c.data.train_labels = kData + "train-labels-idx1-ubyte.gz";
    c.data.subset = (cnn ? cnn_rows : mlp_rows) + 100;  // + 100 validation rows
    c.data.validation_fraction = 100.0 / static_cast<double>(c.data.subset);
    auto data = tt::prepare_data(c.data, c.task, cache);
    if (!data) {
      std::fprintf(stderr, "%s\n", data.error().message.c_str());
      return 1;
    }
    // Warm-up (allocator, kernels), then the measured runs.
    {
      auto small = *data;
      small.train = tt::gather(data->train, [&] {
        std::vector<std::int64_t> r(std::min<std::int64_t>(1280, data->train.rows));
        for (std::size_t i = 0; i < r.size(); ++i) r[i] = static_cast<std::int64_t>(i);
        return r;
      }());
      tt::TrainOptions o;
      o.threads = threads;
      o.gpu = gpu;
      o.keep_artifacts = false;
      tt::train_model(c, small, o, reporter);
    }
    tt::TrainOptions options;
    options.threads = threads;
    options.gpu = gpu;
    options.keep_artifacts = false;
    auto out = tt::train_model(c, *data, options, reporter);
    if (out.end != tt::TrainOutput::End::kCompleted) {
      std::fprintf(stderr, "%s: %s\n", name, out.error.c_str());
      return 1;
    }
    std::printf("RESULT %s_trainer %.1f\n", name, out.metrics.at("train_samples_per_s"));
    {
      tt::ThreadLayout layout(c.model, threads, cuda);  // the bare loop: the trainer's layout
      std::printf("RESULT %s_bare %.1f\n", name, bare_loop(c, *data, device));
    }
    std::fflush(stdout);
  }
  return 0;
}
