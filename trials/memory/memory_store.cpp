// MemoryStore: the in-memory twin of RedisStore (see redis/functions/*.lua, whose
// transitions this file mirrors one for one; the conformance suite in
// tests/trials keeps the two in step).
#include "trials/memory/memory_store.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <random>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/log.hpp"
#include "trials/artifacts.hpp"

namespace hpo::trials::memory {

namespace {

using Json = nlohmann::json;

std::int64_t system_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "<ms>-<seq>" -> (ms, seq); "$" and junk never match anything older.
std::pair<std::int64_t, std::int64_t> parse_event_id(const std::string& id) {
  std::int64_t ms = 0, seq = 0;
  auto dash = id.find('-');
  try {
    ms = std::stoll(id.substr(0, dash));
    if (dash != std::string::npos) seq = std::stoll(id.substr(dash + 1));
  } catch (...) {
    return {0, 0};
  }
  return {ms, seq};
}

bool valid_outcome(TrialState s) {
  return is_finished(s);
}

}  // namespace

MemoryStore::MemoryStore(Clock clock) : clock_(std::move(clock)) {
  if (!clock_) clock_ = system_ms;
}

std::int64_t MemoryStore::now() const {
  return clock_();
}

Counts& MemoryStore::counts_of(const Trial& t) {
  Sweep& s = sweeps_.at(t.sweep_id).sweep;
  return t.role == TrialRole::kMember ? s.member_counts : s.counts;
}

namespace {
std::int64_t& count_field(Counts& c, TrialState s) {
  switch (s) {
    case TrialState::kQueued:
      return c.queued;
    case TrialState::kRunning:
      return c.running;
    case TrialState::kCompleted:
      return c.completed;
    case TrialState::kFailed:
      return c.failed;
    case TrialState::kPruned:
      return c.pruned;
    case TrialState::kCancelled:
      return c.cancelled;
  }
  return c.queued;
}
}  // namespace

void MemoryStore::move(Trial& t, TrialState to) {
  Counts& c = counts_of(t);
  --count_field(c, t.state);
  ++count_field(c, to);
  t.state = to;
}

void MemoryStore::emit(std::string type, const std::string& sweep, const std::string& trial,
                       std::string data) {
  std::int64_t ms = now();
  std::int64_t seq = 0;
  if (!events_.empty()) {
    auto [last_ms, last_seq] = parse_event_id(events_.back().id);
    if (ms <= last_ms) {
      ms = last_ms;
      seq = last_seq + 1;
    }
  }
  events_.push_back(
      Event{fmt::format("{}-{}", ms, seq), std::move(type), sweep, trial, std::move(data)});
  events_cv_.notify_all();
}

Result<std::optional<std::string>> MemoryStore::idempotent_first(const NewSweep& sweep,
                                                                 const std::string& digest) {
  if (sweep.idempotency_key.empty()) return std::optional<std::string>{};
  auto it = idempotency_.find(sweep.idempotency_key);
  if (it == idempotency_.end() || it->second.second <= now()) return std::optional<std::string>{};
  auto first = sweeps_.find(it->second.first);
  if (first == sweeps_.end()) return std::optional<std::string>{};
  if (first->second.sweep.spec_json == sweep.spec_json && first->second.import_digest == digest)
    return std::optional<std::string>{first->first};
  return Error::conflict("Idempotency-Key " + sweep.idempotency_key + " was used for sweep " +
                         first->first + " with another " + (digest.empty() ? "spec" : "import"));
}

MemoryStore::SweepRec& MemoryStore::new_sweep(const NewSweep& sweep) {
  std::random_device rd;
  std::string id;
  do id = fmt::format("{:08x}", static_cast<std::uint32_t>(rd()));
  while (sweeps_.count(id));
  SweepRec rec;
  rec.sweep.id = id;
  rec.sweep.name = sweep.name;
  rec.sweep.spec_json = sweep.spec_json;
  rec.sweep.maximize = sweep.maximize;
  rec.sweep.created_ms = now();
  rec.needs = sweep.needs;
  rec.constraints = sweep.constraints;
  rec.seq = ++sweep_seq_;
  SweepRec& out = sweeps_.emplace(id, std::move(rec)).first->second;
  if (!sweep.idempotency_key.empty())
    idempotency_[sweep.idempotency_key] = {id, now() + 1000 * sweep.idempotency_ttl_s};
  emit("sweep.created", id, "", Json{{"name", sweep.name}}.dump());
  return out;
}

Result<std::string> MemoryStore::create_sweep(const NewSweep& sweep) {
  std::lock_guard lock(mu_);
  auto first = idempotent_first(sweep, "");
  if (!first) return first.error();
  if (*first) return **first;
  return new_sweep(sweep).sweep.id;
}

Result<std::string> MemoryStore::import_sweep(const NewSweep& sweep,
                                              const std::vector<ImportedTrial>& trials) {
  std::lock_guard lock(mu_);
  for (std::size_t i = 0; i < trials.size(); ++i)
    if (!is_finished(trials[i].state))
      return Error::invalid("trials", fmt::format("imported trial {} is {}, not ended", i,
                                                  to_string(trials[i].state)));
  const std::string digest = import_digest(trials);
  auto first = idempotent_first(sweep, digest);
  if (!first) return first.error();
  if (*first) return **first;
  SweepRec& rec = new_sweep(sweep);
  rec.import_digest = digest;
  Sweep& s = rec.sweep;
  for (const auto& it : trials) {
    TrialRec r;
    Trial& t = r.trial;
    t.number = s.next_number++;
    t.id = fmt::format("{}-{}", s.id, t.number);
    t.sweep_id = s.id;
    t.params = it.params;
    t.state = TrialState::kQueued;
    ++s.counts.queued;
    t.created_ms = s.created_ms;
    t.worker = it.worker;
    t.started_ms = std::max<std::int64_t>(0, it.started_ms);
    rec.trials.push_back(t.id);
    auto& stored = trials_[t.id] = std::move(r);
    finish(stored, std::max<std::int64_t>(0, it.finished_ms), it.state, it.value, &it.metrics,
           it.error);
    stored.attempts.push_back({0, it.worker, stored.trial.started_ms, stored.trial.finished_ms,
                               to_string(it.state), it.error});
  }
  s.state = SweepState::kFinished;
  s.stage = SweepStage::kDone;
  s.finished_ms = now();
  emit("sweep.finished", s.id, "", Json{{"state", to_string(s.state)}, {"error", ""}}.dump());
  return s.id;
}

Result<Sweep> MemoryStore::get_sweep(const std::string& sweep_id) {
  std::lock_guard lock(mu_);
  auto it = sweeps_.find(sweep_id);
  if (it == sweeps_.end()) return Error::not_found("sweep " + sweep_id);
  return it->second.sweep;
}

Result<std::vector<Sweep>> MemoryStore::list_sweeps(std::int64_t offset, std::int64_t limit) {
  std::lock_guard lock(mu_);
  std::vector<const SweepRec*> all;
  for (const auto& [id, rec] : sweeps_) all.push_back(&rec);
  std::sort(all.begin(), all.end(), [](auto* a, auto* b) { return a->seq > b->seq; });
  std::vector<Sweep> out;
  for (std::int64_t i = std::max<std::int64_t>(0, offset);
       i < static_cast<std::int64_t>(all.size()) && static_cast<std::int64_t>(out.size()) < limit;
       ++i)
    out.push_back(all[i]->sweep);
  return out;
}

Result<std::vector<std::string>> MemoryStore::active_sweeps() {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [id, rec] : sweeps_)
    if (rec.sweep.state == SweepState::kRunning) out.push_back(id);
  return out;
}

void MemoryStore::end_sweep(SweepRec& rec, SweepState state, const std::string& error) {
  std::int64_t t_now = now();
  Sweep& s = rec.sweep;
  s.state = state;
  s.finished_ms = t_now;
  s.error = error;
  s.unschedulable.clear();
  queues_.erase(s.id);
  unready(s.id);
  const std::string reason = std::string("sweep ") + to_string(state);
  for (const auto* ids : {&rec.trials, &rec.members}) {
    for (const auto& tid : *ids) {
      TrialRec& r = trials_.at(tid);
      if (r.trial.state == TrialState::kQueued)
        finish(r, t_now, TrialState::kCancelled, std::nullopt, nullptr, reason);
      else if (r.trial.state == TrialState::kRunning)
        r.trial.control = Control::kCancel;
    }
  }
  emit("sweep.finished", s.id, "", Json{{"state", to_string(state)}, {"error", error}}.dump());
}

Status MemoryStore::finish_sweep(const std::string& sweep_id, SweepState state,
                                 const std::string& error) {
  std::lock_guard lock(mu_);
  if (state == SweepState::kRunning)
    return Error{ErrorCode::kInvalidArgument, "sweep state running", {}};
  auto it = sweeps_.find(sweep_id);
  if (it == sweeps_.end()) return Error::not_found("sweep " + sweep_id);
  if (it->second.sweep.state != SweepState::kRunning)
    return Error::conflict("sweep " + sweep_id + " is " + to_string(it->second.sweep.state));
  end_sweep(it->second, state, error);
  return {};
}

Status MemoryStore::cancel_sweep(const std::string& sweep_id) {
  std::lock_guard lock(mu_);
  auto it = sweeps_.find(sweep_id);
  if (it == sweeps_.end()) return Error::not_found("sweep " + sweep_id);
  SweepState state = it->second.sweep.state;
  if (state == SweepState::kCancelled) return {};
  if (state != SweepState::kRunning)
    return Error::conflict("sweep " + sweep_id + " is " + to_string(state));
  end_sweep(it->second, SweepState::kCancelled, "cancelled by user");
  return {};
}

Status MemoryStore::set_stage(const std::string& sweep_id, SweepStage from, SweepStage to) {
  std::lock_guard lock(mu_);
  auto it = sweeps_.find(sweep_id);
  if (it == sweeps_.end()) return Error::not_found("sweep " + sweep_id);
  Sweep& s = it->second.sweep;
  if (s.stage != from)
    return Error::conflict("sweep " + sweep_id + " is in stage " + to_string(s.stage) + ", not " +
                           to_string(from));
  s.stage = to;
  emit("sweep.stage", sweep_id, "", Json{{"from", to_string(from)}, {"to", to_string(to)}}.dump());
  return {};
}

Result<std::vector<Trial>> MemoryStore::create_trials(const std::vector<NewTrial>& batch) {
  std::lock_guard lock(mu_);
  std::vector<Trial> out;
  if (batch.empty()) return out;
  if (auto st = check_new_trials(batch); !st) return st.error();
  const NewTrial& first = batch.front();
  auto it = sweeps_.find(first.sweep_id);
  if (it == sweeps_.end()) return Error::not_found("sweep " + first.sweep_id);
  Sweep& s = it->second.sweep;
  if (s.state != SweepState::kRunning)
    return Error::conflict("sweep " + first.sweep_id + " is " + to_string(s.state));
  bool member = first.role == TrialRole::kMember;
  std::int64_t& next = member ? s.next_member : s.next_number;
  if (first.number != next)
    return Error::conflict(fmt::format("next {} number of {} is {}, not {}", to_string(first.role),
                                       first.sweep_id, next, first.number));
  if (first.number + static_cast<std::int64_t>(batch.size()) > first.limit)
    return Error::conflict(fmt::format("{} limit {} reached", to_string(first.role), first.limit));
  const std::int64_t created = now();
  for (const auto& nt : batch) {
    Trial t;
    t.number = next;
    t.id = fmt::format("{}-{}{}", nt.sweep_id, member ? "m" : "", t.number);
    t.sweep_id = nt.sweep_id;
    t.role = nt.role;
    t.params = nt.params;
    t.max_attempts = std::max(1, nt.max_attempts);
    t.slots = std::max(1, nt.slots);
    t.created_ms = created;
    t.extra = nt.extra;
    ++next;
    ++(member ? s.member_counts : s.counts).queued;
    (member ? it->second.members : it->second.trials).push_back(t.id);
    enqueue(t.sweep_id, t.id, false);
    emit("trial.queued", t.sweep_id, t.id,
         Json{{"attempt", 0}, {"number", t.number}, {"kind", to_string(t.role)}}.dump());
    trials_[t.id].trial = t;
    out.push_back(std::move(t));
  }
  return out;
}

Result<Trial> MemoryStore::get_trial(const std::string& trial_id) {
  std::lock_guard lock(mu_);
  auto it = trials_.find(trial_id);
  if (it == trials_.end()) return Error::not_found("trial " + trial_id);
  return it->second.trial;
}

Result<std::vector<Trial>> MemoryStore::get_trials(const std::vector<std::string>& trial_ids) {
  std::lock_guard lock(mu_);
  std::vector<Trial> out;
  for (const auto& id : trial_ids)
    if (auto it = trials_.find(id); it != trials_.end()) out.push_back(it->second.trial);
  return out;
}

Result<TrialPage> MemoryStore::list_trials(const std::string& sweep_id, TrialRole role,
                                           std::int64_t offset, std::int64_t limit) {
  std::lock_guard lock(mu_);
  TrialPage page;
  auto it = sweeps_.find(sweep_id);
  if (it == sweeps_.end()) return page;  // like Redis: an empty list
  const auto& ids = role == TrialRole::kMember ? it->second.members : it->second.trials;
  page.total = static_cast<std::int64_t>(ids.size());
  for (std::int64_t i = std::max<std::int64_t>(0, offset);
       i < page.total && static_cast<std::int64_t>(page.trials.size()) < limit; ++i)
    page.trials.push_back(trials_.at(ids[i]).trial);
  return page;
}

Result<ReportPage> MemoryStore::get_reports(const std::string& trial_id, std::int64_t offset,
                                            std::int64_t limit) {
  std::lock_guard lock(mu_);
  ReportPage page;
  auto it = trials_.find(trial_id);
  if (it == trials_.end()) return page;
  const auto& all = it->second.reports;
  page.total = static_cast<std::int64_t>(all.size());
  const std::int64_t from = std::clamp<std::int64_t>(offset, 0, page.total);
  const std::int64_t to =
      std::clamp<std::int64_t>(from + std::max<std::int64_t>(limit, 0), from, page.total);
  page.reports.assign(all.begin() + from, all.begin() + to);
  return page;
}

Result<std::vector<AttemptRecord>> MemoryStore::get_attempts(const std::string& trial_id) {
  std::lock_guard lock(mu_);
  auto it = trials_.find(trial_id);
  if (it == trials_.end()) return std::vector<AttemptRecord>{};
  return it->second.attempts;
}

Status MemoryStore::set_control(const std::string& trial_id, Control control) {
  std::lock_guard lock(mu_);
  auto it = trials_.find(trial_id);
  if (it == trials_.end()) return Error::not_found("trial " + trial_id);
  Trial& t = it->second.trial;
  if (t.state == TrialState::kRunning) {
    t.control = control;
    emit("trial.control", t.sweep_id, t.id, Json{{"control", to_string(control)}}.dump());
    return {};
  }
  if (t.state == TrialState::kQueued && control == Control::kCancel) {
    finish(it->second, now(), TrialState::kCancelled, std::nullopt, nullptr, "cancelled");
    return {};
  }
  return Error::conflict("trial " + trial_id + " is " + to_string(t.state));
}

Status MemoryStore::set_unschedulable(const std::string& sweep_id, const std::string& reason) {
  std::lock_guard lock(mu_);
  auto it = sweeps_.find(sweep_id);
  if (it == sweeps_.end()) return Error::not_found("sweep " + sweep_id);
  Sweep& s = it->second.sweep;
  if (s.state != SweepState::kRunning || s.unschedulable == reason) return {};
  s.unschedulable = reason;
  if (reason.empty()) {
    if (!queues_[sweep_id].empty()) make_ready(sweep_id);
  } else {
    unready(sweep_id);
  }
  emit(reason.empty() ? "sweep.schedulable" : "sweep.unschedulable", sweep_id, "",
       reason.empty() ? "{}" : Json{{"reason", reason}}.dump());
  return {};
}

Status MemoryStore::delete_sweep(const std::string& sweep_id) {
  std::lock_guard lock(mu_);
  auto it = sweeps_.find(sweep_id);
  if (it == sweeps_.end()) return Error::not_found("sweep " + sweep_id);
  if (it->second.sweep.state == SweepState::kRunning)
    return Error::conflict("sweep " + sweep_id + " is running: cancel it first");
  if (auto running = it->second.sweep.counts.running + it->second.sweep.member_counts.running;
      running > 0)
    return Error::conflict(
        fmt::format("sweep {} still has {} running trial(s), stopping at their "
                    "next heartbeat: try again shortly",
                    sweep_id, running));
  for (const auto* ids : {&it->second.trials, &it->second.members})
    for (const auto& tid : *ids) {
      trials_.erase(tid);
      auto a = artifacts_.lower_bound(tid + "\n");
      while (a != artifacts_.end() && a->first.rfind(tid + "\n", 0) == 0) a = artifacts_.erase(a);
    }
  sweep_artifacts_.erase(sweep_id);
  sweeps_.erase(it);
  emit("sweep.deleted", sweep_id, "", "{}");
  return {};
}

Status MemoryStore::put_worker(const WorkerInfo& info, std::int64_t ttl_ms) {
  std::lock_guard lock(mu_);
  std::int64_t t_now = now();
  auto it = workers_.find(info.name);
  bool joined = it == workers_.end() || it->second.expires_ms <= t_now;
  if (!joined && !it->second.info.instance.empty() && !info.instance.empty() &&
      it->second.info.instance != info.instance && it->second.info.host != info.host)
    return Error::conflict("a worker named " + info.name + " already runs on host " +
                           it->second.info.host + " (this one is on " + info.host +
                           "): give each worker a name of its own (--name)");
  WorkerRec& w = workers_[info.name];
  w.info = info;
  w.info.last_heartbeat_ms = t_now;
  w.expires_ms = t_now + std::max<std::int64_t>(1, ttl_ms);
  if (joined) emit("worker.joined", "", "", Json{{"worker", info.name}}.dump());
  return {};
}

Status MemoryStore::remove_worker(const std::string& name, const std::string& instance) {
  std::lock_guard lock(mu_);
  auto it = workers_.find(name);
  if (it == workers_.end() ||
      (!it->second.info.instance.empty() && it->second.info.instance != instance))
    return {};
  workers_.erase(it);
  emit("worker.left", "", "", Json{{"worker", name}}.dump());
  return {};
}

Result<std::vector<WorkerInfo>> MemoryStore::list_workers() {
  std::lock_guard lock(mu_);
  std::int64_t t_now = now();
  std::vector<WorkerInfo> out;
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (it->second.expires_ms > t_now) {
      out.push_back(it->second.info);
      ++it;
    } else {
      emit("worker.lost", "", "", Json{{"worker", it->first}}.dump());
      it = workers_.erase(it);
    }
  }
  return out;
}

Result<std::vector<Event>> MemoryStore::read_events(const std::string& after_id, int max_count,
                                                    int block_ms) {
  std::unique_lock lock(mu_);
  std::pair<std::int64_t, std::int64_t> after{-1, -1};
  if (after_id == "$") {
    after = events_.empty() ? std::pair<std::int64_t, std::int64_t>{-1, -1}
                            : parse_event_id(events_.back().id);
  } else if (!after_id.empty() && after_id != "0") {
    after = parse_event_id(after_id);
  }
  auto collect = [&] {
    std::vector<Event> out;
    for (const auto& e : events_) {
      if (static_cast<int>(out.size()) >= std::max(1, max_count)) break;
      if (parse_event_id(e.id) > after) out.push_back(e);
    }
    return out;
  };
  auto out = collect();
  if (out.empty() && block_ms > 0) {
    events_cv_.wait_for(lock, std::chrono::milliseconds(block_ms), [&] {
      return !events_.empty() && parse_event_id(events_.back().id) > after;
    });
    out = collect();
  }
  return out;
}

Result<EventBounds> MemoryStore::event_bounds() {
  std::lock_guard lock(mu_);
  EventBounds b;
  if (!events_.empty()) {
    b.first = events_.front().id;
    b.last = events_.back().id;
  }
  return b;
}

Status MemoryStore::put_record(const std::string& trial_id, const std::string& name,
                               const std::string& bytes) {
  std::lock_guard lock(mu_);
  if (!trials_.count(trial_id)) return Error::not_found("trial " + trial_id);
  artifacts_[trial_id + "\n" + name] = bytes;
  return {};
}

Status MemoryStore::put_artifact(const std::string& trial_id, int attempt,
                                 const std::string& worker, const std::string& name,
                                 const std::string& bytes) {
  std::lock_guard lock(mu_);
  auto r = fenced(trial_id, attempt, worker);
  if (!r) return r.error();
  artifacts_[trial_id + "\n" + name] = bytes;
  return {};
}

Result<std::vector<HeldLease>> MemoryStore::worker_leases(const std::string& worker) {
  std::lock_guard lock(mu_);
  std::vector<HeldLease> out;
  for (const auto& [id, rec] : trials_)
    if (rec.trial.state == TrialState::kRunning && rec.trial.worker == worker)
      out.push_back({id, rec.trial.attempt});
  return out;
}

Result<std::optional<std::string>> MemoryStore::get_artifact(const std::string& trial_id,
                                                             const std::string& name) {
  std::lock_guard lock(mu_);
  auto it = artifacts_.find(trial_id + "\n" + name);
  if (it == artifacts_.end()) return std::optional<std::string>{};
  return std::optional<std::string>{it->second};
}

Status MemoryStore::put_sweep_record(const std::string& sweep_id, const std::string& name,
                                     const std::string& bytes) {
  std::lock_guard lock(mu_);
  if (!sweeps_.count(sweep_id)) return Error::not_found("sweep " + sweep_id);
  sweep_artifacts_[sweep_id][name] = bytes;
  return {};
}

Result<std::optional<std::string>> MemoryStore::get_sweep_artifact(const std::string& sweep_id,
                                                                   const std::string& name) {
  std::lock_guard lock(mu_);
  if (auto s = sweep_artifacts_.find(sweep_id); s != sweep_artifacts_.end())
    if (auto a = s->second.find(name); a != s->second.end())
      return std::optional<std::string>{a->second};
  // As RedisStore: an ensemble record written by an earlier version is with the first member.
  const bool legacy = name == artifact::kEnsembleRecord || name == artifact::kEnsembleManifest;
  auto sweep = sweeps_.find(sweep_id);
  if (!legacy || sweep == sweeps_.end() || sweep->second.members.empty())
    return std::optional<std::string>{};
  auto a = artifacts_.find(sweep->second.members.front() + "\n" + name);
  if (a == artifacts_.end()) return std::optional<std::string>{};
  return std::optional<std::string>{a->second};
}

void MemoryStore::make_ready(const std::string& sweep) {
  auto s = sweeps_.find(sweep);
  if (s == sweeps_.end() || !s->second.sweep.unschedulable.empty()) return;
  if (std::find(ready_.begin(), ready_.end(), sweep) == ready_.end()) {
    ready_.push_back(sweep);
    wake();
  }
}

void MemoryStore::wake() {
  ++wake_seq_;
  work_cv_.notify_all();
}

void MemoryStore::unready(const std::string& sweep) {
  ready_.erase(std::remove(ready_.begin(), ready_.end(), sweep), ready_.end());
}

void MemoryStore::enqueue(const std::string& sweep, const std::string& trial, bool at_head) {
  auto& q = queues_[sweep];
  if (at_head)
    q.push_front(trial);
  else
    q.push_back(trial);
  make_ready(sweep);
  wake();
}

// Claims that pass a trial over for want of room before it is reserved (as in
// redis/functions/*.lua).
constexpr int kReserveAfter = 3;

// Round robin over the ready sweeps, one trial per sweep per round, with
// placement and reservations, as the Redis claim_batch does.
Result<Claims> MemoryStore::claim_batch(const std::string& worker, const Offer& offer_in,
                                        int max_trials, std::int64_t lease_ms) {
  std::lock_guard lock(mu_);
  Claims out;
  Offer offer = offer_in;
  const std::int64_t t_now = now();
  const std::int64_t hold_ms = std::max<std::int64_t>(2000, lease_ms);
  auto needs_of = [&](const std::string& sweep) {
    auto s = sweeps_.find(sweep);
    return s == sweeps_.end() ? ResourceRequest{} : s->second.needs;
  };
  // The request with the trial's own slot count (as the Lua reads the trial's 'slots').
  auto request = [&](const Trial& t) {
    ResourceRequest r = needs_of(t.sweep_id);
    r.slots = t.slots;
    return r;
  };
  auto lease = [&](Trial& t, TrialRec& rec) {
    move(t, TrialState::kRunning);
    t.worker = worker;
    t.started_ms = t_now;
    t.control = Control::kNone;
    t.error.clear();
    rec.lease_deadline = t_now + lease_ms;
    rec.lease_ms = lease_ms;
    rec.attempts.push_back(AttemptRecord{t.attempt, worker, t_now, 0, "running", ""});
    emit("trial.started", t.sweep_id, t.id,
         Json{{"worker", worker}, {"attempt", t.attempt}}.dump());
    auto owner = sweeps_.find(t.sweep_id);
    out.claims.push_back(
        Claim{t, rec.lease_deadline, owner == sweeps_.end() ? "" : owner->second.sweep.spec_json});
  };
  auto live = [&](auto& map, const std::string& k) {
    auto it = map.find(k);
    if (it != map.end() && it->second.second <= t_now) it = (map.erase(it), map.end());
    return it;
  };
  if (max_trials < 1 || offer.slots < 1) return out;
  // A reservation this worker holds first (see store.hpp).
  if (auto mine = live(reserving_, worker); mine != reserving_.end()) {
    const std::string tid = mine->second.first;
    auto rec = trials_.find(tid);
    auto by = live(reserve_, tid);
    const bool ours = by != reserve_.end() && by->second.first == worker;
    if (rec == trials_.end() || rec->second.trial.state != TrialState::kQueued || !ours) {
      reserving_.erase(worker);
      if (ours) reserve_.erase(tid);
    } else if (!take(request(rec->second.trial), offer)) {
      mine->second.second = by->second.second = t_now + hold_ms;
      out.wake_cursor = std::to_string(wake_seq_);
      return out;
    } else {
      reserving_.erase(worker);
      reserve_.erase(tid);
      auto& q = queues_[rec->second.trial.sweep_id];
      q.erase(std::remove(q.begin(), q.end(), tid), q.end());
      if (q.empty()) unready(rec->second.trial.sweep_id);
      lease(rec->second.trial, rec->second);
    }
  }
  const std::size_t n_sweeps = std::min<std::size_t>(64, ready_.size());
  std::vector<std::string> order(ready_.begin(), ready_.begin() + static_cast<long>(n_sweeps));
  std::size_t visited = 0;
  bool reserved = false;
  std::set<std::string> passed;  // sweeps whose first trial passed over was counted
  for (bool took = true;
       took && !reserved && static_cast<int>(out.claims.size()) < max_trials && offer.slots > 0;) {
    took = false;
    for (std::size_t i = 0; i < order.size() && !reserved; ++i) {
      if (static_cast<int>(out.claims.size()) >= max_trials || offer.slots < 1) break;
      visited = std::max(visited, i + 1);
      auto& q = queues_[order[i]];
      for (auto it = q.begin(); it != q.end();) {
        auto rec = trials_.find(*it);
        if (rec == trials_.end() || rec->second.trial.state != TrialState::kQueued) {
          it = q.erase(it);  // cancelled while waiting
          continue;
        }
        Trial& t = rec->second.trial;
        const ResourceRequest r = request(t);
        if (take(r, offer)) {
          q.erase(it);
          lease(t, rec->second);
          took = true;
          break;
        }
        // Only the first trial passed over in a sweep counts a skip.
        const bool first_passed = passed.insert(order[i]).second;
        if (first_passed && fits_idle(r, offer) && ++rec->second.skipped >= kReserveAfter) {
          auto by = live(reserve_, t.id);
          if (by == reserve_.end() || by->second.first == worker ||
              live(reserving_, by->second.first) == reserving_.end()) {
            reserve_[t.id] = {worker, t_now + hold_ms};
            reserving_[worker] = {t.id, t_now + hold_ms};
            reserved = true;
            break;
          }
        }
        ++it;
      }
    }
  }
  for (std::size_t i = 0; i < visited; ++i) {
    ready_.push_back(ready_.front());
    ready_.pop_front();
  }
  for (std::size_t i = 0; i < visited; ++i)
    if (queues_[order[i]].empty()) unready(order[i]);
  if (static_cast<int>(out.claims.size()) < max_trials) out.wake_cursor = std::to_string(wake_seq_);
  return out;
}

Result<bool> MemoryStore::wait_for_work(const std::string& cursor, int block_ms) {
  std::unique_lock lock(mu_);
  std::uint64_t seen = 0;
  std::from_chars(cursor.data(), cursor.data() + cursor.size(), seen);
  return work_cv_.wait_for(lock, std::chrono::milliseconds(std::max(1, block_ms)),
                           [&] { return wake_seq_ > seen; });
}

// One process: no gang is ever placed here (its workers share one host), but a
// follower's calls are answered as the Redis store answers them.
Result<bool> MemoryStore::rank_heartbeat(const std::string& trial_id, int attempt,
                                         const std::string&, std::int64_t) {
  std::lock_guard lock(mu_);
  auto it = trials_.find(trial_id);
  return it != trials_.end() && it->second.trial.state == TrialState::kRunning &&
         it->second.trial.attempt == attempt;
}

Result<bool> MemoryStore::release_gang(const std::string&, int, const std::string&) {
  return false;  // no gang is placed here, so no worker holds a share of one
}

Status MemoryStore::publish_rendezvous(const std::string& trial_id, int attempt,
                                       const std::string& worker, const std::string& address,
                                       std::int64_t) {
  std::lock_guard lock(mu_);
  auto r = fenced(trial_id, attempt, worker);
  if (!r) return r.error();
  rendezvous_[fmt::format("{}:{}", trial_id, attempt)] = address;
  return {};
}

Result<std::optional<std::string>> MemoryStore::rendezvous(const std::string& trial_id,
                                                           int attempt) {
  std::lock_guard lock(mu_);
  auto it = rendezvous_.find(fmt::format("{}:{}", trial_id, attempt));
  if (it == rendezvous_.end()) return std::optional<std::string>{};
  return std::optional<std::string>{it->second};
}

Result<MemoryStore::TrialRec*> MemoryStore::fenced(const std::string& trial_id, int attempt,
                                                   const std::string& worker) {
  auto it = trials_.find(trial_id);
  if (it == trials_.end()) return Error::not_found("trial " + trial_id);
  const Trial& t = it->second.trial;
  if (t.state != TrialState::kRunning || t.attempt != attempt || t.worker != worker)
    return Error::lease_lost(
        fmt::format("trial {} is {} at attempt {} by {}; caller has attempt {} by {}", trial_id,
                    to_string(t.state), t.attempt, t.worker, attempt, worker));
  return &it->second;
}

Result<std::vector<Result<Control>>> MemoryStore::heartbeat_batch(
    const std::string& worker, const std::vector<HeldLease>& leases, std::int64_t lease_ms) {
  std::lock_guard lock(mu_);
  std::vector<Result<Control>> out;
  for (const auto& l : leases) {
    auto r = fenced(l.trial_id, l.attempt, worker);
    if (!r) {
      out.emplace_back(r.error());
      continue;
    }
    (*r)->lease_deadline = now() + lease_ms;
    (*r)->lease_ms = lease_ms;
    out.emplace_back((*r)->trial.control);
  }
  return out;
}

Result<Control> MemoryStore::report_batch(const std::string& trial_id, int attempt,
                                          const std::string& worker,
                                          const std::vector<StepReport>& reports) {
  std::lock_guard lock(mu_);
  auto r = fenced(trial_id, attempt, worker);
  if (!r) return r.error();
  const std::int64_t t_now = now();
  for (const auto& report : reports) {
    if (static_cast<std::int64_t>((*r)->reports.size()) >= kMaxReportsPerTrial) break;  // the cap
    StepReport rep = report;
    rep.time_ms = t_now;
    (*r)->reports.push_back(std::move(rep));
  }
  if (reports.empty()) return (*r)->trial.control;
  // One event per batch, with the latest report.
  Json metrics = Json::object();
  for (const auto& [k, v] : reports.back().metrics) metrics[k] = v;
  emit("trial.reported", (*r)->trial.sweep_id, trial_id,
       Json{{"step", reports.back().step},
            {"metrics", metrics},
            {"count", static_cast<std::int64_t>(reports.size())}}
           .dump());
  return (*r)->trial.control;
}

void MemoryStore::end_attempt(TrialRec& r, std::int64_t t_now, const std::string& outcome,
                              const std::string& error) {
  if (r.attempts.empty()) return;
  r.attempts.back().ended_ms = t_now;
  r.attempts.back().outcome = outcome;
  r.attempts.back().error = error;
}

void MemoryStore::requeue(TrialRec& r, const std::string& reason, bool at_head) {
  Trial& t = r.trial;
  move(t, TrialState::kQueued);
  ++t.attempt;
  t.control = Control::kNone;
  t.error = reason;
  r.lease_deadline = 0;
  enqueue(t.sweep_id, t.id, at_head);
  emit("trial.queued", t.sweep_id, t.id, Json{{"attempt", t.attempt}, {"reason", reason}}.dump());
}

std::optional<TrialState> MemoryStore::stop_verdict(const TrialRec& r) const {
  const Trial& t = r.trial;
  if (t.control == Control::kCancel || sweeps_.at(t.sweep_id).sweep.state != SweepState::kRunning)
    return TrialState::kCancelled;
  if (t.control == Control::kPrune) return TrialState::kPruned;
  return std::nullopt;
}

void MemoryStore::finish(TrialRec& r, std::int64_t t_now, TrialState state,
                         std::optional<double> value, const Metrics* metrics,
                         const std::string& error) {
  Trial& t = r.trial;
  move(t, state);
  t.finished_ms = t_now;
  t.error = error;
  r.lease_deadline = 0;
  if (metrics) t.metrics = *metrics;
  if (value && std::isfinite(*value)) t.value = value;
  Json data{{"state", to_string(state)}, {"attempt", t.attempt}, {"error", error}};
  if (t.value) data["value"] = *t.value;
  SweepRec& rec = sweeps_.at(t.sweep_id);
  Sweep& s = rec.sweep;
  if (state == TrialState::kCompleted && t.role == TrialRole::kTrial && t.value &&
      feasible(rec.constraints, t.metrics)) {
    bool better = !s.best || (s.maximize ? *t.value > s.best->value : *t.value < s.best->value);
    if (better) s.best = BestTrial{t.id, t.number, t.params, *t.value};
  }
  emit("trial.finished", t.sweep_id, t.id, data.dump());
}

Result<std::vector<Status>> MemoryStore::complete_batch(const std::string& worker,
                                                        const std::vector<Completion>& done) {
  std::lock_guard lock(mu_);
  std::vector<Status> out;
  for (const auto& c : done) out.push_back(complete_one(worker, c));
  return out;
}

Status MemoryStore::complete_one(const std::string& worker, const Completion& c) {
  const std::string& trial_id = c.trial_id;
  const int attempt = c.attempt;
  const TrialResult& result = c.result;
  if (!valid_outcome(result.outcome))
    return Error{
        ErrorCode::kInvalidArgument, std::string("outcome ") + to_string(result.outcome), {}};
  auto r = fenced(trial_id, attempt, worker);
  if (!r) {
    if (r.error().code == ErrorCode::kLeaseLost)
      log_warn("stale result refused", {{"trial", trial_id},
                                        {"attempt", std::to_string(attempt)},
                                        {"worker", worker},
                                        {"reason", r.error().message}});
    return r.error();
  }
  TrialRec& rec = **r;
  if (!c.log.empty()) artifacts_[trial_id + "\n" + artifact::kLog] = c.log;
  std::int64_t t_now = now();
  end_attempt(rec, t_now, to_string(result.outcome), result.error);
  if (result.outcome == TrialState::kFailed && result.retryable &&
      rec.trial.attempt + 1 - rec.trial.released < rec.trial.max_attempts) {
    if (auto verdict = stop_verdict(rec)) {  // cancelled or pruned meanwhile: no retry
      finish(rec, t_now, *verdict, std::nullopt, &result.metrics, result.error);
      return {};
    }
    requeue(rec, result.error);
    return {};
  }
  finish(rec, t_now, result.outcome, result.value, &result.metrics, result.error);
  return {};
}

Status MemoryStore::release(const std::string& trial_id, int attempt, const std::string& worker,
                            const std::string& reason, bool counted) {
  (void)counted;  // the bound on counted releases is the Functions' (redis/functions/*.lua)
  std::lock_guard lock(mu_);
  auto r = fenced(trial_id, attempt, worker);
  if (!r) return r.error();
  TrialRec& rec = **r;
  std::int64_t t_now = now();
  end_attempt(rec, t_now, "released", reason);
  if (auto verdict = stop_verdict(rec)) {
    finish(rec, t_now, *verdict, std::nullopt, nullptr, reason);
    return {};
  }
  ++rec.trial.released;
  requeue(rec, "released: " + reason, /*at_head=*/true);
  return {};
}

Result<int> MemoryStore::reap(int max, std::int64_t outage_ms) {
  std::lock_guard lock(mu_);
  std::int64_t t_now = now();
  const std::int64_t last = std::exchange(last_reap_ms_, t_now);
  const bool extended_last = std::exchange(extended_last_reap_, false);
  if (outage_ms > 0 && last > 0 && t_now - last > outage_ms && !extended_last) {
    extended_last_reap_ = true;
    // Nobody could renew leases meanwhile: one lease from now for each.
    for (auto& [id, rec] : trials_)
      if (rec.trial.state == TrialState::kRunning)
        rec.lease_deadline = std::max(rec.lease_deadline, t_now + rec.lease_ms + outage_ms);
    emit("leases.extended", "", "", Json{{"gap_ms", t_now - last}}.dump());
    return 0;
  }
  std::vector<TrialRec*> expired;
  for (auto& [id, rec] : trials_)
    if (rec.trial.state == TrialState::kRunning && rec.lease_deadline <= t_now)
      expired.push_back(&rec);
  std::sort(expired.begin(), expired.end(),
            [](auto* a, auto* b) { return a->lease_deadline < b->lease_deadline; });
  if (static_cast<int>(expired.size()) > std::max(1, max)) expired.resize(std::max(1, max));
  for (TrialRec* rec : expired) {
    Trial& t = rec->trial;
    std::string reason = "lease of worker " + t.worker + " expired";
    end_attempt(*rec, t_now, "lease_expired", reason);
    int attempts = t.attempt + 1 - t.released;
    if (auto verdict = stop_verdict(*rec))  // the pruner or the user had already given up on it
      finish(*rec, t_now, *verdict, std::nullopt, nullptr, reason);
    else if (attempts < t.max_attempts)
      requeue(*rec, reason);
    else
      finish(*rec, t_now, TrialState::kFailed, std::nullopt, nullptr,
             fmt::format("lease expired after {} attempts", attempts));
  }
  return static_cast<int>(expired.size());
}

}  // namespace hpo::trials::memory
