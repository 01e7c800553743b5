// Warm start: trials of earlier sweeps (over the same or an overlapping space)
// seed this sweep's search.
//
// An earlier trial is used when its parameters fit this space: every
// parameter this space makes active is present with a value inside its
// bounds (on its step or int grid) or among its choices; parameters this space
// does not have are dropped. Each source is ranked on its own by normal
// scores, Φ⁻¹((rank + ½) / n), so sources on other scales interleave.
//
// Two ways in:
//  - the design: the first ceil(0.4 × initial_design()) trials of the new
//    sweep are the best earlier configurations (a configuration within 0.05
//    of one already chosen, in the unit cube, is skipped); the rest of the
//    sampler's initial design stays space-filling. A design made only of
//    earlier best points sits in one basin: the GP then fits its length
//    scales on a cluster and spends the next trials exploring as if cold
//    (Branin, 30 seeds: regret after 30 trials 0.0040 against 0.0012 with
//    the share; cold 0.00093).
//  - the model, where the sampler can weigh them (Sampler::learn_from): tpe
//    (tpe_sampler.hpp) keeps the earlier trials by their ranks, fading as
//    the sweep gathers its own; bayesian (bayesian_sampler.hpp) takes a GP
//    of each earlier sweep as its prior mean, scaled and offset to this
//    sweep's values, and searches near the best trials while that prior
//    explains this sweep; the values themselves are kept for it (Scored::value).
// A related earlier sweep starts the search where it ended; an unrelated one
// costs the design share it replaced, which can be much when its best are this
// task's worst (README.md: an opposed sweep left the Bayesian sampler's regret
// after 30 trials at 0.93 against 0.60 cold on Hartmann6). Pure and deterministic:
// the controller loads the sources once per start, and trial i's parameters
// depend only on them and i.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "search/sampler.hpp"
#include "search/space.hpp"

namespace hpo::search {

// One completed trial of an earlier sweep, value in minimise sense.
struct PriorTrial {
  Params params;
  double value = 0;
};

// `params` restricted to `space`, or nullopt when it does not fit (see above).
std::optional<Params> fit_to_space(const Params& params, const SearchSpace& space);

// Φ⁻¹((rank + ½) / n) of each value (ties share their mean rank); n = values.size().
std::vector<double> normal_scores(std::span<const double> values);

class WarmStart {
 public:
  // The share of the sampler's initial design that earlier configurations take.
  static constexpr double kEarlierShare = 0.4;

  // `sources`: one list per earlier sweep; trials that do not fit are dropped.
  // `initial_design`: the sampler's (Sampler::initial_design()).
  WarmStart(const SearchSpace& space, const std::vector<std::vector<PriorTrial>>& sources,
            int initial_design);

  // Earlier trials that fit this space, over all sources.
  std::size_t usable() const { return usable_; }
  // The configurations that replace the start of the initial design, in trial order.
  const std::vector<Params>& design() const { return design_; }
  // Trial `number`'s parameters while it is within the design; nullopt after.
  std::optional<Params> initial(std::int64_t number) const;

  // One earlier sweep's usable trials with their normal scores (lower is
  // better), in the source's order: what a sampler's model may learn from.
  struct Scored {
    Params params;
    double score = 0;
    double value = 0;  // as measured, minimise sense
  };
  const std::vector<std::vector<Scored>>& sources() const { return sources_; }

 private:
  std::size_t usable_ = 0;
  std::vector<std::vector<Scored>> sources_;
  std::vector<Params> design_;
};

}  // namespace hpo::search
