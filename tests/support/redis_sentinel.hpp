// A real Redis Sentinel deployment for tests, on free loopback ports: a
// primary and a replica (redis-server, AOF on, as RedisServer) and three
// redis-sentinel processes watching them with a quorum of two and a short
// down-after, each in its own temporary directory. kill_primary() is a kill -9
// of whichever node is the primary now; restart() brings a node back on its
// port, where the Sentinels make it a replica of the new primary.
#pragma once

#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/redis_server.hpp"

namespace hpo::testing {

// A reply as text: arrays (nested too) flattened, their elements joined by
// '\n'; integers as digits.
inline std::string reply_text(const redisReply* r) {
  if (r->type == REDIS_REPLY_ARRAY) {
    std::string joined;
    for (size_t i = 0; i < r->elements; ++i) joined += (i ? "\n" : "") + reply_text(r->element[i]);
    return joined;
  }
  if (r->type == REDIS_REPLY_INTEGER) return std::to_string(r->integer);
  return r->str ? std::string(r->str, r->len) : std::string();
}

// How many lines of `text` are exactly `line`.
inline int count_lines(const std::string& text, const std::string& line) {
  int n = 0;
  size_t at = 0;
  while (at <= text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    n += text.compare(at, nl - at, line) == 0;
    at = nl + 1;
  }
  return n;
}

// One command on a fresh connection; nullopt when the node does not answer.
inline std::optional<std::string> redis_query(int port, const std::vector<std::string>& args) {
  timeval tv{0, 300000};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port, tv);
  std::optional<std::string> out;
  if (c && !c->err && redisSetTimeout(c, tv) == REDIS_OK) {
    std::vector<const char*> argv;
    std::vector<size_t> len;
    for (const auto& a : args) {
      argv.push_back(a.data());
      len.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(
        redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), len.data()));
    if (r) {
      out = reply_text(r);
      freeReplyObject(r);
    }
  }
  if (c) redisFree(c);
  return out;
}

class SentinelCluster {
 public:
  static constexpr const char* kName = "hpo-primary";

  SentinelCluster() {
    nodes_.push_back(std::make_unique<RedisServer>());
    nodes_.push_back(std::make_unique<RedisServer>(
        std::vector<std::string>{"--replicaof", "127.0.0.1", std::to_string(nodes_[0]->port())}));
    for (int i = 0; i < 3; ++i) start_sentinel();
  }
  ~SentinelCluster() {
    for (auto& s : sentinels_) {
      ::kill(s.pid, SIGKILL);
      ::waitpid(s.pid, nullptr, 0);
      std::error_code ec;
      std::filesystem::remove_all(s.dir, ec);
    }
  }
  SentinelCluster(const SentinelCluster&) = delete;
  SentinelCluster& operator=(const SentinelCluster&) = delete;

  std::string url(const std::string& query = "") const {
    std::string hosts;
    for (const auto& s : sentinels_)
      hosts += (hosts.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(s.port);
    return "redis-sentinel://" + hosts + "/" + kName + (query.empty() ? "" : "?" + query);
  }
  RedisServer& node(int i) { return *nodes_.at(i); }
  int sentinel_port(int i) const { return sentinels_.at(i).port; }

  // Where the Sentinels (a majority of them, agreeing) say the primary is; 0 if they do not agree.
  int primary_port() const {
    std::vector<int> named;
    for (const auto& s : sentinels_) {
      auto r = redis_query(s.port, {"SENTINEL", "get-master-addr-by-name", kName});
      if (!r) continue;
      auto nl = r->find('\n');
      if (nl != std::string::npos) named.push_back(std::atoi(r->c_str() + nl + 1));
    }
    for (int p : named)
      if (std::count(named.begin(), named.end(), p) >= 2) return p;
    return 0;
  }
  int primary_index() const {
    const int p = primary_port();
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (nodes_[i]->port() == p) return static_cast<int>(i);
    return -1;
  }

  // Every Sentinel knows the replica and the two other Sentinels, and the
  // replica's link to the primary is up: a failover can happen.
  bool ready() const {
    const int p = primary_port();
    if (p == 0) return false;
    for (const auto& s : sentinels_) {
      auto replicas = redis_query(s.port, {"SENTINEL", "replicas", kName});
      auto others = redis_query(s.port, {"SENTINEL", "sentinels", kName});
      if (!replicas || count_lines(*replicas, "ip") < 1) return false;
      if (!others || count_lines(*others, "ip") < 2) return false;
    }
    for (const auto& n : nodes_) {
      if (n->port() == p) continue;
      auto info = redis_query(n->port(), {"INFO", "replication"});
      if (!info || info->find("master_link_status:up") == std::string::npos) return false;
      if (info->find("master_port:" + std::to_string(p)) == std::string::npos) return false;
    }
    return true;
  }

  // kill -9 of the node that is the primary now; its index.
  int kill_primary() {
    const int i = primary_index();
    if (i < 0) throw std::runtime_error("no primary to kill");
    nodes_[i]->kill();
    return i;
  }

  std::string logs() const {
    std::string out;
    for (const auto& n : nodes_) {
      std::ifstream in(n->dir() + "/redis.log");
      out += "--- redis " + std::to_string(n->port()) + " ---\n" +
             std::string(std::istreambuf_iterator<char>(in), {});
    }
    for (const auto& s : sentinels_) {
      std::ifstream in(s.dir + "/sentinel.log");
      out += "--- sentinel " + std::to_string(s.port) + " ---\n" +
             std::string(std::istreambuf_iterator<char>(in), {});
    }
    return out;
  }

 private:
  struct Sentinel {
    std::string dir;
    int port = 0;
    pid_t pid = -1;
  };

  void start_sentinel() {
    char tmpl[] = "/tmp/hpo-sentinel-XXXXXX";
    Sentinel s;
    s.dir = ::mkdtemp(tmpl);
    for (int tries = 0; tries < 5; ++tries) {
      s.port = free_loopback_port();
      {
        std::ofstream conf(s.dir + "/sentinel.conf");
        conf << "port " << s.port << "\nbind 127.0.0.1\ndir " << s.dir << "\nlogfile " << s.dir
             << "/sentinel.log\n"
             << "sentinel monitor " << kName << " 127.0.0.1 " << nodes_[0]->port() << " 2\n"
             << "sentinel down-after-milliseconds " << kName << " 1000\n"
             << "sentinel failover-timeout " << kName << " 10000\n"
             << "sentinel parallel-syncs " << kName << " 1\n";
      }
      s.pid = ::fork();
      if (s.pid == 0) {
        std::string conf = s.dir + "/sentinel.conf";
        detach_stdio();
        ::execlp("redis-sentinel", "redis-sentinel", conf.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
      }
      const int port = s.port;
      const pid_t pid = s.pid;
      if (wait_for(
              [&] {
                int status = 0;
                if (::waitpid(pid, &status, WNOHANG) == pid) return false;
                return redis_query(port, {"PING"}) == std::optional<std::string>("PONG");
              },
              std::chrono::seconds(10))) {
        sentinels_.push_back(s);
        return;
      }
      ::kill(s.pid, SIGKILL);
      ::waitpid(s.pid, nullptr, 0);
    }
    throw std::runtime_error(
        "redis-sentinel did not start (is the redis-sentinel package installed?)");
  }

  std::vector<std::unique_ptr<RedisServer>> nodes_;
  std::vector<Sentinel> sentinels_;
};

}  // namespace hpo::testing
