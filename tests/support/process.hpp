// A child process for end-to-end tests: the real hpo binaries, started with
// an argument vector and extra environment, output captured to a log file
// (printed by the tests on failure), killed and reaped on destruction.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace hpo::testing {

// True once `pid` is gone (or a zombie waiting for its parent or init to reap it).
inline bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string stat = ss.str();
  auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
}

class Process {
 public:
  Process(std::vector<std::string> argv, std::vector<std::pair<std::string, std::string>> env,
          std::string log_path)
      : argv_(std::move(argv)), env_(std::move(env)), log_path_(std::move(log_path)) {
    start();
  }
  ~Process() { kill(SIGKILL); }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }

  void start() {
    std::vector<char*> args;
    for (auto& a : argv_) args.push_back(a.data());
    args.push_back(nullptr);
    int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    pid_ = ::fork();
    if (pid_ == 0) {
      for (auto& [k, v] : env_) ::setenv(k.c_str(), v.c_str(), 1);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::setpgid(0, 0);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(fd);
    exited_ = false;
  }

  // Sends `sig` and, for SIGKILL, reaps the process.
  void kill(int sig) {
    if (pid_ <= 0 || exited_) return;
    ::kill(pid_, sig);
    if (sig == SIGKILL) {
      ::waitpid(pid_, &status_, 0);
      exited_ = true;
    }
  }

  // Waits up to `timeout` for the process to exit; returns its exit code, or
  // -1 if it is still running (then it is left running).
  int wait(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!exited_) {
      if (::waitpid(pid_, &status_, WNOHANG) == pid_) {
        exited_ = true;
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // poll interval
    }
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
  }

  bool running() {
    if (exited_) return false;
    if (::waitpid(pid_, &status_, WNOHANG) == pid_) exited_ = true;
    return !exited_;
  }

  std::string log() const {
    std::ifstream in(log_path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  std::vector<std::string> argv_;
  std::vector<std::pair<std::string, std::string>> env_;
  std::string log_path_;
  pid_t pid_ = -1;
  int status_ = 0;
  bool exited_ = true;
};

}  // namespace hpo::testing
