#include "scheduler/controller_loop.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "trials/log.hpp"

namespace hpo::scheduler {

ControllerLoop::ControllerLoop(StoreFactory stores, ControllerLoopOptions options,
                               StageFactory make_stage)
    : stores_(std::move(stores)), options_(options), make_stage_(std::move(make_stage)) {}

ControllerLoop::~ControllerLoop() { stop(); }

void ControllerLoop::start() {
  stop_.reset();
  thread_ = std::thread([this] { run(); });
}

void ControllerLoop::stop() {
  stop_.set();
  if (thread_.joinable()) thread_.join();
}

void ControllerLoop::run() {
  std::unique_ptr<trials::TrialStore> store;
  auto backoff = std::chrono::milliseconds(100);
  while (!stop_.is_set()) {
    if (!store) {
      auto s = stores_();
      if (!s) {
        log_warn("controller loop: store unavailable", {{"error", s.error().message}});
        if (stop_.wait_for(backoff)) break;  // reconnect back-off
        backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
        continue;
      }
      store = std::move(*s);
      next_rescan_ = {};
    }
    run_once(*store);
  }
}

SweepController* ControllerLoop::controller(trials::TrialStore& store, const std::string& id) {
  if (auto it = controllers_.find(id); it != controllers_.end()) return it->second.get();
  auto sweep = store.get_sweep(id);
  if (!sweep || sweep->state != trials::SweepState::kRunning) return nullptr;
  auto spec = trials::parse_spec(sweep->spec_json);
  if (!spec) {
    // Only possible if the spec format changed incompatibly between versions.
    (void)store.finish_sweep(id, trials::SweepState::kFailed,
                             "stored spec no longer parses: " + spec.error().message);
    return nullptr;
  }
  auto c = std::make_unique<SweepController>(id, std::move(*spec));
  if (make_stage_ && c->spec().ensemble) c->set_ensemble_stage(make_stage_(id, c->spec()));
  log_info("controlling sweep", {{"sweep", id}});
  return controllers_.emplace(id, std::move(c)).first->second.get();
}

void ControllerLoop::rescan(trials::TrialStore& store) {
  auto ids = store.active_sweeps();
  if (!ids) {
    log_warn("controller loop: cannot list sweeps", {{"error", ids.error().message}});
    return;
  }
  for (const auto& id : *ids) {
    if (auto* c = controller(store, id)) {
      c->mark_resync();
      touched_[id] = true;
    }
  }
}

void ControllerLoop::step_all(trials::TrialStore& store, bool all) {
  for (auto it = controllers_.begin(); it != controllers_.end();) {
    if (!all && !touched_.count(it->first)) {
      ++it;
      continue;
    }
    auto alive = it->second->step(store);
    if (!alive) {
      log_warn("controller step failed",
               {{"sweep", it->first}, {"error", alive.error().message}});
      it->second->mark_resync();
      ++it;
    } else if (!*alive) {
      it = controllers_.erase(it);
    } else {
      ++it;
    }
  }
  touched_.clear();
}

void ControllerLoop::run_once(trials::TrialStore& store) {
  auto now = std::chrono::steady_clock::now();
  bool rescanning = now >= next_rescan_;
  if (rescanning) {
    rescan(store);
    next_rescan_ = now + options_.rescan;
  }
  step_all(store, rescanning);
  auto events = store.read_events(last_event_, 1000,
                                  static_cast<int>(options_.event_wait.count()));
  if (!events) {
    stop_.wait_for(options_.event_wait);  // store down: pace the retries
    next_rescan_ = {};
    return;
  }
  for (const auto& e : *events) {
    last_event_ = e.id;
    if (e.sweep_id.empty()) continue;
    if (e.type == "sweep.created") {
      controller(store, e.sweep_id);
    }
    auto it = controllers_.find(e.sweep_id);
    if (it == controllers_.end()) continue;
    if (!e.trial_id.empty()) it->second->mark_dirty(e.trial_id);
    touched_[e.sweep_id] = true;
  }
}

LeaseReaper::LeaseReaper(StoreFactory stores, std::chrono::milliseconds period)
    : stores_(std::move(stores)), period_(period) {}

LeaseReaper::~LeaseReaper() { stop(); }

void LeaseReaper::start() {
  stop_.reset();
  const std::int64_t outage_ms =
      std::max<std::int64_t>(2000, 3 * static_cast<std::int64_t>(period_.count()));
  thread_ = std::thread([this, outage_ms] {
    std::unique_ptr<trials::TrialStore> store;
    while (!stop_.is_set()) {
      if (!store) {
        auto s = stores_();
        if (s) store = std::move(*s);
      }
      // Both store implementations are also the queue.
      if (auto* queue = dynamic_cast<trials::TrialQueue*>(store.get())) {
        // A gap of several periods means the reaper or Redis was away: the
        // store then extends the leases instead of expiring them.
        auto n = queue->reap(100, outage_ms);
        if (!n) log_warn("reaper: store error", {{"error", n.error().message}});
        else if (*n > 0) log_info("reaper: expired leases handled", {{"count", std::to_string(*n)}});
        if (n && *n == 100) continue;  // more may be waiting
      }
      stop_.wait_for(period_);
    }
  });
}

void LeaseReaper::stop() {
  stop_.set();
  if (thread_.joinable()) thread_.join();
}

}  // namespace hpo::scheduler
