// A real single-node Slurm cluster for the deploy tests: munged with a key of
// its own, slurmctld and slurmd (Debian's slurm-wlm) in the foreground on free
// loopback ports, every file in a temporary folder (configuration, state,
// spool, logs). Jobs left running are cancelled and the daemons killed on
// destruction. slurmd must run as root (it becomes the jobs' users).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"  // free_loopback_port, wait_for

namespace hpo::testing {

class SlurmCluster {
 public:
  static constexpr const char* kNode = "hpo-node";

  SlurmCluster() {
    char tmpl[] = "/tmp/hpo-slurm-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    std::filesystem::permissions(
        dir_, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                  std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                  std::filesystem::perms::others_exec);
    for (const char* d : {"munge", "state", "spool", "jobs"})
      std::filesystem::create_directories(dir_ + "/" + d);
    std::filesystem::permissions(dir_ + "/munge", std::filesystem::perms::owner_all);
    {
      std::random_device rd;
      std::ofstream key(dir_ + "/munge/munge.key", std::ios::binary);
      for (int i = 0; i < 1024; ++i) key.put(static_cast<char>(rd() & 0xff));
    }
    std::filesystem::permissions(dir_ + "/munge/munge.key", std::filesystem::perms::owner_read);
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    std::string short_host = host;
    short_host = short_host.substr(0, short_host.find('.'));
    const int ctl_port = free_loopback_port(), d_port = free_loopback_port();
    std::ofstream(conf()) << "ClusterName=hpotest\n"
                          << "SlurmctldHost=" << short_host << "(127.0.0.1)\n"
                          << "SlurmctldPort=" << ctl_port << "\nSlurmdPort=" << d_port << "\n"
                          << "SlurmUser=root\nSlurmdUser=root\n"
                          << "AuthType=auth/munge\nCredType=cred/munge\n"
                          << "AuthInfo=socket=" << dir_ << "/munge/socket\n"
                          << "StateSaveLocation=" << dir_ << "/state\n"
                          << "SlurmdSpoolDir=" << dir_ << "/spool\n"
                          << "SlurmctldPidFile=" << dir_ << "/slurmctld.pid\n"
                          << "SlurmdPidFile=" << dir_ << "/slurmd.pid\n"
                          << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                          << "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
                          << "SchedulerType=sched/builtin\nReturnToService=2\n"
                          << "MpiDefault=none\nMailProg=/bin/true\n"
                          << "JobCompType=jobcomp/none\n"
                          << "AccountingStorageType=accounting_storage/none\n"
                          << "JobAcctGatherType=jobacct_gather/none\n"
                          << "MinJobAge=600\nKillWait=30\n"
                          << "NodeName=" << kNode << " NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN\n"
                          << "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE "
                             "State=UP\n";
    munged_ = std::make_unique<Process>(
        std::vector<std::string>{
            "/usr/sbin/munged", "-F", "-f", "--key-file=" + dir_ + "/munge/munge.key",
            "--socket=" + dir_ + "/munge/socket", "--pid-file=" + dir_ + "/munge/munged.pid",
            "--log-file=" + dir_ + "/munge/munged.log",
            "--seed-file=" + dir_ + "/munge/munged.seed"},
        env(), dir_ + "/munged.out");
    wait_for([&] { return std::filesystem::exists(dir_ + "/munge/socket"); },
             std::chrono::seconds(20));
    slurmctld_ = std::make_unique<Process>(
        std::vector<std::string>{"/usr/sbin/slurmctld", "-D", "-i", "-f", conf()}, env(),
        dir_ + "/slurmctld.log");
    slurmd_ = std::make_unique<Process>(
        std::vector<std::string>{"/usr/sbin/slurmd", "-D", "-N", kNode, "-f", conf()}, env(),
        dir_ + "/slurmd.log");
  }

  ~SlurmCluster() {
    // Jobs first (their workers must not outlive the test), then the daemons.
    if (slurmctld_) {
      command({"/usr/bin/scancel", "--full", "--user=root"});
      wait_for([&] { return queue_empty(""); }, std::chrono::seconds(40));
    }
    slurmd_.reset();
    slurmctld_.reset();
    munged_.reset();
    std::filesystem::remove_all(dir_);
  }
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  std::string conf() const { return dir_ + "/slurm.conf"; }
  const std::string& dir() const { return dir_; }
  std::vector<std::pair<std::string, std::string>> env() const { return {{"SLURM_CONF", conf()}}; }

  struct Output {
    int rc = -1;
    std::string text;
  };
  // Runs a Slurm command against this cluster; its exit status and output.
  Output command(std::vector<std::string> argv) const {
    const std::string log = dir_ + "/command-" + std::to_string(++commands_) + ".log";
    Process p(std::move(argv), env(), log);
    Output out;
    out.rc = p.wait(std::chrono::seconds(60));
    out.text = p.log();
    return out;
  }

  // The node registered and takes jobs.
  bool ready() const {
    auto o = command({"/usr/bin/sinfo", "-h", "-n", kNode, "-o", "%T"});
    return o.rc == 0 && o.text.find("idle") != std::string::npos;
  }

  // sbatch with `args`; the job id, "" when refused (the reason in last_error()).
  std::string sbatch(std::vector<std::string> args) {
    args.insert(args.begin(), {"/usr/bin/sbatch", "--parsable"});
    auto o = command(std::move(args));
    last_error_ = o.text;
    if (o.rc != 0) return "";
    std::string id = o.text.substr(0, o.text.find_first_of(";\n"));
    return id;
  }
  const std::string& last_error() const { return last_error_; }

  // No job (of `job`, or at all when empty) is pending or running.
  bool queue_empty(const std::string& job) const {
    std::vector<std::string> argv{"/usr/bin/squeue", "-h", "-o", "%i %T"};
    if (!job.empty()) argv.insert(argv.end(), {"-j", job});
    auto o = command(argv);
    return o.rc == 0 && o.text.find_first_not_of(" \n") == std::string::npos;
  }

  // `scontrol -o show job JOB`: one line per job (per array task).
  std::vector<std::string> show_job(const std::string& job) const {
    auto o = command({"/usr/bin/scontrol", "-o", "show", "job", job});
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < o.text.size()) {
      auto nl = o.text.find('\n', start);
      std::string line = o.text.substr(start, nl - start);
      if (line.find("JobId=") != std::string::npos) lines.push_back(line);
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
    return lines;
  }

  std::string logs() const {
    std::string out;
    for (const char* f : {"slurmctld.log", "slurmd.log", "munged.out"})
      out += std::string("--- ") + f + " ---\n" + read_tail(dir_ + "/" + f);
    for (const auto& e : std::filesystem::directory_iterator(dir_ + "/jobs"))
      if (e.is_regular_file())  // the jobs' TMPDIR also holds their work folders
        out += "--- " + e.path().string() + " ---\n" + read_tail(e.path().string());
    return out;
  }

 private:
  static std::string read_tail(const std::string& path) {
    std::ifstream in(path);
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return all.size() > 6000 ? all.substr(all.size() - 6000) : all;
  }

  std::string dir_;
  std::unique_ptr<Process> munged_, slurmctld_, slurmd_;
  mutable int commands_ = 0;
  std::string last_error_;
};

}  // namespace hpo::testing
