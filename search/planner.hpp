// Planner: what a sweep runs next. One small interface over a Sampler that the
// sweep controller holds whatever the search: plain search (every trial a new
// configuration), successive halving / Hyperband (a promotion of the highest
// rung that has one, else a new configuration at the bottom rung;
// successive_halving.hpp) and population-based training (a member's next
// interval: going on from its own checkpoint, or exploiting a better member's
// and exploring its parameters; population_based.hpp).
//
// A planner tracks the sweep's trials as the controller reads them (track),
// and is asked for one trial at a time (next) until it has none now; like a
// sampler, it decides from the trials alone, so a restarted scheduler that
// tracks the same trials plans the same. Pure computation: where a decision
// needs the store (whether a trial stored a checkpoint) or where new
// configurations come from (the sampler, a warm start's design), the
// controller hands it a function.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "search/lineage.hpp"
#include "search/population_based.hpp"
#include "search/sampler.hpp"
#include "search/space.hpp"
#include "search/successive_halving.hpp"

namespace hpo::search {

// A trial of the sweep as a planner tracks it.
struct TrackedTrial {
  std::int64_t number = 0;
  std::optional<Lineage> lineage;  // none: a trial of no schedule
  bool finished = false;           // completed, failed, pruned or cancelled
  std::optional<double> value;     // completed: the value, minimise sense
  Params params;
};

// What the next trial is; `error` (and no trial) when the tracked trials
// contradict the schedule (a promotion whose parent is not among them).
struct Plan {
  std::optional<Params> params;  // nullopt: no trial now
  std::optional<Lineage> lineage;
  std::string error;
};

// New configurations: the sampler (or a warm start's design) asked with the
// finished trials it learns from, the parameters of those not finished, and
// which configuration this is (its index among the new ones). nullopt: no
// more (a grid handed out every point).
using ConfigSource = std::function<std::optional<Params>(
    std::span<const Observation> seen, std::span<const Params> pending, std::int64_t index)>;

// What a planner decides the next trial from, besides the trials it tracks.
struct PlanInputs {
  std::span<const Observation> history;  // the finished trials, ascending number
  // The parameters of the trials not finished, those planned in this round included.
  std::span<const Params> pending;
  // Whether finished trial `number` stored a checkpoint (asked by PBT: a
  // donor must have one); null: none did.
  std::function<bool(std::int64_t)> has_checkpoint;
};

class Planner {
 public:
  virtual ~Planner() = default;
  // A trial of the sweep, read or created, in whatever state; tracked again
  // whenever it changes.
  virtual void track(const TrackedTrial& trial) = 0;
  // Forgets every tracked trial (the controller reads them all again).
  virtual void clear() = 0;
  // The trial numbered `number`. The caller tracks a planned trial (queued)
  // before it asks for the next one, so the planner counts it.
  virtual Plan next(std::int64_t number, const PlanInputs& in) = 0;
  // No trial will ever come again (the last next() had none, for good).
  virtual bool done() const = 0;
};

// Every trial a new configuration.
std::unique_ptr<Planner> plain_planner(ConfigSource source);

// What a model learns from under successive halving: the history as it is
// (model-free samplers), every configuration at its deepest rung (TPE), or
// the finished trials at the largest budget with `min_points` of them (BOHB).
enum class FidelityModel { kHistory, kByConfiguration, kLargestBudget };
std::unique_ptr<Planner> halving_planner(FidelityConfig config, ConfigSource source,
                                         FidelityModel model, std::size_t min_points);

std::unique_ptr<Planner> pbt_planner(PbtConfig config, SearchSpace space, ConfigSource source);

}  // namespace hpo::search
