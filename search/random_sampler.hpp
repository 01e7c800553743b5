// Random search: trial i's parameters are a pure function of (seed, i).
//
// One uniform coordinate is drawn per parameter in spec order from a
// counter-based generator keyed by (seed, number), whether or not the parameter
// turns out active, so adding a conditional branch never shifts the values of
// the others and a restarted scheduler reproduces every trial exactly.
#pragma once

#include "search/sampler.hpp"

namespace hpo::search {

class RandomSampler final : public Sampler {
 public:
  RandomSampler(SearchSpace space, std::uint64_t seed) : space_(std::move(space)), seed_(seed) {}

  std::optional<Params> ask(std::span<const Observation> history, std::span<const Params> pending,
                            std::int64_t number) override;

 private:
  SearchSpace space_;
  std::uint64_t seed_;
};

}  // namespace hpo::search
