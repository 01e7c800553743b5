// ChildProcess: one external program run with fork + execve, in its own
// process group, with its stdout and stderr read through pipes (or left to the
// parent's, or to /dev/null). The one way hpo starts another program: trials
// and their ranks, the embedded redis-server, `hpo predict`'s predictor.
//
// Everything the child needs (argv, envp, the resolved program path) is built
// before fork(), so the child only calls async-signal-safe functions (setpgid,
// dup2, chdir, execve, _exit): fork() in a multi-threaded worker may have
// copied a locked malloc arena, and anything more would risk a deadlock.
// The child becomes leader of a new process group, so stop() reaches the
// program's own children too (a shell script's subprocesses, a data loader).
//
// No shell is ever involved: argv[0] without a slash is looked up in PATH here,
// in the parent. The object never leaves a zombie: the destructor kills the
// group and reaps the leader if the caller did not wait for it.
//
// Nothing of the worker is inherited: every descriptor above 2 is closed in
// the child before execve, whatever the libraries opened without
// close-on-exec (a Redis socket, a log file). A trial may also be started as
// another user (SpawnOptions::identity: no supplementary groups, no
// capabilities, no new privileges) and inside cgroups (SpawnOptions::cgroup_procs,
// joined before anything else runs, so no process of the trial is ever outside)
// and in namespaces of its own (SpawnOptions::confinement: its own processes,
// /tmp, /dev, IPC and network; core/confinement.hpp).
#pragma once

#include <sys/types.h>

#include <csignal>

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/confinement.hpp"
#include "core/result.hpp"

namespace hpo {

// Who a child runs as when it must not be its parent (workers/trial_sandbox.hpp: a trial).
struct Identity {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string user;  // for messages and USER/LOGNAME: the trial user's name
};

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0]: a path, or a name looked up in PATH
  std::vector<std::string> env;   // "KEY=VALUE" entries: the child's whole environment
  std::string cwd;                // empty: the parent's
  // >0: the child's data limit (RLIMIT_DATA: heap and private writable
  // mappings, not the address space that libraries and drivers merely
  // reserve), so one trial that exhausts memory fails alone (its allocation
  // fails) instead of taking the host and its co-running trials with it.
  std::int64_t memory_limit_bytes = 0;
  // The child's stdin is a pipe the parent writes once (write_stdin); else /dev/null.
  bool stdin_pipe = false;
  // Set: the child switches to this uid and gid (groups reset to gid alone,
  // every capability and the ambient set dropped, PR_SET_NO_NEW_PRIVS) before
  // it enters cwd and runs the program. Needs root or CAP_SETUID + CAP_SETGID.
  std::optional<Identity> identity;
  // cgroup.procs files the child writes itself into first (a trial's cgroups).
  std::vector<std::string> cgroup_procs;
  // Set: the program runs in namespaces of its own (core/confinement.hpp);
  // pid() is then its outer process, which ends as the program does.
  std::optional<Confinement> confinement;
  // Where the child's stdout and stderr go: pipes the parent reads with
  // poll() (a trial's metric lines), the parent's own (a program the user
  // watches: `hpo predict`), or /dev/null (a server that logs to its own
  // file: the embedded redis-server).
  enum class Output { kPipes, kInherit, kNull };
  Output output = Output::kPipes;
  // Sent to the child when its parent dies (PR_SET_PDEATHSIG): a trial is
  // killed with its worker; a server gets the chance to end cleanly.
  int death_signal = SIGKILL;
};

// Which pipe a chunk of output came from.
enum class Stream { kStdout, kStderr };

// resources.memory_gb as an RLIMIT_DATA value (0: none).
std::int64_t memory_limit_bytes(double memory_gb);
// describe_wait_status, plus the memory limit when a signal ended a limited
// process (the OOM killer's SIGKILL, an abort on a failed allocation).
std::string describe_exit(int wait_status, double memory_gb);

class ChildProcess {
 public:
  // A complete line of output (without the newline). Lines longer than
  // kMaxLine are cut into kMaxLine pieces so a runaway program cannot make the
  // worker buffer without bound.
  using LineSink = std::function<void(Stream, std::string_view)>;
  static constexpr std::size_t kMaxLine = 64 * 1024;

  // Starts the program. Errors: the program was not found or is not
  // executable (checked before fork), pipe/fork failure.
  static Result<ChildProcess> spawn(const SpawnOptions& options);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ChildProcess(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }

  // Waits up to timeout_ms for output, hands complete lines to `sink`, and
  // checks whether the program ended. Returns true once the program has exited
  // and both pipes are drained (then exit_status() is set).
  bool poll(int timeout_ms, const LineSink& sink);

  // Sends `sig` to the whole process group (no-op after the program ended).
  void signal_group(int sig);

  // For the next `ms`, a leader that exits does not end its group at once:
  // the rest may go on while it holds the pipes (a wrapper killed by a
  // signal the program under it handles, saving a checkpoint). Then, or
  // once the pipes close, the group is killed.
  void linger_for(long ms);

  // With SpawnOptions::stdin_pipe: writes `bytes` to the child's stdin and
  // closes it (the child then reads EOF). kUnavailable when the child has
  // gone (EPIPE) or it was already written.
  Status write_stdin(std::string_view bytes);

  // The child's RLIMIT_DATA from now on (prlimit), for a process started
  // before its job was known; 0: no change.
  Status limit_memory(std::int64_t bytes);

  // The wait status (as from waitpid) once poll() returned true.
  std::optional<int> exit_status() const { return status_; }

  // Whether `pid` is the leader of a live ChildProcess of this process (its
  // zombie included, until reaped): what an orphan reaper must leave alone.
  static bool is_ours(pid_t pid);

 private:
  ChildProcess() = default;
  void read_pipe(int index, const LineSink& sink);
  void flush_partial(const LineSink& sink);
  void close_pipes();
  bool leader_exited();
  void reap();

  pid_t pid_ = -1;
  int fds_[2] = {-1, -1};         // stdout, stderr read ends (-1 once at EOF)
  int stdin_fd_ = -1;             // stdin's write end (stdin_pipe), until written
  int life_fd_ = -1;              // confined: the pipe whose end ends its init
  std::string partial_[2];        // bytes after the last newline, per pipe
  std::optional<int> status_;     // set once the leader was reaped
  long drain_deadline_ms_ = -1;   // after the leader exited: stop waiting for EOF at this time
  long linger_deadline_ms_ = -1;  // linger_for()
};

// The last `capacity` bytes of a stream of lines (a child's stderr, for the
// failure message), cut at a line start when possible, trailing newlines removed.
class TailBuffer {
 public:
  explicit TailBuffer(std::size_t capacity) : capacity_(capacity) {}
  void add(std::string_view line);
  std::string tail() const;
  std::string last_line() const;  // the tail's last line

 private:
  std::size_t capacity_;
  std::string text_;
};

// argv[0] resolved against PATH (as execvp would, but in the parent);
// kNotFound when nothing executable matches.
Result<std::string> find_program(const std::string& name, const std::string& path_env);

// "exited with status 3", "killed by signal 9 (Killed)".
std::string describe_wait_status(int status);

}  // namespace hpo
