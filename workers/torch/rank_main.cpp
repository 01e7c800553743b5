// hpo-train-rank JOB.json RANK — one rank of a data-parallel torch trial.
//
// The worker's torch executor starts k of these (torch_executor.cpp) with the
// job it wrote into the attempt directory: the sweep spec's JSON, the trial
// (id, kind, params, extra), the world size, threads per rank, the slots' GPUs,
// the FileStore path and the collective timeout. Every rank loads the data,
// applies a member's bagging plan, joins the c10d Gloo group and trains its
// shard of every global batch (trainer.cpp). Rank 0 prints each epoch's report
// as `hpo-rank-report {json}` on stdout and, at the end, writes the artifacts
// and result.json (end, error, retryable, metrics, artifacts) into the
// directory. A gang's rank 0 (ranks on several hosts) starts the c10d
// TCPStore on a free port and says where as `hpo-rank-store HOST:PORT` on
// stdout before the group forms. SIGTERM or SIGINT asks the rank to stop: the trainer stops at the
// next batch, together with its peers. Rank 0 leaves a checkpoint in
// checkpoint.pt after every epoch but the last (`hpo-rank-checkpoint E B` on
// stdout says so); SIGUSR1 asks for one where it stops (a single rank; a drain),
// and a job's `resume` file is the checkpoint every rank starts from. The rank dies with its worker
// (PR_SET_PDEATHSIG).
//
// Exit status: 0 when rank 0 wrote its result (whatever the training's end) or
// another rank finished (or found the trial's data unusable, which rank 0
// reports); 2 for a bad job; 3 when the group cannot be joined or the result
// not written; 4 when the training failed on a rank > 0.
#include <malloc.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "trials/spec/spec.hpp"
#include "workers/torch/blas_core.hpp"
#include "workers/torch/data_parallel.hpp"
#include "workers/torch/rank_job.hpp"
#include "workers/torch/torch_executor.hpp"
#include "workers/torch/trial_setup.hpp"

namespace {

namespace tt = hpo::workers::torch_trainer;
namespace fs = std::filesystem;
using Json = nlohmann::json;
using hpo::workers::StopReason;

std::atomic<bool> g_stop{false};
std::atomic<bool> g_checkpoint{false};  // SIGUSR1: checkpoint, then stop (a drain)
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_stop_signal(int sig) {
  if (sig == SIGUSR1) g_checkpoint.store(true, std::memory_order_relaxed);
  g_stop.store(true, std::memory_order_relaxed);
}

// Rank 0 talks to the executor through stdout; the other ranks keep quiet.
class RankReporter : public hpo::workers::Reporter {
 public:
  explicit RankReporter(bool talks) : talks_(talks) {}
  bool report(std::int64_t step, const hpo::trials::Metrics& metrics) override {
    if (talks_) {
      Json j{{"step", step}, {"metrics", metrics}};
      std::cout << hpo::workers::kRankReportPrefix << j.dump() << std::endl;
    }
    return !g_stop.load(std::memory_order_relaxed);
  }
  StopReason stop_reason() const override {
    if (!g_stop.load(std::memory_order_relaxed)) return StopReason::kNone;
    return g_checkpoint.load(std::memory_order_relaxed) ? StopReason::kShutdown
                                                        : StopReason::kPruned;
  }
  void log(std::string_view line) override {
    if (talks_) std::cout << line << std::endl;
  }
  hpo::Status put_artifact(const std::string&, const std::string&) override { return {}; }

 private:
  bool talks_;
};

bool write_file(const fs::path& p, const std::string& bytes) {
  const fs::path tmp = p.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) return false;
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  return !ec;
}

// Joins this rank's c10d group: the rendezvous is the job's store (a FileStore
// in the attempt directory without one).
hpo::Result<std::unique_ptr<tt::ParallelGroup>> join_group(const tt::RankJob& job,
                                                           const hpo::trials::DataParallel& dp,
                                                           int rank, int gpu,
                                                           const fs::path& out_dir) {
  tt::RankConfig rc;
  rc.rank = rank;
  rc.world = job.world;
  rc.store_path = job.store.empty() ? (out_dir / "c10d-store").string() : job.store;
  rc.address = job.address;
  // A gang's rank 0 tells its worker where its store listens (the worker publishes it).
  rc.on_store = [](const std::string& where) {
    std::cout << hpo::workers::kRankStorePrefix << where << std::endl;
  };
  rc.average = dp.average;
  rc.average_every = dp.average_every;
  rc.timeout = std::chrono::milliseconds(job.timeout_ms);
  rc.gpu = gpu;
  rc.bucket_mb = dp.bucket_mb;
  rc.transport = dp.transport;
  return tt::ParallelGroup::connect(rc);
}

// The job's checkpoint file, which every rank starts from; nullopt when it
// cannot be read.
std::optional<std::string> read_checkpoint(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream bytes;
  bytes << f.rdbuf();
  if (!f) return std::nullopt;
  return bytes.str();
}

int run(const fs::path& job_path, int rank) {
  std::ifstream in(job_path);
  std::stringstream text;
  text << in.rdbuf();
  auto decoded = tt::decode_rank_job(text.str());
  if (!decoded) {
    std::cerr << "hpo-train-rank: " << job_path << ": " << decoded.error().message << "\n";
    return 2;
  }
  const tt::RankJob& job = *decoded;
  const fs::path out_dir = job.out.empty() ? job_path.parent_path() : fs::path(job.out);
  auto write_result = [&](const char* end, const std::string& error, bool retryable,
                          const hpo::trials::Metrics& metrics,
                          const std::vector<std::string>& artifacts) {
    tt::RankResult r{end, error, retryable, metrics, artifacts};
    if (!write_file(out_dir / "result.json", tt::encode_rank_result(r))) {
      std::cerr << "hpo-train-rank: cannot write " << (out_dir / "result.json") << "\n";
      return 3;
    }
    return 0;
  };

  const int world = job.world;
  auto spec = hpo::trials::parse_spec(job.spec);
  if (!spec || rank < 0 || rank >= world) {
    std::cerr << "hpo-train-rank: bad job: "
              << (!spec ? spec.error().message : fmt::format("rank {} of {}", rank, world)) << "\n";
    return 2;
  }
  const hpo::trials::Trial& trial = job.trial;
  const auto& gpus = job.gpus;
  const int local = rank - job.first_rank;  // this host's ranks are first_rank, first_rank + 1, ...
  const int gpu = local >= 0 && local < static_cast<int>(gpus.size())
                      ? gpus[static_cast<std::size_t>(local)]
                      : -1;

  RankReporter reporter(rank == 0);
  // The worker's disk cache: a dataset is decoded once per host, not once per rank. The whole
  // table goes once the trial's rows are gathered from it: training holds only those (the
  // Fashion-MNIST table is 188 MB of floats, as much again as the 54,000 rows of a trial).
  auto setup = [&] {
    tt::DatasetCache cache(1, job.dataset_cache);
    return tt::setup_trial(*spec, trial, job.threads, gpu, cache, reporter, job.data_roots);
  }();
  if (!setup) {
    // The same on every rank: rank 0 says why (the trial is not retried), the others leave
    // quietly rather than fail the attempt as if they had been lost.
    if (rank == 0) return write_result("failed", setup.error().message, false, {}, {});
    std::cerr << "hpo-train-rank " << rank << ": " << setup.error().message << "\n";
    return 0;
  }
  if (rank == 0)
    reporter.log(fmt::format("torch: {}{} train / {} validation / {} test rows, {} threads{}",
                             world > 1 ? fmt::format("data-parallel, {} ranks: ", world) : "",
                             setup->data.train.rows, setup->data.validation.rows,
                             setup->data.test.rows, setup->options.threads,
                             gpu >= 0 ? fmt::format(", gpu {}", gpu) : ""));
  if (const auto core = hpo::workers::loaded_blas_core(); rank == 0 && !core.empty())
    reporter.log("torch: OpenBLAS kernels " + core);
  std::unique_ptr<tt::ParallelGroup> group;  // none for a single-process trial
  if (world > 1) {
    auto g = join_group(job, spec->trial.data_parallel, rank, gpu, out_dir);
    if (!g) {
      std::cerr << "hpo-train-rank " << rank << ": " << g.error().message << "\n";
      return 3;
    }
    group = std::move(*g);
  }
  setup->options.group = group.get();
  setup->options.keep_artifacts = rank == 0;
  if (!job.resume.empty()) {  // every rank starts from the same checkpoint
    auto bytes = read_checkpoint(job.resume);
    if (!bytes) {
      std::cerr << "hpo-train-rank " << rank << ": cannot read the checkpoint " << job.resume
                << "\n";
      return 3;
    }
    setup->options.resume = std::move(*bytes);
  }
  if (rank == 0)
    setup->options.checkpoint = [&](const std::string& bytes, std::int64_t epoch,
                                    std::int64_t batch) {
      if (write_file(out_dir / hpo::workers::kRankCheckpointFile, bytes))
        std::cout << hpo::workers::kRankCheckpointPrefix << epoch << " " << batch << std::endl;
      else
        std::cerr << "hpo-train-rank: cannot write the checkpoint\n";
    };
  auto out = tt::train_model(setup->config, setup->data, setup->options, reporter);
  if (rank != 0) {
    if (out.end != tt::TrainOutput::End::kFailed) return 0;
    std::cerr << "hpo-train-rank " << rank << ": " << out.error << "\n";
    return 4;
  }
  std::vector<std::string> names;
  if (out.end == tt::TrainOutput::End::kCompleted) {
    for (auto& [name, bytes] : tt::artifacts_of(out, setup->plan_summary)) {
      if (!write_file(out_dir / name, bytes))
        return write_result("failed", "cannot write " + (out_dir / name).string(), true,
                            out.metrics, {});
      names.push_back(name);
    }
  }
  // A failed training is retried only when a lost peer may have caused it.
  return write_result(tt::to_string(out.end), out.error, world > 1, out.metrics, names);
}

}  // namespace

int main(int argc, char** argv) {
  const bool standby = argc == 2 && std::string_view(argv[1]) == "--standby";
  if (argc != 3 && !standby) {
    std::fprintf(stderr,
                 "usage: hpo-train-rank JOB.json RANK\n"
                 "       hpo-train-rank --standby   (then \"JOB.json RANK\" on stdin)\n"
                 "One rank of a data-parallel torch trial; hpo-worker starts these.\n");
    return 2;
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) return 3;  // the worker is already gone
  // Every step allocates and frees the same activations and gradients (hundreds of KB each).
  // glibc maps such blocks afresh or trims the heap once they are freed, and the next step
  // faults the pages in again, zeroed; kept in the heap they are reused (+1-7 % of an mlp's
  // samples/s in four paired runs here). The trial's memory limit still bounds the heap.
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
  ::mallopt(M_TOP_PAD, 64 << 20);
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGUSR1, &sa, nullptr);
  std::string job_path = standby ? "" : argv[1];
  std::string rank_text = standby ? "" : argv[2];
  if (standby) {
    // Started ahead of its trial, LibTorch already loaded (~0.75 s of a trial's start):
    // the job comes as one line on stdin; EOF without one (the worker let it go) ends it.
    std::string line;
    if (!std::getline(std::cin, line)) return 0;
    const auto space = line.rfind(' ');
    if (space == std::string::npos) {
      std::fprintf(stderr, "hpo-train-rank --standby: expected \"JOB.json RANK\", got '%s'\n",
                   line.c_str());
      return 2;
    }
    job_path = line.substr(0, space);
    rank_text = line.substr(space + 1);
    std::error_code ec;
    fs::current_path(fs::path(job_path).parent_path(), ec);  // as a rank started for the job
  }
  int rank = -1;
  try {
    rank = std::stoi(rank_text);
  } catch (const std::exception&) {
    std::fprintf(stderr, "hpo-train-rank: RANK must be an integer, got '%s'\n", rank_text.c_str());
    return 2;
  }
  return run(job_path, rank);
}
