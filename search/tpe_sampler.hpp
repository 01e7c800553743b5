// Tree-structured Parzen estimator, multivariate (after Optuna's TPESampler
// with multivariate=True, group=True, constant_liar=True).
//
// Each ask: trials 0 .. n_startup-1 (default 10), or while fewer than two
// trials have a value, take the scrambled Sobol point `number`. Otherwise:
//  - rank the trials: completed and feasible by value (several objectives,
//    Observation::values: by non-dominated front, and within the front the
//    good/bad split cuts by greedy hypervolume subset selection — MOTPE, Ozaki
//    et al. 2020), then completed ones
//    that break a constraint (Observation::violations) by how much, then
//    pruned (further steps first,
//    then by last value), then pending trials, which are the "constant liar":
//    always worst, so concurrent asks are pushed away from running trials;
//    failed trials carry no information and are left out;
//  - the best gamma(n) = min(ceil(0.1 n), 25) form "below", the rest "above",
//    each weighted by tpe_default_weights in trial order;
//  - parameters are sampled group by group: a group is the set of parameters
//    with the same activation condition (all unconditional ones form one),
//    visited in spec order once its condition holds. For a group, l(x) and
//    g(x) are multivariate Parzen estimators fitted on the below/above trials
//    in which the group was active; 64 candidates are drawn from l and the
//    one with the highest log l - log g wins (Optuna draws 24, but per
//    parameter: 24 joint draws search a group of several far less well).
//  - warm-started (learn_from): each earlier sweep is split the same way (its
//    best gamma(n) below, by its own ranks, so scales never mix) and its
//    trials join l and g with weight n_startup / max(n_startup, this sweep's
//    trials with a value): they lead while the sweep has little data of its
//    own and fade as it gathers its own. Without them, the design of earlier
//    best configurations made things worse after it ended: all of them near
//    the optimum, the "above" half of the sweep's own trials sat there too
//    and g pushed the search away from the best region.
// Deterministic from (seed, number, history, pending).
#pragma once

#include "search/sampler.hpp"

namespace hpo::search {

class TpeSampler final : public Sampler {
 public:
  static constexpr int kCandidates = 64;

  TpeSampler(SearchSpace space, std::uint64_t seed, int n_startup);

  std::optional<Params> ask(std::span<const Observation> history, std::span<const Params> pending,
                            std::int64_t number) override;
  int initial_design() const override { return n_startup_; }
  void learn_from(const WarmStart& earlier) override;

 private:
  SearchSpace space_;
  std::uint64_t seed_;
  int n_startup_;
  std::vector<std::vector<std::size_t>> groups_;  // parameter indices, by first appearance
  // A warm start's earlier trials, each source split by its own ranks
  // (its best gamma(n) below), source by source, best first.
  std::vector<Params> earlier_below_, earlier_above_;
};

}  // namespace hpo::search
