// hpo-scheduler: wires the parts together and waits for a signal.
//
// Order of start: Redis (embedded or given) -> controller loop and lease
// reaper -> event pump -> HTTP server -> scheduler.json. Stop is the reverse,
// on SIGINT or SIGTERM. The signals are blocked in every thread and taken
// synchronously here, so no handler runs in the middle of anything; the same
// wait doubles as the watchdog of the embedded Redis.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "core/install_dir.hpp"
#include "core/local_state.hpp"
#include "core/log.hpp"
#include "scheduler/config.hpp"
#include "scheduler/controller_loop.hpp"
#include "scheduler/embedded_redis.hpp"
#include "scheduler/ensemble_stage.hpp"
#include "scheduler/lease_reaper.hpp"
#include "scheduler/ownership.hpp"
#include "scheduler/retention.hpp"
#include "scheduler/schedulability.hpp"
#include "scheduler/worker_endpoint.hpp"
#include "trials/access.hpp"
#include "trials/redis/redis_store.hpp"
#include "trials/redis/worker_relay.hpp"
#include "trials/spec/spec_cache.hpp"
#include "web/api.hpp"
#include "web/event_hub.hpp"
#include "web/event_pump.hpp"
#include "web/http_server.hpp"

namespace {

using namespace hpo;

std::string random_token() {
  std::random_device rd;
  std::string t;
  const char* hex = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) t += hex[rd() % 16];
  return t;
}

// The dashboard's files: an explicit flag, else web/ui/dist found from the
// binary's location (build tree or install prefix).
std::string find_static_dir(const std::string& configured) {
  if (!configured.empty()) return configured;
  return hpo::find_beside_binary({"web/ui/dist", "share/hpo/ui"}, "index.html");
}

// SIGINT and SIGTERM blocked before any thread starts, so every thread
// inherits the mask and only the wait in serve() takes them.
sigset_t block_stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  return signals;
}

// Without --redis: this scheduler's own redis-server, its data directory
// locked first. The exit code when it cannot start.
std::optional<int> start_embedded_redis(const scheduler::SchedulerConfig& config,
                                        std::unique_ptr<scheduler::OwnerLock>& data_lock,
                                        std::unique_ptr<scheduler::EmbeddedRedis>& embedded) {
  auto lock = scheduler::OwnerLock::acquire(config.data_dir, "the embedded Redis data directory");
  if (!lock) {
    log_error("cannot start", {{"error", lock.error().message}});
    std::fprintf(stderr, "hpo-scheduler: %s\n", lock.error().message.c_str());
    return 1;
  }
  data_lock = std::move(*lock);
  auto r = scheduler::EmbeddedRedis::start(config.data_dir, config.prefix);
  if (!r) {
    log_error("cannot start the embedded redis-server", {{"error", r.error().message}});
    return 1;
  }
  embedded = std::move(*r);
  return std::nullopt;
}

// Before anything runs on Redis: it answers, and it holds what every worker
// reads from it (the artifact folder, the pool's limits). The exit code when not.
std::optional<int> prepare_store(const scheduler::SchedulerConfig& config,
                                 trials::redis::RedisStore& probe,
                                 const trials::redis::RedisUrl& url) {
  // Fail fast with a clear message when Redis is not there at all.
  if (auto ids = probe.sweeps().active_sweeps(); !ids) {
    log_error("cannot reach Redis", {{"url", url.to_string()}, {"error", ids.error().message}});
    return 1;
  }
  // Workers started without --artifacts use this one, once they find its marker.
  std::string marker;
  if (!config.artifacts.empty()) {
    auto claimed = trials::claim_marker(config.artifacts);
    if (!claimed) {
      log_error("cannot mark the artifact folder", {{"error", claimed.error().message}});
      return 1;
    }
    marker = *claimed;
  }
  if (auto st = probe.announce_artifact_dir(config.artifacts, marker); !st) {
    log_error("cannot announce the artifact directory", {{"error", st.error().message}});
    return 1;
  }
  // The Functions hold every trial to them, whichever worker calls.
  if (auto st = probe.announce_limits({config.max_report_bytes, config.max_releases,
                                       config.max_event_bytes, config.max_events,
                                       config.project_store_bytes, config.project_file_bytes});
      !st) {
    log_error("cannot announce the pool's limits", {{"error", st.error().message}});
    return 1;
  }
  return std::nullopt;
}

// A --redis that does not persist every write loses acknowledged sweeps in a
// crash: refused unless --allow-volatile-redis. The exit code when refused.
std::optional<int> check_redis_durability(const scheduler::SchedulerConfig& config,
                                          const trials::redis::RedisUrl& url) {
  auto durable = scheduler::redis_persists_writes(url);
  if (!durable) {
    log_error("cannot ask Redis how it persists",
              {{"url", url.to_string()}, {"error", durable.error().message}});
    return 1;
  }
  if (!*durable && !config.allow_volatile_redis) {
    const char* msg =
        "the Redis server does not persist every write (appendonly no): a Redis crash would "
        "lose acknowledged sweeps. Configure it with appendonly yes (and appendfsync always "
        "for no loss at all), or start hpo-scheduler with --allow-volatile-redis";
    log_error("refusing a volatile Redis", {{"url", url.to_string()}});
    std::fprintf(stderr, "hpo-scheduler: %s\n", msg);
    return 2;
  }
  if (!*durable)
    log_warn(
        "Redis does not persist every write (appendonly no); acknowledged sweeps can be "
        "lost in a Redis crash (--allow-volatile-redis)",
        {{"url", url.to_string()}});
  return std::nullopt;
}

void warn_of_secrets_on_command_line(const scheduler::SchedulerConfig& config) {
  if (config.redis_password_on_command_line)
    log_warn(
        "--redis carries a password, visible to every local user in `ps` and /proc: pass "
        "HPO_REDIS in the environment (an EnvironmentFile, a Kubernetes secret) instead");
  if (config.token_on_command_line)
    log_warn(
        "--token is visible to every local user in `ps`; prefer --token-file (mode 0600) or "
        "HPO_TOKEN");
}

web::ApiOptions api_options_for(const scheduler::SchedulerConfig& config, const std::string& token,
                                const std::shared_ptr<trials::SpecCache>& specs) {
  web::ApiOptions api_options;
  api_options.token = token;
  api_options.auth_reads = config.auth_reads;
  api_options.static_dir = find_static_dir(config.static_dir);
  api_options.data_roots = config.data_roots;
  api_options.allowed_hosts = config.allowed_hosts;
  api_options.handler_threads = config.handler_threads;
  api_options.specs = specs;
  return api_options;
}

web::ServerOptions server_options_for(const scheduler::SchedulerConfig& config,
                                      const trials::redis::RedisStoreConfig& store) {
  web::ServerOptions server_options;
  server_options.host = config.listen_host;
  server_options.port = config.listen_port;
  server_options.handler_threads = config.handler_threads;
  server_options.tls_cert_file = config.tls_cert_file;
  server_options.tls_key_file = config.tls_key_file;
  // The worker endpoint's lane: its threads, and bodies as large as an
  // artifact kept in Redis.
  server_options.lane_prefix = scheduler::kWorkerLanePrefix;
  server_options.lane_threads = config.worker_threads;
  server_options.lane_body_limit = static_cast<std::uint64_t>(store.max_artifact_bytes) + (1 << 20);
  return server_options;
}

// Once the API listens: scheduler.json, where local workers and `hpo` find
// this scheduler, and the log line and message that say where it is.
void announce_ready(const scheduler::SchedulerConfig& config, int port,
                    const std::string& worker_redis_url, const std::string& token,
                    const trials::redis::RedisUrl& url, const std::string& static_dir) {
  std::string host = config.listen_host == "0.0.0.0" ? "127.0.0.1" : config.listen_host;
  const bool tls = !config.tls_cert_file.empty();
  std::string api_url = fmt::format("{}://{}:{}", tls ? "https" : "http", host, port);
  LocalState state{worker_redis_url, api_url, token, static_cast<long>(::getpid()),
                   tls ? config.tls_cert_file : ""};
  if (!tls && !(host == "127.0.0.1" || host == "::1" || host == "localhost"))
    log_warn(
        "the API listens beyond loopback without TLS: the token and every sweep cross the network "
        "in clear text; give --tls-cert and --tls-key",
        {{"listen", fmt::format("{}:{}", config.listen_host, port)}});
  if (auto st = write_local_state(state); !st)
    log_warn("cannot write the local state file", {{"error", st.error().message}});
  log_info("scheduler ready", {{"api", api_url},
                               {"redis", url.to_string()},
                               {"dashboard", static_dir.empty() ? "not built" : api_url + "/"},
                               {"state_file", local_state_path()}});
  std::fprintf(stdout, "hpo-scheduler: API and dashboard at %s (token in %s)\n", api_url.c_str(),
               local_state_path().c_str());
  std::fflush(stdout);
}

// Returns on SIGINT or SIGTERM; meanwhile restarts the embedded Redis (if
// any) when it has died.
void wait_for_stop_signal(const sigset_t& signals, scheduler::EmbeddedRedis* embedded) {
  while (true) {
    timespec wait{0, 500'000'000};
    int sig = sigtimedwait(&signals, nullptr, &wait);
    if (sig == SIGINT || sig == SIGTERM) {
      log_info("shutting down", {{"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"}});
      break;
    }
    if (embedded) {
      if (auto restarted = embedded->restart_if_dead(); !restarted)
        log_error("embedded redis could not be restarted", {{"error", restarted.error().message}});
    }
  }
}

// The bootstrap admin and default project, retried for a while (a Redis
// that is starting answers LOADING).
Status bootstrap_access(const trials::StoreFactory& stores, const std::string& token) {
  Status last = Error::unavailable("not tried");
  for (int attempt = 0; attempt < 20; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    auto store = stores();
    if (!store) {
      last = store.error();
      continue;
    }
    last = (*store)->access().bootstrap(std::string(trials::kBootstrapAdmin),
                                        trials::token_digest(token),
                                        std::string(trials::kDefaultProject));
    if (last || last.error().code != ErrorCode::kUnavailable) return last;
  }
  return last;
}

// The controllers, the lease reaper, the event pump and the API over a
// prepared Redis, from their start to a stop signal and their stop.
int serve(const scheduler::SchedulerConfig& config, const sigset_t& signals,
          scheduler::EmbeddedRedis* embedded, const std::string& redis_url,
          const trials::redis::RedisStoreConfig& store_config, const trials::StoreFactory& stores) {
  const trials::redis::RedisUrl& url = store_config.url;
  // Each sweep's spec is parsed once in this process: the submit handler puts
  // its parse in, the controller and the schedulability watch take it out.
  auto specs = std::make_shared<trials::SpecCache>();
  scheduler::ControllerLoopOptions loop_options;
  loop_options.rescan = config.rescan_period;
  loop_options.threads = config.controller_threads;
  loop_options.specs = specs;
  scheduler::ControllerLoop loop(
      stores, loop_options,
      [ensemble_memory = config.ensemble_memory_bytes](
          const std::string& sweep_id,
          const trials::SweepSpec& spec) -> std::unique_ptr<scheduler::Stage> {
        return std::make_unique<scheduler::EnsembleStage>(sweep_id, spec, ensemble_memory);
      });
  scheduler::LeaseReaper reaper(stores, config.reaper_period);
  scheduler::Retention retention(stores, std::chrono::milliseconds(static_cast<std::int64_t>(
                                             config.retention_days * 24 * 3600 * 1000)));
  scheduler::SchedulabilityWatch schedulability(
      stores, std::max(config.reaper_period, std::chrono::milliseconds(1000)), specs);

  warn_of_secrets_on_command_line(config);
  std::string token = config.token.empty() ? random_token() : config.token;
  // The one-person install: this token is the admin's, and the default
  // project exists (trials/access.hpp). Redis was reachable a moment ago.
  if (auto st = bootstrap_access(stores, token); !st) {
    log_error("cannot set up users and projects", {{"error", st.error().message}});
    return 1;
  }
  web::HubLimits hub_limits;
  hub_limits.max_queue_bytes = static_cast<std::size_t>(config.sse_queue_bytes);
  web::EventHub hub(hub_limits);
  web::EventPump pump(stores, hub);
  web::ApiOptions api_options = api_options_for(config, token, specs);
  web::Api api(api_options, stores, hub);
  web::ServerOptions server_options = server_options_for(config, store_config);
  // Workers with a worker token reach the store only through the relay.
  trials::redis::WorkerRelay relay(store_config, trials::redis::RelayOptions{});
  web::HttpServer server(server_options, scheduler::with_worker_endpoint(relay, api.handler()));

  loop.start();
  reaper.start();
  schedulability.start();
  retention.start();
  pump.start();
  if (auto st = server.start(); !st) {
    log_error("cannot listen",
              {{"address", fmt::format("{}:{}", config.listen_host, config.listen_port)},
               {"error", st.error().message}});
    pump.stop();
    retention.stop();
    schedulability.stop();
    reaper.stop();
    loop.stop();
    return 1;
  }
  // Local workers find Redis here: as the worker user where the scheduler made
  // the users (embedded); with --redis, its URL (give workers their own user's
  // in HPO_REDIS: docs/operations.md).
  announce_ready(config, server.port(), embedded ? embedded->worker_url() : redis_url, token, url,
                 api_options.static_dir);

  wait_for_stop_signal(signals, embedded);
  server.stop();
  log_line(LogLevel::kDebug, "http server stopped");
  pump.stop();
  log_line(LogLevel::kDebug, "event pump stopped");
  retention.stop();
  schedulability.stop();
  reaper.stop();
  loop.stop();
  log_line(LogLevel::kDebug, "controllers stopped");
  remove_local_state();
  if (embedded) embedded->stop();
  log_info("scheduler stopped");
  if (loop.left_behind() > 0) std::_Exit(0);  // a wedged controller thread must not see main end
  return 0;
}

int run(const scheduler::SchedulerConfig& config) {
  const sigset_t signals = block_stop_signals();

  // One scheduler per HPO_HOME (its scheduler.json) and per embedded data directory.
  auto home_lock = scheduler::OwnerLock::acquire(hpo_home(), "HPO_HOME");
  if (!home_lock) {
    log_error("cannot start", {{"error", home_lock.error().message}});
    std::fprintf(stderr, "hpo-scheduler: %s\n", home_lock.error().message.c_str());
    return 1;
  }
  std::unique_ptr<scheduler::OwnerLock> data_lock;
  std::unique_ptr<scheduler::EmbeddedRedis> embedded;
  std::string redis_url = config.redis_url;
  if (redis_url.empty()) {
    if (auto failed = start_embedded_redis(config, data_lock, embedded)) return *failed;
    redis_url = embedded->url();
  }
  auto url = trials::redis::RedisUrl::parse(redis_url);
  if (!url) {
    // Not echoed: an unparsable URL may still hold a password.
    log_error("bad --redis URL", {{"error", url.error().message}});
    return 2;
  }
  trials::redis::RedisStoreConfig store_config;
  store_config.url = *url;
  store_config.prefix = config.prefix;
  store_config.artifact_dir = config.artifacts;
  auto make_store = [store_config] {
    return std::make_unique<trials::redis::RedisStore>(store_config);
  };
  {
    auto probe = make_store();
    if (auto failed = prepare_store(config, *probe, *url)) return *failed;
  }
  if (!embedded) {
    if (auto failed = check_redis_durability(config, *url)) return *failed;
  }

  // Every thread opens its own connection with this one factory.
  trials::StoreFactory stores = [make_store]() -> Result<std::unique_ptr<trials::Store>> {
    return std::unique_ptr<trials::Store>(make_store());
  };
  return serve(config, signals, embedded.get(), redis_url, store_config, stores);
}

}  // namespace

int main(int argc, char** argv) {
  // Not dumpable: no process of the same uid reads its environment or memory
  // (/proc/<pid>/environ, mem) or attaches to it.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  auto config = hpo::scheduler::load_scheduler_config(argc, argv);
  if (!config) {
    std::fprintf(stderr, "hpo-scheduler: %s\n\n%s", config.error().message.c_str(),
                 hpo::scheduler::scheduler_usage());
    return 2;
  }
  if (config->help) {
    std::fputs(hpo::scheduler::scheduler_usage(), stdout);
    return 0;
  }
  return run(*config);
}
