// A real redis-server for integration tests, started on a free loopback port
// in a fresh temporary directory and stopped (SIGKILL + reap) on destruction.
// AOF is on with appendfsync always, as in the embedded default, so restart()
// after kill() proves durability.
#pragma once

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace hpo::testing {

inline int free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

// In a forked child before exec: the test's output pipes are not passed on, so
// a server left behind by a test that crashed does not hold ctest waiting for
// the pipe's end (it logs to its own file).
inline void detach_stdio() {
  int fd = ::open("/dev/null", O_RDWR);
  if (fd < 0) return;
  for (int i = 0; i < 3; ++i) ::dup2(fd, i);
  if (fd > 2) ::close(fd);
}

// Polls `pred` every few milliseconds until it holds or `timeout` passes.
template <class Pred>
bool wait_for(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(
        std::chrono::milliseconds(5));  // poll interval, not a wait for an outcome
  }
  return pred();
}

// Lets `d` of real time go by, polling: for tests whose subject is a length of
// time (an injected outage), never to wait for an outcome.
inline void let_time_pass(std::chrono::milliseconds d) {
  auto until = std::chrono::steady_clock::now() + d;
  wait_for([&] { return std::chrono::steady_clock::now() >= until; }, d + std::chrono::seconds(1));
}

class RedisServer {
 public:
  // `extra`: more redis-server arguments (e.g. {"--replicaof", "127.0.0.1", "6379"}).
  explicit RedisServer(std::vector<std::string> extra = {}) : extra_(std::move(extra)) {
    char tmpl[] = "/tmp/hpo-redis-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    start();
  }
  ~RedisServer() {
    kill();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  const std::string& dir() const { return dir_; }

  // SIGKILL: no shutdown save; the AOF is all that survives.
  void kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  // SIGSTOP / SIGCONT: a frozen server (a stalled VM, a stuck disk) that
  // keeps its connections open but answers nothing.
  void pause() {
    if (pid_ > 0) ::kill(pid_, SIGSTOP);
  }
  void resume() {
    if (pid_ > 0) ::kill(pid_, SIGCONT);
  }
  // Starts again on the same port and data directory.
  void restart() {
    kill();
    start(port_);
  }

 private:
  void start(int port = 0) {
    for (int tries = 0; tries < 5; ++tries) {
      port_ = port ? port : free_loopback_port();
      std::string port_s = std::to_string(port_);
      pid_ = ::fork();
      if (pid_ == 0) {
        std::vector<std::string> args{"redis-server",
                                      "--port",
                                      port_s,
                                      "--bind",
                                      "127.0.0.1",
                                      "--dir",
                                      dir_,
                                      "--appendonly",
                                      "yes",
                                      "--appendfsync",
                                      "always",
                                      "--save",
                                      "",
                                      "--logfile",
                                      dir_ + "/redis.log",
                                      "--daemonize",
                                      "no"};
        args.insert(args.end(), extra_.begin(), extra_.end());
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        detach_stdio();
        ::execvp("redis-server", argv.data());
        ::_exit(127);
      }
      if (wait_for([&] { return ping(); }, std::chrono::seconds(10))) return;
      kill();
    }
    throw std::runtime_error("redis-server did not start (is it installed?)");
  }
  bool ping() const {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) return false;  // died (port taken?)
    timeval tv{0, 200000};
    redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, tv);
    bool ok = false;
    if (c && !c->err) {
      auto* r = static_cast<redisReply*>(redisCommand(c, "PING"));
      ok = r && r->type == REDIS_REPLY_STATUS;
      if (r) freeReplyObject(r);
    }
    if (c) redisFree(c);
    return ok;
  }

  std::vector<std::string> extra_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace hpo::testing
