// MemoryStore's TrialQueue, as the worker and the reaper call it: claims (the
// round robin with placement and reservations), the wait for work, gangs'
// calls, heartbeats, reports, results, releases and the reaper. Each mirrors
// the Redis Function of the same name (redis/functions/*.lua).
#include "trials/memory/memory_store.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/log.hpp"
#include "trials/artifacts.hpp"
#include "trials/placement.hpp"

namespace hpo::trials::memory {

namespace {

using Json = nlohmann::json;

bool valid_outcome(TrialState s) {
  return is_finished(s);
}

}  // namespace

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

Result<std::vector<HeldLease>> MemoryStore::worker_leases(const std::string& worker) {
  std::lock_guard lock(mu_);
  std::vector<HeldLease> out;
  for (const auto& [id, rec] : trials_)
    if (rec.trial.state == TrialState::kRunning && rec.trial.worker == worker)
      out.push_back({id, rec.trial.attempt});
  return out;
}

}  // namespace hpo::trials::memory
