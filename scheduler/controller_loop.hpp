// ControllerLoop: routes the store's events to one controller per active
// sweep, and steps the controllers that have work on a bounded pool of
// threads.
//
// The loop's thread sleeps on the store's event stream (XREAD BLOCK) and
// hands each event that matters to a controller (a trial's result or
// reports, the sweep's own events) to the runner of its sweep: the named
// trial is marked dirty and the runner is queued to step. New sweeps are
// found through the "sweep.created" event and through a periodic rescan of
// active_sweeps(), which is also how a restarted scheduler picks every sweep
// up again. A runner loads its sweep once; after that each event costs it
// O(1) store calls. The rescan wakes every runner (a lost wake-up costs one
// period) and reloads them only when the capped stream dropped events before
// the loop read them. Reading starts at the stream's end as it was before
// any sweep was loaded, so nothing after a runner's first read is missed.
//
// The pool: `threads` threads (--controller-threads), each with one store
// connection, take queued runners in the order they were woken and step each
// once; a runner is never stepped by two threads at once, and one woken
// while it steps is queued again after. A sweep that is parked, idle or
// waiting for its trials costs no thread and no connection, only its
// controller's memory, so thousands of them cannot exhaust the process. A
// slow step (a GP over thousands of points; a poison spec that takes hours)
// holds one thread; the others go on with every other sweep. A step that
// fails is retried after a back-off, without holding a thread meanwhile.
// stop() gives the threads a few seconds and leaves a wedged one behind (it
// owns everything it touches).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "scheduler/periodic.hpp"
#include "scheduler/sweep_controller.hpp"
#include "trials/spec/spec_cache.hpp"
#include "trials/store.hpp"

namespace hpo::scheduler {

struct ControllerLoopOptions {
  std::chrono::milliseconds rescan{5000};     // new sweeps, lost wake-ups, trimmed events
  std::chrono::milliseconds event_wait{250};  // XREAD BLOCK per iteration
  int threads = 8;                            // the pool that steps controllers
  // The process's spec cache (trials/spec/spec_cache.hpp); one is made when null.
  std::shared_ptr<trials::SpecCache> specs;
};

class ControllerLoop {
 public:
  // `make_stage` (optional) builds the ensemble stage for sweeps that have one.
  using StageFactory =
      std::function<std::unique_ptr<Stage>(const std::string& sweep_id, const trials::SweepSpec&)>;

  ControllerLoop(StoreFactory stores, ControllerLoopOptions options, StageFactory make_stage = {});
  ~ControllerLoop();

  void start();
  // Returns within about one event_wait plus a few seconds per wedged runner.
  void stop();
  // Pool threads stop() had to leave behind (still inside a step): they may
  // outlive main, so the process should end with _Exit then.
  int left_behind() const { return left_behind_; }

  // What the pool holds right now (tests, metrics): sweeps controlled, and
  // the pool's threads.
  std::size_t sweeps() const { return sweep_count_.load(); }
  int threads() const { return static_cast<int>(pool_threads_.size()); }

 private:
  struct Runner;
  struct Pool;
  void run();
  void run_once(trials::Store& store);
  void rescan(trials::Store& store);
  Runner* runner(trials::Store& store, const std::string& sweep_id);
  void drop_finished();
  static void pool_thread(const std::shared_ptr<Pool>& pool, const StoreFactory& stores, int index);

  StoreFactory stores_;
  ControllerLoopOptions options_;
  StageFactory make_stage_;
  std::map<std::string, std::shared_ptr<Runner>> runners_;  // by sweep id; loop thread only
  std::shared_ptr<Pool> pool_;
  std::vector<std::thread> pool_threads_;
  std::atomic<std::size_t> sweep_count_{0};
  int left_behind_ = 0;
  std::string last_event_ = "$";
  std::chrono::steady_clock::time_point next_rescan_{};
  StopFlag stop_;
  std::thread thread_;
};

}  // namespace hpo::scheduler
