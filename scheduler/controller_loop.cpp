#include "scheduler/controller_loop.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include "core/backoff.hpp"
#include "core/log.hpp"

namespace hpo::scheduler {

using Clock = std::chrono::steady_clock;

// One sweep's controller. The controller is touched only by the pool thread
// that steps it; everything else here is the pool's, under Pool::mu.
struct ControllerLoop::Runner {
  explicit Runner(std::unique_ptr<SweepController> c) : controller(std::move(c)) {}
  enum class Where { kIdle, kQueued, kRunning, kWaiting };  // kWaiting: a back-off

  std::unique_ptr<SweepController> controller;
  std::set<std::string> dirty;
  bool resync = true;
  bool woken = true;  // the first step comes at once
  Where where = Where::kIdle;
  Clock::time_point not_before{};  // kWaiting: when it is queued again
  bool ended = false;
  bool dropped = false;  // the loop let go of it: a waiting one is not queued again
  Backoff backoff{std::chrono::milliseconds(100), std::chrono::milliseconds(2000)};
};

struct ControllerLoop::Pool {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<Runner>> ready;
  std::vector<std::shared_ptr<Runner>> waiting;  // back-offs
  bool stopping = false;
  int running = 0;  // threads inside a step

  // Under mu: queues `r` unless it is queued, stepping (it goes again after)
  // or backing off (it goes when that ends).
  void enqueue(const std::shared_ptr<Runner>& r) {
    if (r->where != Runner::Where::kIdle || r->ended) return;
    r->where = Runner::Where::kQueued;
    ready.push_back(r);
    cv.notify_one();
  }
  void wake(const std::shared_ptr<Runner>& r, const std::string& trial_id, bool resync) {
    std::lock_guard lock(mu);
    if (!trial_id.empty()) r->dirty.insert(trial_id);
    r->resync = r->resync || resync;
    r->woken = true;
    enqueue(r);
  }
  // Under mu: back-offs that are over go to the queue; the earliest left.
  std::optional<Clock::time_point> release_waiting() {
    const auto now = Clock::now();
    std::optional<Clock::time_point> next;
    for (auto it = waiting.begin(); it != waiting.end();) {
      auto& r = *it;
      if (r->dropped || r->ended) {
        r->where = Runner::Where::kIdle;
        it = waiting.erase(it);
      } else if (r->not_before <= now) {
        r->where = Runner::Where::kIdle;
        enqueue(r);
        it = waiting.erase(it);
      } else {
        next = next ? std::min(*next, r->not_before) : r->not_before;
        ++it;
      }
    }
    return next;
  }
};

ControllerLoop::ControllerLoop(StoreFactory stores, ControllerLoopOptions options,
                               StageFactory make_stage)
    : stores_(std::move(stores)),
      options_(std::move(options)),
      make_stage_(std::move(make_stage)),
      pool_(std::make_shared<Pool>()) {
  if (!options_.specs) options_.specs = std::make_shared<trials::SpecCache>();
  options_.threads = std::max(1, options_.threads);
}

ControllerLoop::~ControllerLoop() {
  stop();
}

void ControllerLoop::start() {
  stop_.reset();
  // A fresh pool: what a stopped one held (runners backing off, threads left
  // behind inside a step) stays with it.
  pool_ = std::make_shared<Pool>();
  for (int i = 0; i < options_.threads; ++i)
    pool_threads_.emplace_back(
        [pool = pool_, stores = stores_, i] { pool_thread(pool, stores, i); });
  thread_ = std::thread([this] { run(); });
}

void ControllerLoop::stop() {
  stop_.set();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard lock(pool_->mu);
    pool_->stopping = true;
    pool_->ready.clear();
  }
  pool_->cv.notify_all();
  // A thread inside a step gets a few seconds; a wedged one is left behind
  // (the pool is shared with it, so what it touches outlives this object).
  {
    std::unique_lock lock(pool_->mu);
    pool_->cv.wait_for(lock, std::chrono::seconds(5), [&] { return pool_->running == 0; });
    left_behind_ += pool_->running;
  }
  for (auto& t : pool_threads_) {
    if (!t.joinable()) continue;
    if (left_behind_ > 0)
      t.detach();
    else
      t.join();
  }
  if (left_behind_ > 0)
    log_warn("sweep controllers still busy at shutdown; left behind",
             {{"threads", std::to_string(left_behind_)}});
  pool_threads_.clear();
  runners_.clear();
  sweep_count_ = 0;
}

// Touches nothing of the loop object (a thread left behind by stop() may
// outlive it): its pool and factory are its own copies.
void ControllerLoop::pool_thread(const std::shared_ptr<Pool>& pool, const StoreFactory& stores,
                                 int index) {
  std::unique_ptr<trials::Store> store;
  Backoff reconnect(std::chrono::milliseconds(100), std::chrono::milliseconds(2000));
  for (;;) {
    std::shared_ptr<Runner> r;
    std::set<std::string> dirty;
    bool resync = false;
    {
      std::unique_lock lock(pool->mu);
      for (;;) {
        if (pool->stopping) return;
        const auto next = pool->release_waiting();
        if (!pool->ready.empty()) break;
        if (next)
          pool->cv.wait_until(lock, *next);
        else
          pool->cv.wait(lock);
      }
      r = std::move(pool->ready.front());
      pool->ready.pop_front();
      r->where = Runner::Where::kRunning;
      r->woken = false;
      dirty.swap(r->dirty);
      resync = std::exchange(r->resync, false);
      ++pool->running;
    }
    Result<bool> alive = true;
    if (!store) {
      auto s = stores();
      if (s) {
        store = std::move(*s);
        reconnect.reset();
      } else {
        alive = s.error();
      }
    }
    if (store) {
      for (const auto& id : dirty) r->controller->mark_dirty(id);
      if (resync) r->controller->mark_resync();
      alive = r->controller->step(*store);
    }
    std::lock_guard lock(pool->mu);
    --pool->running;
    if (pool->stopping) pool->cv.notify_all();  // stop() waits for running == 0
    if (!alive) {
      log_warn("controller step failed", {{"sweep", r->controller->sweep_id()},
                                          {"thread", std::to_string(index)},
                                          {"error", alive.error().message}});
      if (alive.error().code == ErrorCode::kUnavailable) store.reset();
      // Step again after a back-off even if no event comes: the sweep's last
      // event may be the one whose step failed. The dirty trials stay marked.
      r->resync = true;
      for (const auto& id : dirty) r->dirty.insert(id);
      r->where = Runner::Where::kWaiting;
      r->not_before = Clock::now() + (store ? r->backoff.next() : reconnect.next());
      pool->waiting.push_back(r);
      pool->cv.notify_all();  // a sleeper recomputes its wake-up time
      continue;
    }
    r->backoff.reset();
    r->where = Runner::Where::kIdle;
    if (!*alive) {
      r->ended = true;  // the sweep has ended
      continue;
    }
    if (r->woken) pool->enqueue(r);
  }
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
  auto r = std::make_shared<Runner>(std::move(c));
  {
    std::lock_guard lock(pool_->mu);
    pool_->enqueue(r);
  }
  sweep_count_ = runners_.size() + 1;
  return runners_.emplace(id, std::move(r)).first->second.get();
}

void ControllerLoop::drop_finished() {
  std::lock_guard lock(pool_->mu);
  for (auto it = runners_.begin(); it != runners_.end();) {
    if (it->second->ended) {
      it->second->dropped = true;
      it = runners_.erase(it);
    } else {
      ++it;
    }
  }
  sweep_count_ = runners_.size();
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
    if (!runner(store, id) || known == runners_.end()) continue;  // a new one steps at once
    // A step, in case a wake-up was lost; a reload only when events were missed.
    pool_->wake(known->second, "", missed);
  }
}

void ControllerLoop::run_once(trials::Store& store) {
  drop_finished();
  auto now = Clock::now();
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
    if (e.type == "sweep.created") runner(store, e.sweep_id);
    auto it = runners_.find(e.sweep_id);
    if (it == runners_.end()) continue;
    pool_->wake(it->second, trial_event ? e.trial_id : "", false);
  }
}

}  // namespace hpo::scheduler
