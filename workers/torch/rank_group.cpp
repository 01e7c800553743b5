// Starting torch rank processes: an attempt's RankGroup, the files its ranks
// read, and the pool of processes started ahead (StandbyRanks). Supervising
// them is the executor's (torch_executor.cpp); here is only how they come to
// be, which a trial's attempt and a gang follower's share have in common.
#include "workers/torch/rank_group.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>

#include <fmt/format.h>

#include "core/log.hpp"
#include "workers/trial_sandbox.hpp"

namespace hpo::workers {
namespace torch_exec {

Result<bool> write_resume_file(tt::RankJob& job, const fs::path& dir,
                               const std::function<Result<bool>(ByteSink&)>& read,
                               bool& disk_failed) {
  const fs::path path = dir / "resume.pt";
  disk_failed = false;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    disk_failed = true;
    return Error::internal("cannot write " + path.string() + ": " + std::strerror(errno));
  }
  // The file's own failures, told from the store's.
  struct Watched final : ByteSink {
    Watched(int fd, const std::string& what) : file(fd, what) {}
    Status write(std::string_view b) override {
      auto st = file.write(b);
      failed = failed || !st;
      return st;
    }
    FdSink file;
    bool failed = false;
  } out(fd, path.string());
  auto got = read(out);
  const bool closed = ::close(fd) == 0;
  if (!got || !*got || !closed) {
    ::unlink(path.c_str());
    disk_failed = out.failed || !closed;
    if (got && *got) return Error::internal("cannot write " + path.string());
    return got;
  }
  job.resume = path.string();
  return true;
}

Status hand_over_ranks(const std::string& work_dir, const fs::path& ranks_dir,
                       const std::optional<Identity>& who) {
  return TrialSandbox::hand_over(work_dir.empty() ? ranks_dir.string() : work_dir, who);
}

std::int64_t rank_memory_limit(const TrialBox* box, const std::vector<int>& gpus,
                               double memory_gb_per_rank) {
  if ((box && !box->procs_files().empty()) || !gpus.empty()) return 0;
  return memory_limit_bytes(memory_gb_per_rank);
}

std::optional<int> RankGroup::spawn(int i, const fs::path& job_file) {
  SpawnOptions o{{program_, job_file.string(), std::to_string(first_ + i)}, env_, dir_.string()};
  o.memory_limit_bytes = memory_limit_;
  if (box_) o.cgroup_procs = box_->procs_files();
  o.identity = who_;
  auto child = ChildProcess::spawn(o);
  if (!child) {
    fail(fmt::format("data-parallel rank {} of {}: {}", first_ + i, world_, child.error().message));
    return std::nullopt;
  }
  const int pid = child->pid();
  ranks_[static_cast<std::size_t>(i)].process.emplace(std::move(child).value());
  return pid;
}

void RankGroup::signal_all(int sig) {
  for (auto& r : ranks_)
    if (r.process && !r.done) r.process->signal_group(sig);
}

void RankGroup::fail(std::string why) {
  if (!failure) failure = std::move(why);
  kill_all();
}

int RankGroup::alive() const {
  int n = 0;
  for (const auto& r : ranks_) n += r.process && !r.done;
  return n;
}

Status make_attempt_dir(const fs::path& dir) {
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  if (ec)
    return Error::unavailable(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  return Status{};
}

Status write_job(const tt::RankJob& job, const fs::path& file) {
  std::ofstream f(file);
  f << tt::encode_rank_job(job);
  if (!f) return Error::unavailable("cannot write " + file.string());
  return Status{};
}

tt::RankJob base_job(const trials::SweepSpec& spec, const trials::Trial& trial, int world,
                     int threads, std::vector<int> gpus, const fs::path& dir,
                     const TorchExecutorOptions& options, const tt::DatasetCache& cache,
                     const std::optional<Identity>& who) {
  tt::RankJob job;
  job.spec = spec.source;
  job.trial = trial;
  job.world = world;
  job.threads = threads;
  job.gpus = std::move(gpus);
  job.out = dir.string();
  job.timeout_ms = options.rank_timeout.count();
  job.data_roots = options.data_roots;
  // The host's dataset cache is the worker's: ranks of a trial user neither
  // read nor write it (a table another tenant's trial wrote would be trusted).
  if (!who) job.dataset_cache = cache.disk_dir();
  return job;
}

}  // namespace torch_exec

namespace {
namespace fs = std::filesystem;

std::int64_t uid_of(const std::optional<Identity>& who) {
  return who ? static_cast<std::int64_t>(who->uid) : -1;
}
}  // namespace

std::optional<ChildProcess> StandbyRanks::take(const std::optional<Identity>& who) {
  std::lock_guard lock(mu_);
  for (auto it = ready_.begin(); it != ready_.end();) {
    if (it->uid != uid_of(who)) {
      ++it;
      continue;
    }
    ChildProcess p = std::move(it->process);
    it = ready_.erase(it);
    // One that has exited (killed meanwhile) is dropped; a waiting one writes nothing.
    if (!p.poll(0, [](Stream, std::string_view) {})) return p;
  }
  return std::nullopt;
}

void StandbyRanks::refill(const std::string& program, const std::vector<std::string>& env,
                          const std::optional<Identity>& who) {
  std::lock_guard lock(mu_);
  const std::size_t want = who ? 1 : size_;
  auto mine = [&] {
    return static_cast<std::size_t>(std::count_if(
        ready_.begin(), ready_.end(), [&](const Waiting& w) { return w.uid == uid_of(who); }));
  };
  // A trial user's replaces the oldest of another user's when the pool is full.
  while (mine() < want) {
    if (ready_.size() >= size_) {
      auto other = std::find_if(ready_.begin(), ready_.end(),
                                [&](const Waiting& w) { return w.uid != uid_of(who); });
      if (other == ready_.end()) return;
      ready_.erase(other);
    }
    SpawnOptions o{{program, "--standby"}, env, fs::temp_directory_path().string()};
    o.stdin_pipe = true;
    o.identity = who;
    auto child = ChildProcess::spawn(o);
    if (!child) {
      log_warn("torch: cannot start a standby training process",
               {{"error", child.error().message}});
      return;
    }
    ready_.push_back({std::move(child).value(), uid_of(who)});
  }
}

std::size_t StandbyRanks::ready() {
  std::lock_guard lock(mu_);
  return ready_.size();
}

}  // namespace hpo::workers
