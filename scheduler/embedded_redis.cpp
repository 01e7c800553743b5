#include "scheduler/embedded_redis.hpp"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "core/log.hpp"
#include "trials/redis/acl.hpp"

namespace hpo::scheduler {

namespace {

bool bind_probe(int port, int* bound_port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  if (ok && bound_port) {
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    *bound_port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return ok;
}

bool ping(int port, const std::string& user, const std::string& password) {
  timeval tv{0, 200000};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port, tv);
  bool ok = false;
  if (c && !c->err) {
    redisSetTimeout(c, tv);
    auto* a = static_cast<redisReply*>(
        redisCommand(c, "AUTH %b %b", user.data(), user.size(), password.data(), password.size()));
    if (a) freeReplyObject(a);
    auto* r = static_cast<redisReply*>(redisCommand(c, "PING"));
    ok = r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
  }
  if (c) redisFree(c);
  return ok;
}

std::string random_password() {
  std::random_device rd;
  std::string pw;
  for (int i = 0; i < 8; ++i) pw += fmt::format("{:08x}", rd());
  return pw;
}

// The password of `user` in a config file's `user NAME on >PASSWORD ...` line.
std::string password_of(const std::string& text, const std::string& user) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string w, name;
    if (!(words >> w) || w != "user" || !(words >> name) || name != user) continue;
    while (words >> w)
      if (w.size() > 32 && w[0] == '>') return w.substr(1);
  }
  return "";
}

}  // namespace

// The users' passwords: made once per data directory and kept in its 0600
// config file, so that a restarted scheduler (and the workers that know the
// URL) keep using the same ones. The key prefix the worker may touch is
// written anew each time. A file of an older hpo (one requirepass) is replaced.
Result<EmbeddedRedis::Users> EmbeddedRedis::users_for(const std::string& data_dir,
                                                      const std::string& prefix) {
  const std::string conf = data_dir + "/redis.conf";
  std::ifstream in(conf);
  std::ostringstream old;
  old << in.rdbuf();
  Users users{password_of(old.str(), trials::redis::kSchedulerUser),
              password_of(old.str(), trials::redis::kWorkerUser)};
  if (users.scheduler.empty()) users.scheduler = random_password();
  if (users.worker.empty()) users.worker = random_password();
  int fd = ::open(conf.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Error::unavailable("cannot write " + conf);
  ::fchmod(fd, 0600);
  const std::string text = fmt::format(
      "# written by hpo-scheduler: the embedded Redis's users (docs/operations.md)\n"
      "user default {}\n"
      "user {} on >{} {}\n"
      "user {} on >{} {}\n",
      trials::redis::default_acl_rules(), trials::redis::kSchedulerUser, users.scheduler,
      trials::redis::scheduler_acl_rules(), trials::redis::kWorkerUser, users.worker,
      trials::redis::worker_acl_rules(prefix));
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok) return Error::unavailable("cannot write " + conf);
  return users;
}

int pick_free_port() {
  int port = 0;
  return bind_probe(0, &port) ? port : 0;
}

bool port_is_free(int port) {
  return bind_probe(port, nullptr);
}

Result<std::unique_ptr<EmbeddedRedis>> EmbeddedRedis::start(const std::string& data_dir,
                                                            const std::string& prefix, int port) {
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec)
    return Error::invalid("--data-dir",
                          fmt::format("cannot create {}: {}", data_dir, ec.message()));
  std::string port_file = data_dir + "/redis.port";
  if (port == 0) {
    std::ifstream in(port_file);
    int remembered = 0;
    if (in >> remembered && remembered > 0) {
      // Busy most likely means our previous Redis is still shutting down
      // (after a scheduler crash it gets SIGTERM through PDEATHSIG): give it
      // a moment, since workers reconnect to the URL they already know.
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
      while (!port_is_free(remembered) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // poll interval
      if (port_is_free(remembered))
        port = remembered;
      else
        log_warn("the embedded Redis's previous port is taken; workers must be restarted",
                 {{"port", std::to_string(remembered)}});
    }
  }
  if (port == 0) port = pick_free_port();
  if (port == 0) return Error::unavailable("no free TCP port on 127.0.0.1 for the embedded Redis");
  auto users = users_for(data_dir, prefix);
  if (!users) return users.error();
  std::unique_ptr<EmbeddedRedis> r(new EmbeddedRedis(data_dir, port, std::move(*users)));
  if (auto st = r->spawn(); !st) return st.error();
  std::ofstream(port_file) << port << "\n";
  return r;
}

Status EmbeddedRedis::spawn() {
  std::string port_s = std::to_string(port_);
  std::string log_file = data_dir_ + "/redis.log";
  // The config file first (it holds the password, kept out of argv and `ps`).
  std::vector<std::string> args = {"redis-server", data_dir_ + "/redis.conf", "--port", port_s,
                                   "--bind", "127.0.0.1", "--dir", data_dir_, "--appendonly", "yes",
                                   "--appendfsync", "always", "--save", "", "--logfile", log_file,
                                   "--daemonize", "no", "--protected-mode", "yes",
                                   // Per-command latency histograms cost a clock read and a
                                   // record on every command, thousands inside each batch;
                                   // INFO commandstats still counts calls and time.
                                   "--latency-tracking", "no"};
  SpawnOptions options;
  options.argv = std::move(args);
  for (char** e = environ; *e; ++e) options.env.emplace_back(*e);
  options.output = SpawnOptions::Output::kNull;  // it logs to log_file
  // A scheduler killed with -9 takes its Redis down cleanly (Redis fsyncs and exits).
  options.death_signal = SIGTERM;
  auto child = ChildProcess::spawn(options);
  if (!child)
    return Error::unavailable(
        fmt::format("cannot start redis-server ({}); is it installed?", child.error().message));
  child_.emplace(std::move(*child));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < deadline) {
    if (child_->poll(0, {})) {
      const int status = child_->exit_status().value_or(-1);
      child_.reset();
      return Error::unavailable(fmt::format(
          "redis-server exited at start (status {}); is it installed? see {}", status, log_file));
    }
    if (ping(port_, trials::redis::kSchedulerUser, users_.scheduler)) {
      log_info("embedded redis ready", {{"port", port_s}, {"dir", data_dir_}});
      return {};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // poll interval
  }
  stop();
  return Error::unavailable("redis-server did not answer within 15 s; see " + log_file);
}

std::string EmbeddedRedis::url() const {
  return fmt::format("redis://{}:{}@127.0.0.1:{}", trials::redis::kSchedulerUser, users_.scheduler,
                     port_);
}

std::string EmbeddedRedis::worker_url() const {
  return fmt::format("redis://{}:{}@127.0.0.1:{}", trials::redis::kWorkerUser, users_.worker,
                     port_);
}

Result<bool> EmbeddedRedis::restart_if_dead() {
  if (child_) {
    if (!child_->poll(0, {})) return false;
    child_.reset();
  }
  log_warn("embedded redis died; restarting it", {{"port", std::to_string(port_)}});
  if (auto st = spawn(); !st) return st.error();
  return true;
}

void EmbeddedRedis::stop() {
  if (!child_) return;
  child_->signal_group(SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  // poll() waits up to 20 ms at a time for the exit (there is no output to read).
  while (std::chrono::steady_clock::now() < deadline)
    if (child_->poll(20, {})) break;
  child_.reset();  // still running: SIGKILL to its group, reaped
}

EmbeddedRedis::~EmbeddedRedis() {
  stop();
}

}  // namespace hpo::scheduler
