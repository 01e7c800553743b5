// MemoryStore's records: the TrialStore (creating a batch of trials, reading
// trials, reports and attempts, a trial's control), the WorkerRegistry, and the
// ArtifactStore with a worker's fenced artifact writes. Plain reads and writes
// of the maps; the lease transitions are in memory_store_queue.cpp.
#include "trials/memory/memory_store.hpp"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "trials/artifacts.hpp"

namespace hpo::trials::memory {

namespace {

using Json = nlohmann::json;

}  // namespace

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

}  // namespace hpo::trials::memory
