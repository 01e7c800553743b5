// RedisStore: the C++ half of the Redis persistence layer. This file holds the
// connection and what the pool shares through it (the deployment hash: the
// artifact folder, the limits), the loading of the Functions library, the
// wait for replicas and fcall; the roles' methods are in the other
// redis_store_*.cpp files, one concern each, so that each reads on its own.
//
// Transitions go through FCALL (functions/*.lua) so each is atomic inside
// Redis; these files only encode arguments, decode hashes into the domain
// structs and map refusals to ErrorCodes. Records kept as JSON (params,
// metrics, reports, attempts, worker entries) are encoded and decoded by
// their one codec (trials/record_json.hpp); sweeps and trials are hashes,
// whose layout is read in redis_store_codec.cpp. Numbers whose exact value
// matters (objective values, metrics) are formatted there (shortest round-trip
// text) and stored as text by the Lua side, which never re-encodes them
// through cjson's doubles.
#include "trials/redis/redis_store.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/log.hpp"
#include "trials/artifact_dir.hpp"
#include "trials/record_names.hpp"
#include "trials/redis/hpo_functions_lua.hpp"
#include "trials/redis/redis_store_codec.hpp"

namespace hpo::trials::redis {

using detail::refusal;

RedisStore::RedisStore(RedisStoreConfig config)
    : config_(std::move(config)),
      client_(config_.url, RedisClientOptions{.connect_timeout = config_.connect_timeout,
                                              .command_timeout = config_.command_timeout}) {
  client_.set_on_connect([this](RedisClient& c) { return load_functions(c); });
  if (!config_.artifact_dir.empty()) files_.emplace(config_.artifact_dir);
}

Result<std::unique_ptr<RedisStore>> RedisStore::open(std::string_view url, std::string prefix,
                                                     std::string artifact_dir) {
  auto parsed = RedisUrl::parse(url);
  if (!parsed) return parsed.error();
  RedisStoreConfig config;
  config.url = std::move(*parsed);
  config.prefix = std::move(prefix);
  config.artifact_dir = std::move(artifact_dir);
  return std::make_unique<RedisStore>(std::move(config));
}

Result<std::string> RedisStore::announced_artifact_dir() {
  auto r = client_.command({"HGET", key("deployment"), "artifact_dir"});
  if (!r) return r.error();
  if (r->is_error()) return refusal(r->str);
  return r->is_nil() ? std::string() : r->str;
}

void RedisStore::use_artifact_dir(const std::string& dir) {
  config_.artifact_dir = dir;
  if (dir.empty())
    files_.reset();
  else
    files_.emplace(dir);
}

Status RedisStore::announce_artifact_dir(const std::string& dir, const std::string& marker) {
  auto r = dir.empty()
               ? client_.command({"HDEL", key("deployment"), "artifact_dir", "artifact_marker"})
               : client_.command(
                     {"HSET", key("deployment"), "artifact_dir", dir, "artifact_marker", marker});
  if (!r) return r.error();
  if (r->is_error()) return refusal(r->str);
  return {};
}

Status RedisStore::adopt_pool_artifact_dir(const std::string& own) {
  auto r = client_.command({"HMGET", key("deployment"), "artifact_dir", "artifact_marker"});
  if (!r) return r.error();
  if (r->is_error()) return refusal(r->str);
  const std::string announced =
      r->elements.size() == 2 && !r->elements[0].is_nil() ? r->elements[0].str : "";
  const std::string marker =
      r->elements.size() == 2 && !r->elements[1].is_nil() ? r->elements[1].str : "";
  const std::string dir = own.empty() ? announced : own;
  if (dir.empty()) {
    use_artifact_dir("");
    return {};
  }
  if (own.empty())
    if (auto st = check_artifact_root("the scheduler's --artifacts", dir); !st)
      return Error::unavailable(
          st.error().message +
          " on this host: mount it at that path, or pass --artifacts with where it is mounted");
  if (!marker.empty())
    if (auto st = check_marker(dir, marker); !st) return st;
  use_artifact_dir(dir);
  return {};
}

Result<std::int64_t> RedisStore::now_ms() {
  auto r = client_.command({"TIME"});
  if (!r) return r.error();
  if (r->is_error()) return refusal(r->str);
  if (r->elements.size() != 2) return Error::internal("TIME: unexpected reply");
  return std::stoll(r->elements[0].str) * 1000 + std::stoll(r->elements[1].str) / 1000;
}

Status RedisStore::announce_limits(const PoolLimits& limits) {
  auto at_least = [](std::int64_t v, std::int64_t low) { return std::to_string(std::max(low, v)); };
  auto r = client_.command(
      {"HSET", key("deployment"), "max_report_bytes", at_least(limits.max_report_bytes, 0),
       "max_releases", at_least(limits.max_releases, 0), "max_event_bytes",
       at_least(limits.max_event_bytes, 64), "max_events", at_least(limits.max_events, 1),
       "project_store_bytes", at_least(limits.project_store_bytes, 0), "project_file_bytes",
       at_least(limits.project_file_bytes, 0)});
  if (!r) return r.error();
  if (r->is_error()) return refusal(r->str);
  return {};
}

std::string RedisStore::key(std::string_view suffix) const {
  return config_.prefix + std::string(suffix);
}

namespace {

// {'a', 'b'}: names as a Lua list; {a = 'a', b = 'b'}: as a table by name.
std::string lua_list(std::span<const char* const> names) {
  std::string out = "{";
  for (std::size_t i = 0; i < names.size(); ++i)
    out += fmt::format("{}'{}'", i ? ", " : "", names[i]);
  return out + "}";
}
std::string lua_table(std::span<const char* const> names) {
  std::string out = "{";
  for (std::size_t i = 0; i < names.size(); ++i)
    out += fmt::format("{}{} = '{}'", i ? ", " : "", names[i], names[i]);
  return out + "}";
}

// The records' names (trials/record_names.hpp) as Lua tables, written into
// the library after its first file (the schema), ahead of every function.
// Plain table constructors: a library's top level, run at FUNCTION LOAD,
// has no standard library (not even ipairs).
std::string names_prelude() {
  std::string out =
      "\n-- The records' names, written in from trials/record_names.hpp (RedisStore): their one\n"
      "-- spelling. TrialState.running is 'running'.\n";
  out += "local kTrialStates = " + lua_list(kTrialStateNames.all()) + "\n";
  out += "local TrialState = " + lua_table(kTrialStateNames.all()) + "\n";
  out += "local SweepState = " + lua_table(kSweepStateNames.all()) + "\n";
  out += "local Stage = " + lua_table(kSweepStageNames.all()) + "\n";
  out += "local Role = " + lua_table(kTrialRoleNames.all()) + "\n";
  out += "local Control = " + lua_table(kControlNames.all()) + "\n";
  return out;
}

}  // namespace

const std::string& functions_code() {
  static const std::string text = [] {
    std::string out;
    for (const char* part : kFunctionsLuaParts) {
      const bool schema = out.empty();
      out += part;
      if (schema) out += names_prelude();
    }
    return out;
  }();
  return text;
}

int functions_version(std::string_view code) {
  constexpr std::string_view kTag = "-- hpo-functions-version: ";
  const auto at = code.find(kTag);
  if (at == std::string_view::npos || at > 256) return 1;  // before versions were written
  return std::atoi(std::string(code.substr(at + kTag.size(), 12)).c_str());
}

// Loads the library unless the server already holds this exact code (so that
// a reconnect does not append another copy of the library to the AOF), and
// never over a newer version's: an hpo older than the one that loaded them
// is refused with both versions named, and the server keeps the newer ones.
Status RedisStore::load_functions(RedisClient& c) {
  auto list = c.command({"FUNCTION", "LIST", "LIBRARYNAME", kFunctionsLibraryName, "WITHCODE"});
  if (!list) return list.error();
  if (list->is_error()) return refusal(list->str);
  const int mine = functions_version(functions_code());
  for (const auto& lib : list->elements) {
    for (size_t i = 0; i + 1 < lib.elements.size(); i += 2) {
      const Reply& field = lib.elements[i];
      if (field.str != "library_code") continue;
      const std::string& held = lib.elements[i + 1].str;
      if (held == functions_code()) return {};
      if (const int theirs = functions_version(held); theirs > mine)
        return Error::conflict(fmt::format(
            "the Redis at {} holds hpo's functions version {}, newer than this program's {}: "
            "upgrade this program to the hpo release the scheduler runs (it does not replace "
            "newer functions)",
            config_.url.to_string(), theirs, mine));
    }
  }
  auto load = c.command({"FUNCTION", "LOAD", "REPLACE", functions_code()});
  if (!load) return load.error();
  // A worker's Redis user may not load Functions (trials/redis/acl.hpp): the
  // scheduler of this release does, and the worker retries until it has.
  if (load->is_error() && load->str.rfind("NOPERM", 0) == 0)
    return Error::unavailable(fmt::format(
        "the Redis at {} does not hold hpo's functions version {} and this program's Redis user "
        "may not load them: start the hpo-scheduler of this release, which does",
        config_.url.to_string(), mine));
  if (load->is_error()) return refusal(load->str);
  return {};
}

Status RedisStore::replicated(const std::string& what) {
  const int wanted = config_.url.wait_replicas;
  if (wanted <= 0) return {};
  const std::chrono::milliseconds timeout{config_.url.replica_timeout_ms};
  const auto now = std::chrono::steady_clock::now();
  // Degraded (fewer replicas connected than wanted, missing_replicas=continue):
  // until the recheck, wait for those there are, without asking ROLE again.
  const bool degraded = degraded_replicas_ >= 0 && now < degraded_recheck_;
  const int want = degraded ? degraded_replicas_ : wanted;
  Result<int> got = 0;
  if (want > 0) got = client_.wait_replicas(want, timeout);
  if (!got) return got.error();
  if (*got >= wanted) {
    if (degraded_replicas_ >= 0)
      log_info("Redis replicas back: acknowledged writes wait for all of them again",
               {{"redis", client_.node()}, {"replicas", std::to_string(wanted)}});
    degraded_replicas_ = -1;
    return {};
  }
  if (degraded && *got >= want) return {};
  if (!config_.url.pause_without_replicas) {
    auto connected = client_.connected_replicas();
    if (!connected) return connected.error();
    if (*connected < wanted) {
      // Wait for those there are (a reconnected one included), then go on degraded.
      if (*got < *connected) got = client_.wait_replicas(*connected, timeout);
      if (!got) return got.error();
      if (*got >= *connected) {
        if (degraded_replicas_ != *connected)
          log_warn(
              "Redis has fewer replicas than acknowledged writes want: going on with those "
              "there are (missing_replicas=continue); a failover now can lose the latest "
              "writes",
              {{"redis", client_.node()},
               {"replicas", std::to_string(*connected)},
               {"wanted", std::to_string(wanted)}});
        degraded_replicas_ = *connected;
        degraded_recheck_ = now + std::chrono::seconds(5);
        return {};
      }
    } else if (want < wanted) {
      // Replicas are back: the full rule again.
      degraded_replicas_ = -1;
      got = client_.wait_replicas(wanted, timeout);
      if (!got) return got.error();
      if (*got >= wanted) {
        log_info("Redis replicas back: acknowledged writes wait for all of them again",
                 {{"redis", client_.node()}, {"replicas", std::to_string(wanted)}});
        return {};
      }
    }
  }
  degraded_replicas_ = -1;
  return Error::unavailable(fmt::format(
      "{} reached the Redis primary {} but only {} of {} replicas confirmed it within {} ms, so a "
      "failover could lose it; retry (a submit with the same Idempotency-Key makes no second "
      "sweep)",
      what, client_.node(), *got, wanted, timeout.count()));
}

Result<StoreHealth> RedisStore::health() {
  StoreHealth h;
  h.replicas_wanted = config_.url.wait_replicas;
  if (h.replicas_wanted <= 0) return h;
  auto connected = client_.connected_replicas();
  if (!connected) return connected.error();
  h.replicas = *connected;
  h.pauses = config_.url.pause_without_replicas;
  if (h.replicas < h.replicas_wanted)
    h.degraded = fmt::format(
        "Redis {} has {} of the {} replicas acknowledged writes wait for: {}", client_.node(),
        h.replicas, h.replicas_wanted,
        h.pauses ? "writes are not acknowledged until they are back (missing_replicas=pause)"
                 : "writes are acknowledged with fewer copies, and a failover now can lose the "
                   "latest of them (missing_replicas=continue)");
  return h;
}

Result<Reply> RedisStore::fcall(const std::string& name, std::vector<std::string> args) {
  std::vector<std::string> argv;
  argv.reserve(args.size() + 4);
  argv.insert(argv.end(), {"FCALL", "hpo_" + name, "0", config_.prefix});
  for (auto& a : args) argv.push_back(std::move(a));
  auto r = client_.command(argv);
  if (r && r->is_error() && r->str.find("Function not found") != std::string::npos) {
    // Someone flushed the functions (FUNCTION FLUSH, a fresh server behind a
    // proxy): load again and retry once.
    if (auto s = load_functions(client_); !s) return s.error();
    r = client_.command(argv);
  }
  if (!r) return r.error();
  if (r->is_error()) return refusal(r->str);
  return r;
}

}  // namespace hpo::trials::redis
