// TrialSandbox: what keeps a trial program (untrusted code) away from the
// worker, the host and the other trials. One per worker process.
//
//  - Identity. A worker that may switch users (root, or CAP_SETUID and
//    CAP_SETGID) runs each slot's trials under a uid of their own from
//    --trial-uids (claimed per slot with a lock file under --trial-uid-locks,
//    so two workers on one host never share one) and the group of
//    --trial-user. A trial can then read none of the worker's files (HPO_HOME,
//    the token, scheduler.json, the Redis configuration), cannot read or
//    signal another slot's trial, and finds its own attempt directory (0700,
//    its uid) and whatever the world or its group may read. A worker that
//    cannot switch says so once at start.
//  - Containment. Each trial runs in a cgroup of its own: cgroup v2 where this
//    worker's cgroup is delegated to it (systemd Delegate=yes), else the v1
//    memory and pids hierarchies where a root worker can write them.
//    resources.memory_gb is the limit of all the trial's processes together,
//    --trial-pids-max bounds its processes and threads, and the end of the
//    trial kills every process in it, setsid() escapees included. Without a
//    cgroup the worker is a child subreaper: a trial's orphans are reparented
//    to it, and are killed and reaped when a trial ends (and periodically, as
//    when the worker is PID 1 in a container).
//  - Namespaces (trial_namespaces.hpp): each command trial's own processes,
//    /tmp, /dev/shm, IPC, devices and network, and none of the worker's files;
//    a worker that is not root gets them through a user namespace.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/child_process.hpp"
#include "core/result.hpp"
#include "workers/trial_namespaces.hpp"

namespace hpo::workers {

// Where attempt directories go when trials run as trial users and no
// --work-dir is given (+ the worker's name): $HPO_HOME is private to the worker.
inline const std::string kSharedWorkRoot = "/var/lib/hpo/work/";

struct SandboxOptions {
  // The account whose group trials run with; "none": trials run as the
  // worker (warned at start).
  std::string trial_user = "hpo-trial";
  // The uids trials run as, one per slot (no account needs to exist for them;
  // one that does is refused).
  uid_t first_uid = 400000;
  uid_t last_uid = 400999;
  std::string uid_lock_dir = "/run/hpo/trial-uids";
  // "auto": cgroups where they can be had; "none": the subreaper only.
  std::string cgroups = "auto";
  std::int64_t pids_max = 4096;  // per trial, processes and threads together
  std::string worker_name;       // names the worker's cgroup
  int slots = 1;
  NamespaceOptions namespaces;
};

// One trial's processes: its cgroups (cgroup mode) or the worker's orphans
// (subreaper mode). Destroying it ends every process still in it.
class TrialBox {
 public:
  virtual ~TrialBox() = default;
  // cgroup.procs files a process joins to be in the box (SpawnOptions::cgroup_procs).
  virtual const std::vector<std::string>& procs_files() const = 0;
  // Moves an already running process (a standby rank) into the box.
  virtual Status adopt(pid_t pid) = 0;
  // Kills every process of the trial and waits (bounded) until none is left.
  virtual void end_all() = 0;
  // Non-empty when the kernel killed processes of the trial for memory.
  virtual std::string memory_note() const = 0;
};

class TrialSandbox {
 public:
  static Result<std::unique_ptr<TrialSandbox>> open(const SandboxOptions& options);
  ~TrialSandbox();
  TrialSandbox(const TrialSandbox&) = delete;
  TrialSandbox& operator=(const TrialSandbox&) = delete;

  // Whom slot `slot`'s trials run as; nullopt: the worker itself.
  std::optional<Identity> identity(int slot) const;
  // A box for one attempt, named `name` (unique among the worker's running
  // attempts), its memory limit in bytes (0: none).
  Result<std::unique_ptr<TrialBox>> enter(const std::string& name, std::int64_t memory_bytes);
  // Gives a prepared attempt directory (and everything in it) to `identity`,
  // mode 0700: no other trial can read it. No-op without an identity.
  static Status hand_over(const std::string& dir, const std::optional<Identity>& identity);
  // Creates the work root (mode 0711: trials reach their own attempt
  // directory, list nobody's) and checks that `identity` may pass every folder
  // above it; kInvalidArgument names the folder that stops it.
  static Status prepare_work_root(const std::string& root, const Identity& identity);
  // Whether `identity` may run `program`: every folder above it passable, the
  // file readable and executable (by others, or by its group). kUnavailable
  // names what stops it.
  static Status can_run(const std::string& program, const Identity& identity);
  // Reaps processes that were reparented to this one (subreaper or PID 1) and
  // are not the leader of one of its ChildProcesses; `kill_live`: kills the
  // live ones first (a trial's end), else only zombies. Returns how many.
  int reap_orphans(bool kill_live = true);
  // Whether reap_orphans() has any work (subreaper mode, or PID 1).
  bool reaps() const { return subreaper_; }
  // One line for the start log: who trials run as, how they are contained.
  std::string describe() const;
  // Whether memory limits hold all of a trial's processes together.
  bool cgroups() const { return !cgroup_dirs_.empty(); }
  const TrialNamespaces& namespaces() const { return namespaces_; }

 private:
  TrialSandbox() = default;
  Status claim_uids(const SandboxOptions& options, gid_t gid);
  Status open_cgroups(const SandboxOptions& options);

  std::vector<Identity> identities_;  // one per slot; empty: no switch
  std::vector<int> uid_locks_;        // the lock files' descriptors, held for life
  std::string cgroup_version_;        // "v2", "v1" or empty
  // The worker's own trial parent cgroup per hierarchy (v2: one; v1: memory, pids).
  std::vector<std::string> cgroup_dirs_;
  std::int64_t pids_max_ = 4096;
  bool subreaper_ = false;
  TrialNamespaces namespaces_;
  std::string why_no_switch_;
  std::string why_no_cgroup_;
};

}  // namespace hpo::workers
