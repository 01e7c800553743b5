// The persistence contract of hpo: one connection (Store) hands out seven small
// role interfaces, and each consumer takes only the roles it uses:
//
//   role            methods                                  used by
//   SweepStore      submit, read, end, stage, delete sweeps  API, controllers, retention, watch
//   TrialStore      create and read trials, reports, control controllers, API, ensemble stage
//   TrialQueue      claim, heartbeat, report, complete, ...  worker agent, lease reaper
//   WorkerRegistry  put and list live workers                worker agent, watch, API
//   EventLog        read the event stream                    SSE pump
//   ArtifactStore   scheduler records and artifact reads     ensemble stage, API
//   AccessStore     users, tokens, projects, audit log       API, scheduler start (access.hpp)
//
// Every method is one atomic step (in Redis: one Function call) so that any
// number of schedulers' and workers' threads may call concurrently; there is no
// read-modify-write from C++. A Store is used by one thread at a time (the
// Redis implementation holds one connection), and so are the roles it hands
// out; make one per thread with a StoreFactory.
//
// Invariants the implementations guarantee (and tests/trials/store_conformance
// checks against every implementation):
//  - finished trials are immutable;
//  - a trial is handed to at most one worker per attempt (claim is atomic);
//  - heartbeat/report/complete with a stale attempt or another worker's name
//    fail with ErrorCode::kLeaseLost and change nothing;
//  - create_trial is a compare-and-set on the sweep's next number, so a
//    restarted controller never creates trial i twice nor more than `limit`;
//  - times come from the store's clock (Redis TIME), never the caller's.
#pragma once

#include <charconv>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/byte_stream.hpp"
#include "core/result.hpp"
#include "core/unique_fd.hpp"
#include "trials/access.hpp"
#include "trials/constraints.hpp"
#include "trials/placement.hpp"
#include "trials/trial.hpp"

namespace hpo::trials {

struct NewSweep {
  std::string name;
  std::string spec_json;
  bool maximize = false;
  // Its project (trials/access.hpp; must exist, but the default one is made
  // when missing) and the user who submitted it ("": nobody in particular).
  std::string project = std::string(kDefaultProject);
  std::string owner;
  // spec `constraints`: a completed trial that breaks one is never the best.
  std::vector<MetricBound> constraints;
  // A client's key for this submit (HTTP Idempotency-Key): while the key is
  // remembered (idempotency_ttl_s), a second create_sweep with it returns the
  // first sweep's id instead of creating another; with another spec, kConflict.
  std::string idempotency_key;
  std::int64_t idempotency_ttl_s = 86400;
  // What its trials ask of a worker (request_for(spec.trial)); a claim takes
  // a trial only when its worker's offer fits it. Default: slots only.
  ResourceRequest needs;
};

struct NewTrial {
  std::string sweep_id;
  TrialRole role = TrialRole::kTrial;
  std::int64_t number = 0;  // must equal the sweep's next number of that role
  std::int64_t limit = 0;   // refuse (kConflict) when number >= limit
  search::Params params;
  int max_attempts = 1;
  int slots = 1;
  TrialPlan plan;  // kept with the trial (trial_plan.hpp)
};

// One ended trial of a sweep made by SweepStore::import_sweep (`hpo import`).
struct ImportedTrial {
  search::Params params;
  TrialState state = TrialState::kCompleted;  // completed, failed, pruned or cancelled
  std::optional<double> value;                // the objective (user's sense)
  Metrics metrics;
  std::string error;
  std::string worker;  // who ran it, as the file says
  std::int64_t started_ms = 0;
  std::int64_t finished_ms = 0;
};

// A SHA-256 of imported trials' content, so an import retried with the same
// idempotency key but other rows is told apart from a retry of the same one.
std::string import_digest(const std::vector<ImportedTrial>& trials);

// A batch for TrialStore::create_trials is of one sweep and role (kInvalidArgument otherwise).
inline Status check_new_trials(const std::vector<NewTrial>& batch) {
  for (const auto& t : batch)
    if (t.sweep_id != batch.front().sweep_id || t.role != batch.front().role)
      return Error::invalid("trials", "a batch of new trials is of one sweep and role");
  return {};
}

// What a worker sends when an attempt ends.
struct TrialResult {
  TrialState outcome = TrialState::kCompleted;  // completed, failed, pruned or cancelled
  std::optional<double> value;                  // the objective (user's sense)
  Metrics metrics;
  std::string error;
  bool retryable = true;  // failed: re-queue with attempt+1 while attempts remain
};

// A claimed trial with what the worker needs to run it: the sweep's spec as
// submitted (a worker parses it once per sweep, trials/spec/spec_cache.hpp), so a
// claim costs one round trip and the worker never reads the sweep itself.
struct Claim {
  Trial trial;
  std::int64_t lease_deadline_ms = 0;
  std::string spec_json;
  // The worker's slots the claim placed the attempt on (indices into the
  // offer's slots, ascending): placement is decided by the claim alone, the
  // worker books these. Empty only from a slot-less offer.
  std::vector<int> slots;
  // Its devices (indices into the offer's all_gpus), decided with the slots;
  // devices_named false: an earlier version's claim, whose slots own the
  // devices of their index (trials::devices_of).
  std::vector<int> devices;
  bool devices_named = false;
};

// A lease the store says a worker holds (and what a worker renews).
struct HeldLease {
  std::string trial_id;
  int attempt = 0;
};

// What a claim_batch hands a worker: the trials it now holds and, when it got
// fewer than it asked for, where wait_for_work waits for more.
struct Claims {
  std::vector<Claim> claims;
  std::string wake_cursor;
  // Shares of gang trials other workers lead that this worker's free slots
  // were promised to (placement.hpp, "Gangs"): taken before any claim.
  std::vector<RankShare> ranks;
};

// One ended attempt, as complete_batch takes it.
struct Completion {
  std::string trial_id;
  int attempt = 0;
  TrialResult result;
  std::string log;  // the attempt's log tail; non-empty: stored as artifact log.txt
};

// Reports a store keeps per trial; later ones are counted, not stored.
inline constexpr std::int64_t kMaxReportsPerTrial = 10'000;

// A `limit` that means "all of them" in list calls.
inline constexpr std::int64_t kAll = std::int64_t{1} << 40;

struct TrialPage {
  std::vector<Trial> trials;
  std::int64_t total = 0;
};

// Reports [offset, offset + limit) of a trial, in the order they were stored,
// and how many are stored in all: a reader follows a growing curve by asking
// from the count it has (the controller), or pages through it (the API).
struct ReportPage {
  std::vector<StepReport> reports;
  std::int64_t total = 0;
};

class SweepStore {
 public:
  virtual ~SweepStore() = default;

  // The store's clock (Redis TIME), ms since the epoch: the clock every time
  // the store records is read on, for comparisons with them (retention).
  virtual Result<std::int64_t> now_ms() = 0;

  // Submit: stores the sweep and returns its new id. Called by the REST handler.
  virtual Result<std::string> create_sweep(const NewSweep& sweep) = 0;
  // Import: stores an ended sweep (state finished, stage done) holding
  // `trials` as trials 0..n-1, all ended, with their counts and best trial,
  // in one step (all or nothing). Its id is returned; no controller ever runs
  // it, and it is read, warm-started from and deleted like any ended sweep.
  // Trials not ended are refused (kInvalidArgument). The idempotency key works
  // as create_sweep's, `sweep.spec_json` and the trials together being "the
  // spec" compared (a retry with other rows: kConflict).
  virtual Result<std::string> import_sweep(const NewSweep& sweep,
                                           const std::vector<ImportedTrial>& trials) = 0;
  virtual Result<Sweep> get_sweep(const std::string& sweep_id) = 0;
  // Newest first.
  virtual Result<std::vector<Sweep>> list_sweeps(std::int64_t offset, std::int64_t limit) = 0;
  // Newest first, of these projects only.
  virtual Result<std::vector<Sweep>> list_sweeps_in(const std::vector<std::string>& projects,
                                                    std::int64_t offset, std::int64_t limit) = 0;
  // The project of a sweep (kNotFound for no such sweep): one small read, for
  // authorising what names only the sweep (its trials, its events).
  virtual Result<std::string> sweep_project(const std::string& sweep_id) = 0;
  // Ids of sweeps in state running (the scheduler resumes these after a restart).
  virtual Result<std::vector<std::string>> active_sweeps() = 0;
  // Controller: the sweep reached its end. Only from state running. Leftovers
  // are stopped as by cancel_sweep (queued -> cancelled, running get kCancel).
  virtual Status finish_sweep(const std::string& sweep_id, SweepState state,
                              const std::string& error) = 0;
  // User: queued trials become cancelled, running ones get Control::kCancel.
  virtual Status cancel_sweep(const std::string& sweep_id) = 0;
  // Controller: move to the next stage (ensemble, done). Compare-and-set on `from`.
  virtual Status set_stage(const std::string& sweep_id, SweepStage from, SweepStage to) = 0;
  // Scheduler: a non-empty reason marks the sweep unschedulable (no registered
  // worker can run its trials) and keeps its queued trials out of the shared
  // queue, so they never stand in front of other sweeps' trials; "" makes it
  // schedulable again (its trials return to the head of the queue). Ended
  // sweeps: no-op.
  virtual Status set_unschedulable(const std::string& sweep_id, const std::string& reason) = 0;
  // User: the tags and note of sweep `sweep_id` (`trial_id` "") or of one of
  // its trials, replacing the last ones (check_annotation first; kNotFound
  // for no such sweep or trial of it).
  virtual Status annotate(const std::string& sweep_id, const std::string& trial_id,
                          const Annotation& annotation) = 0;
  // Project admin: the sweep's priority within its project (kNotFound without it).
  virtual Status set_priority(const std::string& sweep_id, std::int64_t priority) = 0;
  // The annotated trials of a sweep, by trial id.
  virtual Result<std::map<std::string, Annotation>> trial_annotations(
      const std::string& sweep_id) = 0;
  // User: deletes an ended sweep with its trials, reports, attempts and
  // artifacts, its own included (kConflict while it runs). Idempotent only up
  // to kNotFound.
  virtual Status delete_sweep(const std::string& sweep_id) = 0;
};

class TrialStore {
 public:
  virtual ~TrialStore() = default;

  // Controller: creates trials and queues them, in one step: all of one sweep
  // and role, numbered from the sweep's next number on (see NewTrial; the
  // limit is the first one's). All or none: kConflict when the first number is
  // not the next one, the last would reach the limit, or the sweep is not
  // running. The project's max_queued_trials holds here: only the first ones
  // it has room for are created (the rest are the caller's to make later),
  // none when it has no room (kQuotaExceeded). Returns them as stored, in order.
  virtual Result<std::vector<Trial>> create_trials(const std::vector<NewTrial>& trials) = 0;
  Result<Trial> create_trial(const NewTrial& trial) {
    auto made = create_trials({trial});
    if (!made) return made.error();
    return std::move(made->front());
  }
  virtual Result<Trial> get_trial(const std::string& trial_id) = 0;
  // Several trials in one round trip, in the order asked; ids that name no
  // trial are left out.
  virtual Result<std::vector<Trial>> get_trials(const std::vector<std::string>& trial_ids) = 0;
  // Trials of a sweep of one role, by ascending number.
  virtual Result<TrialPage> list_trials(const std::string& sweep_id, TrialRole role,
                                        std::int64_t offset, std::int64_t limit) = 0;
  virtual Result<ReportPage> get_reports(const std::string& trial_id, std::int64_t offset,
                                         std::int64_t limit) = 0;
  virtual Result<std::vector<AttemptRecord>> get_attempts(const std::string& trial_id) = 0;
  // Controller: ask a running trial to stop (prune) or a user cancel of one trial.
  virtual Status set_control(const std::string& trial_id, Control control) = 0;
};

class WorkerRegistry {
 public:
  virtual ~WorkerRegistry() = default;
  // A worker's entry, live for ttl_ms (the worker renews it).
  // kConflict when another live worker of the name runs on another host.
  virtual Status put_worker(const WorkerInfo& info, std::int64_t ttl_ms) = 0;
  virtual Result<std::vector<WorkerInfo>> list_workers() = 0;  // live ones only
  // A worker that exits: gone at once, not when its entry lapses (only the
  // process of that `instance` removes it).
  virtual Status remove_worker(const std::string& name, const std::string& instance) = 0;
};

// The ids of the oldest and the newest event still kept ("0-0" when none).
struct EventBounds {
  std::string first = "0-0";
  std::string last = "0-0";
};

class EventLog {
 public:
  virtual ~EventLog() = default;
  // Events after `after_id` ("0" = from the start, "$" = only new ones), waiting up to
  // block_ms for at least one (0 = do not wait).
  virtual Result<std::vector<Event>> read_events(const std::string& after_id, int max_count,
                                                 int block_ms) = 0;
  // The stream is capped: a reader whose last id is older than `first` has
  // missed events (and reloads); a reader starts after `last`.
  virtual Result<EventBounds> event_bounds() = 0;
};

// Event ids are "<ms>-<seq>": true when a is older than b.
inline bool event_id_before(const std::string& a, const std::string& b) {
  auto split = [](const std::string& id) {
    auto dash = id.find('-');
    auto num = [](std::string_view t) {
      std::uint64_t v = 0;
      std::from_chars(t.data(), t.data() + t.size(), v);
      return v;
    };
    std::string_view v(id);
    return dash == std::string::npos ? std::pair{num(v), std::uint64_t{0}}
                                     : std::pair{num(v.substr(0, dash)), num(v.substr(dash + 1))};
  };
  return split(a) < split(b);
}

// Named byte strings (trials/artifacts.hpp has the names). A trial's artifacts
// are written by its worker through TrialQueue::put_artifact, which is fenced;
// a sweep's own ones (the ensemble record and manifest) by the scheduler.
// Where an artifact's bytes are: in the store (`bytes`), or a file of the
// artifact directory (`file`, opened beneath the folder with no link
// followed and already checked against the size and SHA-256 its reference
// gives: trials/artifact_dir.hpp), which a download streams and serves ranges
// of from that descriptor. `path` is where it is, for logs and tests only.
struct ArtifactLocation {
  bool is_file = false;
  std::string bytes;
  std::shared_ptr<UniqueFd> file;
  std::string path;
  std::int64_t size = 0;
  std::string sha256;
};

class ArtifactStore {
 public:
  virtual ~ArtifactStore() = default;
  // A trial's artifact streamed into `out`; false when there is none. Checked
  // as get_artifact checks, at the end: on an error `out` may hold a part.
  virtual Result<bool> read_artifact(const std::string& trial_id, const std::string& name,
                                     ByteSink& out);
  // Where a trial's artifact is (nullopt: there is none), for a download.
  virtual Result<std::optional<ArtifactLocation>> locate_artifact(const std::string& trial_id,
                                                                  const std::string& name);
  // Its size alone (nullopt: there is none), without reading its bytes.
  virtual Result<std::optional<std::int64_t>> artifact_size(const std::string& trial_id,
                                                            const std::string& name);
  // `size` bytes of a trial's artifact from `offset` into `out`, without the
  // rest (the ensemble stage reads prediction files a block of rows at a time).
  // false: there is none; kInvalidArgument when the range passes its end. A
  // file's size is checked against its reference, its checksum is not.
  virtual Result<bool> read_artifact_range(const std::string& trial_id, const std::string& name,
                                           std::int64_t offset, std::int64_t size, char* out);
  // The scheduler's own record kept with a trial.
  virtual Status put_record(const std::string& trial_id, const std::string& name,
                            const std::string& bytes) = 0;
  virtual Result<std::optional<std::string>> get_artifact(const std::string& trial_id,
                                                          const std::string& name) = 0;
  // A record of the sweep as a whole (scheduler/ensemble_stage.hpp writes the
  // ensemble record and manifest); deleted with the sweep.
  virtual Status put_sweep_record(const std::string& sweep_id, const std::string& name,
                                  const std::string& bytes) = 0;
  // nullopt when the sweep has none of that name. Sweeps whose ensemble ran
  // before sweeps owned records kept them with their first member: those are
  // found there.
  virtual Result<std::optional<std::string>> get_sweep_artifact(const std::string& sweep_id,
                                                                const std::string& name) = 0;
};

class TrialQueue {
 public:
  virtual ~TrialQueue() = default;
  // Worker: takes up to max_trials queued trials whose sweeps' requests fit
  // what `offer` has free (trials/placement.hpp; the trials taken are
  // subtracted as it goes) and leases each for lease_ms, in one step. Fair
  // across sweeps (round robin, one trial per sweep per round); within a
  // sweep the oldest that fit. A queued trial that would fit the worker idle
  // but not now is reserved for it: until that trial fits (and is taken), is
  // gone, or the reservation lapses (the worker stopped claiming), this
  // worker's claims take nothing else, so a wide trial cannot starve behind
  // narrow ones. At most one worker reserves a trial. Fewer than asked (maybe
  // none): the reply's wake_cursor is where wait_for_work waits for more.
  virtual Result<Claims> claim_batch(const std::string& worker, const Offer& offer, int max_trials,
                                     std::int64_t lease_ms) = 0;
  // A worker that offers only `free_slots` (slots_only_offer).
  Result<Claims> claim_batch(const std::string& worker, int free_slots, int max_trials,
                             std::int64_t lease_ms) {
    return claim_batch(worker, slots_only_offer(free_slots), max_trials, lease_ms);
  }
  // One trial: a batch of one. nullopt when nothing fits.
  Result<std::optional<Claim>> claim(const std::string& worker, const Offer& offer,
                                     std::int64_t lease_ms) {
    auto got = claim_batch(worker, offer, 1, lease_ms);
    if (!got) return got.error();
    if (got->claims.empty()) return std::optional<Claim>{};
    return std::optional<Claim>{std::move(got->claims.front())};
  }
  Result<std::optional<Claim>> claim(const std::string& worker, int free_slots,
                                     std::int64_t lease_ms) {
    auto got = claim_batch(worker, free_slots, 1, lease_ms);
    if (!got) return got.error();
    if (got->claims.empty()) return std::optional<Claim>{};
    return std::optional<Claim>{std::move(got->claims.front())};
  }
  // Gang follower, every lease/3: renews its rank lease for the attempt it
  // runs ranks of; false when that attempt is no longer the trial's running
  // one (its ranks stop). The leader's heartbeat fails the attempt (retried as
  // a whole) once a follower's rank lease lapsed.
  virtual Result<bool> rank_heartbeat(const std::string& trial_id, int attempt,
                                      const std::string& worker, std::int64_t lease_ms) = 0;
  // Gang follower whose worker drains: asks the attempt's leader (through the
  // trial's control, kRelease) to stop the whole gang as a drain does and
  // release the trial without counting a failure. False when this worker
  // holds no rank lease of that attempt (over, or not its share).
  virtual Result<bool> release_gang(const std::string& trial_id, int attempt,
                                    const std::string& worker) = 0;
  // Gang leader: where rank 0's c10d store listens ("host:port"), fenced like
  // a report; kept for ttl_ms.
  virtual Status publish_rendezvous(const std::string& trial_id, int attempt,
                                    const std::string& worker, const std::string& address,
                                    std::int64_t ttl_ms) = 0;
  // Gang follower `worker`: that address once published (nullopt until then,
  // and always for a worker that holds no rank lease of that attempt).
  virtual Result<std::optional<std::string>> rendezvous(const std::string& trial_id, int attempt,
                                                        const std::string& worker) = 0;
  // Worker: blocks until trials were queued (or made claimable) after the
  // claim that returned `cursor` (true), or block_ms passed (false); either
  // way the caller claims again. Returns at once when that happened already.
  virtual Result<bool> wait_for_work(const std::string& cursor, int block_ms) = 0;
  // Worker, every lease/3: extends every lease it holds in one step; each is
  // fenced on its own (kLeaseLost, kNotFound for a deleted trial) and answers
  // with what the scheduler asks of it.
  virtual Result<std::vector<Result<Control>>> heartbeat_batch(const std::string& worker,
                                                               const std::vector<HeldLease>& leases,
                                                               std::int64_t lease_ms) = 0;
  // One lease: a batch of one.
  Result<Control> heartbeat(const std::string& trial_id, int attempt, const std::string& worker,
                            std::int64_t lease_ms) {
    auto r = heartbeat_batch(worker, {HeldLease{trial_id, attempt}}, lease_ms);
    if (!r) return r.error();
    return std::move(r->front());
  }
  // Worker: intermediate reports, in order, in one call (a trial reporting
  // faster than a round trip sends them together) and one event. Returns what
  // the scheduler asks (prune/cancel). Past the store's cap
  // (kMaxReportsPerTrial by default) they are counted, not stored.
  virtual Result<Control> report_batch(const std::string& trial_id, int attempt,
                                       const std::string& worker,
                                       const std::vector<StepReport>& reports) = 0;
  // One report: a batch of one.
  Result<Control> report(const std::string& trial_id, int attempt, const std::string& worker,
                         const StepReport& report) {
    return report_batch(trial_id, attempt, worker, {report});
  }
  // Worker: attempts ended, in one step. Each is accepted exactly once, only
  // for the current attempt (a stale one is refused, kLeaseLost, and the
  // others are kept). A retryable failure is re-queued while attempts remain,
  // unless the trial was cancelled or pruned meanwhile (then it ends in that
  // state). The outer error is the store's (unreachable): then nothing is
  // known, and sending the batch again is safe (accepted ones are refused).
  virtual Result<std::vector<Status>> complete_batch(const std::string& worker,
                                                     const std::vector<Completion>& done) = 0;
  // One attempt: a batch of one.
  Status complete(const std::string& trial_id, int attempt, const std::string& worker,
                  const TrialResult& result) {
    auto r = complete_batch(worker, {Completion{trial_id, attempt, result, {}}});
    if (!r) return r.error();
    return std::move(r->front());
  }
  // Worker: gives the attempt back without a result and without counting a
  // failure (drain, preemption, a lease it holds but does not run): the trial
  // goes to the head of the queue with attempt + 1, or ends cancelled/pruned
  // when that was asked. Fenced like complete. `counted`: the trial was
  // stopped (drain, preemption); past the pool's max_releases of those it
  // fails instead (the pool's own placement glitches are not counted).
  virtual Status release(const std::string& trial_id, int attempt, const std::string& worker,
                         const std::string& reason, bool counted) = 0;
  // Worker: stores an artifact of the attempt. Fenced like complete: a stale
  // attempt or a finished trial gets kLeaseLost and nothing changes.
  virtual Status put_artifact(const std::string& trial_id, int attempt, const std::string& worker,
                              const std::string& name, const std::string& bytes) = 0;
  // The same for bytes that `produce` writes in pieces (a checkpoint folder
  // of gigabytes): streamed to the artifact directory when the pool has one,
  // with no limit but the disk; else gathered in memory, at most
  // inline_artifact_limit() bytes (kPayloadTooLarge naming it past that).
  virtual Status put_artifact_stream(const std::string& trial_id, int attempt,
                                     const std::string& worker, const std::string& name,
                                     const ByteProducer& produce);
  // The most bytes an artifact kept in the store itself may have (0: no
  // limit: the store keeps artifacts as files).
  virtual std::int64_t inline_artifact_limit() const { return kDefaultInlineArtifactLimit; }
  static constexpr std::int64_t kDefaultInlineArtifactLimit = std::int64_t{256} << 20;
  // Worker: the running trials the store has leased to `worker` (to find
  // leases whose claim reply was lost).
  virtual Result<std::vector<HeldLease>> worker_leases(const std::string& worker) = 0;
  // Reaper: re-queues (attempt+1) or fails trials whose lease expired, at most
  // `max` of them. Returns how many it handled. When the previous call is more
  // than `outage_ms` ago (0: never), nobody could renew leases meanwhile: every
  // running trial gets one lease (plus outage_ms to reconnect) from now
  // instead, and nothing is expired.
  virtual Result<int> reap(int max, std::int64_t outage_ms) = 0;
};

// How the store keeps what it acknowledges: for Redis, the replicas its
// writes wait for (RedisUrl, replicas=N) and those connected now.
struct StoreHealth {
  int replicas_wanted = 0;
  int replicas = 0;
  bool pauses = false;   // missing_replicas=pause: no acknowledgement without them
  std::string degraded;  // non-empty: fewer replicas than wanted, and what that means
};

// One connection to the store, handing out its roles (the same object behind
// each in both implementations). Roles live as long as the Store.
class Store {
 public:
  virtual ~Store() = default;
  virtual SweepStore& sweeps() = 0;
  virtual TrialStore& trials() = 0;
  virtual TrialQueue& queue() = 0;
  virtual WorkerRegistry& workers() = 0;
  virtual EventLog& events() = 0;
  // Replication as it stands now (the default: nothing to say).
  virtual Result<StoreHealth> health() { return StoreHealth{}; }
  virtual ArtifactStore& artifacts() = 0;
  virtual AccessStore& access() = 0;
};

// The one way to make a store: each call opens a new connection (one per
// thread). kUnavailable while the store cannot be reached; callers retry.
using StoreFactory = std::function<Result<std::unique_ptr<Store>>()>;

// An implementation is every role at once and hands itself out.
class AllRoles : public Store,
                 public SweepStore,
                 public TrialStore,
                 public TrialQueue,
                 public WorkerRegistry,
                 public EventLog,
                 public ArtifactStore,
                 public AccessStore {
 public:
  SweepStore& sweeps() final { return *this; }
  TrialStore& trials() final { return *this; }
  TrialQueue& queue() final { return *this; }
  WorkerRegistry& workers() final { return *this; }
  EventLog& events() final { return *this; }
  ArtifactStore& artifacts() final { return *this; }
  AccessStore& access() final { return *this; }
};

}  // namespace hpo::trials
