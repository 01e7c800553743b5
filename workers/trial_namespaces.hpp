// TrialNamespaces: the part of the trial sandbox (trial_sandbox.hpp) that the
// kernel's namespaces give a command trial (core/confinement.hpp): its own
// processes, /tmp, /var/tmp, /dev/shm, IPC and /dev (only its GPUs' device
// files), a loopback-only network unless its sweep asks for the host's, and
// none of the worker's files (HPO_HOME, its token, the work root but its own
// attempt, the dataset cache). A worker that is not root gets them through a
// user namespace, so its trials run as itself but see none of it.
//
// Whether the kernel allows them is tried once at start (a confined `true`):
// "auto" goes without them when it does not, and says why; "on" refuses to
// start; "off" never uses them.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/confinement.hpp"
#include "core/result.hpp"

namespace hpo::workers {

struct NamespaceOptions {
  std::string mode = "auto";        // auto, on or off (--trial-namespaces)
  std::vector<std::string> hidden;  // the worker's own paths no trial may see
};

// Keeps in `c` every absolute path a command names where its own /tmp would
// cover it: an argument, an argument's value after '=', its folder, an
// environment value, an item of a list like PYTHONPATH (a hidden path stays
// hidden: core/confinement.hpp).
void keep_named(Confinement& c, const std::vector<std::string>& argv, const std::string& cwd,
                const std::vector<std::string>& env);

class TrialNamespaces {
 public:
  TrialNamespaces() = default;
  // `root_like`: trials switch to uids of their own (no user namespace needed).
  static Result<TrialNamespaces> open(const NamespaceOptions& options, bool root_like);

  bool on() const { return on_; }
  // One phrase for the start log.
  std::string describe() const;
  // The confinement of one attempt whose folder is `work_dir`, with the
  // device files of its GPUs; nullopt when off.
  std::optional<Confinement> for_attempt(const std::string& work_dir,
                                         const std::vector<std::string>& devices) const;
  // Hides `path` too from now on (the artifact folder the scheduler announced,
  // learnt once the store is reached). Thread-safe.
  void hide(const std::string& path) const;

 private:
  bool on_ = false;
  bool user_namespace_ = false;
  bool map_all_ids_ = false;
  std::vector<std::string> hidden_;
  std::string why_off_;
  // Paths hidden since open(), shared by copies.
  struct Later {
    std::mutex mu;
    std::vector<std::string> paths;
  };
  std::shared_ptr<Later> later_ = std::make_shared<Later>();
};

}  // namespace hpo::workers
