// Confinement: the Linux namespaces a child program runs in when it must see
// nothing of its host but what it was given (a trial: workers/trial_sandbox.hpp).
// The kernel interfaces directly (unshare, mount, pivot-free bind mounts), not
// bubblewrap: the worker already forks every trial itself with everything
// built before the fork (child_process.hpp), and a second program in between
// would add a dependency, an exec per attempt and a second place where the
// same rules are written.
//
// A confined child is three processes:
//
//   outer  the worker's child and the leader of the process group the worker
//          signals. It joins the cgroups, enters new mount, IPC, PID (and
//          network, and, for a worker that is not root, user) namespaces,
//          starts `init`, and exits as the program exited (its status or its
//          signal) once init tells it, so the worker sees the program's end.
//   init   PID 1 of the new PID namespace: it builds the file-system view
//          below, starts the program and reaps whatever is reparented to it.
//          It ends when the worker's end of a pipe closes (the worker reaped
//          the attempt, or died): the kernel then kills every process left in
//          the namespace, daemons and setsid() escapees included.
//   program  the trial (as its identity, when the worker switches users).
//
// What the program sees:
//   - its own processes only (a fresh /proc), its own System V and POSIX IPC;
//   - /tmp and /var/tmp: its attempt's own folder (or an empty tmpfs);
//     /dev/shm: an empty tmpfs; every one of them gone with the attempt;
//   - /dev: null, zero, full, random, urandom, tty, a private pts, and only
//     the extra device files it was given (its GPUs' and the driver's control
//     nodes; every other GPU of the host does not exist there);
//   - the hidden paths covered (a folder by an empty tmpfs, a file by
//     /dev/null): the worker's home, its credential files, other attempts'
//     folders;
//   - its own folder (the attempt's), even beneath a hidden one, and the kept
//     paths (the program and folders its command names under /tmp): a folder
//     as itself, a file by its folder; a kept path never shows a hidden one
//     (a folder holding one shows it covered);
//   - the network: loopback only, unless the host's network is asked for.
//
// Both outer and init are copies of the worker's memory: they make themselves
// non-dumpable, so the program cannot read them with ptrace or /proc/PID/mem.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace hpo {

struct Confinement {
  // A user namespace that maps this process's uid and gid to themselves: how
  // a worker that is not root gets the other namespaces.
  bool user_namespace = false;
  // With user_namespace: map every uid and gid to itself instead (written by
  // a helper left in this namespace, which needs CAP_SETUID and CAP_SETGID
  // here), so the program may still switch to a uid of its own: a worker
  // that is not root but holds those capabilities (the systemd unit).
  bool map_all_ids = false;
  bool host_network = false;         // false: a network namespace with loopback only
  std::string tmp_dir;               // bound over /tmp and /var/tmp; empty: a fresh tmpfs
  std::vector<std::string> hidden;   // absolute paths covered (see above)
  std::string own_dir;               // its own folder, seen wherever it is
  std::vector<std::string> kept;     // absolute paths under /tmp or /var/tmp still seen
  std::vector<std::string> devices;  // extra files or folders under /dev that stay (if present)
};

// Everything the confined child touches, built before fork() (see
// child_process.hpp): only async-signal-safe calls happen after it.
class ConfinementPlan {
 public:
  explicit ConfinementPlan(const Confinement& c);
  ConfinementPlan(const ConfinementPlan&) = delete;
  ConfinementPlan& operator=(const ConfinementPlan&) = delete;

  // In the forked child (the outer process): returns only in the program's
  // process, with the namespaces entered and the view built; 0 then. A
  // failure returns its step (a Step) with errno set.
  int enter(int errpipe, int life_fd) const;

  // Steps of enter(), for the parent's message.
  enum Step : int { kUnshare = 1, kIdMap, kFork, kPrivate, kHide, kKeep, kTmp, kDev, kProc, kNet };
  static const char* describe(int step);

 private:
  int build_view() const;
  int build_dev() const;
  int map_all_ids() const;
  [[noreturn]] void run_init(pid_t program, int errpipe, int life_fd, int status_fd) const;
  [[noreturn]] void run_outer(int status_fd) const;

  int flags_ = 0;
  bool user_ = false;
  bool map_all_ = false;
  bool network_ = false;
  std::string uid_map_, gid_map_;
  std::string tmp_dir_;
  std::vector<std::string> hidden_;
  std::vector<bool> hidden_dir_;  // per hidden path: a folder (else a file)
  std::vector<std::string> kept_;
  std::vector<std::vector<std::string>> kept_chain_;  // folders to make, per kept path
  std::vector<std::string> dev_nodes_;                // /dev entries bound back, existing only
  std::vector<bool> dev_dir_;                         // per entry: a folder (else a file)
};

}  // namespace hpo
