// A small synchronous Redis client over hiredis: one connection, owned values.
//
// Threading: a RedisClient owns one redisContext and is NOT thread-safe; give
// each thread its own (a blocking XREAD then only blocks that thread).
//
// Failure handling: every command has a deadline (redisSetTimeout). When a
// command fails at the connection level (timeout, reset, protocol error) the
// context is thrown away, because a timed-out context may still receive the
// late reply and would hand it to the next command. The next call reconnects,
// but not before an exponential back-off (50 ms doubling up to 2 s) has passed
// since the last failure, so a dead server is not hammered; calls inside the
// back-off window fail fast with kUnavailable. Commands are only ever built
// from argument vectors (redisCommandArgv): user data never reaches a format
// string. Nothing here throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/backoff.hpp"
#include "core/result.hpp"

struct redisContext;

namespace hpo::trials::redis {

class WorkerChannel;

// redis://[user:pass@]host[:port][/db][?query]
// unix:///path/to/socket[?db=N]
// redis-sentinel://[user:pass@]host[:port][,host[:port]...]/primary-name[/db][?query]
//
// A Sentinel URL names the Sentinels (port 26379 by default) and the name of
// the primary they watch: the client asks them where the primary is on every
// connect, checks that the node it reached really is the primary (ROLE), and
// drops a connection whose node was demoted (READONLY), so it follows a
// failover by itself. The user and password are the data nodes'; the
// Sentinels are asked without AUTH.
//
// query: replicas=N (WAIT for N replicas before a write is acknowledged; 1 by
// default for Sentinel URLs, else 0), replica_timeout_ms=T (2000) and
// missing_replicas=continue|pause: when fewer than N replicas are connected
// at all (one replica, just promoted), `continue` (the default) acknowledges
// with those there are and says so loudly (degraded: /healthz, metrics, the
// dashboard), `pause` acknowledges nothing until N are back.
struct RedisUrl {
  struct Endpoint {
    std::string host;
    int port = 0;
  };
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string unix_path;  // non-empty: connect over a unix socket
  std::string user;       // empty: AUTH with the password only
  std::string password;   // empty: no AUTH
  int db = 0;
  std::vector<Endpoint> sentinels;  // non-empty: ask these where `primary_name` is
  std::string primary_name;
  int wait_replicas = 0;  // acknowledged writes wait for this many replicas
  int replica_timeout_ms = 2000;
  bool pause_without_replicas = false;  // missing_replicas=pause
  // Non-empty: not Redis but the scheduler's worker endpoint at this URL
  // (http[s]://host[:port][/base], worker_channel.hpp), `password` being the
  // worker's token and `user` the worker's name. Set by hpo-worker
  // --scheduler, never parsed from a URL.
  std::string gateway;

  bool sentinel() const { return !sentinels.empty(); }

  static Result<RedisUrl> parse(std::string_view url);
  std::string to_string() const;  // without the password
};

// Whether a command line passes a Redis URL with a password (`--redis URL`
// or `--redis=URL`): every local user reads it in `ps` and /proc.
bool password_in_args(const std::vector<std::string>& args);

// One reply, owned (no hiredis pointers escape).
struct Reply {
  enum class Type { kNil, kInteger, kString, kStatus, kError, kArray };
  Type type = Type::kNil;
  std::int64_t integer = 0;
  std::string str;  // kString, kStatus, kError
  std::vector<Reply> elements;

  bool is_nil() const { return type == Type::kNil; }
  bool is_error() const { return type == Type::kError; }
  bool is_string() const { return type == Type::kString || type == Type::kStatus; }
  bool is_array() const { return type == Type::kArray; }
};

struct RedisClientOptions {
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds command_timeout{5000};
  std::chrono::milliseconds min_backoff{50};
  std::chrono::milliseconds max_backoff{2000};
};

class RedisClient {
 public:
  // Called after every successful connect (after AUTH/SELECT); an error fails
  // the connection. RedisStore loads its Functions library here.
  using OnConnect = std::function<Status(RedisClient&)>;

  explicit RedisClient(RedisUrl url, RedisClientOptions options = {});
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  void set_on_connect(OnConnect fn) { on_connect_ = std::move(fn); }

  // One command. A Redis error reply is returned as a Reply of type kError (the
  // caller decides what it means); connection problems are kUnavailable.
  // `timeout` overrides the command timeout for this call (blocking commands).
  Result<Reply> command(const std::vector<std::string>& argv,
                        std::chrono::milliseconds timeout = std::chrono::milliseconds{0});
  // Several commands in one round trip (not a transaction).
  Result<std::vector<Reply>> pipeline(const std::vector<std::vector<std::string>>& commands);

  // WAIT: how many replicas confirmed every write of this connection so far,
  // waiting at most `timeout` for `replicas` of them.
  Result<int> wait_replicas(int replicas, std::chrono::milliseconds timeout);
  // ROLE: how many replicas are connected to this node now (a primary's).
  Result<int> connected_replicas();

  bool connected() const { return ctx_ != nullptr || channel_ready_; }
  // The node this client is connected to (host:port), or was last; for a
  // Sentinel URL the primary the Sentinels named.
  const std::string& node() const { return node_; }
  // Drops the connection (tests; also used after a connection-level error).
  void disconnect();
  const RedisUrl& url() const { return url_; }

 private:
  Status ensure_connected();
  Status after_connect();               // on_connect, then the back-off starts afresh
  Error fail(const std::string& what);  // drops the context, schedules back-off
  Status set_timeout(std::chrono::milliseconds t);
  // Asks the Sentinels in turn where the primary is.
  Result<RedisUrl::Endpoint> ask_sentinels();
  Status check_primary();              // ROLE says master
  bool demoted(const Reply& r) const;  // a READONLY error on a Sentinel URL
  // RedisUrl::gateway: the commands go to the scheduler's worker endpoint.
  Result<std::vector<Reply>> relay(const std::vector<std::vector<std::string>>& commands,
                                   std::chrono::milliseconds timeout);
  std::unique_ptr<WorkerChannel> channel_;
  bool channel_ready_ = false;  // on_connect ran since the last failure

  std::size_t next_sentinel_ = 0;  // the one that answered last is asked first
  std::string node_;

  RedisUrl url_;
  RedisClientOptions options_;
  OnConnect on_connect_;
  redisContext* ctx_ = nullptr;
  Backoff backoff_;  // fresh while connected
  std::chrono::steady_clock::time_point next_attempt_{};
  bool in_on_connect_ = false;
};

}  // namespace hpo::trials::redis
