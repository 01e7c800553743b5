#include "search/nsga2_sampler.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "search/encoding.hpp"
#include "search/feasibility.hpp"
#include "search/pareto.hpp"
#include "search/rng.hpp"

namespace hpo::search {

namespace {

constexpr double kCrossoverProb = 0.9;
constexpr double kSbxEta = 15;       // crossover distribution index
constexpr double kMutationEta = 20;  // mutation distribution index

double clamp01(double u) {
  return std::clamp(u, 0.0, 1.0);
}

// One child coordinate of SBX on [0, 1] (Deb & Agrawal 1995, bounded form).
double sbx(double a, double b, Rng& rng) {
  const double r = rng.uniform(), pick = rng.uniform(), cross = rng.uniform();
  if (cross > 0.5 || std::abs(a - b) < 1e-14) return a;
  const double y1 = std::min(a, b), y2 = std::max(a, b), span = y2 - y1;
  auto betaq = [&](double beta) {
    const double alpha = 2 - std::pow(beta, -(kSbxEta + 1));
    return r <= 1 / alpha ? std::pow(r * alpha, 1 / (kSbxEta + 1))
                          : std::pow(1 / (2 - r * alpha), 1 / (kSbxEta + 1));
  };
  const double c1 = 0.5 * (y1 + y2 - betaq(1 + 2 * y1 / span) * span);
  const double c2 = 0.5 * (y1 + y2 + betaq(1 + 2 * (1 - y2) / span) * span);
  return clamp01(pick < 0.5 ? c1 : c2);
}

// Polynomial mutation of a coordinate on [0, 1] (Deb's bounded form).
double polynomial_mutation(double y, Rng& rng) {
  const double r = rng.uniform(), p = 1 / (kMutationEta + 1);
  double dq;
  if (r < 0.5) {
    const double v = 2 * r + (1 - 2 * r) * std::pow(1 - y, kMutationEta + 1);
    dq = std::pow(v, p) - 1;
  } else {
    const double v = 2 * (1 - r) + 2 * (r - 0.5) * std::pow(y, kMutationEta + 1);
    dq = 1 - std::pow(v, p);
  }
  return clamp01(y + dq);
}

struct Member {
  std::vector<double> u;  // unit coordinates (0.5 for an inactive parameter)
  std::size_t rank = 0;
  double crowding = 0;
  std::size_t order = 0;  // position in the history, the last tie-break
};

// a wins a binary tournament against b.
bool better(const Member& a, const Member& b) {
  if (a.rank != b.rank) return a.rank < b.rank;
  if (a.crowding != b.crowding) return a.crowding > b.crowding;
  return a.order < b.order;
}

// The completed trials with every objective measured (as many as the most
// any trial has: one that lacks some takes no part).
void measured_trials(std::span<const Observation> history, std::vector<Point>& points,
                     std::vector<const Observation*>& obs) {
  auto objectives = [](const Observation& o) {
    if (o.outcome != TrialOutcome::kCompleted) return Point{};
    if (o.values.empty()) return o.value ? Point{*o.value} : Point{};
    return o.values;
  };
  std::size_t m = 0;
  for (const auto& o : history) m = std::max(m, objectives(o).size());
  for (const auto& o : history) {
    Point p = objectives(o);
    if (p.size() != m || m == 0 ||
        !std::all_of(p.begin(), p.end(), [](double v) { return std::isfinite(v); }))
      continue;
    points.push_back(std::move(p));
    obs.push_back(&o);
  }
}

// The fronts of `points` (indices) under constrained domination.
std::vector<std::vector<std::size_t>> constrained_fronts(
    const std::vector<Point>& points, const std::vector<const Observation*>& obs) {
  std::vector<std::size_t> ok, broken;
  for (std::size_t i = 0; i < obs.size(); ++i) (is_feasible(*obs[i]) ? ok : broken).push_back(i);
  std::vector<std::vector<std::size_t>> fronts;
  if (broken.empty()) {
    fronts = non_dominated_fronts(points);
  } else {
    std::vector<Point> feasible_points;
    for (std::size_t i : ok) feasible_points.push_back(points[i]);
    for (auto& f : non_dominated_fronts(feasible_points)) {
      for (std::size_t& i : f) i = ok[i];
      fronts.push_back(std::move(f));
    }
    std::stable_sort(broken.begin(), broken.end(), [&](std::size_t a, std::size_t b) {
      return total_violation(obs[a]->violations) < total_violation(obs[b]->violations);
    });
    for (std::size_t i : broken) fronts.push_back({i});
  }
  return fronts;
}

// The first `population` trials of `fronts`, each front by descending crowding.
std::vector<Member> survivors(const SearchSpace& space, const std::vector<Point>& points,
                              const std::vector<const Observation*>& obs,
                              const std::vector<std::vector<std::size_t>>& fronts, int population) {
  const std::size_t n = space.params.size();
  std::vector<Member> parents;
  for (std::size_t f = 0; f < fronts.size() && parents.size() < std::size_t(population); ++f) {
    const auto crowding = crowding_distance(points, fronts[f]);
    std::vector<std::size_t> idx(fronts[f].size());
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(),
                     [&](std::size_t a, std::size_t b) { return crowding[a] > crowding[b]; });
    for (std::size_t k : idx) {
      if (parents.size() == std::size_t(population)) break;
      Member m;
      m.rank = f;
      m.crowding = crowding[k];
      m.order = fronts[f][k];
      const Params& params = obs[m.order]->params;
      m.u.resize(n, 0.5);
      for (std::size_t i = 0; i < n; ++i)
        if (auto it = params.find(space.params[i].name); it != params.end())
          m.u[i] = to_unit(space.params[i], it->second);
      parents.push_back(std::move(m));
    }
  }
  return parents;
}

// The unit coordinates of one child of two tournament winners.
std::vector<double> offspring(const SearchSpace& space, const std::vector<Member>& parents,
                              Rng& rng) {
  const std::size_t n = space.params.size();
  std::vector<double> child(n);
  auto tournament = [&]() -> const Member& {
    const Member& a = parents[rng.below(parents.size())];
    const Member& b = parents[rng.below(parents.size())];
    return better(a, b) ? a : b;
  };
  const Member& mother = tournament();
  const Member& father = tournament();
  const bool cross = rng.uniform() < kCrossoverProb;
  for (std::size_t i = 0; i < n; ++i) {
    const ParamSpec& p = space.params[i];
    double u = mother.u[i];
    if (p.type == ParamType::kCategorical) {
      const double from_father = rng.uniform();
      if (cross && from_father < 0.5) u = father.u[i];
    } else if (cross) {
      u = sbx(mother.u[i], father.u[i], rng);
    }
    const double mutate = rng.uniform();
    if (mutate < 1.0 / static_cast<double>(n))
      u = p.type == ParamType::kCategorical ? rng.uniform() : polynomial_mutation(u, rng);
    child[i] = u;
  }
  return child;
}

}  // namespace

Nsga2Sampler::Nsga2Sampler(SearchSpace space, std::uint64_t seed, int population)
    : space_(std::move(space)),
      seed_(seed),
      population_(population > 0 ? population
                                 : std::max(16, 4 * static_cast<int>(space_.params.size()))) {}

std::optional<Params> Nsga2Sampler::ask(std::span<const Observation> history,
                                        std::span<const Params>, std::int64_t number) {
  Rng rng(seed_, number, /*salt=*/0x4E534741);  // "NSGA"
  const std::size_t n = space_.params.size();
  std::vector<Point> points;
  std::vector<const Observation*> obs;
  measured_trials(history, points, obs);
  if (points.size() < static_cast<std::size_t>(population_)) {
    std::vector<double> child(n);
    for (double& x : child) x = rng.uniform();
    return params_from_unit(space_, child);
  }
  // Survivors: whole fronts in turn, the last one cut by crowding distance.
  // Constrained domination (Deb 2002): the feasible trials' fronts first, then
  // each infeasible trial alone, by ascending total violation.
  const std::vector<std::vector<std::size_t>> fronts = constrained_fronts(points, obs);
  const std::vector<Member> parents = survivors(space_, points, obs, fronts, population_);
  return params_from_unit(space_, offspring(space_, parents, rng));
}

}  // namespace hpo::search
