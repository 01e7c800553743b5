// Configuration of hpo-scheduler: one typed struct, filled by the one settings
// engine (core/settings.hpp) from defaults < a JSON file (--config) <
// environment (HPO_*) < flags.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace hpo::scheduler {

struct SchedulerConfig {
  std::string listen_host = "127.0.0.1";
  int listen_port = 8080;
  std::string redis_url;        // empty: start an embedded redis-server
  std::string data_dir;         // embedded Redis data; default $HPO_HOME/data
  std::string prefix = "hpo:";  // Redis key prefix
  std::string token;            // API bearer token; empty: a random one is generated
  std::string token_file;       // read the token from this file
  // HTTPS for the API and dashboard: a PEM certificate chain and its key.
  std::string tls_cert_file;
  // Trials' artifact bytes go to files in this folder (shared with every
  // worker) instead of Redis; empty: Redis.
  std::string artifacts;
  std::string tls_key_file;
  // Reads (GET) need the token too. Default: only when listening beyond
  // loopback; --public-reads keeps them open there (a trusted network).
  bool auth_reads = false;
  bool public_reads = false;
  bool token_on_command_line = false;           // --token: visible in `ps` (main warns)
  bool redis_password_on_command_line = false;  // --redis with a password: the same
  std::string static_dir;  // dashboard files; default: found next to the binary
  int handler_threads = 4;
  // Threads that step sweep controllers (each with one Redis connection); a
  // sweep holds one only while it steps (scheduler/controller_loop.hpp).
  int controller_threads = 8;
  // The worker endpoint's own HTTP threads (a worker waiting for work holds one).
  int worker_threads = 32;
  // The most bytes of stored reports one trial may hold (0: no cap); later
  // reports are counted in its reports_dropped, not stored.
  std::int64_t max_report_bytes = std::int64_t{16} << 20;
  // Times a trial may be given back (drains, preemptions) before it fails
  // with the reason (0: no bound).
  std::int64_t max_releases = 20;
  // The event stream's bounds: the most bytes of one event's data (a larger
  // one is replaced by its size) and the most events kept.
  std::int64_t max_event_bytes = 4096;
  std::int64_t max_events = 100'000;
  // Every project's byte limits unless an admin gave it its own (0: none):
  // what it keeps in the store, and in the artifact folder's files.
  std::int64_t project_store_bytes = std::int64_t{1} << 30;
  std::int64_t project_file_bytes = std::int64_t{100} << 30;
  // How far (bytes) a dashboard's event stream may fall behind before it is
  // dropped (it reconnects and replays from the store).
  std::int64_t sse_queue_bytes = std::int64_t{4} << 20;
  // The most memory an ensemble stage's combination may take (0: no limit).
  std::int64_t ensemble_memory_bytes = std::int64_t{2} << 30;
  std::chrono::milliseconds reaper_period{1000};
  std::chrono::milliseconds rescan_period{5000};
  // Accept an external Redis that does not persist every write (appendonly
  // no): acknowledged sweeps may then be lost in a Redis crash.
  bool allow_volatile_redis = false;
  // Ended sweeps older than this are deleted with everything they own; 0 keeps
  // them forever.
  double retention_days = 0;
  // Folders a torch spec's dataset files may come from (--data-root,
  // repeatable); none given: the Debian dataset folder (trials/data_roots.hpp).
  std::vector<std::string> data_roots;
  // Host names the API and dashboard answer to (DNS rebinding; IP literals
  // always pass): localhost, this host's name and the listen name, plus
  // --allowed-host (repeatable); "*" turns the check off.
  std::vector<std::string> allowed_hosts;
  bool help = false;
};

// Parses argv (and the environment). kInvalidArgument names the flag.
Result<SchedulerConfig> load_scheduler_config(int argc, char** argv);
const char* scheduler_usage();

// Splits "host:port"; kInvalidArgument with `flag` in the message.
Status parse_host_port(const std::string& text, const std::string& flag, std::string& host,
                       int& port);

}  // namespace hpo::scheduler
