#include "scheduler/controller_loop.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <set>
#include <utility>

#include "core/backoff.hpp"
#include "core/log.hpp"

namespace hpo::scheduler {

// One sweep's controller on its own thread. The loop thread only calls
// notify()/resync()/request_stop(); the controller itself is touched by the
// runner's thread alone (pending work crosses under mu_).
class ControllerLoop::Runner {
 public:
  Runner(std::unique_ptr<SweepController> controller, StoreFactory stores)
      : controller_(std::move(controller)), stores_(std::move(stores)) {}

  void start(std::shared_ptr<Runner> self) {
    thread_ = std::thread([self] { self->run(); });
  }
  void notify(const std::string& trial_id) {
    {
      std::lock_guard lock(mu_);
      if (!trial_id.empty()) dirty_.insert(trial_id);
      woken_ = true;
    }
    cv_.notify_one();
  }
  void resync() {
    {
      std::lock_guard lock(mu_);
      resync_ = woken_ = true;
    }
    cv_.notify_one();
  }
  void request_stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
  }
  bool ended() {
    std::lock_guard lock(mu_);
    return ended_;
  }
  // Joins when the thread ends within `grace`; else leaves it (it owns its
  // state) and returns false.
  bool finish(std::chrono::milliseconds grace) {
    request_stop();
    std::unique_lock lock(mu_);
    bool done = cv_.wait_for(lock, grace, [this] { return ended_; });
    lock.unlock();
    if (!thread_.joinable()) return true;
    if (done) {
      thread_.join();
      return true;
    }
    log_warn("sweep controller still busy at shutdown; left behind",
             {{"sweep", controller_->sweep_id()}});
    thread_.detach();
    return false;
  }

 private:
  void run() {
    std::unique_ptr<trials::Store> store;
    Backoff backoff(std::chrono::milliseconds(100), std::chrono::milliseconds(2000));
    for (;;) {
      std::set<std::string> dirty;
      bool resync = false;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return woken_ || stopping_; });
        if (stopping_) break;
        woken_ = false;
        dirty.swap(dirty_);
        resync = std::exchange(resync_, false);
      }
      if (!store) {
        auto s = stores_();
        if (!s) {
          log_warn("sweep controller: store unavailable",
                   {{"sweep", controller_->sweep_id()}, {"error", s.error().message}});
          std::unique_lock lock(mu_);
          resync_ = woken_ = true;  // try again after the back-off
          cv_.wait_for(lock, backoff.next(), [this] { return stopping_; });
          continue;
        }
        store = std::move(*s);
        backoff.reset();
        resync = true;
      }
      for (const auto& id : dirty) controller_->mark_dirty(id);
      if (resync) controller_->mark_resync();
      auto alive = controller_->step(*store);
      if (!alive) {
        log_warn("controller step failed",
                 {{"sweep", controller_->sweep_id()}, {"error", alive.error().message}});
        controller_->mark_resync();
        if (alive.error().code == ErrorCode::kUnavailable) store.reset();
        // Step again after a back-off even if no event comes: the sweep's
        // last event may be the one whose step failed.
        std::unique_lock lock(mu_);
        woken_ = true;
        cv_.wait_for(lock, backoff.next(), [this] { return stopping_; });
      } else if (!*alive) {
        break;  // the sweep has ended
      } else {
        backoff.reset();
      }
    }
    std::lock_guard lock(mu_);
    ended_ = true;
    cv_.notify_all();
  }

  std::unique_ptr<SweepController> controller_;
  StoreFactory stores_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> dirty_;
  bool resync_ = true;
  bool woken_ = true;  // the first step comes at once
  bool stopping_ = false;
  bool ended_ = false;
  std::thread thread_;
};

ControllerLoop::ControllerLoop(StoreFactory stores, ControllerLoopOptions options,
                               StageFactory make_stage)
    : stores_(std::move(stores)), options_(std::move(options)), make_stage_(std::move(make_stage)) {
  if (!options_.specs) options_.specs = std::make_shared<trials::SpecCache>();
}

ControllerLoop::~ControllerLoop() {
  stop();
}

void ControllerLoop::start() {
  stop_.reset();
  thread_ = std::thread([this] { run(); });
}

void ControllerLoop::stop() {
  stop_.set();
  if (thread_.joinable()) thread_.join();
  for (auto& [id, r] : runners_) r->request_stop();  // all at once, then wait for each
  for (auto& [id, r] : runners_) left_behind_ += !r->finish(std::chrono::seconds(5));
  runners_.clear();
}

void ControllerLoop::run() {
  std::unique_ptr<trials::Store> store;
  Backoff backoff(std::chrono::milliseconds(100), std::chrono::milliseconds(2000));
  while (!stop_.is_set()) {
    if (!store) {
      auto s = stores_();
      if (!s) {
        log_warn("controller loop: store unavailable", {{"error", s.error().message}});
        if (stop_.wait_for(backoff.next())) break;  // reconnect back-off
        continue;
      }
      store = std::move(*s);
      backoff.reset();
      next_rescan_ = {};
    }
    if (last_event_ == "$") {
      // Where reading starts, fixed before any sweep is loaded, so that
      // nothing that happens after a runner's first read is missed.
      auto b = store->events().event_bounds();
      if (!b) {
        store.reset();
        stop_.wait_for(options_.event_wait);
        continue;
      }
      last_event_ = b->last;
    }
    run_once(*store);
  }
}

ControllerLoop::Runner* ControllerLoop::runner(trials::Store& store, const std::string& id) {
  if (auto it = runners_.find(id); it != runners_.end()) return it->second.get();
  auto sweep = store.sweeps().get_sweep(id);
  if (!sweep || sweep->state != trials::SweepState::kRunning) return nullptr;
  auto spec = options_.specs->get(id, sweep->spec_json);
  if (!spec) {
    // Only possible if the spec format changed incompatibly between versions.
    (void)store.sweeps().finish_sweep(id, trials::SweepState::kFailed,
                                      "stored spec no longer parses: " + spec.error().message);
    return nullptr;
  }
  auto c = std::make_unique<SweepController>(id, **spec);
  if (make_stage_ && c->spec().ensemble) c->set_ensemble_stage(make_stage_(id, c->spec()));
  log_info("controlling sweep", {{"sweep", id}});
  auto r = std::make_shared<Runner>(std::move(c), stores_);
  r->start(r);
  return runners_.emplace(id, std::move(r)).first->second.get();
}

void ControllerLoop::drop_finished() {
  for (auto it = runners_.begin(); it != runners_.end();) {
    if (it->second->ended()) {
      (void)it->second->finish(std::chrono::seconds(5));
      it = runners_.erase(it);
    } else {
      ++it;
    }
  }
}

void ControllerLoop::rescan(trials::Store& store) {
  auto ids = store.sweeps().active_sweeps();
  if (!ids) {
    log_warn("controller loop: cannot list sweeps", {{"error", ids.error().message}});
    return;
  }
  // Events trimmed before we read them (the stream is capped): the runners
  // cannot know what they missed and reload their sweeps once.
  bool missed = false;
  if (auto b = store.events().event_bounds(); b && last_event_ != "$")
    missed = trials::event_id_before(last_event_, b->first);
  if (missed) log_warn("controller loop: events were trimmed before they were read; reloading");
  for (const auto& id : *ids) {
    auto known = runners_.find(id);
    Runner* r = runner(store, id);  // a new one loads its sweep in its first step
    if (!r || known == runners_.end()) continue;
    if (missed)
      r->resync();
    else
      r->notify("");  // a step, in case a wake-up was lost; no reload
  }
}

void ControllerLoop::run_once(trials::Store& store) {
  drop_finished();
  auto now = std::chrono::steady_clock::now();
  if (now >= next_rescan_) {
    rescan(store);
    next_rescan_ = now + options_.rescan;
  }
  auto events =
      store.events().read_events(last_event_, 1000, static_cast<int>(options_.event_wait.count()));
  if (!events) {
    stop_.wait_for(options_.event_wait);  // store down: pace the retries
    next_rescan_ = {};
    return;
  }
  for (const auto& e : *events) {
    last_event_ = e.id;
    if (e.sweep_id.empty()) continue;
    // A controller acts on results and reports (and on its sweep's own
    // events); a trial being queued or started changes nothing it decides.
    const bool trial_event = e.type.rfind("trial.", 0) == 0;
    if (trial_event && e.type != "trial.finished" && e.type != "trial.reported") continue;
    Runner* r = e.type == "sweep.created" ? runner(store, e.sweep_id) : nullptr;
    if (!r) {
      auto it = runners_.find(e.sweep_id);
      if (it == runners_.end()) continue;
      r = it->second.get();
    }
    r->notify(trial_event ? e.trial_id : "");
  }
}

}  // namespace hpo::scheduler
