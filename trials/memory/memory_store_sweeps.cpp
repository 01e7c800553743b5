// MemoryStore's SweepStore: creating and importing sweeps (an idempotency
// key's first sweep answers a repeat), reading them, and the transitions that
// end, stage, park or delete one. Mirrors redis/functions' sweep creation and
// sweeps files.
#include "trials/memory/memory_store.hpp"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace hpo::trials::memory {

namespace {

using Json = nlohmann::json;

}  // namespace

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

}  // namespace hpo::trials::memory
