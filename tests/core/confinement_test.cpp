// A confined child (core/confinement.hpp), tried from inside: real namespaces,
// real mounts, a real shell. Each test is an attack a trial would make on its
// host or on another tenant, and what it finds.
#include "core/confinement.hpp"

#include <gtest/gtest.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/child_process.hpp"

namespace hpo {
namespace {

namespace fs = std::filesystem;

// A folder of its own for each test, removed after it.
class Confined : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hpo-confine-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    fs::create_directories(root_ + "/attempt/tmp");
  }
  void TearDown() override { fs::remove_all(root_); }

  Confinement confinement() const {
    Confinement c;
    c.tmp_dir = root_ + "/attempt/tmp";
    c.own_dir = root_ + "/attempt";
    return c;
  }
  // Runs `script` confined; its output lines and its wait status.
  std::pair<std::vector<std::string>, int> run(const std::string& script, const Confinement& c) {
    SpawnOptions o;
    o.argv = {"sh", "-c", script};
    o.env = {"PATH=/bin:/usr/bin"};
    o.confinement = c;
    auto child = ChildProcess::spawn(o);
    EXPECT_TRUE(child) << child.error().message;
    std::vector<std::string> lines;
    if (!child) return {lines, -1};
    while (!child->poll(100, [&](Stream, std::string_view l) { lines.emplace_back(l); })) {
    }
    return {lines, child->exit_status().value_or(-1)};
  }
  static std::string joined(const std::vector<std::string>& lines) {
    std::string all;
    for (const auto& l : lines) all += l + "\n";
    return all;
  }

  std::string root_;
};

TEST_F(Confined, ItSeesOnlyItsOwnProcesses) {
  const auto [lines, status] = run("echo pid $$; test -e /proc/" + std::to_string(::getpid()) +
                                       " && echo sees-the-worker; ls /proc | grep -c '^[0-9]'",
                                   confinement());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << joined(lines);
  ASSERT_EQ(lines.size(), 2u) << joined(lines);
  EXPECT_EQ(lines[0], "pid 2");  // init is 1
  // init, the shell, ls and grep at most.
  EXPECT_LE(std::stoi(lines[1]), 4) << joined(lines);
}

TEST_F(Confined, ItsTmpAndShmAreItsOwnAndStayInItsAttemptFolder) {
  const std::string marker = "hpo-confine-marker-" + std::to_string(::getpid());
  std::ofstream("/tmp/" + marker) << "another tenant's file";
  std::ofstream("/dev/shm/" + marker) << "another tenant's segment";
  const auto [lines, status] = run("ls /tmp/" + marker + " /dev/shm/" + marker +
                                       " 2>/dev/null; echo mine > /tmp/left; "
                                       "echo seg > /dev/shm/seg; ls /dev/shm; echo end",
                                   confinement());
  ::unlink(("/tmp/" + marker).c_str());
  ::unlink(("/dev/shm/" + marker).c_str());
  ASSERT_TRUE(WIFEXITED(status)) << joined(lines);
  EXPECT_EQ(joined(lines), "seg\nend\n");
  // What it left in /tmp is in its attempt's folder, not the host's /tmp.
  EXPECT_TRUE(fs::exists(root_ + "/attempt/tmp/left"));
  EXPECT_FALSE(fs::exists("/tmp/left"));
  EXPECT_FALSE(fs::exists("/dev/shm/seg"));
}

TEST_F(Confined, HiddenFilesAreGoneAndKeptFoldersBeneathThemStay) {
  fs::create_directories(root_ + "/home/work/other");
  std::ofstream(root_ + "/home/token") << "secret-token";
  std::ofstream(root_ + "/home/work/other/result") << "another attempt's";
  std::ofstream(root_ + "/credential") << "secret-credential";
  fs::create_directories(root_ + "/home/work/mine");
  std::ofstream(root_ + "/home/work/mine/input") << "its own";
  Confinement c = confinement();
  // A hidden path beneath another (the work root in HPO_HOME) is gone with it.
  c.hidden = {root_ + "/home/work", root_ + "/home", root_ + "/credential"};
  c.own_dir = root_ + "/home/work/mine";
  // Named by its command, a hidden path stays hidden; a folder holding a
  // hidden file shows it covered.
  c.kept = {root_ + "/home", root_ + "/home/token", root_ + "/credential", root_};
  const auto [lines, status] =
      run("cat " + root_ + "/home/token " + root_ + "/home/work/other/result " + root_ +
              "/credential " + root_ + "/home/work/mine/input 2>/dev/null; echo",
          c);
  ASSERT_TRUE(WIFEXITED(status)) << joined(lines);
  EXPECT_EQ(joined(lines), "its own\n");
}

TEST_F(Confined, ItReachesNoPortOfTheHost) {
  // A listener on the host's loopback (as Redis or the scheduler's API would be).
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(s, 4), 0);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string port = std::to_string(ntohs(a.sin_port));
  const std::string probe = "bash -c 'echo > /dev/tcp/127.0.0.1/" + port +
                            "' 2>/dev/null && echo reached || echo refused; "
                            "grep -c ':' /proc/net/dev";
  const auto [lines, status] = run(probe, confinement());
  ASSERT_EQ(lines.size(), 2u) << joined(lines);
  EXPECT_EQ(lines[0], "refused");
  EXPECT_EQ(lines[1], "1");  // loopback alone
  // Asked for, the host's network is there.
  Confinement host = confinement();
  host.host_network = true;
  const auto [open_lines, open_status] = run(probe, host);
  ASSERT_FALSE(open_lines.empty());
  EXPECT_EQ(open_lines[0], "reached");
  ::close(s);
}

TEST_F(Confined, ItsDevHoldsOnlyTheBasicNodesAndTheDevicesItWasGiven) {
  const auto [lines, status] =
      run("ls /dev | tr '\\n' ' '; echo; echo x > /dev/null && head -c 4 /dev/zero | wc -c",
          confinement());
  ASSERT_EQ(lines.size(), 2u) << joined(lines);
  for (const char* absent : {"vda", "sda", "kmsg", "mem", "nvidia0", "loop0"})
    EXPECT_EQ(lines[0].find(std::string(" ") + absent + " "), std::string::npos) << lines[0];
  for (const char* present : {"null", "zero", "urandom", "shm", "pts", "fd"})
    EXPECT_NE((" " + lines[0]).find(std::string(" ") + present + " "), std::string::npos)
        << lines[0];
  EXPECT_EQ(lines[1], "4");
  // A device it is given (as a GPU's node would be) is there; others are not.
  Confinement c = confinement();
  c.devices = {"/dev/full"};
  const auto [given, given_status] = run("ls /dev/full /dev/tty0 2>&1 | head -2", c);
  EXPECT_NE(joined(given).find("/dev/full"), std::string::npos) << joined(given);
}

TEST_F(Confined, ItEndsAsItsProgramEndedAndTheGroupSignalReachesIt) {
  EXPECT_EQ(WEXITSTATUS(run("exit 7", confinement()).second), 7);
  const int killed = run("kill -TERM $$", confinement()).second;
  ASSERT_TRUE(WIFSIGNALED(killed));
  EXPECT_EQ(WTERMSIG(killed), SIGTERM);

  SpawnOptions o;
  o.argv = {"sh", "-c", "echo ready; exec sleep 600"};
  o.env = {"PATH=/bin:/usr/bin"};
  o.confinement = confinement();
  auto child = ChildProcess::spawn(o);
  ASSERT_TRUE(child) << child.error().message;
  bool ready = false;
  while (!ready) child->poll(100, [&](Stream, std::string_view l) { ready = l == "ready"; });
  child->signal_group(SIGTERM);
  while (!child->poll(100, [](Stream, std::string_view) {})) {
  }
  ASSERT_TRUE(WIFSIGNALED(*child->exit_status()));
  EXPECT_EQ(WTERMSIG(*child->exit_status()), SIGTERM);
}

// A wrapper killed by the signal its program handles (a checkpoint on stop):
// while the worker lingers, the program goes on inside the namespace and its
// last words arrive.
TEST_F(Confined, AProgramUnderAWrapperKilledByTheSignalFinishesWhileTheWorkerLingers) {
  SpawnOptions o;
  o.argv = {"sh", "-c",
            "sh -c 'trap \"sleep 0.2; echo saved; exit 0\" USR1; echo ready; "
            "while :; do sleep 0.05; done' & wait"};
  o.env = {"PATH=/bin:/usr/bin"};
  o.confinement = confinement();
  auto child = ChildProcess::spawn(o);
  ASSERT_TRUE(child) << child.error().message;
  std::vector<std::string> lines;
  auto sink = [&](Stream, std::string_view l) { lines.emplace_back(l); };
  while (std::find(lines.begin(), lines.end(), "ready") == lines.end()) child->poll(100, sink);
  child->linger_for(10000);
  child->signal_group(SIGUSR1);
  while (!child->poll(100, sink)) {
  }
  EXPECT_EQ(lines.back(), "saved") << joined(lines);
  ASSERT_TRUE(WIFSIGNALED(*child->exit_status()));
  EXPECT_EQ(WTERMSIG(*child->exit_status()), SIGUSR1);  // the wrapper's end
}

// The host pid of a process with `word` on its command line; 0: none.
pid_t find_process(const std::string& word) {
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::ifstream in(e.path() / "cmdline");
    std::string cmd((std::istreambuf_iterator<char>(in)), {});
    if (cmd.find(word) != std::string::npos) return std::atoi(e.path().filename().c_str());
  }
  return 0;
}

TEST_F(Confined, WhatItLeftRunningEndsWithIt) {
  // A daemon of its own session, out of the process group the worker signals.
  const std::string mark = std::to_string(900000 + ::getpid() % 90000);
  const auto [lines, status] =
      run("setsid sleep " + mark + " </dev/null >/dev/null 2>&1 & echo started", confinement());
  ASSERT_EQ(joined(lines), "started\n");
  const std::string daemon = std::string("sleep") + '\0' + mark;
  // Still being killed with its namespace: wait for its exit itself (bounded).
  if (const pid_t pid = find_process(daemon); pid > 0) {
    const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (fd >= 0) {
      pollfd exited{fd, POLLIN, 0};
      EXPECT_EQ(::poll(&exited, 1, 10000), 1) << "the daemon outlived its trial";
      ::close(fd);
    }
  }
  EXPECT_EQ(find_process(daemon), 0);
}

TEST_F(Confined, AFailureToStartSaysWhatFailed) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "true"};
  o.cwd = root_ + "/missing";
  o.confinement = confinement();
  auto child = ChildProcess::spawn(o);
  ASSERT_FALSE(child);
  EXPECT_NE(child.error().message.find("missing"), std::string::npos) << child.error().message;
}

TEST_F(Confined, AUserWhoIsNotRootIsConfinedThroughAUserNamespace) {
  // A child process of this test that is not root spawns the confined program.
  fs::permissions(root_, fs::perms::all);
  fs::permissions(root_ + "/attempt", fs::perms::all);
  fs::permissions(root_ + "/attempt/tmp", fs::perms::all);
  std::ofstream(root_ + "/secret") << "the worker's";
  ::chown((root_ + "/secret").c_str(), 65534, 65534);
  const std::string out = root_ + "/attempt/out";
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    Confinement c = confinement();
    c.user_namespace = true;
    c.kept = {root_};  // its folder is there, the worker's secret in it is not
    c.own_dir.clear();
    c.hidden = {root_ + "/secret"};
    SpawnOptions o;
    o.argv = {
        "sh", "-c",
        "id -u; cat " + root_ + "/secret; echo; ls /proc | grep -c '^[0-9]'; echo x > " + out};
    o.env = {"PATH=/bin:/usr/bin"};
    o.confinement = c;
    auto child = ChildProcess::spawn(o);
    if (!child) {
      std::ofstream(root_ + "/attempt/report") << child.error().message;
      ::_exit(4);
    }
    std::string all;
    while (!child->poll(100, [&](Stream, std::string_view l) { all += std::string(l) + "|"; })) {
    }
    std::ofstream(root_ + "/attempt/report") << all;
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  std::ifstream in(root_ + "/attempt/report");
  std::string report((std::istreambuf_iterator<char>(in)), {});
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << ": " << report;
  EXPECT_EQ(report.rfind("65534||", 0), 0u) << report;  // its own uid; no secret
  EXPECT_TRUE(fs::exists(out)) << report;
}

// A worker that is not root but may switch users (CAP_SETUID, CAP_SETGID: the
// systemd unit) keeps every uid in its trials' user namespace, so the program
// still runs as a uid of its own.
TEST_F(Confined, AWorkerWithTheSwitchCapabilitiesKeepsEveryUidInItsUserNamespace) {
  fs::permissions(root_, fs::perms::all);
  fs::permissions(root_ + "/attempt", fs::perms::all);
  fs::permissions(root_ + "/attempt/tmp", fs::perms::all);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0);
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) ::_exit(3);
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    data[0].effective = data[0].permitted = (1u << CAP_SETUID) | (1u << CAP_SETGID);
    if (::syscall(SYS_capset, &header, data) != 0) ::_exit(5);
    Confinement c = confinement();
    c.user_namespace = c.map_all_ids = true;
    SpawnOptions o;
    o.argv = {"sh", "-c", "id -u; id -g"};
    o.env = {"PATH=/bin:/usr/bin"};
    o.identity = Identity{400123, 400123, "trial"};
    o.confinement = c;
    auto child = ChildProcess::spawn(o);
    std::string all = child ? "" : child.error().message;
    while (child &&
           !child->poll(100, [&](Stream, std::string_view l) { all += std::string(l) + "|"; })) {
    }
    std::ofstream(root_ + "/attempt/report") << all;
    ::_exit(child ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  std::ifstream in(root_ + "/attempt/report");
  std::string report((std::istreambuf_iterator<char>(in)), {});
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << ": " << report;
  EXPECT_EQ(report, "400123|400123|");
}

}  // namespace
}  // namespace hpo
