#include "workers/agent/lease_keeper.hpp"

#include <algorithm>

#include "workers/agent/shared.hpp"
#include "workers/agent/trial_reporter.hpp"

namespace hpo::workers::agent {

LeaseKeeper::LeaseKeeper(Shared& shared, const GpuInventory* gpus, bool torch)
    : shared_(shared), gpus_(gpus), torch_(torch) {}

void LeaseKeeper::set_identity(std::string instance, std::int64_t started_ms) {
  instance_ = std::move(instance);
  started_ms_ = started_ms;
}

bool LeaseKeeper::samples_gpus() const {
  // Only devices NVML reported (they have its UUIDs; --fake-gpus have none).
  const auto& gpus = shared_.options.gpus;
  return gpus_ && gpus_->available() && !gpus.empty() && !gpus.front().id.empty();
}

void LeaseKeeper::sample_gpus(const std::vector<std::shared_ptr<RunningAttempt>>& running) {
  if (!samples_gpus()) return;
  for (const auto& r : running) {
    if (r->devices.empty()) continue;
    if (auto s = sample_attempt(*gpus_, r->devices, !r->request.shares_gpu(), r->program_group))
      r->gpu_use.add(s->memory_mb, s->utilization_pct);
  }
}

void LeaseKeeper::renew_trials(trials::TrialQueue& queue) {
  const auto& o = shared_.options;
  std::vector<std::shared_ptr<RunningAttempt>> running;
  {
    std::lock_guard lk(shared_.mu);
    for (const auto& [id, r] : shared_.running) running.push_back(r);
  }
  sample_gpus(running);
  std::vector<trials::HeldLease> leases;
  leases.reserve(running.size());
  for (const auto& r : running) {
    {
      std::lock_guard lk(r->reporter_mu);
      if (r->reporter) r->reporter->flush(/*always=*/false);
    }
    leases.push_back({r->trial.id, r->trial.attempt});
  }
  if (leases.empty()) return;
  auto answers = queue.heartbeat_batch(o.name, leases, o.lease_ms);
  for (std::size_t i = 0; i < running.size(); ++i) {
    const auto& r = running[i];
    const auto& t = r->trial;
    Result<trials::Control> c = answers ? (*answers)[i] : Result<trials::Control>(answers.error());
    if (c) {
      r->last_lease_ok = Clock::now();
      if (auto s = stop_for(*c); s != StopReason::kNone && r->stop.load() == StopReason::kNone) {
        log_info("trial stop requested",
                 trial_fields(t, o.name, {{"control", trials::to_string(*c)}}));
        r->set_stop(s);
      }
    } else if (c.error().code == ErrorCode::kLeaseLost ||
               c.error().code == ErrorCode::kNotFound) {  // the trial was deleted
      // A result the completer is sending may have been accepted meanwhile:
      // its reply tells; only a trial still running has lost its lease.
      if (!r->delivering.load())
        log_warn("lease lost", trial_fields(t, o.name, {{"error", c.error().message}}));
      r->set_stop(StopReason::kLeaseLost);
    } else if (Clock::now() - r->last_lease_ok > o.outage_grace) {
      // The store has been unreachable for longer than we ride out outages:
      // the trial is most likely someone else's by now.
      log_warn("lease presumed lost", trial_fields(t, o.name, {{"error", c.error().message}}));
      r->set_stop(StopReason::kLeaseLost);
    }
  }
}

void LeaseKeeper::renew_shares(trials::TrialQueue& queue) {
  const auto& o = shared_.options;
  // Each rank lease renewed on its own (few per worker).
  std::vector<std::shared_ptr<GangShare>> shares;
  {
    std::lock_guard lk(shared_.mu);
    for (const auto& [key, share] : shared_.shares) shares.push_back(share);
  }
  for (const auto& share : shares) {
    const auto& t = share->share.trial;
    auto ok = queue.rank_heartbeat(t.id, t.attempt, o.name, o.lease_ms);
    if (ok && *ok && shared_.draining.load() && !share->release_asked) {
      // Our notice: the whole gang stops together at the leader's word (with a
      // checkpoint, released, no failure counted); killing our ranks would fail it.
      auto asked = queue.release_gang(t.id, t.attempt, o.name);
      share->release_asked = asked.ok();
      if (asked.ok())
        log_info("gang release asked of its leader",
                 trial_fields(t, o.name, {{"leader", share->share.leader}}));
    }
    if (ok && *ok) {
      share->last_ok = Clock::now();
    } else if (ok || Clock::now() - share->last_ok > o.outage_grace) {
      if (!share->stale.exchange(true))
        log_info("gang attempt over; its ranks here stop", trial_fields(t, o.name));
    }
  }
}

trials::WorkerInfo LeaseKeeper::registry_entry() const {
  const auto& o = shared_.options;
  trials::WorkerInfo info;
  {
    std::lock_guard lk(shared_.mu);
    for (const auto& [id, r] : shared_.running) info.trials.push_back(id);
    info.busy_slots = shared_.slots.busy_count();
  }
  info.name = o.name;
  info.host = o.host;
  info.slots = o.slots;
  if (gpus_ && gpus_->available()) {
    info.gpus = gpus_->snapshot();
  } else {  // GPUs given on the command line (--fake-gpus)
    for (std::size_t i = 0; i < o.gpus.size(); ++i) {
      trials::GpuInfo g;
      g.index = static_cast<int>(i);
      g.name = o.gpus[i].model;
      g.memory_total_mb = o.gpus[i].memory_mb;
      info.gpus.push_back(std::move(g));
    }
  }
  info.torch = torch_;
  info.cuda = o.cuda;
  info.cpus = o.cpus;
  info.memory_gb = o.memory_gb;
  info.labels = o.labels;
  info.project = o.project;
  info.started_ms = started_ms_;
  info.instance = instance_;
  info.draining = shared_.draining.load();
  return info;
}

Status LeaseKeeper::beat(trials::TrialQueue& queue, trials::WorkerRegistry& workers,
                         std::int64_t interval_ms) {
  renew_trials(queue);
  renew_shares(queue);
  return workers.put_worker(registry_entry(), 3 * interval_ms);
}

void LeaseKeeper::release_orphans(trials::TrialQueue& queue) {
  const auto& o = shared_.options;
  auto held = queue.worker_leases(o.name);
  if (!held) return;  // the store is away: next round
  for (const auto& lease : *held) {
    {
      std::lock_guard lk(shared_.mu);
      auto it = shared_.running.find(lease.trial_id);
      if (it != shared_.running.end() && it->second->trial.attempt == lease.attempt) {
        orphan_seen_.erase(lease.trial_id);
        continue;
      }
    }
    // A claim in flight is not ours to judge yet: only a lease still held
    // orphan_after after we first saw it without a slot running it.
    auto [it, fresh] = orphan_seen_.try_emplace(lease.trial_id, Clock::now(), lease.attempt);
    if (fresh || it->second.second != lease.attempt) {
      it->second = {Clock::now(), lease.attempt};
      continue;
    }
    if (Clock::now() - it->second.first < o.orphan_after) continue;
    trials::Trial t;
    t.id = lease.trial_id;
    t.attempt = lease.attempt;
    auto st = queue.release(lease.trial_id, lease.attempt, o.name,
                            "worker " + o.name + " does not run it (lost claim reply)",
                            /*counted=*/false);
    log_warn("orphaned lease released",
             trial_fields(t, o.name, {{"ok", st ? "yes" : st.error().message}}));
    if (st) {
      std::lock_guard lk(shared_.mu);
      ++shared_.stats.released;
    }
    orphan_seen_.erase(it);
  }
  // Forget leases the store no longer lists.
  std::erase_if(orphan_seen_, [&](const auto& e) {
    return std::none_of(held->begin(), held->end(),
                        [&](const trials::HeldLease& l) { return l.trial_id == e.first; });
  });
}

void LeaseKeeper::run() {
  auto conn = shared_.connect_until_stopped("heartbeat");
  if (!conn) return;
  const auto& o = shared_.options;
  const std::int64_t interval = std::max<std::int64_t>(10, o.lease_ms / 3);
  ThrottledLog errors;
  do {
    auto st = beat(conn->queue(), conn->workers(), interval);
    if (!st &&
        (st.error().code == ErrorCode::kConflict || st.error().code == ErrorCode::kUnauthorized)) {
      // Another live worker has this name (on another host), or the scheduler
      // refuses this worker's token (revoked, another name's): this one stops.
      shared_.refused(st.error());
      break;
    }
    if (!st) {
      errors.warn("worker heartbeat failed", {{"worker", o.name}, {"error", st.error().message}});
    } else {
      if (!shared_.registered.load()) {
        {
          // Under mu: the claimer checks the flag under it before it waits.
          std::lock_guard lk(shared_.mu);
          shared_.registered = true;
        }
        shared_.notify_everyone();
      }
      release_orphans(conn->queue());
    }
  } while ([&] {
    // Between beats, the running attempts' GPU use is sampled every second.
    const auto next_beat = Clock::now() + std::chrono::milliseconds(interval);
    for (;;) {
      std::unique_lock lk(shared_.mu);
      shared_.cv.wait_until(
          lk, samples_gpus() ? std::min(next_beat, Clock::now() + kGpuSampleEvery) : next_beat,
          [this] { return shared_.stopping.load() || shared_.heartbeat_now; });
      if (shared_.stopping.load() || shared_.heartbeat_now || Clock::now() >= next_beat) break;
      std::vector<std::shared_ptr<RunningAttempt>> running;
      for (const auto& [id, r] : shared_.running) running.push_back(r);
      lk.unlock();
      sample_gpus(running);
    }
    std::lock_guard lk(shared_.mu);
    shared_.heartbeat_now = false;
    return !shared_.stopping.load();
  }());
}

}  // namespace hpo::workers::agent
