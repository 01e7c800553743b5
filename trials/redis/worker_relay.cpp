#include "trials/redis/worker_relay.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/log.hpp"
#include "core/text.hpp"
#include "trials/redis/resp.hpp"

namespace hpo::trials::redis {

namespace {

// The error reply a worker gets for a call that does not run.
Reply unauthorized_reply(const std::string& why) {
  Reply r;
  r.type = Reply::Type::kError;
  r.str = "UNAUTHORIZED " + why;
  return r;
}

Error refused(const std::string& what, const std::string& why) {
  return Error{ErrorCode::kUnauthorized,
               "the worker endpoint does not run " + what + " for a worker: " + why,
               {}};
}

// The worker Functions: where their worker argument is (a[i], a[1] being
// the prefix) and whether they change anything.
struct WorkerFunction {
  int worker_at;
  bool writes;
};
const std::map<std::string, WorkerFunction>& worker_functions() {
  static const std::map<std::string, WorkerFunction> kFunctions = {
      {"claim_batch", {2, true}},    {"heartbeat_batch", {2, true}},
      {"report", {4, true}},         {"complete_batch", {2, true}},
      {"release", {4, true}},        {"put_artifact", {4, true}},
      {"worker_leases", {2, false}}, {"put_worker", {2, true}},
      {"remove_worker", {2, true}},  {"rank_heartbeat", {4, true}},
      {"release_gang", {4, true}},   {"publish_rendezvous", {4, true}},
      {"rendezvous", {4, false}},    {"artifact_room", {4, false}},
  };
  return kFunctions;
}

// A JSON document's "project" (offers, registry entries); nullopt when the
// text is not a JSON object.
std::optional<std::string> project_of(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  auto it = j.find("project");
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Result<Admitted> admit_fcall(const WorkerTokenRecord& who, std::vector<std::string> argv,
                             const RelayOptions& o) {
  const std::string fn = argv.size() > 1 && argv[1].starts_with("hpo_") ? argv[1].substr(4) : "";
  auto it = worker_functions().find(fn);
  if (it == worker_functions().end())
    return refused("FCALL " + (argv.size() > 1 ? argv[1] : std::string()),
                   "not one of a worker's Functions");
  const std::size_t at = static_cast<std::size_t>(it->second.worker_at) + 2;  // a[i] = argv[i + 2]
  if (argv.size() <= at || argv[2] != "0" || argv[3] != o.prefix)
    return refused("FCALL " + argv[1], "not called as the store calls it");
  if (argv[at] != who.host)
    return refused("FCALL " + argv[1] + " for worker '" + argv[at] + "'",
                   "worker token " + who.id + " is worker '" + who.host +
                       "''s (start hpo-worker --name " + who.host +
                       ", or make a token for that name)");
  // A project-bound token: offers and registry entries of its project only.
  if ((fn == "claim_batch" || fn == "put_worker") && !who.project.empty()) {
    const std::string& doc = argv[at + 1 < argv.size() ? at + 1 : at];
    auto project = project_of(doc);
    if (!project || *project != who.project)
      return refused("FCALL " + argv[1] + " for project '" + project.value_or("?") + "'",
                     "worker token " + who.id + " takes project '" + who.project +
                         "' trials only (start hpo-worker --project " + who.project + ")");
  }
  if (fn == "report" && argv.size() > 7)  // a[5]: the report cap is the scheduler's
    argv[7] = std::to_string(std::max<std::int64_t>(0, o.max_reports_per_trial));
  Admitted out;
  out.writes = it->second.writes;
  out.argv = std::move(argv);
  return out;
}

// XREAD COUNT n [BLOCK ms] STREAMS <prefix>wake <id>
Result<Admitted> admit_wake_read(std::vector<std::string> argv, const RelayOptions& o) {
  std::size_t i = 1;
  Admitted out;
  if (argv.size() > i + 1 && ascii_lower(argv[i]) == "count") i += 2;
  if (argv.size() > i + 1 && ascii_lower(argv[i]) == "block") {
    long long ms = 0;
    try {
      ms = std::stoll(argv[i + 1]);
    } catch (...) {
      return refused("XREAD", "BLOCK takes milliseconds");
    }
    ms = std::clamp<long long>(ms, 0, o.max_block.count());
    if (ms == 0) ms = o.max_block.count();  // 0 would wait for ever
    argv[i + 1] = std::to_string(ms);
    out.block = std::chrono::milliseconds(ms);
    i += 2;
  }
  if (argv.size() != i + 3 || ascii_lower(argv[i]) != "streams" || argv[i + 1] != o.prefix + "wake")
    return refused("XREAD", "only the wake stream is read");
  out.argv = std::move(argv);
  return out;
}

}  // namespace

Result<Admitted> admit(const WorkerTokenRecord& who, std::vector<std::string> argv,
                       const RelayOptions& o) {
  if (argv.empty()) return refused("an empty command", "no command");
  const std::string name = ascii_lower(argv[0]);
  const std::string& P = o.prefix;
  auto as_is = [&]() -> Result<Admitted> {
    Admitted out;
    out.argv = std::move(argv);
    return out;
  };
  if (name == "fcall" || name == "fcall_ro") return admit_fcall(who, std::move(argv), o);
  if ((name == "ping" || name == "time") && argv.size() == 1) return as_is();
  if (name == "xread") return admit_wake_read(std::move(argv), o);
  // The Functions' version (the library is public; loading it is the scheduler's).
  if (name == "function" && argv.size() >= 2 && ascii_lower(argv[1]) == "list") return as_is();
  // Where the pool keeps artifact files.
  if ((name == "hget" || name == "hmget") && argv.size() >= 3 && argv[1] == P + "deployment") {
    bool plain = true;
    for (std::size_t i = 2; i < argv.size(); ++i)
      plain = plain && (argv[i] == "artifact_dir" || argv[i] == "artifact_marker");
    if (plain) return as_is();
  }
  // Whether any sweep runs (hpo-worker --exit-when-idle-s): ids only.
  if (name == "smembers" && argv.size() == 2 && argv[1] == P + "sweeps:active") return as_is();
  // A trial's artifact: only of a trial the worker holds (or of its sweep).
  const std::string artifact = P + "artifact:";
  if (name == "get" && argv.size() == 2 && argv[1].starts_with(artifact)) {
    const std::string rest = argv[1].substr(artifact.size());
    const auto colon = rest.find(':');
    if (colon != std::string::npos && colon > 0) {
      Admitted out;
      out.read_trial = rest.substr(0, colon);
      out.argv = std::move(argv);
      return out;
    }
  }
  return refused(argv[0] + (argv.size() > 1 ? " " + argv[1] : std::string()),
                 "a worker's calls are its Functions and reads of what it holds");
}

WorkerRelay::WorkerRelay(RedisStoreConfig store, RelayOptions options)
    : store_config_(std::move(store)),
      options_(std::move(options)),
      known_(options_.remember, 10000) {
  // The store's own: where its keys are, how many reports it keeps.
  options_.prefix = store_config_.prefix;
  options_.max_reports_per_trial = store_config_.max_reports_per_trial;
}

WorkerRelay::~WorkerRelay() = default;

std::unique_ptr<RedisStore> WorkerRelay::borrow() {
  if (auto idle = pool_.take()) return idle;
  return std::make_unique<RedisStore>(store_config_);
}

Result<std::optional<WorkerTokenRecord>> WorkerRelay::authenticate(const std::string& token) {
  const std::string digest = token_digest(token);
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu_);
    if (const auto* who = known_.find(digest, now)) return *who;
  }
  auto store = borrow();
  auto who = store->resolve_worker_token(digest);
  if (!who) return who.error();  // the store is dropped: it may be broken
  pool_.give_back(std::move(store));
  std::lock_guard lock(mu_);
  known_.put(digest, *who, now);
  return *who;
}

Result<Reply> WorkerRelay::run(RedisStore& store, const WorkerTokenRecord& who,
                               const Admitted& call) {
  if (!call.read_trial.empty()) {
    auto may = store.fcall("worker_may_read", {who.host, call.read_trial});
    if (!may) return may.error();
    if (may->integer != 1) {
      return unauthorized_reply("worker '" + who.host + "' holds no trial that may read trial " +
                                call.read_trial + "'s artifacts");
    }
  }
  const auto timeout = call.block.count() > 0 ? call.block + store_config_.command_timeout
                                              : std::chrono::milliseconds(0);
  return store.client().command(call.argv, timeout);
}

Result<std::string> WorkerRelay::relay(const WorkerTokenRecord& who, std::string_view body) {
  auto commands = parse_commands(body, options_.max_commands);
  if (!commands) return commands.error();
  auto store = borrow();
  std::string out;
  bool wrote = false;
  for (auto& argv : *commands) {
    auto call = admit(who, std::move(argv), options_);
    if (!call) {
      log_warn("worker endpoint refused a call",
               {{"worker", who.host}, {"token", who.id}, {"reason", call.error().message}});
      out += resp_reply(unauthorized_reply(call.error().message));
      continue;
    }
    auto r = run(*store, who, *call);
    if (!r) return r.error();  // the store is dropped: its connection failed
    wrote = wrote || (call->writes && !r->is_error());
    out += resp_reply(*r);
  }
  // Acknowledged writes wait for the replicas the scheduler's URL asks for.
  if (wrote)
    if (auto st = store->replicated("worker " + who.host + "'s calls"); !st) return st.error();
  pool_.give_back(std::move(store));
  return out;
}

}  // namespace hpo::trials::redis
