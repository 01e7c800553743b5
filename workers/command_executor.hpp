// CommandExecutor: trial kind "command" — the user's own program.
//
// The argv template is rendered with the trial's parameters (render_argv) and
// run with execve, never through a shell, so a parameter value is one argv
// element whatever characters it holds. The program reports metrics on stdout
// as `hpo-metric {json}` lines; everything else it prints is its log.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "workers/executor.hpp"
#include "workers/metric_line.hpp"

namespace hpo::workers {

struct CommandOptions {
  // SIGTERM first; SIGKILL to the process group when it is still alive after this.
  double kill_grace_s = 5.0;
  // A program that said `hpo-checkpoint-on-stop` and is stopped to run again
  // elsewhere (a drain, a preemption) gets SIGUSR1, "checkpoint, then stop",
  // and this long to do it before SIGKILL.
  double checkpoint_grace_s = 20.0;
  // The most bytes a subfolder of HPO_OUTPUT_DIR may hold to be kept (as
  // output.<name>.tar); a larger one is left out, said in the trial's log.
  std::int64_t max_output_folder_bytes = std::int64_t{1} << 30;
  // The folder holding the `hpo` Python library (python/ of the source tree,
  // share/hpo/python installed): appended to every trial's PYTHONPATH, so a
  // trial imports it without installing anything. Empty: not added.
  std::string python_lib;
  // The environment the trial starts from ("KEY=VALUE"); empty: what
  // trial_environment() keeps of this process's environment.
  std::vector<std::string> base_env;
  // How often stop_reason() and the deadline are checked while the program is quiet.
  int poll_ms = 50;
};

class CommandExecutor : public Executor {
 public:
  explicit CommandExecutor(CommandOptions options = {});
  trials::TrialResult run(const TrialTask& task, Reporter& reporter) override;

  // The child's environment: base < PYTHONUNBUFFERED=1 < recipe env < HPO_*
  // and CUDA_VISIBLE_DEVICES; PYTHONPATH ends with options.python_lib.
  std::vector<std::string> child_env(const TrialTask& task) const;

 private:
  CommandOptions options_;
};

// The trial's seed, HPO_SEED (0 to 2^31 - 1): the same for every attempt of a
// trial and for the same spec submitted again; a member's from its member seed.
std::uint64_t trial_seed(const TrialTask& task);

// Where a command attempt writes its outputs (HPO_OUTPUT_DIR) and finds its
// bagging plan (HPO_BAGGING_FILE), inside the attempt's work directory.
std::string output_dir(const std::string& work_dir);
// ... and keeps its checkpoint (HPO_CHECKPOINT_DIR): a stdout line
// `hpo-checkpoint` says the folder is complete, and it is stored as artifact
// "checkpoint" (workers/checkpoint_dir.hpp); the next attempt finds it there.
std::string checkpoint_dir(const std::string& work_dir);
std::string bagging_file(const std::string& work_dir);
// A trial user's TMPDIR, inside its attempt directory.
std::string tmp_dir(const std::string& work_dir);

// The folder of the `hpo` Python library: python/ beside the binary's build
// tree or share/hpo/python under its install prefix; empty when neither is there.
std::string find_python_lib();

// The environment of this process as "KEY=VALUE" strings.
std::vector<std::string> current_environment();

// What a trial program may inherit from the worker's environment: a
// documented allowlist (PATH, HOME, USER, LANG/LC_*, TZ, TMPDIR, the
// interpreters' and toolkits' own variables: PYTHON*, VIRTUAL_ENV, CONDA_*,
// LD_LIBRARY_PATH, CUDA_*, NVIDIA_*, NCCL_*, OMP_*, MKL_*, OPENBLAS_*), never
// the worker's own settings (HPO_*: the Redis URL with its password, tokens)
// nor anything else it happens to have. Trials set their own with trial.env.
std::vector<std::string> trial_environment(const std::vector<std::string>& worker_env);

// The value for a child's CUDA_VISIBLE_DEVICES given the slot GPUs (ordinals as
// this process sees them) and this process's own CUDA_VISIBLE_DEVICES (may be
// empty): ordinal i maps to the i-th entry of the parent's list, so a worker
// started with CUDA_VISIBLE_DEVICES=2,3 hands GPU "3" to its second slot.
// `ids[i]`, when given and not empty, names gpus[i] instead (a MIG instance's UUID).
std::string child_visible_devices(const std::vector<int>& gpus, const std::string& parent_visible,
                                  const std::vector<std::string>& ids = {});

}  // namespace hpo::workers
