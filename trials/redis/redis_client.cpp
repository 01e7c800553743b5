#include "trials/redis/redis_client.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <charconv>

#include "core/log.hpp"

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

Reply convert(const redisReply* r) {
  Reply out;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out.type = Reply::Type::kString;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = Reply::Type::kStatus;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = Reply::Type::kError;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = Reply::Type::kInteger;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = Reply::Type::kArray;
      out.elements.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(convert(r->element[i]));
      break;
    default:
      out.type = Reply::Type::kNil;
  }
  return out;
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

Result<RedisUrl> RedisUrl::parse(std::string_view url) {
  RedisUrl out;
  constexpr std::string_view kUnix = "unix://", kRedis = "redis://";
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
  if (!url.starts_with(kRedis)) return bad_url(url, "expected redis:// or unix://");
  std::string_view rest = url.substr(kRedis.size());
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
  std::string_view hostport = rest;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    hostport = rest.substr(0, slash);
    std::string_view db = rest.substr(slash + 1);
    if (!db.empty() && (!parse_int(db, out.db) || out.db < 0))
      return bad_url(url, "the path must be a database number");
  }
  std::string_view port;
  if (hostport.starts_with("[")) {  // [::1]:6379
    auto close = hostport.find(']');
    if (close == std::string_view::npos) return bad_url(url, "unclosed '['");
    out.host = std::string(hostport.substr(1, close - 1));
    std::string_view after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return bad_url(url, "expected ':' after ']'");
      port = after.substr(1);
    }
  } else {
    auto colon = hostport.find(':');
    out.host = std::string(hostport.substr(0, colon));
    if (colon != std::string_view::npos) port = hostport.substr(colon + 1);
  }
  if (out.host.empty()) return bad_url(url, "missing host");
  if (!port.empty() && (!parse_int(port, out.port) || out.port <= 0 || out.port > 65535))
    return bad_url(url, "bad port");
  return out;
}

std::string RedisUrl::to_string() const {
  std::string db_part = db ? std::to_string(db) : "";
  if (!unix_path.empty()) return "unix://" + unix_path + (db ? "?db=" + db_part : "");
  std::string auth = password.empty() ? "" : (user.empty() ? "***@" : user + ":***@");
  bool v6 = host.find(':') != std::string::npos;
  return "redis://" + auth + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port) +
         (db ? "/" + db_part : "");
}

RedisClient::RedisClient(RedisUrl url, RedisClientOptions options)
    : url_(std::move(url)), options_(options), backoff_(options.min_backoff, options.max_backoff) {}

RedisClient::~RedisClient() {
  disconnect();
}

void RedisClient::disconnect() {
  if (ctx_) redisFree(ctx_);
  ctx_ = nullptr;
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
  if (ctx_) return {};
  auto now = std::chrono::steady_clock::now();
  if (now < next_attempt_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next_attempt_ - now);
    return Error::unavailable("redis " + url_.to_string() + " unavailable; next try in " +
                              std::to_string(left.count()) + " ms");
  }
  timeval tv = to_timeval(options_.connect_timeout);
  ctx_ = url_.unix_path.empty() ? redisConnectWithTimeout(url_.host.c_str(), url_.port, tv)
                                : redisConnectUnixWithTimeout(url_.unix_path.c_str(), tv);
  if (!ctx_) return fail("cannot allocate a context");
  if (ctx_->err) return fail(std::string("connect: ") + ctx_->errstr);
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
  if (on_connect_ && !in_on_connect_) {
    in_on_connect_ = true;
    Status s = on_connect_(*this);
    in_on_connect_ = false;
    if (!s) {
      if (ctx_) fail(s.error().message);
      return s;
    }
  }
  if (!backoff_.fresh()) log_info("redis reconnected", {{"redis", url_.to_string()}});
  backoff_.reset();
  return {};
}

Result<Reply> RedisClient::command(const std::vector<std::string>& argv,
                                   std::chrono::milliseconds timeout) {
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
  Reply out = convert(r);
  freeReplyObject(r);
  if (custom) {
    if (auto s = set_timeout(options_.command_timeout); !s) return s.error();
  }
  return out;
}

Result<std::vector<Reply>> RedisClient::pipeline(
    const std::vector<std::vector<std::string>>& commands) {
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
    out.push_back(convert(r));
    freeReplyObject(r);
  }
  return out;
}

}  // namespace hpo::trials::redis
