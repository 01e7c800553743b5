// MemoryStore: the in-memory twin of RedisStore (see redis/functions/*.lua, whose
// transitions these files mirror one for one; the conformance suite in
// tests/trials keeps the two in step).
//
// This file holds what the roles share, all under mu_: the clock, the trial
// state machine's bookkeeping (counts, finish, requeue, the lease fence), the
// sweeps' queues and the claims' round robin, and the event log. The roles'
// methods are in the other memory_store_*.cpp files, one concern each.
#include "trials/memory/memory_store.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "trials/constraints.hpp"

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

}  // namespace hpo::trials::memory
