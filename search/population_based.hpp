// Population-based training (Jaderberg et al., 2017), asynchronous (as Ray
// Tune's PBT): `population` members train in intervals of `interval` budget
// up to `max_budget` each. Every interval of a member is a trial that resumes
// the checkpoint the member's last interval left. When a member's interval g
// ends, it is ranked against the whole population at comparable budgets: each
// other member's interval g when it has completed one, else its interval
// g - 1 compared with this member's own interval g - 1 (members further
// behind, or stopped for good, are not ranked). In the
// bottom `quantile`, its next interval *exploits* one of the top quantile —
// goes on from that member's checkpoint at their common interval (so never
// past its own next budget) with its parameters, and trains from there to
// its interval g + 1's budget — and *explores* them: each mutable parameter is
// resampled from the space with `resample_probability`, else multiplied by
// 0.8 or 1.2 (a categorical moves to a neighbouring choice). A donor must
// have stored a checkpoint: a trial without one is never exploited. Ranking
// only against the members that already completed interval g would never
// rank the member that gets there first (trials go out in member order and
// intervals take about the same time): it would never be exploited.
//
// Like the other schedules, a function of the sweep's trials alone (plus
// whether a finished trial has a checkpoint), so a restarted scheduler makes
// the same decisions and never creates a member's interval twice.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "search/sampler.hpp"
#include "search/space.hpp"

namespace hpo::search {

struct PbtConfig {
  int population = 8;
  double interval = 1;  // budget per interval
  double max_budget = 10;
  double quantile = 0.25;
  double resample_probability = 0.25;
  std::vector<std::string> mutable_params;  // empty: every parameter
  std::string resource = "epochs";
  std::uint64_t seed = 0;
};

// One trial (one interval of one member) as the schedule sees it.
struct MemberRun {
  std::int64_t number = 0;
  int member = 0;
  int generation = 0;              // its interval: it trains up to budget(generation)
  std::int64_t resumed_from = -1;  // the trial whose checkpoint it went on from
  std::int64_t exploited = -1;     // a donor's trial (exploit): resumed_from is it
  bool finished = false;
  std::optional<double> value;  // completed: the value at its budget, minimise sense
  Params params;
};

struct PbtJob {
  int member = 0;
  int generation = 0;
  double budget = 0;
  std::int64_t resume = -1;   // the trial to go on from; -1: a new member (generation 0)
  std::int64_t exploit = -1;  // the donor's trial when exploiting (== resume)
};

class PopulationSchedule {
 public:
  explicit PopulationSchedule(PbtConfig config);

  const PbtConfig& config() const { return config_; }
  int generations() const { return generations_; }
  // What a member has trained once interval g ends: min((g + 1) * interval, max).
  double budget(int generation) const;

  // The next trial to create, or nullopt when none can be now (every member
  // is training, or done). `has_checkpoint(number)`: that finished trial
  // stored one. `key`: the new trial's number (the exploit's draw).
  std::optional<PbtJob> next(std::span<const MemberRun> runs,
                             const std::function<bool(std::int64_t)>& has_checkpoint,
                             std::int64_t key) const;
  // Every member has finished its last interval or failed for good (it is
  // not restarted: its attempts are spent).
  bool done(std::span<const MemberRun> runs) const;

  // The explored parameters of an exploit (deterministic in `key`).
  Params explore(const SearchSpace& space, const Params& donor, std::int64_t key) const;

 private:
  PbtConfig config_;
  int generations_ = 1;
};

}  // namespace hpo::search
