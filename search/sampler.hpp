// Sampler: proposes the parameters of the next trial.
//
// Ask-only and stateless between calls by design: every call receives the whole
// history of the sweep, so a scheduler that restarts (and builds a fresh
// Sampler) continues exactly where the old one stopped. Implementations may
// cache derived state between calls (e.g. a fitted GP) but must produce the same
// answer as a freshly built sampler given the same inputs.
//
// Objective direction: samplers always MINIMISE. The controller negates values
// of `mode: max` objectives before they reach a sampler or pruner.
//
// Thread safety: a Sampler is used by one controller thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "search/space.hpp"

namespace hpo::search {

// kRunning appears only in what pruners see (the other trials' curves so far);
// a sampler's history holds finished trials alone.
enum class TrialOutcome { kCompleted, kFailed, kPruned, kRunning };

// One intermediate value a trial reported (e.g. validation loss after epoch `step`).
struct StepValue {
  std::int64_t step = 0;
  double value = 0;  // minimise sense
};

// A finished trial as the sampler sees it.
struct Observation {
  std::int64_t number = 0;  // the trial's 0-based number in the sweep
  Params params;
  TrialOutcome outcome = TrialOutcome::kCompleted;
  std::optional<double> value;  // minimise sense; set for completed trials (and pruned: last value)
  // Several objectives (minimise sense), for the multi-objective samplers
  // (nsga2_sampler.hpp); empty with one objective, which is `value`.
  std::vector<double> values;
  // Per constraint of the spec: how far the metric lies outside its bound
  // (> 0 broken, <= 0 kept; NaN: not reported). Empty without constraints or
  // for trials that did not complete (search/feasibility.hpp).
  std::vector<double> violations;
  std::vector<StepValue> curve;  // intermediate values, ascending step
};

class WarmStart;

enum class Algorithm { kGrid, kRandom, kSobol, kBayesian, kTpe, kNsga2 };

struct SamplerConfig {
  Algorithm algorithm = Algorithm::kRandom;
  std::uint64_t seed = 0;
  int n_initial = 0;   // bayesian/tpe: size of the initial quasi-random design; 0 = automatic
  int population = 0;  // nsga2: the parents kept; 0 = automatic (nsga2_sampler.hpp)
  // The number of objectives; with several, bayesian is the GP with expected
  // hypervolume improvement (ehvi_sampler.hpp), which takes `reference`: one
  // value per objective in minimise sense, NaN where none is declared.
  int objectives = 1;
  std::vector<double> reference;
};

class Sampler {
 public:
  virtual ~Sampler() = default;

  // Called by the sweep controller each time it has room for one more trial.
  //   history: finished trials (completed, failed, pruned), ascending number.
  //   pending: parameters of trials queued or running now (not yet finished).
  //   number:  the 0-based number the new trial will get; seeded samplers
  //            derive their randomness from (seed, number) so that trial i's
  //            parameters do not depend on timing.
  // Returns nullopt when the sampler is exhausted (grid: every point handed out).
  virtual std::optional<Params> ask(std::span<const Observation> history,
                                    std::span<const Params> pending, std::int64_t number) = 0;
  // Trials 0..initial_design()-1 are a model-free design (Sobol points) that
  // a warm start may replace with earlier sweeps' best (search/warm_start.hpp);
  // 0 for samplers without a model.
  virtual int initial_design() const { return 0; }

  // Called once, before the first ask, when the sweep is warm-started: the
  // earlier sweeps' trials, fitted to this space and ranked per source. A
  // sampler whose model can weigh them (tpe) keeps them; others ignore them
  // (the design replacement of warm_start.hpp happens outside the sampler).
  virtual void learn_from(const WarmStart& /*earlier*/) {}
};

std::unique_ptr<Sampler> make_sampler(const SamplerConfig& config, const SearchSpace& space);

// Number of points of the full grid, or nullopt when the space has a continuous
// parameter without a step (the spec validator rejects grid search then).
std::optional<std::uint64_t> grid_size(const SearchSpace& space);

}  // namespace hpo::search
