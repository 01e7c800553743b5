#include "trials/pareto_front.hpp"

#include <algorithm>
#include <cmath>

#include "search/pareto.hpp"

namespace hpo::trials {

ParetoFront pareto_front(const SweepSpec& spec, const std::vector<const Trial*>& trials) {
  ParetoFront out;
  out.objectives =
      spec.objectives.empty() ? std::vector<Objective>{spec.objective} : spec.objectives;
  const std::size_t m = out.objectives.size();
  std::vector<const Trial*> counted;
  std::vector<search::Point> points;  // minimise sense
  for (const Trial* t : trials) {
    if (t->role != TrialRole::kTrial || t->state != TrialState::kCompleted) continue;
    if (!feasible(spec.constraints, t->metrics)) continue;
    search::Point p;
    for (const auto& o : out.objectives) {
      auto it = t->metrics.find(o.metric);
      if (it == t->metrics.end() || !std::isfinite(it->second)) break;
      p.push_back(o.maximize ? -it->second : it->second);
    }
    if (p.size() != m) continue;
    counted.push_back(t);
    points.push_back(std::move(p));
  }
  out.counted = static_cast<std::int64_t>(points.size());
  search::Point reference(m);
  for (std::size_t k = 0; k < m; ++k) {
    const Objective& o = out.objectives[k];
    if (o.reference) {
      reference[k] = o.maximize ? -*o.reference : *o.reference;
    } else {
      double worst = 0;
      for (std::size_t i = 0; i < points.size(); ++i)
        worst = i == 0 ? points[i][k] : std::max(worst, points[i][k]);
      reference[k] = worst;
    }
    out.reference.push_back(o.maximize ? -reference[k] : reference[k]);
  }
  std::vector<std::size_t> front = search::first_front(points);
  std::sort(front.begin(), front.end(),
            [&](std::size_t a, std::size_t b) { return counted[a]->number < counted[b]->number; });
  std::vector<search::Point> front_points;
  for (std::size_t i : front) {
    const Trial& t = *counted[i];
    ParetoMember member{t.id, t.number, t.params, {}};
    for (std::size_t k = 0; k < m; ++k)
      member.values.push_back(out.objectives[k].maximize ? -points[i][k] : points[i][k]);
    out.front.push_back(std::move(member));
    front_points.push_back(points[i]);
  }
  const auto hv = search::hypervolume_bounded(front_points, reference);
  out.hypervolume = hv.value;
  out.hypervolume_exact = hv.exact;
  out.hypervolume_std_error = hv.std_error;
  return out;
}

}  // namespace hpo::trials
