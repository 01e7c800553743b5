// RedisStore: every store role (trials/store.hpp) on one Redis connection.
//
// Every state transition is one call of the `hpo_v1` Functions library
// (functions/*.lua, embedded at build time and loaded on each connection
// when the server's copy differs), so C++ never does a read-modify-write;
// plain reads (get_sweep, list_trials, ...) are single HGETALL/LRANGE calls or
// pipelines of them. The key schema is at the head of
// functions/00_schema.lua.
//
// One instance per thread (it owns one RedisClient). Connection problems come
// back as kUnavailable and the next call reconnects with back-off.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trials/artifact_dir.hpp"
#include "trials/redis/redis_client.hpp"
#include "trials/store.hpp"

namespace hpo::trials::redis {

// The version a Functions library's text declares (`-- hpo-functions-version: N`
// near its top; 1 for a library written before the line existed).
int functions_version(std::string_view library_code);
// The text of the library this program loads (functions/*.lua).
const std::string& functions_code();

struct RedisStoreConfig {
  RedisUrl url;
  std::string prefix = "hpo:";
  std::chrono::milliseconds command_timeout{5000};
  std::chrono::milliseconds connect_timeout{2000};
  int claim_scan = 256;  // queue entries a claim looks at for one that fits
  std::int64_t max_artifact_bytes = std::int64_t{256} << 20;
  std::int64_t max_reports_per_trial = kMaxReportsPerTrial;  // later reports are not stored
  // A folder on a shared file system for the bytes of trials' artifacts
  // (trials/artifact_dir.hpp); Redis keeps only their references. Empty: the
  // bytes are kept in Redis. Records (put_record, put_sweep_record) and logs
  // stay in Redis either way.
  std::string artifact_dir;
};

class RedisStore final : public AllRoles {
 public:
  explicit RedisStore(RedisStoreConfig config);

  // Convenience: URL text + prefix; an unparsable URL becomes kInvalidArgument.
  static Result<std::unique_ptr<RedisStore>> open(std::string_view url, std::string prefix = "hpo:",
                                                  std::string artifact_dir = "");

  // The artifact directory the scheduler announced (empty: none), so that a
  // worker started without --artifacts uses the pool's; the scheduler
  // announces its own at start (empty clears it).
  Result<std::string> announced_artifact_dir();
  // The scheduler: `dir` (empty: none) and the id of its marker
  // (trials/artifact_dir.hpp, claim_marker).
  Status announce_artifact_dir(const std::string& dir, const std::string& marker = "");
  // A worker: keeps artifacts in `own` (its --artifacts), else in the folder
  // the scheduler announced, once that folder's marker is the one announced
  // (an unmounted mount point is refused, kUnavailable naming it: the worker
  // retries, the mount may come). Nothing announced and no folder of its
  // own: artifacts stay in Redis.
  Status adopt_pool_artifact_dir(const std::string& own);
  // The pool's limits, for the Functions to enforce whoever calls them
  // (functions/*.lua): the most bytes of stored reports one trial may hold
  // (report), how many times a trial may be given back before it fails
  // (release; 0: no limit for both), the most bytes of one event's data and
  // the most events the stream keeps (every call that emits), the byte
  // limits of projects without their own.
  struct PoolLimits {
    std::int64_t max_report_bytes = std::int64_t{16} << 20;
    std::int64_t max_releases = 20;
    std::int64_t max_event_bytes = 4096;
    std::int64_t max_events = 100'000;
    // Every project's byte limits unless it has its own (0: none):
    // trials/access.hpp ProjectLimits.
    std::int64_t project_store_bytes = std::int64_t{1} << 30;
    std::int64_t project_file_bytes = std::int64_t{100} << 30;
  };
  Status announce_limits(const PoolLimits& limits);
  // Keep trials' artifact bytes in `dir` from now on (empty: in Redis).
  void use_artifact_dir(const std::string& dir);

  Result<StoreHealth> health() override;

  // SweepStore
  Result<std::int64_t> now_ms() override;
  Result<std::string> create_sweep(const NewSweep& sweep) override;
  Result<std::string> import_sweep(const NewSweep& sweep,
                                   const std::vector<ImportedTrial>& trials) override;
  Result<Sweep> get_sweep(const std::string& sweep_id) override;
  Result<std::vector<Sweep>> list_sweeps(std::int64_t offset, std::int64_t limit) override;
  Result<std::vector<Sweep>> list_sweeps_in(const std::vector<std::string>& projects,
                                            std::int64_t offset, std::int64_t limit) override;
  Result<std::string> sweep_project(const std::string& sweep_id) override;
  Result<std::vector<std::string>> active_sweeps() override;
  Status finish_sweep(const std::string& sweep_id, SweepState state,
                      const std::string& error) override;
  Status cancel_sweep(const std::string& sweep_id) override;
  Status set_stage(const std::string& sweep_id, SweepStage from, SweepStage to) override;
  Status set_unschedulable(const std::string& sweep_id, const std::string& reason) override;
  Status delete_sweep(const std::string& sweep_id) override;
  Status annotate(const std::string& sweep_id, const std::string& trial_id,
                  const Annotation& annotation) override;
  Result<std::map<std::string, Annotation>> trial_annotations(const std::string& sweep_id) override;
  Status set_priority(const std::string& sweep_id, std::int64_t priority) override;

  // TrialStore
  Result<std::vector<Trial>> create_trials(const std::vector<NewTrial>& trials) override;
  Result<Trial> get_trial(const std::string& trial_id) override;
  Result<std::vector<Trial>> get_trials(const std::vector<std::string>& trial_ids) override;
  Result<TrialPage> list_trials(const std::string& sweep_id, TrialRole role, std::int64_t offset,
                                std::int64_t limit) override;
  Result<ReportPage> get_reports(const std::string& trial_id, std::int64_t offset,
                                 std::int64_t limit) override;
  Result<std::vector<AttemptRecord>> get_attempts(const std::string& trial_id) override;
  Status set_control(const std::string& trial_id, Control control) override;

  // WorkerRegistry
  Status put_worker(const WorkerInfo& info, std::int64_t ttl_ms) override;
  Status remove_worker(const std::string& name, const std::string& instance) override;
  Result<std::vector<WorkerInfo>> list_workers() override;

  // EventLog
  Result<std::vector<Event>> read_events(const std::string& after_id, int max_count,
                                         int block_ms) override;
  Result<EventBounds> event_bounds() override;

  // AccessStore (redis_store_access.cpp)
  Status bootstrap(const std::string& admin, const std::string& digest,
                   const std::string& project) override;
  Status create_user(const UserRecord& user) override;
  Result<std::vector<UserRecord>> list_users() override;
  Status update_user(const std::string& name, std::optional<bool> disabled,
                     std::optional<bool> service_admin) override;
  Status add_token(const std::string& user, const TokenRecord& token,
                   const std::string& digest) override;
  Result<std::string> revoke_token(const std::string& token_id) override;
  Result<std::vector<TokenRecord>> list_tokens(const std::string& user) override;
  Result<std::optional<Principal>> resolve_token(const std::string& digest) override;
  Status create_project(const ProjectRecord& project) override;
  Status update_project(const ProjectRecord& project) override;
  Result<std::vector<ProjectRecord>> list_projects() override;
  Status set_member(const std::string& project, const std::string& user,
                    std::optional<ProjectRole> role) override;
  Result<std::map<std::string, ProjectRole>> members(const std::string& project) override;
  Status record(const AuditEntry& entry) override;
  Status add_worker_token(const WorkerTokenRecord& token, const std::string& digest) override;
  Result<std::vector<WorkerTokenRecord>> list_worker_tokens() override;
  Result<WorkerTokenRecord> revoke_worker_token(const std::string& id) override;
  Result<std::optional<WorkerTokenRecord>> resolve_worker_token(const std::string& digest) override;
  Result<std::vector<AuditEntry>> audit(const std::string& project, const std::string& after,
                                        int count) override;

  // ArtifactStore
  Status put_record(const std::string& trial_id, const std::string& name,
                    const std::string& bytes) override;
  Result<std::optional<std::string>> get_artifact(const std::string& trial_id,
                                                  const std::string& name) override;
  Status put_sweep_record(const std::string& sweep_id, const std::string& name,
                          const std::string& bytes) override;
  Result<std::optional<std::string>> get_sweep_artifact(const std::string& sweep_id,
                                                        const std::string& name) override;

  // TrialQueue
  using TrialQueue::claim;
  using TrialQueue::claim_batch;
  Result<Claims> claim_batch(const std::string& worker, const Offer& offer, int max_trials,
                             std::int64_t lease_ms) override;
  Result<bool> wait_for_work(const std::string& cursor, int block_ms) override;
  Result<bool> release_gang(const std::string& trial_id, int attempt,
                            const std::string& worker) override;
  Result<bool> rank_heartbeat(const std::string& trial_id, int attempt, const std::string& worker,
                              std::int64_t lease_ms) override;
  Status publish_rendezvous(const std::string& trial_id, int attempt, const std::string& worker,
                            const std::string& address, std::int64_t ttl_ms) override;
  Result<std::optional<std::string>> rendezvous(const std::string& trial_id, int attempt,
                                                const std::string& worker) override;
  Result<std::vector<Result<Control>>> heartbeat_batch(const std::string& worker,
                                                       const std::vector<HeldLease>& leases,
                                                       std::int64_t lease_ms) override;
  Result<Control> report_batch(const std::string& trial_id, int attempt, const std::string& worker,
                               const std::vector<StepReport>& reports) override;
  using TrialQueue::report;
  Result<std::vector<Status>> complete_batch(const std::string& worker,
                                             const std::vector<Completion>& done) override;
  Status release(const std::string& trial_id, int attempt, const std::string& worker,
                 const std::string& reason, bool counted) override;
  Status put_artifact(const std::string& trial_id, int attempt, const std::string& worker,
                      const std::string& name, const std::string& bytes) override;
  Status put_artifact_stream(const std::string& trial_id, int attempt, const std::string& worker,
                             const std::string& name, const ByteProducer& produce) override;
  std::int64_t inline_artifact_limit() const override;
  Result<bool> read_artifact(const std::string& trial_id, const std::string& name,
                             ByteSink& out) override;
  Result<std::optional<ArtifactLocation>> locate_artifact(const std::string& trial_id,
                                                          const std::string& name) override;
  Result<std::optional<std::int64_t>> artifact_size(const std::string& trial_id,
                                                    const std::string& name) override;
  Result<bool> read_artifact_range(const std::string& trial_id, const std::string& name,
                                   std::int64_t offset, std::int64_t size, char* out) override;
  Result<std::vector<HeldLease>> worker_leases(const std::string& worker) override;
  Result<int> reap(int max, std::int64_t outage_ms) override;

  RedisClient& client() { return client_; }
  const std::string& prefix() const { return config_.prefix; }
  // Also the worker relay's (worker_relay.hpp): what it runs for a worker.
  // FCALL hpo_<name> 0 <prefix> args...; a refusal (NOT_FOUND, CONFLICT,
  // LEASE_LOST, INVALID) becomes its ErrorCode.
  Result<Reply> fcall(const std::string& name, std::vector<std::string> args);
  // For writes acknowledged to someone (a user's submit, a worker's result):
  // WAIT until the URL's `replicas` have them, so a failover cannot lose
  // them. Fewer in time: kUnavailable naming `what` (the write is on the
  // primary; the caller retries it, which every such write allows).
  Status replicated(const std::string& what);

 private:
  // The sweeps of these ids (a reply's elements), in order; gone ones left out.
  Result<std::vector<Sweep>> sweeps_of(const Reply& ids);
  Status put_file_artifact(const std::string& trial_id, int attempt, const std::string& worker,
                           const std::string& name, const ByteProducer& produce);
  static Error no_artifact_dir(const std::string& what, const std::string& path);
  // The most bytes artifact `name` of the attempt may have in files now (its
  // project's max_file_bytes room, and what it replaces); -1: no limit.
  Result<std::int64_t> file_room(const std::string& trial_id, int attempt,
                                 const std::string& worker, const std::string& name);
  // What Redis holds under a trial's artifact key, decoded (a file reference
  // only where this process has the folder).
  Result<std::optional<StoredArtifact>> stored_artifact(const std::string& trial_id,
                                                        const std::string& name);
  Status check_artifact_size(const std::string& trial_id, const std::string& name,
                             const std::string& bytes) const;
  Status load_functions(RedisClient& client);
  // Fewer replicas connected than the rule wants (-1: none missing), until
  // degraded_recheck_.
  int degraded_replicas_ = -1;
  std::chrono::steady_clock::time_point degraded_recheck_{};
  std::string key(std::string_view suffix) const;
  // The value under an artifact key, decoded: the bytes, from the artifact
  // directory when it is a reference. `what` names it in errors.
  // A stored value's bytes: inline, or read from the artifact file of
  // (owner, name) it refers to; a sweep's records are never files.
  Result<std::optional<std::string>> resolve(Result<Reply> raw, const std::string& owner,
                                             const std::string& name, bool of_sweep);

  RedisStoreConfig config_;
  RedisClient client_;
  std::optional<ArtifactDir> files_;  // config_.artifact_dir
};

}  // namespace hpo::trials::redis
