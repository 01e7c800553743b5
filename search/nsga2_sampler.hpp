// NSGA-II (Deb et al. 2002) as an ask-only sampler, for several objectives
// (Observation::values, all minimised; with one objective, `value`). A
// completed trial that lacks an objective the others have takes no part.
//
// Steady state and stateless: every ask ranks all completed trials so far by
// front and crowding distance (search/pareto.hpp) and keeps the best
// `population` of them as the parents (elitism over the whole history), picks
// two by binary tournament, and makes one child: simulated binary crossover
// (SBX) of numeric unit coordinates, each categorical taken from either
// parent, then polynomial mutation (each parameter with probability 1/n; a
// categorical redrawn). Until `population` trials have completed, trials are
// uniform random. With constraints (Observation::violations), constrained
// domination: feasible trials rank first, infeasible ones by total violation.
// All randomness comes from Rng(seed, number), so a restarted
// scheduler asks the same thing given the same history.
#pragma once

#include "search/sampler.hpp"

namespace hpo::search {

class Nsga2Sampler final : public Sampler {
 public:
  // population 0: max(16, 4 x the number of parameters).
  Nsga2Sampler(SearchSpace space, std::uint64_t seed, int population = 0);

  std::optional<Params> ask(std::span<const Observation> history, std::span<const Params> pending,
                            std::int64_t number) override;

  int population() const { return population_; }

 private:
  SearchSpace space_;
  std::uint64_t seed_;
  int population_;
};

}  // namespace hpo::search
