// MemoryStore: every store role (trials/store.hpp) in process memory, for unit tests of
// the components built on them (controllers, reaper, worker agent, REST
// handlers), so those tests run in milliseconds without a redis-server.
//
// It follows the same contract as RedisStore (tests/trials run one conformance
// suite against both): one mutex makes every method atomic, and time comes
// from an injected clock, so a test expires a lease by moving the clock
// instead of sleeping. Unlike RedisStore one instance may be shared by any
// number of threads. Nothing persists.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "trials/store.hpp"

namespace hpo::trials::memory {

class MemoryStore : public AllRoles {
 public:
  using Clock = std::function<std::int64_t()>;  // ms since the epoch
  // Without a clock: the system clock.
  explicit MemoryStore(Clock clock = {});

  // SweepStore
  Result<std::int64_t> now_ms() override { return clock_(); }
  Result<std::string> create_sweep(const NewSweep& sweep) override;
  Result<std::string> import_sweep(const NewSweep& sweep,
                                   const std::vector<ImportedTrial>& trials) override;
  Result<Sweep> get_sweep(const std::string& sweep_id) override;
  Result<std::vector<Sweep>> list_sweeps(std::int64_t offset, std::int64_t limit) override;
  Result<std::vector<std::string>> active_sweeps() override;
  Status finish_sweep(const std::string& sweep_id, SweepState state,
                      const std::string& error) override;
  Status cancel_sweep(const std::string& sweep_id) override;
  Status set_stage(const std::string& sweep_id, SweepStage from, SweepStage to) override;
  Status set_unschedulable(const std::string& sweep_id, const std::string& reason) override;
  Status delete_sweep(const std::string& sweep_id) override;

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
  // block_ms waits on a condition variable for real time (the injected clock
  // only stamps events).
  Result<std::vector<Event>> read_events(const std::string& after_id, int max_count,
                                         int block_ms) override;
  Result<EventBounds> event_bounds() override;

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
  // Waits on a condition variable for real time (the injected clock is not involved).
  Result<bool> wait_for_work(const std::string& cursor, int block_ms) override;
  Result<bool> release_gang(const std::string& trial_id, int attempt,
                            const std::string& worker) override;
  Result<bool> rank_heartbeat(const std::string& trial_id, int attempt, const std::string& worker,
                              std::int64_t lease_ms) override;
  Status publish_rendezvous(const std::string& trial_id, int attempt, const std::string& worker,
                            const std::string& address, std::int64_t ttl_ms) override;
  Result<std::optional<std::string>> rendezvous(const std::string& trial_id, int attempt) override;
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
  Result<std::vector<HeldLease>> worker_leases(const std::string& worker) override;
  Result<int> reap(int max, std::int64_t outage_ms) override;

 private:
  struct TrialRec {
    Trial trial;
    std::int64_t lease_deadline = 0;  // 0 when not running
    std::int64_t lease_ms = 0;        // the current attempt's lease length
    std::vector<StepReport> reports;
    std::vector<AttemptRecord> attempts;
    int skipped = 0;  // claims that passed it over for want of room
  };
  struct SweepRec {
    Sweep sweep;
    std::int64_t seq = 0;
    std::vector<std::string> trials, members;  // ids by number
    ResourceRequest needs;
    std::vector<MetricBound> constraints;  // a trial that breaks one is never the best
    std::string import_digest;             // imported sweeps: their trials' (import_digest)
  };
  struct WorkerRec {
    WorkerInfo info;
    std::int64_t expires_ms = 0;
  };

  // All below require mu_ held.
  std::int64_t now() const;
  Counts& counts_of(const Trial& t);
  void move(Trial& t, TrialState to);
  void emit(std::string type, const std::string& sweep, const std::string& trial, std::string data);
  Result<TrialRec*> fenced(const std::string& trial_id, int attempt, const std::string& worker);
  void requeue(TrialRec& r, const std::string& reason, bool at_head = false);
  // The sweep's queue, and its place in the claims' round robin (as in Redis).
  void enqueue(const std::string& sweep, const std::string& trial, bool at_head);
  void make_ready(const std::string& sweep);
  void wake();  // trials may be claimable: wait_for_work returns
  Status complete_one(const std::string& worker, const Completion& c);
  // An idempotency key's first sweep with that spec and digest; kConflict with
  // others; nullopt when unused (create_sweep, import_sweep).
  Result<std::optional<std::string>> idempotent_first(const NewSweep& sweep,
                                                      const std::string& digest);
  SweepRec& new_sweep(const NewSweep& sweep);
  void unready(const std::string& sweep);
  // Cancelled or pruned meanwhile (sweep ended, control set): that state, else none.
  std::optional<TrialState> stop_verdict(const TrialRec& r) const;
  void finish(TrialRec& r, std::int64_t now, TrialState state, std::optional<double> value,
              const Metrics* metrics, const std::string& error);
  void end_sweep(SweepRec& rec, SweepState state, const std::string& error);
  void end_attempt(TrialRec& r, std::int64_t now, const std::string& outcome,
                   const std::string& error);

  Clock clock_;
  mutable std::mutex mu_;
  std::condition_variable events_cv_;
  std::condition_variable work_cv_;
  std::uint64_t wake_seq_ = 0;
  std::map<std::string, SweepRec> sweeps_;
  std::map<std::string, TrialRec> trials_;
  std::map<std::string, std::deque<std::string>> queues_;  // per sweep: queued ids, oldest first
  std::deque<std::string> ready_;  // sweeps in the claims' round robin (each once)
  std::map<std::string, WorkerRec> workers_;
  std::map<std::string, std::string> artifacts_;  // "<trial>\n<name>" -> bytes
  std::map<std::string, std::map<std::string, std::string>> sweep_artifacts_;  // sweep -> name
  std::map<std::string, std::pair<std::string, std::int64_t>> idempotency_;  // key -> sweep, expiry
  // Reservations (TrialQueue::claim_batch): trial -> (worker, expiry), worker -> (trial, expiry).
  std::map<std::string, std::pair<std::string, std::int64_t>> reserve_, reserving_;
  std::map<std::string, std::string> rendezvous_;  // "<trial>:<attempt>" -> address
  std::int64_t last_reap_ms_ = 0;
  bool extended_last_reap_ = false;  // the previous reap extended leases: this one may not
  std::vector<Event> events_;
  std::int64_t sweep_seq_ = 0;
  std::int64_t event_seq_ = 0;
};

}  // namespace hpo::trials::memory
