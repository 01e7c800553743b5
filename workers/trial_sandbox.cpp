// How the sandbox finds and uses its cgroups (see the header for the why):
//
//  - /proc/self/mountinfo says where each hierarchy is mounted, /proc/self/cgroup
//    where this process sits in it. v2: this process's cgroup must offer the
//    memory and pids controllers and be writable (delegated); the worker moves
//    itself into a leaf "worker" (a cgroup with processes cannot hand
//    controllers to children) and enables them for its trials'
//    cgroups "trial-<name>". v1: a child "hpo-<worker>-<pid>" of this
//    process's memory and pids cgroups, and a trial's "<name>" in each.
//  - a trial's end: cgroup.kill (v2), else SIGKILL to every pid listed until
//    none is left (bounded); then the directories go. At start, the v1
//    cgroups of workers that died without removing theirs (their pid is gone)
//    are ended the same way; a live worker's are never touched.
//  - uids: a lock file per uid (flock, held for the worker's life; the kernel
//    releases it when the worker dies, however it dies).
#include "workers/trial_sandbox.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

namespace hpo::workers {
namespace {

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Status write_text(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return Error::unavailable(fmt::format("cannot open {}: {}", path, ::strerrordesc_np(errno)));
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int e = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size()))
    return Error::unavailable(
        fmt::format("cannot write '{}' to {}: {}", text, path, ::strerrordesc_np(e)));
  return {};
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, sep)) out.push_back(part);
  return out;
}

bool has_word(const std::string& text, const std::string& word) {
  std::istringstream in(text);
  std::string w;
  while (in >> w)
    if (w == word) return true;
  return false;
}

// Bit `cap` of this process's effective capabilities.
bool has_capability(int cap) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("CapEff:", 0) == 0)
      return (std::stoull(line.substr(7), nullptr, 16) >> cap & 1) != 0;
  return false;
}

// The pids a cgroup lists (cgroup.procs).
std::vector<pid_t> cgroup_pids(const std::string& dir) {
  std::vector<pid_t> out;
  std::ifstream in(dir + "/cgroup.procs");
  long pid;
  while (in >> pid) out.push_back(static_cast<pid_t>(pid));
  return out;
}

// Kills every process in the cgroups `dirs` until they are empty (bounded),
// then removes them. A fork racing the kill is caught by the next round; the
// pids limit bounds how long that can go on.
void end_cgroups(const std::vector<std::string>& dirs) {
  for (const auto& dir : dirs)
    if (fs::exists(dir + "/cgroup.kill")) (void)write_text(dir + "/cgroup.kill", "1");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    bool any = false;
    for (const auto& dir : dirs)
      for (pid_t pid : cgroup_pids(dir)) {
        any = true;
        ::kill(pid, SIGKILL);
      }
    if (!any || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // poll: the kernel reaps
  }
  for (const auto& dir : dirs) {
    // A killed process leaves its cgroup when its parent reaps it: retry a moment.
    for (int i = 0; i < 200 && ::rmdir(dir.c_str()) != 0 && errno == EBUSY; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // poll interval
  }
}

// "oom_kill N" of a memory.events (v2) or memory.oom_control (v1) file.
long oom_kills(const std::string& file) {
  std::istringstream in(read_text(file));
  std::string key;
  long value = 0;
  while (in >> key >> value)
    if (key == "oom_kill") return value;
  return 0;
}

class CgroupBox : public TrialBox {
 public:
  CgroupBox(std::vector<std::string> dirs, std::string oom_file, std::int64_t memory)
      : dirs_(std::move(dirs)), oom_file_(std::move(oom_file)), memory_(memory) {
    for (const auto& d : dirs_) procs_.push_back(d + "/cgroup.procs");
  }
  ~CgroupBox() override { end_all(); }

  const std::vector<std::string>& procs_files() const override { return procs_; }

  Status adopt(pid_t pid) override {
    for (const auto& f : procs_)
      if (auto st = write_text(f, std::to_string(pid)); !st) return st;
    return {};
  }

  void end_all() override {
    if (ended_) return;
    // Read before the directories go.
    kills_ = oom_kills(oom_file_);
    end_cgroups(dirs_);
    ended_ = true;
  }

  std::string memory_note() const override {
    const long kills = ended_ ? kills_ : oom_kills(oom_file_);
    if (kills <= 0) return "";
    return fmt::format(
        "the kernel's OOM killer ended {} of its processes: resources.memory_gb ({:g} GiB) "
        "holds all of a trial's processes together",
        kills, static_cast<double>(memory_) / double(1 << 30));
  }

 private:
  std::vector<std::string> dirs_;
  std::vector<std::string> procs_;
  std::string oom_file_;
  std::int64_t memory_;
  bool ended_ = false;
  long kills_ = 0;
};

class ReaperBox : public TrialBox {
 public:
  explicit ReaperBox(TrialSandbox& sandbox) : sandbox_(sandbox) {}
  ~ReaperBox() override { end_all(); }
  const std::vector<std::string>& procs_files() const override { return none_; }
  Status adopt(pid_t) override { return {}; }
  void end_all() override { sandbox_.reap_orphans(); }
  std::string memory_note() const override { return ""; }

 private:
  TrialSandbox& sandbox_;
  std::vector<std::string> none_;
};

std::string safe_name(const std::string& name) {
  std::string out;
  for (char c : name)
    out +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  return out.empty() || out[0] == '.' ? "_" + out : out;
}

struct Mounts {
  std::string v2, memory, pids;  // mount points
};

Mounts cgroup_mounts() {
  Mounts m;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    auto left = split(line.substr(0, dash), ' ');
    auto right = split(line.substr(dash + 3), ' ');
    if (left.size() < 5 || right.size() < 3) continue;
    if (left[3] != "/") continue;  // a bind mount of a sub-tree: not where /proc/self/cgroup points
    const std::string& point = left[4];
    if (right[0] == "cgroup2") m.v2 = point;
    if (right[0] != "cgroup") continue;
    for (const auto& opt : split(right[2], ',')) {
      if (opt == "memory") m.memory = point;
      if (opt == "pids") m.pids = point;
    }
  }
  return m;
}

struct OwnCgroups {
  std::string v2, memory, pids;  // this process's path in each hierarchy
};

OwnCgroups own_cgroups() {
  OwnCgroups o;
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (line.substr(0, first) == "0" && controllers.empty()) o.v2 = path;
    for (const auto& c : split(controllers, ',')) {
      if (c == "memory") o.memory = path;
      if (c == "pids") o.pids = path;
    }
  }
  return o;
}

// Ends and removes the trial cgroups named `prefix`... directly under `parent`.
void end_children(const std::string& parent, const std::string& prefix) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(parent, ec))
    if (e.is_directory(ec) && e.path().filename().string().rfind(prefix, 0) == 0)
      end_cgroups({e.path().string()});
}

// v1: the "hpo-<name>-<pid>" cgroups of workers that died without removing
// theirs (kill -9): their trials' leftovers are ended, the folders removed.
// A live worker's, whatever its name, is never touched.
void end_dead_workers(const std::string& parent) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(parent, ec)) {
    const std::string name = e.path().filename().string();
    const auto dash = name.rfind('-');
    if (!e.is_directory(ec) || name.rfind("hpo-", 0) != 0 || dash == std::string::npos) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + dash + 1, &end, 10);
    if (pid <= 0 || *end || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    end_children(e.path().string(), "");
    ::rmdir(e.path().c_str());
  }
}

}  // namespace

TrialSandbox::~TrialSandbox() {
  for (int fd : uid_locks_) ::close(fd);
  if (cgroup_version_ == "v1")
    for (const auto& dir : cgroup_dirs_) ::rmdir(dir.c_str());
}

Result<std::unique_ptr<TrialSandbox>> TrialSandbox::open(const SandboxOptions& options) {
  std::unique_ptr<TrialSandbox> box(new TrialSandbox());
  box->pids_max_ = options.pids_max;
  const bool can_switch =
      ::geteuid() == 0 || (has_capability(CAP_SETUID) && has_capability(CAP_SETGID));
  if (options.trial_user == "none") {
    box->why_no_switch_ = "--trial-user none";
  } else if (!can_switch) {
    box->why_no_switch_ =
        fmt::format("this worker runs as uid {} without CAP_SETUID and CAP_SETGID", ::geteuid());
  } else {
    passwd pw{}, *found = nullptr;
    std::vector<char> buf(16384);
    ::getpwnam_r(options.trial_user.c_str(), &pw, buf.data(), buf.size(), &found);
    if (!found)
      return Error::invalid(
          "--trial-user",
          fmt::format("no user '{}' on this host: create it (useradd --system --user-group "
                      "--no-create-home --shell /usr/sbin/nologin {}; scripts/install-deps.sh and "
                      "scripts/install.sh do), or pass --trial-user none to run trials as this "
                      "worker, which lets them read everything it can",
                      options.trial_user, options.trial_user));
    if (auto st = box->claim_uids(options, found->pw_gid); !st) return st.error();
  }
  auto namespaces = TrialNamespaces::open(options.namespaces, !box->identities_.empty());
  if (!namespaces) return namespaces.error();
  box->namespaces_ = std::move(*namespaces);
  if (options.cgroups == "none") {
    box->why_no_cgroup_ = "--trial-cgroups none";
  } else if (auto st = box->open_cgroups(options); !st) {
    box->why_no_cgroup_ = st.error().message;
  }
  if (box->cgroup_dirs_.empty()) {
    // Orphans of a trial come to this process instead of init, to be ended with it.
    box->subreaper_ = ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
  }
  if (::getpid() == 1) box->subreaper_ = true;  // a container's init: orphans come here anyway
  return box;
}

Status TrialSandbox::claim_uids(const SandboxOptions& options, gid_t gid) {
  std::error_code ec;
  fs::create_directories(options.uid_lock_dir, ec);
  ::chmod(options.uid_lock_dir.c_str(), 0700);
  if (ec || ::access(options.uid_lock_dir.c_str(), W_OK) != 0)
    return Error::unavailable(
        fmt::format("--trial-uid-locks: cannot use {} for the trial uids' lock files: {}",
                    options.uid_lock_dir, ec ? ec.message() : ::strerrordesc_np(errno)));
  uid_t uid = options.first_uid;
  for (int slot = 0; slot < options.slots; ++slot) {
    for (;; ++uid) {
      if (uid > options.last_uid)
        return Error::unavailable(fmt::format(
            "--trial-uids: the {} uids {}-{} are all taken by this host's other workers; "
            "{} slots need as many",
            options.last_uid - options.first_uid + 1, options.first_uid, options.last_uid,
            options.slots));
      const std::string file = fmt::format("{}/{}", options.uid_lock_dir, uid);
      int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
      if (fd < 0)
        return Error::unavailable(
            fmt::format("cannot create {}: {}", file, ::strerrordesc_np(errno)));
      if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        ::close(fd);
        continue;
      }
      uid_locks_.push_back(fd);
      break;
    }
    passwd pw{}, *owner = nullptr;
    std::vector<char> buf(16384);
    ::getpwuid_r(uid, &pw, buf.data(), buf.size(), &owner);
    if (owner)
      return Error::invalid(
          "--trial-uids",
          fmt::format("uid {} is the account '{}': trials must not run as an existing user; "
                      "choose a range of unused uids",
                      uid, owner->pw_name));
    identities_.push_back({uid, gid, options.trial_user});
    ++uid;
  }
  return {};
}

Status TrialSandbox::open_cgroups(const SandboxOptions& options) {
  const Mounts mounts = cgroup_mounts();
  const OwnCgroups own = own_cgroups();
  // The pid tells two workers of one name apart (another HPO_HOME on this
  // host), and a dead worker's cgroups from a live one's.
  const std::string name = fmt::format("hpo-{}-{}", safe_name(options.worker_name), ::getpid());
  // v2, delegated: our cgroup offers memory and pids and we may write it.
  if (!mounts.v2.empty() && !own.v2.empty()) {
    const std::string dir = mounts.v2 + own.v2;
    const std::string controllers = read_text(dir + "/cgroup.controllers");
    if (has_word(controllers, "memory") && has_word(controllers, "pids") &&
        ::access(dir.c_str(), W_OK) == 0 && own.v2 != "/") {
      std::error_code ec;
      fs::create_directories(dir + "/worker", ec);
      // Into the leaf ourselves; with other processes left beside us (not a
      // delegated unit of our own) the controllers cannot be enabled, and v1 is tried.
      if (write_text(dir + "/worker/cgroup.procs", "0") &&
          write_text(dir + "/cgroup.subtree_control", "+memory +pids")) {
        end_children(dir, "trial-");  // this unit's last run's
        cgroup_version_ = "v2";
        cgroup_dirs_ = {dir};
        return {};
      }
    }
  }
  if (mounts.memory.empty() || mounts.pids.empty())
    return Error::unavailable("no cgroup v2 delegated to this worker, nor v1 memory and pids");
  // This process's cgroup in each hierarchy ("/" at the top: no double slash).
  auto at = [](const std::string& mount, const std::string& path) {
    return path == "/" ? mount : mount + path;
  };
  const std::vector<std::string> parents = {at(mounts.memory, own.memory),
                                            at(mounts.pids, own.pids)};
  std::vector<std::string> dirs = {parents[0] + "/" + name, parents[1] + "/" + name};
  for (const auto& parent : parents) end_dead_workers(parent);
  for (const auto& dir : dirs) {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
      return Error::unavailable(
          fmt::format("cannot create the cgroup {}: {}", dir, ::strerrordesc_np(errno)));
  }
  cgroup_version_ = "v1";
  cgroup_dirs_ = std::move(dirs);
  return {};
}

std::optional<Identity> TrialSandbox::identity(int slot) const {
  if (identities_.empty()) return std::nullopt;
  return identities_[static_cast<std::size_t>(
      std::clamp<int>(slot, 0, static_cast<int>(identities_.size()) - 1))];
}

Result<std::unique_ptr<TrialBox>> TrialSandbox::enter(const std::string& name,
                                                      std::int64_t memory_bytes) {
  if (cgroup_dirs_.empty()) return std::unique_ptr<TrialBox>(new ReaperBox(*this));
  const std::string leaf = safe_name(name);
  std::vector<std::string> dirs;
  auto made = [&]() -> Status {
    for (const auto& parent : cgroup_dirs_) {
      const std::string dir = parent + (cgroup_version_ == "v2" ? "/trial-" : "/") + leaf;
      if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
        return Error::unavailable(
            fmt::format("cannot create the trial's cgroup {}: {}", dir, ::strerrordesc_np(errno)));
      dirs.push_back(dir);
    }
    return {};
  }();
  std::string oom_file;
  auto configured = [&]() -> Status {
    if (!made) return made;
    const std::string mem = dirs[0];
    const std::string pids = cgroup_version_ == "v2" ? dirs[0] : dirs[1];
    if (auto st = write_text(pids + "/pids.max", std::to_string(pids_max_)); !st) return st;
    if (cgroup_version_ == "v2") {
      oom_file = mem + "/memory.events";
      if (memory_bytes > 0) {
        if (auto st = write_text(mem + "/memory.max", std::to_string(memory_bytes)); !st) return st;
        if (fs::exists(mem + "/memory.swap.max")) (void)write_text(mem + "/memory.swap.max", "0");
      }
    } else {
      oom_file = mem + "/memory.oom_control";
      if (memory_bytes > 0) {
        if (auto st = write_text(mem + "/memory.limit_in_bytes", std::to_string(memory_bytes)); !st)
          return st;
        // With swap accounting, memory + swap too: the limit is not a swap file's.
        if (fs::exists(mem + "/memory.memsw.limit_in_bytes"))
          (void)write_text(mem + "/memory.memsw.limit_in_bytes", std::to_string(memory_bytes));
      }
    }
    return {};
  }();
  if (!configured) {
    end_cgroups(dirs);
    return configured.error();
  }
  return std::unique_ptr<TrialBox>(new CgroupBox(std::move(dirs), oom_file, memory_bytes));
}

Status TrialSandbox::hand_over(const std::string& dir, const std::optional<Identity>& identity) {
  if (!identity || dir.empty()) return {};
  auto give = [&](const fs::path& p) -> Status {
    if (::lchown(p.c_str(), identity->uid, identity->gid) != 0)
      return Error::unavailable(fmt::format("cannot give {} to uid {}: {}", p.string(),
                                            identity->uid, ::strerrordesc_np(errno)));
    return {};
  };
  if (auto st = give(dir); !st) return st;
  if (::chmod(dir.c_str(), 0700) != 0)
    return Error::unavailable(fmt::format("cannot chmod {}: {}", dir, ::strerrordesc_np(errno)));
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec))
    if (auto st = give(it->path()); !st) return st;
  if (ec) return Error::unavailable(fmt::format("cannot walk {}: {}", dir, ec.message()));
  return {};
}

namespace {

// Whether `who` has `bits` (S_IXOTH-style: the "other" triplet) on a file of `st`.
bool allows(const struct stat& st, const Identity& who, mode_t other_bits) {
  if (st.st_uid == who.uid) return (st.st_mode & (other_bits << 6)) == (other_bits << 6);
  if (st.st_gid == who.gid) return (st.st_mode & (other_bits << 3)) == (other_bits << 3);
  return (st.st_mode & other_bits) == other_bits;
}

}  // namespace

Status TrialSandbox::can_run(const std::string& program, const Identity& identity) {
  struct stat st {};
  if (::stat(program.c_str(), &st) != 0 || !allows(st, identity, S_IROTH | S_IXOTH))
    return Error::unavailable(fmt::format("{} is not readable and executable by uid {} ({})",
                                          program, identity.uid, identity.user));
  for (fs::path p = fs::path(program).parent_path(); !p.empty(); p = p.parent_path()) {
    if (::stat(p.c_str(), &st) == 0 && !allows(st, identity, S_IXOTH))
      return Error::unavailable(fmt::format("uid {} ({}) cannot pass {} (mode {:o}) to reach {}",
                                            identity.uid, identity.user, p.string(),
                                            st.st_mode & 07777, program));
    if (p == p.root_path()) break;
  }
  return {};
}

Status TrialSandbox::prepare_work_root(const std::string& root, const Identity& identity) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec)
    return Error::invalid("--work-dir", fmt::format("cannot create {}: {}", root, ec.message()));
  ::chmod(root.c_str(), 0711);
  for (fs::path p = fs::path(root).parent_path(); !p.empty(); p = p.parent_path()) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) break;
    const bool passes =
        (st.st_mode & S_IXOTH) || (st.st_gid == identity.gid && (st.st_mode & S_IXGRP));
    if (!passes) {
      // Our own default folder may be opened up; anybody else's is the operator's call.
      if (kSharedWorkRoot.rfind(p.string() + "/", 0) == 0 && p != "/var/lib" && p != "/var") {
        ::chmod(p.c_str(), (st.st_mode & 07777) | S_IXOTH);
        continue;
      }
      return Error::invalid(
          "--work-dir",
          fmt::format("trials run as uid {} ({}) and cannot reach {}: {} is mode {:o}; give a "
                      "--work-dir whose parent folders others may pass (x), e.g. {}<name>",
                      identity.uid, identity.user, root, p.string(), st.st_mode & 07777,
                      kSharedWorkRoot));
    }
    if (p == p.root_path()) break;
  }
  return {};
}

int TrialSandbox::reap_orphans(bool kill_live) {
  if (!subreaper_) return 0;
  const pid_t self = ::getpid();
  int total = 0;
  // Killing an orphan hands its own children to us: go round until none is left.
  for (int round = 0; round < 64; ++round) {
    int found = 0;
    DIR* proc = ::opendir("/proc");
    if (!proc) return total;
    while (dirent* e = ::readdir(proc)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (pid <= 0 || *end) continue;
      const std::string stat = read_text(fmt::format("/proc/{}/stat", pid));
      const auto close = stat.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream rest(stat.substr(close + 2));
      char state = 0;
      long ppid = 0;
      rest >> state >> ppid;
      if (ppid != self || ChildProcess::is_ours(static_cast<pid_t>(pid))) continue;
      if (state != 'Z') {
        if (!kill_live) continue;
        ::kill(static_cast<pid_t>(pid), SIGKILL);
      }
      ::waitpid(static_cast<pid_t>(pid), nullptr, 0);
      ++found;
    }
    ::closedir(proc);
    total += found;
    if (found == 0) break;
  }
  return total;
}

std::string TrialSandbox::describe() const {
  std::string who =
      identities_.empty()
          ? fmt::format("trials run as this worker ({}): they can read what it can", why_no_switch_)
          : fmt::format("trials run as uids {}-{}, group of {}", identities_.front().uid,
                        identities_.back().uid, identities_.front().user);
  std::string held =
      cgroup_dirs_.empty()
          ? fmt::format(
                "no cgroup ({}): a trial's memory limit is per process, and its orphans "
                "are reaped by this worker",
                why_no_cgroup_)
          : fmt::format("each trial in a cgroup {} of its own under {}", cgroup_version_,
                        fmt::join(cgroup_dirs_, ", "));
  return who + "; " + held + "; " + namespaces_.describe();
}

}  // namespace hpo::workers
