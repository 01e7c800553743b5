// How a child is started and ended (see the header for the why):
//
//  - three pipes, all O_CLOEXEC: stdout, stderr, and an "exec error" pipe. The
//    child writes errno to the error pipe when chdir/execve fails; a successful
//    execve closes it, so the parent reads 0 bytes and knows the program runs.
//  - the child resets its signal mask and the dispositions the worker may have
//    changed (SIGPIPE ignored, SIGTERM/SIGINT blocked for sigwait), otherwise
//    the trial would inherit them and SIGTERM would never reach it.
//  - PR_SET_PDEATHSIG: if the worker is killed (kill -9), the kernel kills the
//    trial's leader, so a dead worker's trial does not run on unseen. (It is
//    tied to the forking thread: slot threads outlive their children.)
//  - in the child, in this order: join the cgroups, limits, signals, the three
//    standard descriptors, close every other one, become the trial user, then
//    PR_SET_PDEATHSIG (a change of credentials clears it), chdir, execve.
//  - when the leader exits, the rest of its group gets SIGKILL before the
//    leader is reaped: a zombie leader keeps its pid (= the group id) from
//    being reused, so the signal cannot hit an unrelated process group.
#include "core/child_process.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include <fmt/format.h>

namespace hpo {
namespace {

long now_ms() {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count());
}

// How long to wait for EOF on the pipes after the leader exited (a process
// that escaped the group with setsid may hold them open forever).
constexpr long kDrainMs = 1000;

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// What the child does, built before fork(): it may touch nothing else.
struct ChildPlan {
  const char* path;
  char* const* argv;
  char* const* envp;
  const char* cwd;
  int in_fd, out_fd, err_fd, errpipe;
  pid_t parent;
  std::int64_t memory_limit;
  int death_signal;
  const Identity* identity;               // null: stay the worker
  const std::vector<const char*>* procs;  // cgroup.procs files to join
  const ConfinementPlan* confine;         // null: the worker's namespaces
  int life_fd;                            // confined: init's end of the worker's pipe
};

// Where the child failed, sent with errno through the error pipe.
enum Stage : int { kCgroup = 1, kLimit, kRedirect, kIdentity, kChdir, kExec, kConfine };

// `step`: where a confinement failed (ConfinementPlan::Step).
[[noreturn]] void child_fail(int errpipe, Stage stage, int step = 0) {
  int msg[3] = {stage, errno, step};
  (void)!::write(errpipe, msg, sizeof msg);
  ::_exit(127);
}

// Every descriptor above 2 except the error pipe and init's pipe (both
// close-on-exec): whatever a library left open without O_CLOEXEC (hiredis
// sockets) ends here.
void close_inherited(int keep, int keep_too) {
  auto close_from_to = [](unsigned lo, unsigned hi) {
    if (lo > hi) return;
    if (::close_range(lo, hi, 0) == 0) return;
    for (unsigned fd = lo; fd <= hi && fd < 65536; ++fd) ::close(static_cast<int>(fd));
  };
  const unsigned a = static_cast<unsigned>(keep_too < 0 ? keep : std::min(keep, keep_too));
  const unsigned b = static_cast<unsigned>(std::max(keep, keep_too));
  close_from_to(3, a - 1);
  if (b > a) close_from_to(a + 1, b - 1);
  close_from_to(b + 1, ~0U);
}

// A confined program that keeps its worker's user: no capability (those of
// its user namespace included) and none to gain.
bool drop_capabilities() {
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capset, &header, data) != 0) return false;
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0;
}

// The trial user: groups, gids, uids (raw system calls: they act on this,
// the only thread of the child, with no libc bookkeeping), then no
// capability is left (a worker that is not root keeps CAP_SETUID in its
// ambient set, which setresuid between two non-zero uids would carry over)
// and no execve may gain any (a setuid binary like sudo).
bool become(const Identity& id) {
  const gid_t groups[1] = {id.gid};
  if (::syscall(SYS_setgroups, 1, groups) != 0) return false;
  if (::syscall(SYS_setresgid, id.gid, id.gid, id.gid) != 0) return false;
  if (::syscall(SYS_setresuid, id.uid, id.uid, id.uid) != 0) return false;
  return drop_capabilities();
}

// Only async-signal-safe calls from here on: we are in a forked copy of a
// multi-threaded process.
void join_cgroups(const ChildPlan& p) {
  for (const char* file : *p.procs) {
    int fd = ::open(file, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::write(fd, "0", 1) != 1) child_fail(p.errpipe, kCgroup);
    ::close(fd);
  }
}

[[noreturn]] void exec_child(const ChildPlan& p) {
  ::setpgid(0, 0);
  // Into the trial's cgroups first: every process it starts is born inside.
  // Confined, the program's own process joins them: the outer process and
  // init are copies of the worker's memory, and the kernel's OOM killer must
  // not take them for the trial's largest processes.
  if (!p.confine) join_cgroups(p);
  if (p.memory_limit > 0) {
    rlimit lim{static_cast<rlim_t>(p.memory_limit), static_cast<rlim_t>(p.memory_limit)};
    if (::setrlimit(RLIMIT_DATA, &lim) != 0) child_fail(p.errpipe, kLimit);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD})
    ::sigaction(sig, &dfl, nullptr);
  if (::dup2(p.in_fd, 0) < 0 || ::dup2(p.out_fd, 1) < 0 || ::dup2(p.err_fd, 2) < 0)
    child_fail(p.errpipe, kRedirect);
  close_inherited(p.errpipe, p.life_fd);
  if (p.confine) {
    // The outer process dies with the worker; init ends with the worker's pipe.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != p.parent) ::_exit(127);
    if (int step = p.confine->enter(p.errpipe, p.life_fd)) child_fail(p.errpipe, kConfine, step);
  }
  // The program's own process from here on (under init, when confined).
  if (p.confine) join_cgroups(p);
  if (p.identity && !become(*p.identity)) child_fail(p.errpipe, kIdentity);
  if (!p.identity && p.confine && !drop_capabilities()) child_fail(p.errpipe, kIdentity);
  // After the identity: a change of credentials clears the parent-death signal.
  // A worker killed with SIGKILL cannot stop its trials: let the kernel do it.
  ::prctl(PR_SET_PDEATHSIG, p.death_signal);
  if (!p.confine && ::getppid() != p.parent) ::_exit(127);  // the worker died before prctl
  if (p.cwd && ::chdir(p.cwd) != 0) child_fail(p.errpipe, kChdir);
  ::execve(p.path, p.argv, p.envp);
  child_fail(p.errpipe, kExec);
}

// The parent's words for a child that could not start.
std::string start_failure(const SpawnOptions& o, int stage, int err, int step) {
  const std::string why = ::strerrordesc_np(err);
  const std::string as =
      o.identity ? fmt::format(" as uid {} ({})", o.identity->uid, o.identity->user) : "";
  switch (stage) {
    case kCgroup:
      return fmt::format("cannot put '{}' into its cgroup: {}", o.argv[0], why);
    case kLimit:
      return fmt::format("cannot set the memory limit of '{}': {}", o.argv[0], why);
    case kIdentity:
      if (!o.identity)
        return fmt::format("cannot drop the capabilities of '{}': {}", o.argv[0], why);
      return fmt::format("cannot switch to uid {} for '{}': {}", o.identity->uid, o.argv[0], why);
    case kConfine:
      return fmt::format("cannot confine '{}' ({}): {}", o.argv[0], ConfinementPlan::describe(step),
                         why);
    case kChdir:
      return fmt::format("cannot enter the folder '{}'{}: {}{}", o.cwd, as, why,
                         o.identity && err == EACCES
                             ? "; trials run as the trial user: it needs x on every folder above"
                             : "");
    default:
      return fmt::format(
          "cannot start '{}'{}: {}{}", o.argv[0], as, why,
          o.identity && err == EACCES
              ? "; trials run as the trial user: the program must be readable and "
                "executable by it (or by its group), and so must every folder above it"
              : "");
  }
}

// Leaders of live ChildProcess objects (an orphan reaper leaves them alone).
std::mutex g_ours_mu;
std::vector<pid_t> g_ours;

void forget_ours(pid_t pid) {
  std::lock_guard lk(g_ours_mu);
  std::erase(g_ours, pid);
}

}  // namespace

Result<std::string> find_program(const std::string& name, const std::string& path_env) {
  if (name.empty()) return Error::invalid("argv[0]", "empty program name");
  if (name.find('/') != std::string::npos) {
    if (is_executable_file(name)) return name;
    return Error::not_found(fmt::format("program '{}' is not an executable file", name));
  }
  std::string path = path_env.empty() ? "/usr/local/bin:/usr/bin:/bin" : path_env;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string candidate = end > start ? path.substr(start, end - start) : std::string(1, '.');
    candidate += '/';
    candidate += name;
    if (is_executable_file(candidate)) return candidate;
    start = end + 1;
  }
  return Error::not_found(fmt::format("program '{}' not found in PATH", name));
}

void TailBuffer::add(std::string_view line) {
  text_.append(line);
  text_.push_back('\n');
  if (text_.size() > 2 * capacity_) text_.erase(0, text_.size() - capacity_);
}

std::string TailBuffer::tail() const {
  std::string t = text_.size() <= capacity_ ? text_ : text_.substr(text_.size() - capacity_);
  if (text_.size() > capacity_)
    if (auto nl = t.find('\n'); nl != std::string::npos && nl + 1 < t.size()) t.erase(0, nl + 1);
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
  return t;
}

std::string TailBuffer::last_line() const {
  std::string t = tail();
  auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const char* d = ::sigdescr_np(WTERMSIG(status));
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), d ? d : "?");
  }
  return fmt::format("ended with wait status {}", status);
}

std::int64_t memory_limit_bytes(double memory_gb) {
  return memory_gb > 0 ? static_cast<std::int64_t>(memory_gb * double(1 << 30)) : 0;
}

std::string describe_exit(int status, double memory_gb) {
  std::string d = describe_wait_status(status);
  if (WIFSIGNALED(status) && memory_gb > 0)
    d += fmt::format(" (its memory limit, resources.memory_gb, is {:g} GiB)", memory_gb);
  return d;
}

Result<ChildProcess> ChildProcess::spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return Error::invalid("argv", "empty command");
  std::string path_env;
  for (const auto& kv : options.env)
    if (kv.rfind("PATH=", 0) == 0) path_env = kv.substr(5);
  auto program = find_program(options.argv[0], path_env);
  if (!program) return program.error();

  // Everything the child touches is built here, before fork().
  std::vector<char*> argv;
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : options.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const char* cwd = options.cwd.empty() ? nullptr : options.cwd.c_str();

  std::vector<const char*> procs;
  for (const auto& f : options.cgroup_procs) procs.push_back(f.c_str());

  std::optional<ConfinementPlan> confine;
  if (options.confinement) confine.emplace(*options.confinement);

  int out[2] = {-1, -1}, err[2] = {-1, -1}, errpipe[2] = {-1, -1}, in[2] = {-1, -1};
  int life[2] = {-1, -1};  // confined: init lives while the write end is open
  int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  const bool pipes = options.output == SpawnOptions::Output::kPipes;
  auto cleanup = [&] {
    for (int* fd : {&out[0], &out[1], &err[0], &err[1], &errpipe[0], &errpipe[1], &in[0], &in[1],
                    &devnull, &life[0], &life[1]})
      close_fd(*fd);
  };
  if (devnull < 0 || (pipes && (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)) ||
      ::pipe2(errpipe, O_CLOEXEC) != 0 || (options.stdin_pipe && ::pipe2(in, O_CLOEXEC) != 0) ||
      (confine && ::pipe2(life, O_CLOEXEC) != 0)) {
    int e = errno;
    cleanup();
    return Error::internal(fmt::format("cannot create pipes: {}", ::strerrordesc_np(e)));
  }

  const pid_t parent = ::getpid();
  const bool inherit = options.output == SpawnOptions::Output::kInherit;
  const ChildPlan plan{program->c_str(),
                       argv.data(),
                       envp.data(),
                       cwd,
                       options.stdin_pipe ? in[0] : devnull,
                       pipes     ? out[1]
                       : inherit ? 1
                                 : devnull,
                       pipes     ? err[1]
                       : inherit ? 2
                                 : devnull,
                       errpipe[1],
                       parent,
                       options.memory_limit_bytes,
                       options.death_signal,
                       options.identity ? &*options.identity : nullptr,
                       &procs,
                       confine ? &*confine : nullptr,
                       life[0]};
  pid_t pid;
  {
    // Registered before any orphan reaper can see the new child.
    std::lock_guard lk(g_ours_mu);
    pid = ::fork();
    if (pid == 0) exec_child(plan);
    if (pid > 0) g_ours.push_back(pid);
  }
  if (pid < 0) {
    int e = errno;
    cleanup();
    return Error::internal(fmt::format("fork failed: {}", ::strerrordesc_np(e)));
  }

  ::setpgid(pid, pid);  // also in the child; whichever runs first wins the race
  close_fd(out[1]);
  close_fd(err[1]);
  close_fd(errpipe[1]);
  close_fd(devnull);
  close_fd(in[0]);
  close_fd(life[0]);

  int failure[3] = {0, 0, 0};  // stage, errno, confinement step
  ssize_t n;
  do {
    n = ::read(errpipe[0], failure, sizeof failure);
  } while (n < 0 && errno == EINTR);
  close_fd(errpipe[0]);
  if (n > 0) {
    ::waitpid(pid, nullptr, 0);
    forget_ours(pid);
    close_fd(out[0]);
    close_fd(err[0]);
    close_fd(in[1]);
    close_fd(life[1]);
    return Error::internal(start_failure(options, failure[0], failure[1], failure[2]));
  }

  ChildProcess child;
  child.pid_ = pid;
  child.fds_[0] = out[0];
  child.fds_[1] = err[0];
  child.stdin_fd_ = in[1];
  child.life_fd_ = life[1];
  return child;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_),
      stdin_fd_(other.stdin_fd_),
      life_fd_(other.life_fd_),
      status_(other.status_),
      drain_deadline_ms_(other.drain_deadline_ms_) {
  other.stdin_fd_ = -1;
  other.life_fd_ = -1;
  for (int i = 0; i < 2; ++i) {
    fds_[i] = other.fds_[i];
    other.fds_[i] = -1;
    partial_[i] = std::move(other.partial_[i]);
  }
  other.pid_ = -1;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !status_) {
    ::kill(-pid_, SIGKILL);
    reap();
  }
  close_pipes();
}

void ChildProcess::close_pipes() {
  close_fd(fds_[0]);
  close_fd(fds_[1]);
  close_fd(stdin_fd_);
  close_fd(life_fd_);  // a confined child's init ends, and every process left with it
}

Status ChildProcess::write_stdin(std::string_view bytes) {
  if (stdin_fd_ < 0) return Error::unavailable("the child's stdin is not open");
  while (!bytes.empty()) {
    // SIGPIPE is ignored by the worker; a gone child is EPIPE.
    ssize_t n = ::write(stdin_fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = errno;
      close_fd(stdin_fd_);
      return Error::unavailable(fmt::format("writing to pid {}: {}", pid_, ::strerrordesc_np(e)));
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  close_fd(stdin_fd_);
  return {};
}

Status ChildProcess::limit_memory(std::int64_t bytes) {
  if (bytes <= 0) return {};
  rlimit lim{static_cast<rlim_t>(bytes), static_cast<rlim_t>(bytes)};
  if (::prlimit(pid_, RLIMIT_DATA, &lim, nullptr) != 0)
    return Error::internal(
        fmt::format("cannot limit pid {}'s memory: {}", pid_, ::strerrordesc_np(errno)));
  return {};
}

void ChildProcess::signal_group(int sig) {
  if (pid_ > 0 && !status_) ::kill(-pid_, sig);
}

bool ChildProcess::leader_exited() {
  siginfo_t info{};
  info.si_pid = 0;
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0)
    return errno == ECHILD;
  return info.si_pid == pid_;
}

void ChildProcess::reap() {
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  status_ = r == pid_ ? status : (128 + SIGKILL) << 8;
  forget_ours(pid_);
}

bool ChildProcess::is_ours(pid_t pid) {
  std::lock_guard lk(g_ours_mu);
  return std::find(g_ours.begin(), g_ours.end(), pid) != g_ours.end();
}

void ChildProcess::read_pipe(int index, const LineSink& sink) {
  char buf[16384];
  ssize_t n = ::read(fds_[index], buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  Stream stream = index == 0 ? Stream::kStdout : Stream::kStderr;
  std::string& part = partial_[index];
  if (n <= 0) {  // EOF (or an error, treated alike)
    if (!part.empty()) sink(stream, part);
    part.clear();
    close_fd(fds_[index]);
    return;
  }
  part.append(buf, static_cast<std::size_t>(n));
  std::size_t start = 0;
  for (;;) {
    std::size_t nl = part.find('\n', start);
    if (nl == std::string::npos) break;
    sink(stream, std::string_view(part).substr(start, nl - start));
    start = nl + 1;
  }
  part.erase(0, start);
  while (part.size() >= kMaxLine) {
    sink(stream, std::string_view(part).substr(0, kMaxLine));
    part.erase(0, kMaxLine);
  }
}

void ChildProcess::flush_partial(const LineSink& sink) {
  for (int i = 0; i < 2; ++i) {
    if (!partial_[i].empty()) sink(i == 0 ? Stream::kStdout : Stream::kStderr, partial_[i]);
    partial_[i].clear();
  }
}

void ChildProcess::linger_for(long ms) {
  linger_deadline_ms_ = now_ms() + ms;
}

bool ChildProcess::poll(int timeout_ms, const LineSink& sink) {
  if (pid_ <= 0) return true;
  pollfd pfds[2];
  int idx[2];
  int n = 0;
  for (int i = 0; i < 2; ++i) {
    if (fds_[i] < 0) continue;
    pfds[n] = {fds_[i], POLLIN, 0};
    idx[n++] = i;
  }
  // Once the leader is gone only the drain is left: do not wait long for it.
  int wait = status_ ? std::min<long>(timeout_ms, std::max(0L, drain_deadline_ms_ - now_ms()))
                     : timeout_ms;
  int ready = ::poll(n ? pfds : nullptr, static_cast<nfds_t>(n), wait);
  if (ready > 0) {
    for (int k = 0; k < n; ++k)
      if (pfds[k].revents & (POLLIN | POLLHUP | POLLERR)) read_pipe(idx[k], sink);
  }
  const bool pipes_open = fds_[0] >= 0 || fds_[1] >= 0;
  if (!status_ && leader_exited() && !(pipes_open && now_ms() < linger_deadline_ms_)) {
    ::kill(-pid_, SIGKILL);  // stragglers of the group; the zombie leader pins the group id
    reap();
    drain_deadline_ms_ = now_ms() + kDrainMs;
  }
  if (!status_) return false;
  if ((fds_[0] < 0 && fds_[1] < 0) || now_ms() >= drain_deadline_ms_) {
    flush_partial(sink);
    close_pipes();
    return true;
  }
  return false;
}

}  // namespace hpo
