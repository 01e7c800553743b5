// make_sampler: the one place that maps a SamplerConfig to an implementation.
#include "search/sampler.hpp"

#include "search/bayesian_sampler.hpp"
#include "search/ehvi_sampler.hpp"
#include "search/grid_sampler.hpp"
#include "search/nsga2_sampler.hpp"
#include "search/random_sampler.hpp"
#include "search/sobol.hpp"
#include "search/tpe_sampler.hpp"

namespace hpo::search {

std::unique_ptr<Sampler> make_sampler(const SamplerConfig& config, const SearchSpace& space) {
  switch (config.algorithm) {
    case Algorithm::kGrid:
      return std::make_unique<GridSampler>(space);
    case Algorithm::kRandom:
      return std::make_unique<RandomSampler>(space, config.seed);
    case Algorithm::kSobol:
      return std::make_unique<SobolSampler>(space, config.seed);
    case Algorithm::kBayesian:
      if (config.objectives > 1)
        return std::make_unique<EhviSampler>(space, config.seed, config.n_initial,
                                             config.reference);
      return std::make_unique<BayesianSampler>(space, config.seed, config.n_initial);
    case Algorithm::kTpe:
      return std::make_unique<TpeSampler>(space, config.seed, config.n_initial);
    case Algorithm::kNsga2:
      return std::make_unique<Nsga2Sampler>(space, config.seed, config.population);
  }
  return std::make_unique<RandomSampler>(space, config.seed);
}

}  // namespace hpo::search
