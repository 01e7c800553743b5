// The trust boundary's mechanisms with real processes and the kernel's own
// cgroups: a child inherits no descriptor, runs as another user with no
// capability, and a trial's box ends every process it started (setsid()
// escapees included) and holds all of them to one memory limit. A binary of
// its own: the subreaper test makes this process a subreaper for good.
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "core/child_process.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/workers/agent/test_util.hpp"
#include "workers/trial_files.hpp"
#include "workers/trial_sandbox.hpp"

namespace hpo::workers {
namespace {

using hpo::testing::process_gone;
using hpo::testing::wait_for;
using testing::read_file;
using testing::TempDir;

// Runs a child to its end; its stdout, or the spawn error.
std::string run(SpawnOptions o) {
  auto child = ChildProcess::spawn(o);
  if (!child) return "spawn failed: " + child.error().message;
  std::string out;
  while (!child->poll(50, [&](Stream s, std::string_view line) {
    if (s == Stream::kStdout) (out += line) += '\n';
  })) {
  }
  return out;
}

bool trial_user_exists() {
  return ::getpwnam("hpo-trial") != nullptr;
}

TEST(ChildProcessBoundary, InheritsNoDescriptorOfTheParent) {
  // Opened the way hiredis opens its socket: without close-on-exec.
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c",
            "for fd in " + std::to_string(sv[0]) + " " + std::to_string(sv[1]) + " " +
                std::to_string(pipe_fds[1]) +
                "; do if [ -e /proc/self/fd/$fd ]; then echo open $fd; fi; done; echo done"};
  o.env = {"PATH=/usr/bin:/bin"};
  EXPECT_EQ(run(o), "done\n");
  for (int fd : {sv[0], sv[1], pipe_fds[0], pipe_fds[1]}) ::close(fd);
}

TEST(ChildProcessBoundary, RunsAsAnotherUserWithNoCapabilityAndNoNewPrivileges) {
  if (::geteuid() != 0) GTEST_SKIP() << "switching users needs root";
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c",
            "id -u; id -G; grep -E '^(CapPrm|CapEff|CapAmb|NoNewPrivs):' /proc/self/status"};
  o.env = {"PATH=/usr/bin:/bin"};
  o.identity = Identity{65534, 65534, "nobody"};
  const std::string out = run(o);
  EXPECT_NE(out.find("65534\n65534\n"), std::string::npos) << out;
  EXPECT_NE(out.find("CapPrm:\t0000000000000000"), std::string::npos) << out;
  EXPECT_NE(out.find("CapEff:\t0000000000000000"), std::string::npos) << out;
  EXPECT_NE(out.find("CapAmb:\t0000000000000000"), std::string::npos) << out;
  EXPECT_NE(out.find("NoNewPrivs:\t1"), std::string::npos) << out;
}

TEST(ChildProcessBoundary, AProgramTheTrialUserCannotReachFailsWithTheReason) {
  if (::geteuid() != 0) GTEST_SKIP() << "switching users needs root";
  TempDir dir;  // 0700, root's
  SpawnOptions o;
  o.argv = {dir.script("prog.sh", "echo hi")};
  o.env = {"PATH=/usr/bin:/bin"};
  o.identity = Identity{65534, 65534, "nobody"};
  auto child = ChildProcess::spawn(o);
  ASSERT_FALSE(child.ok());
  EXPECT_NE(child.error().message.find("as uid 65534"), std::string::npos) << child.error().message;
  EXPECT_NE(child.error().message.find("readable and executable by it"), std::string::npos)
      << child.error().message;
}

// What a trial wrote is read without following any link: a file swapped for
// a link to the worker's secrets, a linked folder on the way, or the folder
// itself a link all fail; a FIFO does not block the reader.
TEST(ReadBeneath, FollowsNoLinkAndReadsOnlyRegularFiles) {
  TempDir dir;
  std::ofstream(dir.file("secret")) << "the worker's password";
  std::filesystem::create_directories(dir.file("out/sub"));
  std::ofstream(dir.file("out/sub/ok.csv")) << "1,2\n";
  ASSERT_EQ(::symlink(dir.file("secret").c_str(), dir.file("out/link.csv").c_str()), 0);
  ASSERT_EQ(::symlink(dir.file("out/sub").c_str(), dir.file("out/via").c_str()), 0);
  ASSERT_EQ(::symlink(dir.file("out").c_str(), dir.file("linked-out").c_str()), 0);
  ASSERT_EQ(::mkfifo(dir.file("out/fifo").c_str(), 0600), 0);

  auto ok = read_beneath(dir.file("out"), "sub/ok.csv", 1 << 20);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(*ok, "1,2\n");
  for (auto [folder, name] :
       std::vector<std::pair<std::string, std::string>>{{dir.file("out"), "link.csv"},
                                                        {dir.file("out"), "via/ok.csv"},
                                                        {dir.file("linked-out"), "sub/ok.csv"},
                                                        {dir.file("out"), "fifo"},
                                                        {dir.file("out"), "../secret"}}) {
    auto r = read_beneath(folder, name, 1 << 20);
    EXPECT_FALSE(r.ok()) << folder << " / " << name;
    if (r.ok()) {
      EXPECT_EQ(r->find("password"), std::string::npos);
    }
  }
  auto big = read_beneath(dir.file("out"), "sub/ok.csv", 2);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, ErrorCode::kPayloadTooLarge);
}

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "cgroups and trial users need root";
  }
  SandboxOptions options(const std::string& cgroups, int slots = 1) {
    SandboxOptions o;
    o.uid_lock_dir = locks_.file("uids");
    o.cgroups = cgroups;
    o.worker_name = "sandbox-test-" + std::to_string(::getpid()) + "-" + std::to_string(++made_);
    o.slots = slots;
    if (!trial_user_exists()) o.trial_user = "none";
    return o;
  }

  // Starts a trial program in `box` that leaves an orphan in a session of
  // its own and exits; the orphan's pid.
  pid_t leave_an_orphan(TrialBox& box, const std::optional<Identity>& who) {
    SpawnOptions o;
    o.argv = {"/usr/bin/python3", "-c",
              "import subprocess\n"
              "p = subprocess.Popen(['sleep', '600'], start_new_session=True)\n"
              "print(p.pid, flush=True)\n"};
    o.env = {"PATH=/usr/bin:/bin"};
    o.identity = who;
    o.cgroup_procs = box.procs_files();
    const std::string out = run(o);
    return static_cast<pid_t>(std::atol(out.c_str()));
  }

  TempDir locks_;
  int made_ = 0;
};

TEST_F(SandboxTest, EachSlotRunsAsAUidOfItsOwnAndTwoWorkersNeverShareOne) {
  if (!trial_user_exists()) GTEST_FAIL() << "no user hpo-trial: scripts/install-deps.sh creates it";
  auto a = TrialSandbox::open(options("none", 2));
  ASSERT_TRUE(a.ok()) << a.error().message;
  auto b = TrialSandbox::open(options("none", 1));
  ASSERT_TRUE(b.ok()) << b.error().message;
  ASSERT_TRUE((*a)->identity(0) && (*a)->identity(1) && (*b)->identity(0));
  const uid_t a0 = (*a)->identity(0)->uid, a1 = (*a)->identity(1)->uid, b0 = (*b)->identity(0)->uid;
  EXPECT_NE(a0, a1);
  EXPECT_NE(b0, a0);
  EXPECT_NE(b0, a1);
  EXPECT_NE(a0, 0u);
  EXPECT_EQ((*a)->identity(0)->gid, ::getpwnam("hpo-trial")->pw_gid);
  // A uid its worker gave up is free again.
  a->reset();
  auto c = TrialSandbox::open(options("none", 1));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE((*c)->identity(0)->uid == a0 || (*c)->identity(0)->uid == a1);
}

TEST_F(SandboxTest, AnAccountInTheUidRangeIsRefused) {
  if (!trial_user_exists()) GTEST_FAIL() << "no user hpo-trial: scripts/install-deps.sh creates it";
  auto o = options("none");
  o.first_uid = o.last_uid = ::getpwnam("hpo-trial")->pw_uid;
  auto s = TrialSandbox::open(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("--trial-uids"), std::string::npos) << s.error().message;
}

TEST_F(SandboxTest, TheEndOfATrialEndsItsSetsidChildrenInItsCgroup) {
  auto s = TrialSandbox::open(options("auto"));
  ASSERT_TRUE(s.ok()) << s.error().message;
  if (!(*s)->cgroups()) GTEST_SKIP() << "no cgroup here: " << (*s)->describe();
  auto box = (*s)->enter("t1-a0", 0);
  ASSERT_TRUE(box.ok()) << box.error().message;
  const pid_t orphan = leave_an_orphan(**box, (*s)->identity(0));
  ASSERT_GT(orphan, 0);
  ASSERT_FALSE(process_gone(orphan)) << "the orphan should outlive its parent until the box ends";
  box->reset();
  EXPECT_TRUE(wait_for([&] { return process_gone(orphan); })) << orphan;
}

TEST_F(SandboxTest, WithoutCgroupsTheWorkerReapsAndEndsATrialsOrphans) {
  auto s = TrialSandbox::open(options("none"));
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_TRUE((*s)->reaps()) << (*s)->describe();
  auto box = (*s)->enter("t2-a0", 0);
  ASSERT_TRUE(box.ok()) << box.error().message;
  const pid_t orphan = leave_an_orphan(**box, (*s)->identity(0));
  ASSERT_GT(orphan, 0);
  // Reparented to this process (the subreaper), not to init.
  ASSERT_TRUE(wait_for([&] {
    std::string stat = read_file("/proc/" + std::to_string(orphan) + "/stat");
    auto close = stat.rfind(')');
    return close != std::string::npos &&
           std::atol(stat.c_str() + close + 4) == static_cast<long>(::getpid());
  }));
  box->reset();
  EXPECT_TRUE(process_gone(orphan)) << orphan;
  EXPECT_NE(::kill(orphan, 0), 0) << "reaped, not left a zombie";
}

// resources.memory_gb holds a trial's processes together: eight processes of
// 96 MiB each do not fit in 256 MiB, though each alone would.
TEST_F(SandboxTest, OneMemoryLimitHoldsAllOfATrialsProcesses) {
  auto s = TrialSandbox::open(options("auto"));
  ASSERT_TRUE(s.ok()) << s.error().message;
  if (!(*s)->cgroups()) GTEST_SKIP() << "no cgroup here: " << (*s)->describe();
  auto box = (*s)->enter("t3-a0", 256LL << 20);
  ASSERT_TRUE(box.ok()) << box.error().message;
  SpawnOptions o;
  // Eight processes touch 96 MiB each and hold it until all have (a pipe
  // handshake, as tests/e2e/hostile_trial.py does).
  o.argv = {"/usr/bin/python3", "-c",
            "import os\n"
            "def hold_memory(mib, processes):\n"
            "    \"\"\"Each of `processes` children touches `mib` MiB and holds it until all\n"
            "    have (or were killed): a pipe says \"touched\", closing another says \"let go\".\n"
            "    Returns how many children did not exit cleanly.\"\"\"\n"
            "    touched_r, touched_w = os.pipe()\n"
            "    go_r, go_w = os.pipe()\n"
            "    kids = []\n"
            "    for _ in range(processes):\n"
            "        pid = os.fork()\n"
            "        if pid == 0:\n"
            "            os.close(touched_r)\n"
            "            os.close(go_w)\n"
            "            block = bytearray(mib << 20)\n"
            "            for i in range(0, len(block), 4096):\n"
            "                block[i] = 1\n"
            "            os.write(touched_w, b\"x\")\n"
            "            os.close(touched_w)\n"
            "            os.read(go_r, 1)  # EOF once the parent lets go\n"
            "            os._exit(0)\n"
            "        kids.append(pid)\n"
            "    os.close(touched_w)\n"
            "    while os.read(touched_r, 64):  # EOF: every child touched its memory or died\n"
            "        pass\n"
            "    os.close(go_w)\n"
            "    return sum(os.waitpid(pid, 0)[1] != 0 for pid in kids)\n"
            "\n"
            "print('killed', hold_memory(96, 8), flush=True)\n"};
  o.env = {"PATH=/usr/bin:/bin"};
  o.identity = (*s)->identity(0);
  o.cgroup_procs = (*box)->procs_files();
  auto child = ChildProcess::spawn(o);
  ASSERT_TRUE(child.ok()) << child.error().message;
  std::string out;
  const bool ended = wait_for(
      [&] {
        return child->poll(50, [&](Stream st, std::string_view line) {
          if (st == Stream::kStdout) out += line;
        });
      },
      std::chrono::seconds(60));
  ASSERT_TRUE(ended);
  EXPECT_NE(out.find("killed "), std::string::npos) << out;
  EXPECT_EQ(out.find("killed 0"), std::string::npos) << "all eight fitted: " << out;
  EXPECT_NE((*box)->memory_note(), "");
  EXPECT_NE((*box)->memory_note().find("resources.memory_gb (0.25 GiB)"), std::string::npos)
      << (*box)->memory_note();
}

}  // namespace
}  // namespace hpo::workers
