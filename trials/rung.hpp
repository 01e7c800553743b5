// A multi-fidelity trial's place in its schedule (search/successive_halving.hpp),
// kept as the trial's `extra` JSON:
//   {"budget": 9, "resource": "epochs", "bracket": 0, "rung": 2,
//    "resume_from": "<sweep>-12", "resume_number": 12}
// `resume_from` (absent for a new configuration) is the trial one rung down
// whose checkpoint this one continues from: the worker hands it to the
// executor as the checkpoint of the attempt until the trial stores its own.
// A population-based training interval (search/population_based.hpp) has
//   {"budget": 8, "resource": "steps", "member": 3, "generation": 1,
//    "resume_from": "<sweep>-5", "resume_number": 5, "exploited": true}
// instead of bracket and rung: `exploited` when it copied another member's
// checkpoint (and explored its parameters), else it goes on from its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace hpo::trials {

struct RungInfo {
  double budget = 0;
  std::string resource;
  int bracket = 0;
  int rung = 0;
  std::string resume_from;                 // empty: a new configuration
  std::int64_t resume_number = -1;         // its number
  int member = -1;                         // PBT: the population member (-1: a rung)
  bool exploited = false;                  // PBT: resume_from is another member's trial
  int generation() const { return rung; }  // PBT: the interval, kept as the rung
};

std::string rung_to_json(const RungInfo& r);
// nullopt when `extra` holds no rung record (an ordinary trial, an ensemble
// member); an error when it holds a malformed one.
Result<std::optional<RungInfo>> rung_from_json(std::string_view extra);

// The budget as a command trial's HPO_BUDGET reads it: "9", "0.25".
std::string budget_text(double budget);

}  // namespace hpo::trials
