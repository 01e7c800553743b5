// The domain model: sweeps, trials, their states and the records the store keeps.
//
// Trial state machine (every transition is one atomic step in the store):
//
//   queued --claim--> running --complete(ok)-------> completed
//     ^                  |   --complete(pruned)---> pruned
//     |                  |   --complete(failed)---> failed      (attempt+1 == max_attempts)
//     +---- attempt+1 ---+   --lease expired / retryable failure, attempt+1 < max_attempts
//   queued/running --cancel--> cancelled
//   running --release (drain, lost claim reply)--> queued, attempt+1, released+1
//
// Attempts that count against max_attempts: attempt + 1 - released.
//
// `attempt` is the fencing token: a claim hands it to the worker, and every
// heartbeat, report and completion carries it back; the store refuses any call
// whose attempt is not the trial's current one (a stale worker).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "search/space.hpp"
#include "trials/trial_plan.hpp"

namespace hpo::trials {

enum class TrialState { kQueued, kRunning, kCompleted, kFailed, kPruned, kCancelled };
enum class SweepState { kRunning, kFinished, kCancelled, kFailed };
// The controller's stage of a running sweep: the search, then (for sweeps
// with an ensemble section) the ensemble members, then done.
enum class SweepStage { kSearch, kEnsemble, kDone };
// What a trial is for: a point of the search, or a member of the ensemble
// (not to be confused with the trial kind, TrialKind: command/synthetic/torch).
// Numbers count per role; the REST API and Redis spell it "trial"/"member".
enum class TrialRole { kTrial, kMember };

// What the scheduler asks a running trial to do; returned by heartbeats and reports.
// kRelease: a gang follower's worker is draining (its termination notice): the
// leader stops the attempt as its own drain would and releases it, no failure counted.
enum class Control { kNone, kPrune, kCancel, kRelease };

const char* to_string(TrialState s);
const char* to_string(SweepState s);
const char* to_string(Control c);  // "none", "prune", "cancel", "release"
std::optional<Control> parse_control(std::string_view s);
const char* to_string(SweepStage s);  // "search", "ensemble", "done"
std::optional<SweepStage> parse_sweep_stage(std::string_view s);
const char* to_string(TrialRole r);  // "trial", "member"
std::optional<TrialRole> parse_trial_role(std::string_view s);
std::optional<TrialState> parse_trial_state(std::string_view s);
std::optional<SweepState> parse_sweep_state(std::string_view s);
bool is_finished(TrialState s);  // completed, failed, pruned, cancelled

using Metrics = std::map<std::string, double>;

// One attempt of a trial: who ran it, when, how it ended.
struct AttemptRecord {
  int attempt = 0;
  std::string worker;
  std::int64_t started_ms = 0;
  std::int64_t ended_ms = 0;  // 0 while running
  std::string outcome;  // "running", "completed", "failed", "pruned", "lease_expired", "rank_lost",
                        // "released", "cancelled"
  std::string error;
};

struct Trial {
  std::string id;  // "<sweep id>-<number>"
  std::string sweep_id;
  std::int64_t number = 0;  // 0-based within the sweep (per role)
  TrialRole role = TrialRole::kTrial;
  search::Params params;
  TrialState state = TrialState::kQueued;
  int attempt = 0;   // fencing token, 0 for the first attempt
  int released = 0;  // attempts given back by workers (not failures)
  int max_attempts = 1;
  int slots = 1;                // worker slots (GPUs) the trial needs
  std::string worker;           // current or last worker
  std::int64_t created_ms = 0;  // Redis server time, ms since the epoch
  std::int64_t started_ms = 0;  // start of the current/last attempt
  std::int64_t finished_ms = 0;
  std::optional<double> value;  // the objective metric, in the user's sense (not negated)
  Metrics metrics;              // final metrics
  std::string error;            // why it failed / was pruned / cancelled
  Control control = Control::kNone;
  TrialPlan plan;  // its place in a schedule or its member plan (trial_plan.hpp)
  // A data-parallel attempt whose ranks span workers: its layout as the claim
  // placed it, JSON {"world": k, "ranks": [{"worker", "first", "count"}, ...]}
  // (the first entry is this lease holder's); empty otherwise.
  std::string gang;
};

// One intermediate report of a running trial.
struct StepReport {
  std::int64_t step = 0;
  Metrics metrics;
  std::int64_t time_ms = 0;  // filled by the store (server time)
};

struct Counts {
  std::int64_t queued = 0, running = 0, completed = 0, failed = 0, pruned = 0, cancelled = 0;
  std::int64_t finished() const { return completed + failed + pruned + cancelled; }
  std::int64_t active() const { return queued + running; }
  // The count of one state (the codecs walk the states' name table).
  std::int64_t& of(TrialState s) {
    switch (s) {
      case TrialState::kQueued:
        return queued;
      case TrialState::kRunning:
        return running;
      case TrialState::kCompleted:
        return completed;
      case TrialState::kFailed:
        return failed;
      case TrialState::kPruned:
        return pruned;
      case TrialState::kCancelled:
        break;
    }
    return cancelled;
  }
  std::int64_t of(TrialState s) const { return const_cast<Counts*>(this)->of(s); }
};

struct BestTrial {
  std::string trial_id;
  std::int64_t number = 0;
  search::Params params;
  double value = 0;
};

// A user's words on a sweep or a trial: tags (filterable in the API, the CLI
// and the dashboard) and a note. Not part of a trial's record (a finished
// trial's bytes stay immutable): kept beside it, changed by the sweep's owner
// or its project's admins.
struct Annotation {
  std::vector<std::string> tags;
  std::string note;
  bool empty() const { return tags.empty() && note.empty(); }
};
inline constexpr std::size_t kMaxTags = 32;
inline constexpr std::size_t kMaxTagBytes = 64;
inline constexpr std::size_t kMaxNoteBytes = 4096;
// kInvalidArgument naming the field ("tags[2]", "note") past a limit or for a
// tag that is not 1 to kMaxTagBytes of A-Z a-z 0-9 . _ : / = + -.
Status check_annotation(const Annotation& a);

struct Sweep {
  std::string id;
  std::string name;
  SweepState state = SweepState::kRunning;
  std::string spec_json;  // the spec as submitted (canonical JSON)
  bool maximize = false;  // objective mode
  std::int64_t created_ms = 0;
  std::int64_t finished_ms = 0;
  std::int64_t next_number = 0;  // trials created so far (role trial)
  std::int64_t next_member = 0;  // ensemble members created so far (role member)
  SweepStage stage = SweepStage::kSearch;
  Counts counts;                  // role trial only
  Counts member_counts;           // role member only
  std::optional<BestTrial> best;  // best completed trial of role trial
  std::string error;
  std::string unschedulable;  // why no registered worker can run its trials; "" when one can
  std::string project;        // trials/access.hpp
  std::string owner;          // the user who submitted it ("": none recorded)
  Annotation annotation;
  // Within its project, a claim serves the sweeps of the highest priority
  // first (round robin among equals); set by the project's admins.
  std::int64_t priority = 0;
};

// The worker registry entry, refreshed by the worker's heartbeat.
struct GpuInfo {
  int index = 0;
  std::string name;
  std::int64_t memory_total_mb = 0;
  std::int64_t memory_used_mb = 0;
  int utilization_pct = 0;  // -1: the driver gives none (a MIG instance)
  std::string uuid;         // "GPU-..." or, for a MIG instance, "MIG-..." (empty: unknown)
};

struct WorkerInfo {
  std::string name;
  std::string host;
  int slots = 1;
  int busy_slots = 0;
  std::vector<std::string> trials;     // trial ids running now
  std::vector<GpuInfo> gpus;           // slot i owns gpus[i] (the first slots are the GPU slots)
  std::int64_t last_heartbeat_ms = 0;  // filled by the store
  std::int64_t started_ms = 0;
  // What it can run (trials/placement.hpp): torch trials, on CUDA; the cores
  // and memory it shares among its trials' requests (0: not counted); labels.
  bool torch = false;
  bool cuda = false;
  double cpus = 0;
  double memory_gb = 0;
  std::map<std::string, std::string> labels;
  // The one project whose trials it takes ("": every project's).
  std::string project;
  // This process among all that ever had the name (random, per start): a
  // second live worker of the name on another host is refused.
  std::string instance;
  bool draining = false;  // takes no new work (no gang share is placed on it)
};

// An entry of the event stream (for the dashboard and for waking controllers).
struct Event {
  std::string id;    // stream id, "<ms>-<seq>", usable as Last-Event-ID
  std::string type;  // "sweep.created", "trial.queued", "trial.started", "trial.reported",
                     // "trial.finished", "sweep.finished", "worker.joined", "worker.lost", ...
  std::string sweep_id;
  std::string trial_id;
  std::string data;  // JSON object with details
};

}  // namespace hpo::trials
