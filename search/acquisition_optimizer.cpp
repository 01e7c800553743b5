#include "search/acquisition_optimizer.hpp"

#include <algorithm>
#include <numeric>

#include "search/rng.hpp"
#include "search/sobol.hpp"

namespace hpo::search {
namespace {

constexpr int kSobolCandidates = 512;
constexpr int kPerturbationsEach = 24;
constexpr int kRefineStarts = 3;
constexpr int kRefineIterations = 40;
constexpr double kRefineStartStep = 0.05;
constexpr double kRefineMinStep = 1e-4;

struct Scored {
  Eigen::VectorXd u;
  double acq;
  Eigen::VectorXd lo, hi;  // the box it may move in (the unit cube, or its trust region)
};

// Pattern search from each start: try +-step along every numeric coordinate
// (and every other choice of each categorical), move to the best improvement,
// halve the step when nothing improves. The starts run in lockstep so that
// each iteration is one batched prediction (the same result as running them
// one by one: every start only ever compares its own trial points).
std::vector<Scored> refine(const FeatureMap& map, const BatchAcquisition& acq,
                           std::vector<Scored> starts) {
  const int p = map.unit_dims();
  std::vector<double> step(starts.size(), kRefineStartStep);
  std::vector<char> done(starts.size(), 0);
  std::vector<Eigen::VectorXd> trial;
  std::vector<std::size_t> first(starts.size() + 1);
  for (int it = 0; it < kRefineIterations; ++it) {
    trial.clear();
    for (std::size_t s = 0; s < starts.size(); ++s) {
      first[s] = trial.size();
      if (done[s] || step[s] < kRefineMinStep) {
        done[s] = 1;
        continue;
      }
      const Eigen::VectorXd& at = starts[s].u;
      for (int i = 0; i < p; ++i) {
        if (map.is_numeric(i)) {
          for (double d : {-step[s], step[s]}) {
            Eigen::VectorXd u = at;
            u[i] = std::clamp(u[i] + d, starts[s].lo[i], starts[s].hi[i]);
            if (u[i] != at[i]) trial.push_back(std::move(u));
          }
        } else if (it == 0) {
          auto n = static_cast<int>(map.space().params[static_cast<std::size_t>(i)].choices.size());
          for (int k = 0; k < n; ++k) {
            Eigen::VectorXd u = at;
            u[i] = (k + 0.5) / n;
            trial.push_back(std::move(u));
          }
        }
      }
      if (trial.size() == first[s]) done[s] = 1;
    }
    first[starts.size()] = trial.size();
    if (trial.empty()) break;
    Eigen::VectorXd a = acq(trial);
    for (std::size_t s = 0; s < starts.size(); ++s) {
      if (first[s] == first[s + 1]) continue;
      const auto lo = Eigen::Index(first[s]), len = Eigen::Index(first[s + 1] - first[s]);
      Eigen::Index best;
      double best_acq = a.segment(lo, len).maxCoeff(&best);
      if (best_acq > starts[s].acq + 1e-12) {
        starts[s].u = std::move(trial[std::size_t(lo + best)]);
        starts[s].acq = best_acq;
      } else {
        step[s] /= 2;
      }
    }
    // A start that has walked next to a better one climbs the same hill:
    // stop it (the better one carries on).
    for (std::size_t s = 0; s < starts.size(); ++s)
      for (std::size_t t = 0; t < starts.size() && !done[s]; ++t)
        if (t != s && !done[t] && starts[t].acq >= starts[s].acq &&
            (starts[t].u - starts[s].u).lpNorm<Eigen::Infinity>() <= 2 * step[s])
          done[s] = 1;
  }
  return starts;
}

}  // namespace

Eigen::VectorXd maximize_acquisition(const FeatureMap& map, const BatchAcquisition& acq,
                                     const std::vector<Eigen::VectorXd>& around, std::uint64_t key,
                                     int max_around, double trust_radius) {
  const int p = map.unit_dims();
  Rng rng(key);
  std::vector<Eigen::VectorXd> cand;
  const int n_around = std::min<int>(max_around, int(around.size()));
  const bool local = trust_radius > 0 && n_around > 0;
  // Where a candidate may move: the unit cube, or (local) the trust region of
  // the `around` point it was drawn from (candidates come kPerturbationsEach
  // per point, in order).
  struct Box {
    Eigen::VectorXd lo, hi;
  };
  auto box_of = [&](std::size_t candidate) {
    Box box{Eigen::VectorXd::Zero(p), Eigen::VectorXd::Ones(p)};
    if (!local) return box;
    const Eigen::VectorXd& base = around[candidate / kPerturbationsEach];
    for (int i = 0; i < p; ++i)
      if (map.is_numeric(i)) {
        box.lo[i] = std::max(0.0, base[i] - trust_radius);
        box.hi[i] = std::min(1.0, base[i] + trust_radius);
      }
    return box;
  };
  if (!local) {
    SobolSequence sobol(p, key);
    for (int i = 0; i < kSobolCandidates; ++i) {
      auto pt = sobol.point(static_cast<std::uint64_t>(i));
      cand.push_back(Eigen::Map<const Eigen::VectorXd>(pt.data(), p));
    }
  }
  for (int b = 0; b < n_around; ++b) {
    const Eigen::VectorXd& base = around[static_cast<std::size_t>(b)];
    const Box box = box_of(cand.size());
    for (int k = 0; k < kPerturbationsEach; ++k) {
      const double scale = k % 3 == 0 ? 0.1 : (k % 3 == 1 ? 0.02 : 0.004);
      Eigen::VectorXd u = base;
      for (int i = 0; i < p; ++i) {
        if (map.is_numeric(i))
          u[i] = std::clamp(u[i] + scale * rng.normal(), box.lo[i], box.hi[i]);
        else if (rng.uniform() < 1.0 / p)
          u[i] = rng.uniform();
      }
      cand.push_back(std::move(u));
    }
  }
  Eigen::VectorXd a = acq(cand);
  std::vector<std::size_t> idx(cand.size());
  std::iota(idx.begin(), idx.end(), 0);
  const auto starts = std::min<std::size_t>(kRefineStarts, idx.size());
  std::partial_sort(idx.begin(), idx.begin() + std::ptrdiff_t(starts), idx.end(),
                    [&](auto l, auto r) { return a[Eigen::Index(l)] > a[Eigen::Index(r)]; });
  Scored winner{cand[idx[0]], a[Eigen::Index(idx[0])], {}, {}};
  std::vector<Scored> from;
  for (std::size_t s = 0; s < starts; ++s) {
    Box box = box_of(idx[s]);
    from.push_back({cand[idx[s]], a[Eigen::Index(idx[s])], std::move(box.lo), std::move(box.hi)});
  }
  for (Scored& r : refine(map, acq, std::move(from)))
    if (r.acq > winner.acq) winner = std::move(r);
  return winner.u;
}

}  // namespace hpo::search
