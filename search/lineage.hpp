// Lineage: a trial's place in a multi-fidelity or population-based schedule,
// as the planner (planner.hpp) decides it and the trial record keeps it
// (trials/trial_plan.hpp holds its one codec).
#pragma once

#include <cstdint>
#include <string>

namespace hpo::search {

struct Lineage {
  double budget = 0;  // of `resource`
  int bracket = 0;
  int rung = 0;              // PBT: the member's interval (generation)
  int member = -1;           // PBT: the population member; -1 for a rung of successive halving
  std::int64_t resume = -1;  // the trial whose checkpoint it goes on from; -1: a new one
  bool exploited = false;    // PBT: `resume` is another member's trial
  std::string resource;      // what the budget counts: epochs, steps, subset or the user's own name
  int generation() const { return rung; }
  bool operator==(const Lineage&) const = default;
};

}  // namespace hpo::search
