// SweepRoles: the three roles of a store connection that a sweep's
// controller and its ensemble stage use — the sweep records, the trial
// records, the artifacts — and nothing else (no queue, no worker registry).
// Made from a whole connection where one is at hand.
#pragma once

#include "trials/store.hpp"

namespace hpo::scheduler {

struct SweepRoles {
  SweepRoles(trials::Store& store)  // NOLINT: implicit, a connection hands out its roles
      : sweeps(store.sweeps()), trials(store.trials()), artifacts(store.artifacts()) {}
  SweepRoles(trials::SweepStore& s, trials::TrialStore& t, trials::ArtifactStore& a)
      : sweeps(s), trials(t), artifacts(a) {}

  trials::SweepStore& sweeps;
  trials::TrialStore& trials;
  trials::ArtifactStore& artifacts;
};

}  // namespace hpo::scheduler
