#include "search/random_sampler.hpp"

#include "search/encoding.hpp"
#include "search/rng.hpp"

namespace hpo::search {

std::optional<Params> RandomSampler::ask(std::span<const Observation>, std::span<const Params>,
                                         std::int64_t number) {
  Rng rng(seed_, number, /*salt=*/0x52414E44);  // "RAND"
  std::vector<double> u(space_.params.size());
  for (double& x : u) x = rng.uniform();
  return params_from_unit(space_, u);
}

}  // namespace hpo::search
