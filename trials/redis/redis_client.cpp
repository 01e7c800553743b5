#include "trials/redis/redis_client.hpp"

#include <fcntl.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <charconv>

#include "core/log.hpp"
#include "trials/redis/resp.hpp"
#include "trials/redis/worker_channel.hpp"

namespace hpo::trials::redis {

namespace {

Error bad_url(std::string_view url, const std::string& why) {
  return Error::invalid("redis", "bad Redis URL '" + std::string(url) + "': " + why);
}

std::string percent_decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    int v = 0;
    if (s[i] == '%' && i + 2 < s.size() &&
        std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16).ptr == s.data() + i + 3) {
      out.push_back(static_cast<char>(v));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

bool parse_int(std::string_view s, int& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

timeval to_timeval(std::chrono::milliseconds ms) {
  return timeval{static_cast<time_t>(ms.count() / 1000),
                 static_cast<suseconds_t>((ms.count() % 1000) * 1000)};
}

// argv/argvlen views for hiredis (binary-safe).
struct ArgvView {
  std::vector<const char*> argv;
  std::vector<size_t> len;
  explicit ArgvView(const std::vector<std::string>& args) {
    argv.reserve(args.size());
    len.reserve(args.size());
    for (const auto& a : args) {
      argv.push_back(a.data());
      len.push_back(a.size());
    }
  }
  int argc() const { return static_cast<int>(argv.size()); }
};

}  // namespace

namespace {

// host[:port] or [v6]:port; `why` is set on failure.
bool parse_endpoint(std::string_view hostport, int default_port, RedisUrl::Endpoint& out,
                    std::string& why) {
  std::string_view port;
  if (hostport.starts_with("[")) {  // [::1]:6379
    auto close = hostport.find(']');
    if (close == std::string_view::npos) {
      why = "unclosed '['";
      return false;
    }
    out.host = std::string(hostport.substr(1, close - 1));
    std::string_view after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') {
        why = "expected ':' after ']'";
        return false;
      }
      port = after.substr(1);
    }
  } else {
    auto colon = hostport.find(':');
    out.host = std::string(hostport.substr(0, colon));
    if (colon != std::string_view::npos) port = hostport.substr(colon + 1);
  }
  out.port = default_port;
  if (out.host.empty()) {
    why = "missing host";
    return false;
  }
  if (!port.empty() && (!parse_int(port, out.port) || out.port <= 0 || out.port > 65535)) {
    why = "bad port '" + std::string(port) + "'";
    return false;
  }
  return true;
}

// replicas=N&replica_timeout_ms=T
bool parse_query(std::string_view query, RedisUrl& out, std::string& why) {
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    auto eq = item.find('=');
    std::string_view name = item.substr(0, eq);
    std::string_view value =
        eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1);
    int v = 0;
    if (name == "replicas" && parse_int(value, v) && v >= 0 && v <= 16) {
      out.wait_replicas = v;
    } else if (name == "replica_timeout_ms" && parse_int(value, v) && v > 0 && v <= 600000) {
      out.replica_timeout_ms = v;
    } else if (name == "missing_replicas" && (value == "continue" || value == "pause")) {
      out.pause_without_replicas = value == "pause";
    } else {
      why = "bad query parameter '" + std::string(item) +
            "' (expected replicas=0..16, replica_timeout_ms=1..600000 or "
            "missing_replicas=continue|pause)";
      return false;
    }
  }
  return true;
}

}  // namespace

Result<RedisUrl> RedisUrl::parse(std::string_view url) {
  RedisUrl out;
  constexpr std::string_view kUnix = "unix://", kRedis = "redis://",
                             kSentinel = "redis-sentinel://";
  if (url.starts_with(kUnix)) {
    std::string_view rest = url.substr(kUnix.size());
    auto q = rest.find('?');
    out.unix_path = std::string(rest.substr(0, q));
    if (out.unix_path.empty() || out.unix_path[0] != '/')
      return bad_url(url, "expected unix:///absolute/path");
    if (q != std::string_view::npos) {
      std::string_view query = rest.substr(q + 1);
      if (!query.starts_with("db=") || !parse_int(query.substr(3), out.db) || out.db < 0)
        return bad_url(url, "the only query parameter is db=N");
    }
    return out;
  }
  const bool sentinel = url.starts_with(kSentinel);
  if (!sentinel && !url.starts_with(kRedis))
    return bad_url(url, "expected redis://, redis-sentinel:// or unix://");
  std::string_view rest = url.substr(sentinel ? kSentinel.size() : kRedis.size());
  std::string why;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    if (sentinel) out.wait_replicas = 1;
    if (!parse_query(rest.substr(q + 1), out, why)) return bad_url(url, why);
    rest = rest.substr(0, q);
  } else if (sentinel) {
    out.wait_replicas = 1;
  }
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    std::string_view userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    if (auto colon = userinfo.find(':'); colon != std::string_view::npos) {
      out.user = percent_decode(userinfo.substr(0, colon));
      out.password = percent_decode(userinfo.substr(colon + 1));
    } else {
      out.password = percent_decode(userinfo);  // redis://secret@host
    }
  }
  std::string_view hosts = rest, path;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    hosts = rest.substr(0, slash);
    path = rest.substr(slash + 1);
  }
  if (sentinel) {
    // path: primary-name[/db]
    auto slash = path.find('/');
    out.primary_name = std::string(path.substr(0, slash));
    if (out.primary_name.empty())
      return bad_url(url, "expected the primary's name after the Sentinels: /mymaster");
    path = slash == std::string_view::npos ? std::string_view{} : path.substr(slash + 1);
  }
  if (!path.empty() && (!parse_int(path, out.db) || out.db < 0))
    return bad_url(url, "the path must be a database number");
  if (!sentinel) {
    Endpoint e;
    if (!parse_endpoint(hosts, 6379, e, why)) return bad_url(url, why);
    out.host = e.host;
    out.port = e.port;
    return out;
  }
  while (true) {
    auto comma = hosts.find(',');
    Endpoint e;
    if (!parse_endpoint(hosts.substr(0, comma), 26379, e, why))
      return bad_url(url, "Sentinel " + std::to_string(out.sentinels.size() + 1) + ": " + why);
    out.sentinels.push_back(std::move(e));
    if (comma == std::string_view::npos) break;
    hosts = hosts.substr(comma + 1);
  }
  out.host.clear();  // where the primary is, the Sentinels say
  out.port = 0;
  return out;
}

bool password_in_args(const std::vector<std::string>& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string value;
    if (args[i] == "--redis" && i + 1 < args.size()) value = args[i + 1];
    if (args[i].rfind("--redis=", 0) == 0) value = args[i].substr(8);
    if (value.empty()) continue;
    auto url = RedisUrl::parse(value);
    if (url && !url->password.empty()) return true;
  }
  return false;
}

std::string RedisUrl::to_string() const {
  if (!gateway.empty()) return "the worker endpoint of " + gateway;
  std::string db_part = db ? std::to_string(db) : "";
  if (!unix_path.empty()) return "unix://" + unix_path + (db ? "?db=" + db_part : "");
  std::string auth = password.empty() ? "" : (user.empty() ? "***@" : user + ":***@");
  auto endpoint = [](const std::string& h, int p) {
    bool v6 = h.find(':') != std::string::npos;
    return (v6 ? "[" + h + "]" : h) + ":" + std::to_string(p);
  };
  if (sentinel()) {
    std::string hosts;
    for (const auto& s : sentinels) hosts += (hosts.empty() ? "" : ",") + endpoint(s.host, s.port);
    return "redis-sentinel://" + auth + hosts + "/" + primary_name + (db ? "/" + db_part : "");
  }
  return "redis://" + auth + endpoint(host, port) + (db ? "/" + db_part : "");
}

RedisClient::RedisClient(RedisUrl url, RedisClientOptions options)
    : url_(std::move(url)), options_(options), backoff_(options.min_backoff, options.max_backoff) {
  if (url_.gateway.empty()) return;
  auto channel =
      WorkerChannel::open(url_.gateway, url_.password, url_.user, options_.connect_timeout);
  if (channel)
    channel_ = std::move(*channel);
  else  // every call says why
    node_ = channel.error().message;
}

RedisClient::~RedisClient() {
  disconnect();
}

void RedisClient::disconnect() {
  if (ctx_) redisFree(ctx_);
  ctx_ = nullptr;
  channel_ready_ = false;
}

Error RedisClient::fail(const std::string& what) {
  if (backoff_.fresh())  // log the loss once, not every failed retry
    log_warn("redis connection failed", {{"redis", url_.to_string()}, {"error", what}});
  disconnect();
  next_attempt_ = std::chrono::steady_clock::now() + backoff_.next();
  return Error::unavailable("redis " + url_.to_string() + ": " + what);
}

Status RedisClient::set_timeout(std::chrono::milliseconds t) {
  if (redisSetTimeout(ctx_, to_timeval(t)) != REDIS_OK) return fail("cannot set timeout");
  return {};
}

Status RedisClient::ensure_connected() {
  if (connected()) return {};
  auto now = std::chrono::steady_clock::now();
  if (now < next_attempt_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next_attempt_ - now);
    return Error::unavailable("redis " + url_.to_string() + " unavailable; next try in " +
                              std::to_string(left.count()) + " ms");
  }
  if (!url_.gateway.empty()) {  // each call is a request of its own: nothing to open
    if (!channel_) return Error::invalid("scheduler", node_);
    channel_ready_ = true;
    return after_connect();
  }
  RedisUrl::Endpoint at{url_.host, url_.port};
  if (url_.sentinel()) {
    auto primary = ask_sentinels();
    if (!primary) return fail(primary.error().message);
    at = *primary;
  }
  std::string node = url_.unix_path.empty() ? at.host + ":" + std::to_string(at.port) : "";
  if (url_.sentinel() && !node_.empty() && node != node_)
    log_warn("following a Redis failover: the Sentinels name a new primary",
             {{"redis", url_.to_string()}, {"was", node_}, {"now", node}});
  node_ = node;
  timeval tv = to_timeval(options_.connect_timeout);
  ctx_ = url_.unix_path.empty() ? redisConnectWithTimeout(at.host.c_str(), at.port, tv)
                                : redisConnectUnixWithTimeout(url_.unix_path.c_str(), tv);
  if (!ctx_) return fail("cannot allocate a context");
  // hiredis opens its socket without close-on-exec: a trial started by this
  // process must not inherit an authenticated connection.
  if (ctx_->fd >= 0) ::fcntl(ctx_->fd, F_SETFD, FD_CLOEXEC);
  if (ctx_->err)
    return fail("connect" + (url_.sentinel() ? " to " + node_ : std::string()) + ": " +
                ctx_->errstr);
  if (auto s = set_timeout(options_.command_timeout); !s) return s;

  auto init = [&](const std::vector<std::string>& argv, const char* what) -> Status {
    auto r = command(argv);
    if (!r) return r.error();  // the context is already dropped
    if (r->is_error()) return fail(std::string(what) + ": " + r->str);
    return {};
  };
  if (!url_.password.empty()) {
    std::vector<std::string> auth{"AUTH"};
    if (!url_.user.empty()) auth.push_back(url_.user);
    auth.push_back(url_.password);
    if (auto s = init(auth, "AUTH"); !s) return s;
  }
  if (url_.db != 0) {
    if (auto s = init({"SELECT", std::to_string(url_.db)}, "SELECT"); !s) return s;
  }
  if (url_.sentinel()) {
    if (auto s = check_primary(); !s) return s;
  }
  return after_connect();
}

Status RedisClient::after_connect() {
  if (on_connect_ && !in_on_connect_) {
    in_on_connect_ = true;
    Status s = on_connect_(*this);
    in_on_connect_ = false;
    if (!s) {
      if (connected()) fail(s.error().message);
      return s;
    }
  }
  if (!backoff_.fresh()) log_info("redis reconnected", {{"redis", url_.to_string()}});
  backoff_.reset();
  return {};
}

Result<std::vector<Reply>> RedisClient::relay(const std::vector<std::vector<std::string>>& commands,
                                              std::chrono::milliseconds timeout) {
  if (auto s = ensure_connected(); !s) return s.error();
  auto r = channel_->send(commands, timeout.count() > 0 ? timeout : options_.command_timeout);
  if (!r && r.error().code == ErrorCode::kUnavailable) return fail(r.error().message);
  return r;
}

Result<Reply> RedisClient::command(const std::vector<std::string>& argv,
                                   std::chrono::milliseconds timeout) {
  if (!url_.gateway.empty()) {
    auto r = relay({argv}, timeout);
    if (!r) return r.error();
    return std::move(r->front());
  }
  if (auto s = ensure_connected(); !s) return s.error();
  bool custom = timeout.count() > 0;
  if (custom) {
    if (auto s = set_timeout(timeout); !s) return s.error();
  }
  ArgvView v(argv);
  auto* r = static_cast<redisReply*>(redisCommandArgv(ctx_, v.argc(), v.argv.data(), v.len.data()));
  if (!r) {
    std::string err = ctx_->errstr[0] ? ctx_->errstr : "no reply";
    return fail(argv.empty() ? err : argv[0] + ": " + err);
  }
  Reply out = from_hiredis(r);
  freeReplyObject(r);
  if (demoted(out)) return fail(out.str);
  if (custom) {
    if (auto s = set_timeout(options_.command_timeout); !s) return s.error();
  }
  return out;
}

Result<std::vector<Reply>> RedisClient::pipeline(
    const std::vector<std::vector<std::string>>& commands) {
  if (!url_.gateway.empty()) return relay(commands, std::chrono::milliseconds{0});
  if (auto s = ensure_connected(); !s) return s.error();
  for (const auto& argv : commands) {
    ArgvView v(argv);
    if (redisAppendCommandArgv(ctx_, v.argc(), v.argv.data(), v.len.data()) != REDIS_OK)
      return fail(std::string("pipeline: ") + ctx_->errstr);
  }
  std::vector<Reply> out;
  out.reserve(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(ctx_, &raw) != REDIS_OK || !raw)
      return fail(std::string("pipeline: ") + (ctx_->errstr[0] ? ctx_->errstr : "no reply"));
    auto* r = static_cast<redisReply*>(raw);
    out.push_back(from_hiredis(r));
    freeReplyObject(r);
  }
  for (const auto& r : out)
    if (demoted(r)) return fail(r.str);
  return out;
}

Result<int> RedisClient::wait_replicas(int replicas, std::chrono::milliseconds timeout) {
  auto r = command({"WAIT", std::to_string(replicas), std::to_string(timeout.count())},
                   timeout + options_.command_timeout);
  if (!r) return r.error();
  if (r->type != Reply::Type::kInteger)
    return Error::internal("WAIT: unexpected reply " + (r->is_error() ? r->str : ""));
  return static_cast<int>(r->integer);
}

Result<int> RedisClient::connected_replicas() {
  auto r = command({"ROLE"});
  if (!r) return r.error();
  if (r->is_error()) return Error::internal("ROLE: " + r->str);
  if (r->elements.size() < 3 || r->elements[0].str != "master") return 0;
  return static_cast<int>(r->elements[2].elements.size());
}

bool RedisClient::demoted(const Reply& r) const {
  return url_.sentinel() && r.is_error() && r.str.rfind("READONLY", 0) == 0;
}

Result<RedisUrl::Endpoint> RedisClient::ask_sentinels() {
  const auto timeout =
      to_timeval(std::min(options_.connect_timeout, std::chrono::milliseconds{1000}));
  std::string errors;
  for (std::size_t i = 0; i < url_.sentinels.size(); ++i) {
    const std::size_t k = (next_sentinel_ + i) % url_.sentinels.size();
    const auto& s = url_.sentinels[k];
    const std::string name = s.host + ":" + std::to_string(s.port);
    redisContext* c = redisConnectWithTimeout(s.host.c_str(), s.port, timeout);
    if (c && c->fd >= 0) ::fcntl(c->fd, F_SETFD, FD_CLOEXEC);
    std::string why;
    if (!c || c->err) {
      why = c ? c->errstr : "cannot allocate a context";
    } else if (redisSetTimeout(c, timeout) != REDIS_OK) {
      why = "cannot set timeout";
    } else {
      const char* argv[] = {"SENTINEL", "get-master-addr-by-name", url_.primary_name.c_str()};
      const size_t len[] = {8, 23, url_.primary_name.size()};
      auto* r = static_cast<redisReply*>(redisCommandArgv(c, 3, argv, len));
      if (!r) {
        why = c->errstr[0] ? c->errstr : "no reply";
      } else {
        Reply reply = from_hiredis(r);
        freeReplyObject(r);
        int port = 0;
        if (reply.is_error()) {
          why = reply.str;
        } else if (!reply.is_array() || reply.elements.size() != 2) {
          why = "does not know a primary named '" + url_.primary_name + "'";
        } else if (!parse_int(reply.elements[1].str, port) || port <= 0 || port > 65535) {
          why = "named a bad port '" + reply.elements[1].str + "'";
        } else {
          redisFree(c);
          next_sentinel_ = k;
          return RedisUrl::Endpoint{reply.elements[0].str, port};
        }
      }
    }
    if (c) redisFree(c);
    errors += (errors.empty() ? "" : "; ") + ("Sentinel " + name + ": " + why);
  }
  return Error::unavailable("no Sentinel named the primary '" + url_.primary_name + "' (" + errors +
                            ")");
}

Status RedisClient::check_primary() {
  auto r = command({"ROLE"});
  if (!r) return r.error();
  if (r->is_error()) return fail("ROLE: " + r->str);
  const std::string role = r->is_array() && !r->elements.empty() ? r->elements[0].str : "";
  if (role != "master")
    return fail("the node the Sentinels named (" + node_ + ") is a " +
                (role.empty() ? std::string("node of unknown role") : role) +
                ", not the primary: a failover is under way");
  return {};
}

}  // namespace hpo::trials::redis
