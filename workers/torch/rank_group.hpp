// The rank processes of one torch attempt and the files they start from:
// the attempt directory, the job every rank reads, the checkpoint they resume
// from. Internal to the torch executor: TorchExecutor::run_parallel (a
// trial's ranks) and run_ranks (a gang follower's share) drive the same group,
// so a rank that dies is noticed, and its peers killed, the same way in both.
#pragma once

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/byte_stream.hpp"
#include "core/child_process.hpp"
#include "core/result.hpp"
#include "trials/spec/spec.hpp"
#include "trials/trial.hpp"
#include "workers/executor.hpp"
#include "workers/torch/dataset.hpp"
#include "workers/torch/rank_job.hpp"
#include "workers/torch/torch_executor.hpp"

// The torch executor's internals, shared between its .cpp files.
namespace hpo::workers::torch_exec {

namespace tt = torch_trainer;
namespace fs = std::filesystem;

inline constexpr std::size_t kStderrTail = 1024;

// The stored checkpoint streamed into dir/resume.pt for the ranks (false:
// there is none); a part written before an error is removed. `disk_failed`
// tells this host's disk failing (the attempt cannot go on: retried) from
// the store's answer failing (the attempt may start afresh).
Result<bool> write_resume_file(tt::RankJob& job, const fs::path& dir,
                               const std::function<Result<bool>(ByteSink&)>& read,
                               bool& disk_failed);

struct RankState {
  std::optional<ChildProcess> process;
  bool done = false;
  TailBuffer stderr_tail{kStderrTail};
};

// The ranks' folder (with the job files the worker wrote) becomes the trial
// user's: the attempt's work directory, or the ranks' own folder without one.
Status hand_over_ranks(const std::string& work_dir, const fs::path& ranks_dir,
                       const std::optional<Identity>& who);

// RLIMIT_DATA of one rank: none where a cgroup holds the attempt (its box) or
// on GPU slots (the CUDA driver maps device memory into the process).
std::int64_t rank_memory_limit(const TrialBox* box, const std::vector<int>& gpus,
                               double memory_gb_per_rank);

// The rank processes this worker runs for one attempt (all of a trial's
// ranks, or a gang's share of them: global ranks first .. first + count - 1
// of world), started from job files, polled in turn and killed together.
// The first rank that exits uncleanly while they are not being stopped is
// the failure; its peers are killed at once (they would only wait for it).
class RankGroup {
 public:
  RankGroup(std::string program, std::vector<std::string> env, fs::path dir,
            std::int64_t memory_limit, int first, int count, int world, double memory_gb_per_rank,
            const TrialBox* box, std::optional<Identity> who)
      : program_(std::move(program)),
        box_(box),
        who_(std::move(who)),
        env_(std::move(env)),
        dir_(std::move(dir)),
        memory_limit_(memory_limit),
        first_(first),
        world_(world),
        memory_gb_per_rank_(memory_gb_per_rank),
        ranks_(static_cast<std::size_t>(std::max(1, count))) {}

  // Starts local rank i on `job_file`: its pid, or nullopt with the failure set.
  std::optional<int> spawn(int i, const fs::path& job_file);
  // A process started ahead (a standby) becomes local rank i.
  void adopt(int i, ChildProcess p) {
    ranks_[static_cast<std::size_t>(i)].process.emplace(std::move(p));
  }

  void signal_all(int sig);
  void kill_all() { signal_all(SIGKILL); }
  // Records the attempt's failure (the first one counts) and kills the ranks.
  void fail(std::string why);
  int alive() const;

  // One round over the live ranks, each polled for its share of poll_ms: the
  // stdout lines go to on_line(i, line), and after(i, exited) follows each poll.
  template <typename OnLine, typename After>
  void poll_round(int poll_ms, bool stopping, OnLine&& on_line, After&& after) {
    const int wait_ms = std::max(1, poll_ms / std::max(1, alive()));
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
      auto& rank = ranks_[i];
      if (!rank.process || rank.done) continue;
      rank.done = rank.process->poll(wait_ms, [&](Stream s, std::string_view line) {
        if (s == Stream::kStderr) return rank.stderr_tail.add(line);
        on_line(static_cast<int>(i), line);
      });
      if (rank.done) {
        const int status = rank.process->exit_status().value_or(0);
        if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) && !failure && !stopping) {
          std::string why = world_ == 1 ? fmt::format("the training process {}",
                                                      describe_exit(status, memory_gb_per_rank_))
                                        : fmt::format("data-parallel rank {} of {} {}",
                                                      first_ + static_cast<int>(i), world_,
                                                      describe_exit(status, memory_gb_per_rank_));
          if (auto last = rank.stderr_tail.last_line(); !last.empty()) why += ": " + last;
          fail(std::move(why));
        }
      }
      after(static_cast<int>(i), rank.done);
    }
  }

  std::optional<std::string> failure;

 private:
  std::string program_;
  const TrialBox* box_;          // the attempt's cgroups the ranks join (null: none)
  std::optional<Identity> who_;  // whom the ranks run as (nullopt: this process)
  std::vector<std::string> env_;
  fs::path dir_;
  std::int64_t memory_limit_;
  int first_, world_;
  double memory_gb_per_rank_;
  std::vector<RankState> ranks_;
};

// A fresh attempt directory `base`/`name`, removed with its contents when the
// guard goes.
struct AttemptDir {
  fs::path path;
  AttemptDir(const AttemptDir&) = delete;
  AttemptDir& operator=(const AttemptDir&) = delete;
  explicit AttemptDir(fs::path p) : path(std::move(p)) {}
  ~AttemptDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

Status make_attempt_dir(const fs::path& dir);

Status write_job(const tt::RankJob& job, const fs::path& file);

// What every rank's job holds; the caller adds the store, its address, the
// first rank and the resume point.
tt::RankJob base_job(const trials::SweepSpec& spec, const trials::Trial& trial, int world,
                     int threads, std::vector<int> gpus, const fs::path& dir,
                     const TorchExecutorOptions& options, const tt::DatasetCache& cache,
                     const std::optional<Identity>& who);

}  // namespace hpo::workers::torch_exec
