// How a step works, and why it is safe to repeat:
//
//  1. refresh: the first step (and every resync) lists all trials of the
//     sweep; later steps re-read only the trials the event stream named.
//     Finished trials are immutable, so the cache never goes stale for them.
//  2. prune: for each running trial with new reports, the pruner compares its
//     curve with every other trial's; a "prune" control flag is set in the
//     store, the worker sees it on its next heartbeat or report and stops.
//     Curves are kept between steps and grow by the reports stored since the
//     last read, so a trial printing thousands of metric lines costs each step
//     only its new reports, not its whole history.
//  3. end or fill: when max_trials trials have finished (or the sampler ran
//     out and nothing is active) the search stage ends. Otherwise the sampler
//     is asked for one trial per free concurrency slot; create_trial is a
//     compare-and-set on the sweep's next number, so if anything else created
//     that number first we get kConflict, resync and try again next step.
//
// Values reach the sampler and the pruner in minimise sense (negated for
// mode: max), which is the search library's convention.
#include "scheduler/sweep_controller.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/log.hpp"

namespace hpo::scheduler {

using trials::Trial;
using trials::TrialState;

SweepController::SweepController(std::string sweep_id, trials::SweepSpec spec)
    : sweep_id_(std::move(sweep_id)), spec_(std::move(spec)) {
  sampler_ = search::make_sampler(spec_.search.sampler, spec_.space);
  if (spec_.early_stopping) pruner_ = search::make_pruner(*spec_.early_stopping);
}

Result<bool> SweepController::step(trials::Store& store) {
  auto sweep = store.sweeps().get_sweep(sweep_id_);
  if (!sweep) return sweep.error();
  if (sweep->state != trials::SweepState::kRunning) return false;
  if (!sampler_) {
    auto st = store.sweeps().finish_sweep(sweep_id_, trials::SweepState::kFailed,
                                          "the search algorithm is not available in this build");
    if (!st) return st.error();
    return false;
  }

  if (sweep->stage == trials::SweepStage::kSearch) {
    if (auto st = refresh(store); !st) return st.error();
    if (pruner_)
      if (auto st = prune_running(store); !st) return st.error();
    const auto& c = sweep->counts;
    bool done = c.finished() >= spec_.search.max_trials ||
                ((exhausted_ || sweep->next_number >= spec_.search.max_trials) && c.active() == 0);
    if (done) return end_search(store, *sweep);
    auto created = fill_queue(store, *sweep);
    if (!created) return created.error();
    // The grid may have run out just now with nothing left running.
    if (exhausted_ && *created == 0 && c.active() == 0) return end_search(store, *sweep);
    return true;
  }
  if (sweep->stage == trials::SweepStage::kEnsemble) {
    if (!ensemble_) {
      auto st = store.sweeps().finish_sweep(sweep_id_, trials::SweepState::kFailed,
                                            "this scheduler has no ensemble stage");
      if (!st) return st.error();
      return false;
    }
    auto finished = ensemble_->step(store, *sweep);
    if (!finished) return finished.error();
    if (!*finished) return true;
    // The stage may have ended the sweep itself (failed, with its reason).
    auto now = store.sweeps().get_sweep(sweep_id_);
    if (!now) return now.error();
    if (now->state != trials::SweepState::kRunning) return false;
    if (auto st = store.sweeps().set_stage(sweep_id_, trials::SweepStage::kEnsemble,
                                           trials::SweepStage::kDone);
        !st && st.error().code != ErrorCode::kConflict)
      return st.error();
  }
  // Stage "done": the sweep's work is complete.
  auto st = store.sweeps().finish_sweep(sweep_id_, trials::SweepState::kFinished, "");
  if (!st && st.error().code != ErrorCode::kConflict) return st.error();
  log_info("sweep finished", {{"sweep", sweep_id_}});
  return false;
}

Status SweepController::refresh(trials::Store& store) {
  auto note = [&](Trial t) {
    bool had_curve = curves_.count(t.number) > 0;
    auto& cached = trials_[t.number];
    bool reports_may_change =
        t.state == TrialState::kRunning || !had_curve || cached.state != t.state;
    cached = std::move(t);
    return reports_may_change;
  };
  if (resync_) {
    auto page = store.trials().list_trials(sweep_id_, trials::TrialRole::kTrial, 0, trials::kAll);
    if (!page) return page.error();
    trials_.clear();
    curves_.clear();
    reports_read_.clear();
    grown_.clear();
    for (auto& t : page->trials) note(std::move(t));
    resync_ = false;
    dirty_.clear();
    if (pruner_) {
      for (auto& [number, t] : trials_)
        if (auto st = read_new_reports(store, number, t.id); !st) return st;
    }
    return {};
  }
  std::set<std::string> dirty;
  dirty.swap(dirty_);
  for (const auto& id : dirty) {
    auto t = store.trials().get_trial(id);
    if (!t) {
      if (t.error().code == ErrorCode::kNotFound) continue;
      dirty_.insert(dirty.begin(), dirty.end());  // try again next step
      return t.error();
    }
    if (t->role != trials::TrialRole::kTrial) continue;
    std::int64_t number = t->number;
    if (note(std::move(*t)) && pruner_)
      if (auto st = read_new_reports(store, number, id); !st) {
        dirty_.insert(id);
        return st;
      }
  }
  return {};
}

Status SweepController::read_new_reports(trials::Store& store, std::int64_t number,
                                         const std::string& id) {
  std::int64_t& read = reports_read_[number];
  auto page = store.trials().get_reports(id, read, trials::kAll);
  if (!page) return page.error();
  auto& curve = curves_[number];
  for (const auto& r : page->reports) {
    auto it = r.metrics.find(spec_.objective.metric);
    if (it == r.metrics.end()) continue;
    search::StepValue v{r.step, to_min(it->second)};
    // Usually the newest step is the largest: append. Otherwise insert after
    // the equal steps, which keeps the order of arrival among them.
    auto at =
        std::upper_bound(curve.begin(), curve.end(), v.step,
                         [](std::int64_t s, const search::StepValue& e) { return s < e.step; });
    curve.insert(at, v);
  }
  if (!page->reports.empty()) grown_.insert(number);
  read += static_cast<std::int64_t>(page->reports.size());
  return {};
}

search::Observation SweepController::observation(const Trial& t) const {
  search::Observation o;
  o.number = t.number;
  o.params = t.params;
  switch (t.state) {
    case TrialState::kCompleted:
      o.outcome = search::TrialOutcome::kCompleted;
      break;
    case TrialState::kPruned:
      o.outcome = search::TrialOutcome::kPruned;
      break;
    case TrialState::kRunning:
    case TrialState::kQueued:
      o.outcome = search::TrialOutcome::kRunning;
      break;
    default:
      o.outcome = search::TrialOutcome::kFailed;
      break;
  }
  if (auto it = curves_.find(t.number); it != curves_.end()) o.curve = it->second;
  if (t.value)
    o.value = to_min(*t.value);
  else if (t.state == TrialState::kPruned && !o.curve.empty())
    o.value = o.curve.back().value;
  return o;
}

Status SweepController::prune_running(trials::Store& store) {
  std::set<std::int64_t> grown;
  grown.swap(grown_);
  const bool any = std::any_of(grown.begin(), grown.end(), [&](std::int64_t n) {
    auto t = trials_.find(n);
    return t != trials_.end() && t->second.state == TrialState::kRunning;
  });
  if (!any) return {};
  std::vector<search::Observation> all;
  all.reserve(trials_.size());
  for (const auto& [number, t] : trials_)
    if (t.state != TrialState::kQueued) all.push_back(observation(t));
  for (std::int64_t number : grown) {
    auto found = trials_.find(number);
    if (found == trials_.end()) continue;
    const Trial& t = found->second;
    if (t.state != TrialState::kRunning || t.control != trials::Control::kNone) continue;
    auto it = curves_.find(number);
    if (it == curves_.end() || it->second.empty()) continue;
    // The others: every observation but this trial's, moved to the end
    // rather than copied (curves may be long).
    auto self = std::find_if(all.begin(), all.end(),
                             [&](const search::Observation& o) { return o.number == number; });
    std::size_t n_others = all.size();
    if (self != all.end()) {
      std::iter_swap(self, all.end() - 1);
      --n_others;
    }
    const bool prune = pruner_->should_prune(it->second, std::span(all.data(), n_others));
    if (self != all.end()) std::iter_swap(self, all.end() - 1);
    if (!prune) continue;
    auto st = store.trials().set_control(t.id, trials::Control::kPrune);
    if (!st && st.error().code != ErrorCode::kConflict) {
      grown_.insert(grown.begin(), grown.end());  // asked again next step
      return st;
    }
    trials_[number].control = trials::Control::kPrune;
    log_info(
        "trial pruned",
        {{"sweep", sweep_id_}, {"trial", t.id}, {"step", std::to_string(it->second.back().step)}});
  }
  return {};
}

Result<int> SweepController::fill_queue(trials::Store& store, const trials::Sweep& sweep) {
  int created_count = 0;
  std::int64_t active = sweep.counts.active();
  std::int64_t next = sweep.next_number;
  while (active < spec_.search.max_concurrent && next < spec_.search.max_trials && !exhausted_) {
    std::vector<search::Observation> history;
    std::vector<search::Params> pending;
    for (const auto& [number, t] : trials_) {
      if (trials::is_finished(t.state)) {
        if (t.state != TrialState::kCancelled) history.push_back(observation(t));
      } else {
        pending.push_back(t.params);
      }
    }
    auto params = sampler_->ask(history, pending, next);
    if (!params) {
      exhausted_ = true;
      break;
    }
    trials::NewTrial nt;
    nt.sweep_id = sweep_id_;
    nt.role = trials::TrialRole::kTrial;
    nt.number = next;
    nt.limit = spec_.search.max_trials;
    nt.params = std::move(*params);
    nt.max_attempts = spec_.trial.max_attempts;
    nt.slots = spec_.trial.slots();
    auto created = store.trials().create_trial(nt);
    if (!created) {
      if (created.error().code == ErrorCode::kConflict) {
        resync_ = true;  // someone else moved the sweep on; look again next step
        return created_count;
      }
      return created.error();
    }
    log_info("trial queued", {{"sweep", sweep_id_}, {"trial", created->id}});
    trials_[next] = std::move(*created);
    ++next;
    ++active;
    ++created_count;
  }
  return created_count;
}

Result<bool> SweepController::end_search(trials::Store& store, const trials::Sweep& sweep) {
  if (spec_.ensemble) {
    auto st = store.sweeps().set_stage(sweep_id_, trials::SweepStage::kSearch,
                                       trials::SweepStage::kEnsemble);
    if (!st && st.error().code != ErrorCode::kConflict) return st.error();
    log_info("search stage finished, ensemble stage starts", {{"sweep", sweep_id_}});
    return true;
  }
  const auto& c = sweep.counts;
  bool all_failed = c.completed == 0 && c.pruned == 0 && c.finished() > 0;
  std::string error =
      all_failed ? fmt::format("all {} trials failed; see the trials' errors", c.failed) : "";
  auto st = store.sweeps().finish_sweep(
      sweep_id_, all_failed ? trials::SweepState::kFailed : trials::SweepState::kFinished, error);
  if (!st && st.error().code != ErrorCode::kConflict) return st.error();
  log_info(all_failed ? "sweep failed" : "sweep finished",
           {{"sweep", sweep_id_},
            {"completed", std::to_string(c.completed)},
            {"failed", std::to_string(c.failed)},
            {"pruned", std::to_string(c.pruned)}});
  return false;
}

}  // namespace hpo::scheduler
