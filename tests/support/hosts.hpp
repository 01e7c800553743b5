// Test hosts on one machine: Linux network namespaces that a test creates and
// removes itself. Namespace 0 is the control host (Redis, the scheduler, and
// the test's own thread while a ControlThread is alive); 1..n are worker
// hosts. Each has its own loopback and one interface eth0 with an address in
// 10.213.<k>.0/24, joined to the others by a bridge living in a namespace of
// its own, so nothing of the machine's own network is touched and the hosts
// reach each other only through the bridge.
//
// Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and iproute2; Hosts::unavailable()
// says why not, for GTEST_SKIP. Namespaces left by a test process that died
// are removed by the next one.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace hpo::testing {

inline constexpr char kIp[] = "/usr/sbin/ip";

// Runs a command (no shell: argv) and returns its exit status; its output goes to `log`.
inline int run_quiet(const std::vector<std::string>& argv, const std::string& log = "/dev/null") {
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class Hosts {
 public:
  // Why namespaces cannot be made here ("" when they can).
  static std::string unavailable() {
    if (::geteuid() != 0) return "network namespaces need root";
    if (!std::filesystem::exists(kIp)) return "iproute2 (ip) is not installed";
    const std::string probe = fmt::format("hpo{}p", ::getpid());
    const std::string log = fmt::format("/tmp/hpo-netns-probe-{}.log", ::getpid());
    const int rc = run_quiet({kIp, "netns", "add", probe}, log);
    run_quiet({kIp, "netns", "del", probe});
    std::string why;
    if (rc != 0) {
      std::FILE* f = std::fopen(log.c_str(), "r");
      char buf[512] = {};
      if (f) {
        std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        std::fclose(f);
      }
      why = std::string("the kernel refuses network namespaces here: ") + buf;
    }
    std::filesystem::remove(log);
    return why;
  }

  // The control host and `workers` worker hosts.
  explicit Hosts(int workers) : tag_(fmt::format("hpo{}", ::getpid())) {
    remove_stale();
    net_ = 1 + ::getpid() % 250;
    const std::string bridge = tag_ + "b";
    ok_ = ip({"netns", "add", bridge}) &&
          ip({"-n", bridge, "link", "add", "br0", "type", "bridge"}) &&
          ip({"-n", bridge, "link", "set", "br0", "up"});
    names_.push_back(bridge);
    for (int i = 0; ok_ && i <= workers; ++i) {
      const std::string ns = name(i), port = fmt::format("v{}", i);
      names_.push_back(ns);
      ok_ = ip({"netns", "add", ns}) &&
            ip({"-n", bridge, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns",
                ns}) &&
            ip({"-n", bridge, "link", "set", port, "master", "br0", "up"}) &&
            ip({"-n", ns, "addr", "add", address(i) + "/24", "dev", "eth0"}) &&
            ip({"-n", ns, "link", "set", "eth0", "up"}) &&
            ip({"-n", ns, "link", "set", "lo", "up"});
    }
  }
  ~Hosts() {
    for (auto it = names_.rbegin(); it != names_.rend(); ++it) ip({"netns", "del", *it});
  }
  Hosts(const Hosts&) = delete;
  Hosts& operator=(const Hosts&) = delete;

  bool ok() const { return ok_; }
  std::string name(int host) const {
    return host == 0 ? tag_ + "c" : fmt::format("{}h{}", tag_, host);
  }
  std::string address(int host) const { return fmt::format("10.213.{}.{}", net_, host + 1); }
  // What runs a program on `host`: ip netns exec NS (the program replaces ip,
  // so its pid is the program's).
  std::vector<std::string> on(int host) const { return {kIp, "netns", "exec", name(host)}; }

  // While alive, the calling thread (and the processes and threads it starts)
  // is on the control host.
  class ControlThread {
   public:
    explicit ControlThread(const Hosts& hosts) {
      self_ = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
      int target = ::open(("/run/netns/" + hosts.name(0)).c_str(), O_RDONLY | O_CLOEXEC);
      ok_ = self_ >= 0 && target >= 0 && ::setns(target, CLONE_NEWNET) == 0;
      if (target >= 0) ::close(target);
    }
    ~ControlThread() {
      if (self_ >= 0) {
        ::setns(self_, CLONE_NEWNET);
        ::close(self_);
      }
    }
    bool ok() const { return ok_; }

   private:
    int self_ = -1;
    bool ok_ = false;
  };

 private:
  bool ip(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{kIp};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_quiet(argv) == 0;
  }

  // Namespaces "hpo<pid>..." of test processes that are gone.
  void remove_stale() const {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/run/netns", ec)) {
      const std::string n = e.path().filename();
      if (n.rfind("hpo", 0) != 0) continue;
      const auto digits = n.find_first_not_of("0123456789", 3);
      if (digits == 3 || digits == std::string::npos) continue;
      const int pid = std::atoi(n.substr(3, digits - 3).c_str());
      if (pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0) ip({"netns", "del", n});
    }
  }

  std::string tag_;
  int net_ = 1;
  bool ok_ = false;
  std::vector<std::string> names_;
};

}  // namespace hpo::testing
