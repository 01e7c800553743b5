// SweepController: drives one sweep's search stage.
//
// Called by the ControllerLoop whenever something may have changed for the
// sweep (an event named it). Each step reads the sweep's counters, folds the
// trials that changed into its cache (one read for all of them), prunes
// hopeless running trials, then tops the queue up to max_concurrent by asking
// the sampler and creating the new trials in one call. Trial creation is a compare-and-set on the
// sweep's next number in the store, so a controller that restarts (or races a second scheduler)
// never creates trial i twice nor more than max_trials trials.
//
// The controller holds no state the store does not have: a fresh controller
// on a restarted scheduler rebuilds everything from the store in its first step.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "scheduler/sweep_roles.hpp"
#include "search/planner.hpp"
#include "search/pruner.hpp"
#include "search/sampler.hpp"
#include "search/warm_start.hpp"
#include "trials/spec/spec.hpp"
#include "trials/store.hpp"

namespace hpo::scheduler {

// Runs once the search stage is over, for sweeps with an `ensemble` section.
class Stage {
 public:
  virtual ~Stage() = default;
  // Returns true when the stage is finished (the sweep may end).
  virtual Result<bool> step(SweepRoles store, const trials::Sweep& sweep) = 0;
};

class SweepController {
 public:
  SweepController(std::string sweep_id, trials::SweepSpec spec);
  SweepController(const SweepController&) = delete;  // its planner asks back (this)
  SweepController& operator=(const SweepController&) = delete;

  // One step. Returns true while the sweep is still active, false once it has
  // ended (finished, cancelled or failed) and the controller can be dropped.
  Result<bool> step(SweepRoles store);

  // The loop tells the controller which trials changed since the last step.
  void mark_dirty(const std::string& trial_id) { dirty_.insert(trial_id); }
  // Forces a full reload of the sweep's trials on the next step.
  void mark_resync() { resync_ = true; }

  // Installed by the scheduler for sweeps with an ensemble section.
  void set_ensemble_stage(std::unique_ptr<Stage> stage) { ensemble_ = std::move(stage); }

  const std::string& sweep_id() const { return sweep_id_; }
  const trials::SweepSpec& spec() const { return spec_; }

 private:
  Status refresh(SweepRoles store);
  Status prune_running(SweepRoles store);
  Result<int> fill_queue(SweepRoles store, const trials::Sweep& sweep);
  // Whether finished trial `number` stored a checkpoint (a PBT donor must have).
  bool checkpointed(SweepRoles store, std::int64_t number);
  // The trial `number` the planner planned, as it will be created.
  trials::NewTrial new_trial(std::int64_t number, search::Params params,
                             const std::optional<search::Lineage>& lineage) const;
  Result<bool> end_search(SweepRoles store, const trials::Sweep& sweep);
  // Folds a trial as read from the store into active_/history_.
  Status absorb(SweepRoles store, trials::Trial t);
  // The trial as the planner tracks it (its place in a schedule, its state).
  void track(const trials::Trial& t);
  // Where trial `number` is (or would go) in the history, kept by ascending number.
  std::vector<search::Observation>::iterator history_at(std::int64_t number);
  bool finished_already(std::int64_t number);
  search::Observation observation(const trials::Trial& t,
                                  const std::vector<search::StepValue>& curve) const;
  // Reads the reports of trial `number` stored since the last read and merges
  // them into its curve (kept sorted by step); notes it in grown_ if any came.
  Status read_new_reports(SweepRoles store, std::int64_t number, const std::string& id);
  double to_min(double v) const { return spec_.objective.maximize ? -v : v; }
  // search.warm_start: the earlier sweeps' completed trials, read once per
  // controller (the sweeps are ended, so a restart reads the same).
  Status load_warm_start(SweepRoles store);

  std::string sweep_id_;
  trials::SweepSpec spec_;
  std::unique_ptr<search::Sampler> sampler_;
  std::unique_ptr<search::Pruner> pruner_;
  std::optional<search::WarmStart> warm_;
  std::unique_ptr<Stage> ensemble_;
  // What runs next (search/planner.hpp): plain search, successive halving or
  // PBT over the sampler, tracking every trial's place in its schedule (from
  // the trials' records, so a restarted controller plans the same).
  std::unique_ptr<search::Planner> planner_;
  // Which finished trials stored a checkpoint (asked of the store once each:
  // a trial without one is never exploited).
  std::map<std::int64_t, bool> has_checkpoint_;

  // The search's memory, kept incrementally so that a step costs what changed,
  // not the sweep's size: trials not finished yet (at most max_concurrent, by
  // number), and the finished ones as the sampler sees them (ascending
  // number; cancelled ones are left out of the search and only counted).
  std::map<std::int64_t, trials::Trial> active_;
  std::vector<search::Observation> history_;
  std::set<std::int64_t> cancelled_;
  std::map<std::int64_t, std::vector<search::StepValue>> curves_;  // active trials', by number
  // Incremental curves: how many of each trial's stored reports are in its
  // curve, so a step reads only the new ones (a trial may hold 10,000), and
  // the trials whose curve grew since the last prune (the only ones the
  // pruner is asked about, as it is called when a trial reports).
  std::map<std::int64_t, std::int64_t> reports_read_;
  std::set<std::int64_t> grown_;
  std::set<std::string> dirty_;
  bool resync_ = true;
};

}  // namespace hpo::scheduler
