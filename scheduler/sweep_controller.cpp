// How a step works, and why it is safe to repeat:
//
//  1. refresh: the first step (and every resync) lists all trials of the
//     sweep; later steps re-read only the trials the event stream named, in
//     one call. Finished trials are immutable, so once folded into the
//     history they are never read again, and the history grows in place:
//     a step's cost follows what changed, not the size of the sweep.
//  2. prune: for each running trial with new reports, the pruner compares its
//     curve with every other trial's; a "prune" control flag is set in the
//     store, the worker sees it on its next heartbeat or report and stops.
//     Curves are kept between steps and grow by the reports stored since the
//     last read, so a trial printing thousands of metric lines costs each step
//     only its new reports, not its whole history.
//  3. end or fill: when max_trials trials have finished (or the sampler ran
//     out and nothing is active) the search stage ends. Otherwise the sampler
//     is asked for one trial per free concurrency slot (each answer joins the
//     pending ones before the next ask) and the new trials are created in one
//     create_trials, a compare-and-set on the sweep's next number: if
//     anything else created that number first we get kConflict, resync and
//     try again next step.
//
// Values reach the sampler and the pruner in minimise sense (negated for
// mode: max), which is the search library's convention.
#include "scheduler/sweep_controller.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/log.hpp"
#include "trials/artifacts.hpp"

namespace hpo::scheduler {

using trials::Trial;
using trials::TrialState;

SweepController::SweepController(std::string sweep_id, trials::SweepSpec spec)
    : sweep_id_(std::move(sweep_id)), spec_(std::move(spec)) {
  search::SamplerConfig config = spec_.search.sampler;
  if (spec_.objectives.size() > 1) {
    config.objectives = static_cast<int>(spec_.objectives.size());
    for (const trials::Objective& o : spec_.objectives)
      config.reference.push_back(!o.reference ? std::numeric_limits<double>::quiet_NaN()
                                 : o.maximize ? -*o.reference
                                              : *o.reference);
  }
  sampler_ = search::make_sampler(config, spec_.space);
  if (spec_.early_stopping) pruner_ = search::make_pruner(*spec_.early_stopping);
  // New configurations: a warm start's design first (search.warm_start),
  // then the sampler. PBT's first members come from the sampler alone.
  auto designed = [this](std::span<const search::Observation> seen,
                         std::span<const search::Params> pending,
                         std::int64_t index) -> std::optional<search::Params> {
    if (warm_)
      if (auto p = warm_->initial(index)) return p;
    return sampler_->ask(seen, pending, index);
  };
  auto sampled = [this](std::span<const search::Observation> seen,
                        std::span<const search::Params> pending,
                        std::int64_t index) { return sampler_->ask(seen, pending, index); };
  using search::Algorithm;
  using search::FidelityModel;
  if (spec_.search.pbt) {
    planner_ = search::pbt_planner(*spec_.search.pbt, spec_.space, sampled);
  } else if (spec_.search.fidelity) {
    // What the model learns from: TPE every configuration at its deepest rung
    // (tests/bench/fidelity_bench.sh: better than BOHB's one budget on
    // crossing curves); the GP (BOHB, Falkner et al., 2018) the largest budget
    // with at least d + 2 results; the model-free samplers the history as it is.
    const Algorithm a = spec_.search.sampler.algorithm;
    const FidelityModel model = a == Algorithm::kTpe        ? FidelityModel::kByConfiguration
                                : a == Algorithm::kBayesian ? FidelityModel::kLargestBudget
                                                            : FidelityModel::kHistory;
    planner_ = search::halving_planner(*spec_.search.fidelity, designed, model,
                                       spec_.space.params.size() + 2);
  } else {
    planner_ = search::plain_planner(designed);
  }
}

Result<bool> SweepController::step(SweepRoles store) {
  auto sweep = store.sweeps.get_sweep(sweep_id_);
  if (!sweep) return sweep.error();
  if (sweep->state != trials::SweepState::kRunning) return false;
  if (!sampler_) {
    auto st = store.sweeps.finish_sweep(sweep_id_, trials::SweepState::kFailed,
                                        "the search algorithm is not available in this build");
    if (!st) return st.error();
    return false;
  }

  if (sweep->stage == trials::SweepStage::kSearch) {
    // An ensemble-only sweep (no parameters: plain bagging of one fixed
    // configuration) has nothing to search; its members are the whole sweep.
    if (spec_.ensemble && spec_.space.params.empty() && sweep->next_number == 0)
      return end_search(store, *sweep);
    if (auto st = refresh(store); !st) return st.error();
    if (pruner_)
      if (auto st = prune_running(store); !st) return st.error();
    const auto& c = sweep->counts;
    bool done =
        c.finished() >= spec_.search.max_trials ||
        ((planner_->done() || sweep->next_number >= spec_.search.max_trials) && c.active() == 0);
    if (done) return end_search(store, *sweep);
    auto created = fill_queue(store, *sweep);
    if (!created) return created.error();
    // The grid may have run out just now with nothing left running.
    if (planner_->done() && *created == 0 && c.active() == 0) return end_search(store, *sweep);
    return true;
  }
  if (sweep->stage == trials::SweepStage::kEnsemble) {
    if (!ensemble_) {
      auto st = store.sweeps.finish_sweep(sweep_id_, trials::SweepState::kFailed,
                                          "this scheduler has no ensemble stage");
      if (!st) return st.error();
      return false;
    }
    auto finished = ensemble_->step(store, *sweep);
    if (!finished) return finished.error();
    if (!*finished) return true;
    // The stage may have ended the sweep itself (failed, with its reason).
    auto now = store.sweeps.get_sweep(sweep_id_);
    if (!now) return now.error();
    if (now->state != trials::SweepState::kRunning) return false;
    if (auto st = store.sweeps.set_stage(sweep_id_, trials::SweepStage::kEnsemble,
                                         trials::SweepStage::kDone);
        !st && st.error().code != ErrorCode::kConflict)
      return st.error();
  }
  // Stage "done": the sweep's work is complete.
  auto st = store.sweeps.finish_sweep(sweep_id_, trials::SweepState::kFinished, "");
  if (!st && st.error().code != ErrorCode::kConflict) return st.error();
  log_info("sweep finished", {{"sweep", sweep_id_}});
  return false;
}

std::vector<search::Observation>::iterator SweepController::history_at(std::int64_t number) {
  return std::lower_bound(
      history_.begin(), history_.end(), number,
      [](const search::Observation& o, std::int64_t n) { return o.number < n; });
}

bool SweepController::finished_already(std::int64_t number) {
  if (cancelled_.count(number)) return true;
  auto it = history_at(number);
  return it != history_.end() && it->number == number;
}

Status SweepController::absorb(SweepRoles store, Trial t) {
  const std::int64_t number = t.number;
  const bool active = active_.count(number) > 0;
  if (!active && finished_already(number)) return {};  // immutable: seen for good
  track(t);
  // A curve grows while the trial runs; a finished one's last reports are
  // read before it joins the history.
  if (pruner_ && t.state != TrialState::kQueued)
    if (auto st = read_new_reports(store, number, t.id); !st) return st;
  if (!trials::is_finished(t.state)) {
    active_[number] = std::move(t);
    return {};
  }
  std::vector<search::StepValue> curve;
  if (auto c = curves_.find(number); c != curves_.end()) {
    curve = std::move(c->second);
    curves_.erase(c);
  }
  active_.erase(number);
  reports_read_.erase(number);
  grown_.erase(number);
  if (t.state == TrialState::kCancelled) {
    cancelled_.insert(number);
    return {};
  }
  history_.insert(history_at(number), observation(t, curve));
  return {};
}

void SweepController::track(const Trial& t) {
  // A plan the store could not decode is no place in a schedule (never
  // promoted, never counted).
  search::TrackedTrial tracked{t.number, t.plan.lineage, trials::is_finished(t.state), std::nullopt,
                               t.params};
  if (t.state == TrialState::kCompleted && t.value) tracked.value = to_min(*t.value);
  planner_->track(tracked);
}

Status SweepController::refresh(SweepRoles store) {
  if (resync_) {
    auto page = store.trials.list_trials(sweep_id_, trials::TrialRole::kTrial, 0, trials::kAll);
    if (!page) return page.error();
    active_.clear();
    history_.clear();
    cancelled_.clear();
    curves_.clear();
    reports_read_.clear();
    grown_.clear();
    dirty_.clear();
    planner_->clear();
    for (auto& t : page->trials)
      if (auto st = absorb(store, std::move(t)); !st) return st;
    resync_ = false;
    return {};
  }
  if (dirty_.empty()) return {};
  std::vector<std::string> ids(dirty_.begin(), dirty_.end());
  auto got = store.trials.get_trials(ids);
  if (!got) return got.error();  // dirty_ kept: read again next step
  dirty_.clear();
  for (auto& t : *got) {
    if (t.role != trials::TrialRole::kTrial) continue;
    std::string id = t.id;
    if (auto st = absorb(store, std::move(t)); !st) {
      dirty_.insert(id);
      return st;
    }
  }
  return {};
}

Status SweepController::read_new_reports(SweepRoles store, std::int64_t number,
                                         const std::string& id) {
  std::int64_t& read = reports_read_[number];
  auto page = store.trials.get_reports(id, read, trials::kAll);
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

search::Observation SweepController::observation(
    const Trial& t, const std::vector<search::StepValue>& curve) const {
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
  o.curve = curve;
  if (t.value)
    o.value = to_min(*t.value);
  else if (t.state == TrialState::kPruned && !o.curve.empty())
    o.value = o.curve.back().value;
  // Constraints: how far each bound is broken (NaN: the metric is missing).
  if (t.state == TrialState::kCompleted)
    for (const trials::MetricBound& b : spec_.constraints) {
      auto m = t.metrics.find(b.metric);
      o.violations.push_back(m == t.metrics.end() ? std::numeric_limits<double>::quiet_NaN()
                                                  : trials::violation(b, m->second));
    }
  // Several objectives: each in minimise sense; a trial missing one has none.
  if (spec_.objectives.size() > 1 && t.state == TrialState::kCompleted) {
    for (const auto& objective : spec_.objectives) {
      auto m = t.metrics.find(objective.metric);
      if (m == t.metrics.end() || !std::isfinite(m->second)) {
        o.values.clear();
        break;
      }
      o.values.push_back(objective.maximize ? -m->second : m->second);
    }
  }
  return o;
}

Status SweepController::prune_running(SweepRoles store) {
  std::set<std::int64_t> grown;
  grown.swap(grown_);
  const bool any = std::any_of(grown.begin(), grown.end(), [&](std::int64_t n) {
    auto t = active_.find(n);
    return t != active_.end() && t->second.state == TrialState::kRunning;
  });
  if (!any) return {};
  // What the pruner compares with: the history (finished trials) and the
  // running trials' curves so far. The running ones are appended to the
  // history for the call and taken off again, so the history (which may
  // hold 100,000 trials) is never copied.
  const std::size_t n_finished = history_.size();
  for (const auto& [number, t] : active_)
    if (t.state != TrialState::kQueued) {
      auto c = curves_.find(number);
      history_.push_back(
          observation(t, c == curves_.end() ? std::vector<search::StepValue>{} : c->second));
    }
  struct Restore {
    std::vector<search::Observation>& h;
    std::size_t n;
    ~Restore() { h.resize(n); }
  } restore{history_, n_finished};
  for (std::int64_t number : grown) {
    auto found = active_.find(number);
    if (found == active_.end()) continue;
    const Trial& t = found->second;
    if (t.state != TrialState::kRunning || t.control != trials::Control::kNone) continue;
    auto it = curves_.find(number);
    if (it == curves_.end() || it->second.empty()) continue;
    // The others: every observation but this trial's, moved to the end.
    auto self =
        std::find_if(history_.begin() + static_cast<std::ptrdiff_t>(n_finished), history_.end(),
                     [&](const search::Observation& o) { return o.number == number; });
    std::size_t n_others = history_.size();
    if (self != history_.end()) {
      std::iter_swap(self, history_.end() - 1);
      --n_others;
    }
    const bool prune = pruner_->should_prune(it->second, std::span(history_.data(), n_others));
    if (!prune) continue;
    auto st = store.trials.set_control(t.id, trials::Control::kPrune);
    if (!st && st.error().code != ErrorCode::kConflict) {
      grown_.insert(grown.begin(), grown.end());  // asked again next step
      return st;
    }
    found->second.control = trials::Control::kPrune;
    log_info(
        "trial pruned",
        {{"sweep", sweep_id_}, {"trial", t.id}, {"step", std::to_string(it->second.back().step)}});
  }
  return {};
}

Status SweepController::load_warm_start(SweepRoles store) {
  std::vector<std::vector<search::PriorTrial>> sources;
  std::size_t read = 0;
  for (const auto& id : spec_.search.warm_start_sweeps) {
    auto& source = sources.emplace_back();
    constexpr std::int64_t kPage = 1000;
    for (std::int64_t offset = 0;; offset += kPage) {
      auto page = store.trials.list_trials(id, trials::TrialRole::kTrial, offset, kPage);
      if (!page && page.error().code == ErrorCode::kNotFound) break;  // deleted since the submit
      if (!page) return page.error();
      for (const auto& t : page->trials) {
        if (t.state != TrialState::kCompleted) continue;
        // This sweep's objective, as the earlier trial measured it.
        auto m = t.metrics.find(spec_.objective.metric);
        if (m == t.metrics.end()) continue;
        source.push_back({t.params, to_min(m->second)});
        ++read;
      }
      if (page->trials.size() < static_cast<std::size_t>(kPage)) break;
    }
  }
  warm_.emplace(spec_.space, sources, sampler_->initial_design());
  sampler_->learn_from(*warm_);
  log_info("warm start",
           {{"sweep", sweep_id_},
            {"from", fmt::format("{}", fmt::join(spec_.search.warm_start_sweeps, ","))},
            {"completed_trials", std::to_string(read)},
            {"used", std::to_string(warm_->usable())},
            {"design", std::to_string(warm_->design().size())}});
  return {};
}

Result<int> SweepController::fill_queue(SweepRoles store, const trials::Sweep& sweep) {
  // At most this many trials per create_trials call (a step tops up the
  // rest next time).
  constexpr std::size_t kMaxBatch = 256;
  std::int64_t active = sweep.counts.active();
  std::int64_t next = sweep.next_number;
  std::vector<search::Params> pending;
  pending.reserve(active_.size());
  for (const auto& [number, t] : active_) pending.push_back(t.params);
  std::vector<trials::NewTrial> batch;
  if (!spec_.search.warm_start_sweeps.empty() && !warm_ && active < spec_.search.max_concurrent &&
      next < spec_.search.max_trials)
    if (auto st = load_warm_start(store); !st) return st.error();
  search::PlanInputs in{history_, {}, [&](std::int64_t n) { return checkpointed(store, n); }};
  while (!planner_->done() && active < spec_.search.max_concurrent &&
         next < spec_.search.max_trials && batch.size() < kMaxBatch) {
    in.pending = pending;
    search::Plan plan = planner_->next(next, in);
    if (!plan.error.empty()) {
      resync_ = true;  // read the sweep's trials again before planning on them
      return Error::internal(fmt::format("sweep {}: {}", sweep_id_, plan.error));
    }
    if (!plan.params) break;
    pending.push_back(*plan.params);
    trials::NewTrial nt = new_trial(next, std::move(*plan.params), plan.lineage);
    // The planner sees it queued before the next one (a promotion is handed out once).
    planner_->track({next, plan.lineage, false, std::nullopt, nt.params});
    batch.push_back(std::move(nt));
    ++next;
    ++active;
  }
  if (batch.empty()) return 0;
  auto created = store.trials.create_trials(batch);
  if (!created) {
    resync_ = true;  // the planner counted trials that do not exist: read them all again
    if (created.error().code == ErrorCode::kConflict) return 0;  // someone else moved the sweep on
    // The project's queue is full (max_queued_trials): more once trials leave it.
    if (created.error().code == ErrorCode::kQuotaExceeded) return 0;
    return created.error();
  }
  // The project's queue limit let only the first ones in.
  if (created->size() < batch.size()) resync_ = true;
  log_info("trials queued", {{"sweep", sweep_id_},
                             {"first", created->front().id},
                             {"count", std::to_string(created->size())}});
  for (auto& t : *created) {
    std::int64_t number = t.number;
    track(t);
    active_[number] = std::move(t);
  }
  return static_cast<int>(created->size());
}

trials::NewTrial SweepController::new_trial(std::int64_t number, search::Params params,
                                            const std::optional<search::Lineage>& lineage) const {
  trials::NewTrial nt;
  nt.sweep_id = sweep_id_;
  nt.role = trials::TrialRole::kTrial;
  nt.number = number;
  nt.limit = spec_.search.max_trials;
  nt.params = std::move(params);
  nt.max_attempts = spec_.trial.max_attempts;
  nt.slots = spec_.trial.slots();
  nt.plan.lineage = lineage;
  if (lineage && lineage->exploited)
    log_info("pbt exploit", {{"sweep", sweep_id_},
                             {"member", std::to_string(lineage->member)},
                             {"from", trials::resumed_trial_id(sweep_id_, nt.plan)},
                             {"generation", std::to_string(lineage->generation())}});
  return nt;
}

bool SweepController::checkpointed(SweepRoles store, std::int64_t number) {
  if (auto known = has_checkpoint_.find(number); known != has_checkpoint_.end())
    return known->second;
  auto got = store.artifacts.get_artifact(fmt::format("{}-{}", sweep_id_, number),
                                          trials::artifact::kCheckpoint);
  if (!got) return false;  // not known now: not a donor this time, asked again later
  return has_checkpoint_[number] = got->has_value();
}

Result<bool> SweepController::end_search(SweepRoles store, const trials::Sweep& sweep) {
  if (spec_.ensemble) {
    auto st = store.sweeps.set_stage(sweep_id_, trials::SweepStage::kSearch,
                                     trials::SweepStage::kEnsemble);
    if (!st && st.error().code != ErrorCode::kConflict) return st.error();
    log_info("search stage finished, ensemble stage starts", {{"sweep", sweep_id_}});
    return true;
  }
  const auto& c = sweep.counts;
  bool all_failed = c.completed == 0 && c.pruned == 0 && c.finished() > 0;
  std::string error =
      all_failed ? fmt::format("all {} trials failed; see the trials' errors", c.failed) : "";
  auto st = store.sweeps.finish_sweep(
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
