#include "search/successive_halving.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

namespace hpo::search {
namespace {

double round_budget(double b, bool integer) {
  return integer ? std::max(1.0, std::round(b)) : b;
}

}  // namespace

SuccessiveHalving::SuccessiveHalving(FidelityConfig config) : config_(std::move(config)) {
  const double eta = config_.reduction_factor;
  const double lo = config_.min_budget, hi = config_.max_budget;
  // Rung budgets lo * eta^k below hi (a relative tolerance keeps 1, 3, 9, 27
  // from losing 27 to rounding), then hi itself.
  std::vector<double> ladder;
  for (double b = lo; b < hi * (1 - 1e-9); b *= eta) {
    double r = round_budget(b, config_.integer);
    if (ladder.empty() || r > ladder.back()) ladder.push_back(r);
  }
  if (ladder.empty() || ladder.back() < hi) ladder.push_back(hi);
  const int rungs = static_cast<int>(ladder.size());
  const int n_brackets = config_.schedule == Schedule::kHyperband ? rungs : 1;
  for (int b = 0; b < n_brackets; ++b) budgets_.emplace_back(ladder.begin() + b, ladder.end());
  // Hyperband's proportions: bracket b of B gets ceil(B / (B - b) * eta^(B-1-b))
  // new configurations per cycle, interleaved by smooth weighted round robin.
  std::vector<int> weight(n_brackets);
  int total = 0;
  for (int b = 0; b < n_brackets; ++b) {
    const int left = n_brackets - b;
    weight[b] = static_cast<int>(
        std::ceil(static_cast<double>(n_brackets) / left * std::pow(eta, left - 1) - 1e-9));
    total += weight[b];
  }
  std::vector<int> current(n_brackets, 0);
  for (int i = 0; i < total; ++i) {
    int pick = 0;
    for (int b = 0; b < n_brackets; ++b) {
      current[b] += weight[b];
      if (current[b] > current[pick]) pick = b;
    }
    current[pick] -= total;
    cycle_.push_back(pick);
  }
}

int SuccessiveHalving::bracket_for(std::int64_t index) const {
  return cycle_[static_cast<std::size_t>(index % static_cast<std::int64_t>(cycle_.size()))];
}

double SuccessiveHalving::budget_of(const RungRun& run) const {
  const auto& b = budgets_.at(std::clamp(run.bracket, 0, brackets() - 1));
  return b.at(static_cast<std::size_t>(std::clamp(run.rung, 0, static_cast<int>(b.size()) - 1)));
}

RungJob SuccessiveHalving::next(std::span<const RungRun> runs) const {
  std::set<std::int64_t> promoted;
  std::int64_t configurations = 0;
  // (bracket, rung) -> (value, number) of its completed trials.
  std::map<std::pair<int, int>, std::vector<std::pair<double, std::int64_t>>> completed;
  for (const RungRun& r : runs) {
    if (r.resumed_from >= 0)
      promoted.insert(r.resumed_from);
    else
      ++configurations;
    if (r.finished && r.value && std::isfinite(*r.value) && r.bracket >= 0 &&
        r.bracket < brackets())
      completed[{r.bracket, r.rung}].emplace_back(*r.value, r.number);
  }
  // The promotion whose trial has the largest budget (then the lowest bracket).
  std::optional<RungJob> best;
  for (auto& [at, trials] : completed) {
    const auto [bracket, rung] = at;
    const auto& ladder = budgets_[bracket];
    if (rung + 1 >= static_cast<int>(ladder.size())) continue;  // the top rung: done
    const auto top = static_cast<std::size_t>(
        std::floor(static_cast<double>(trials.size()) / config_.reduction_factor + 1e-9));
    if (top == 0) continue;
    std::sort(trials.begin(), trials.end());
    for (std::size_t i = 0; i < top; ++i) {
      if (promoted.count(trials[i].second)) continue;
      const double from = ladder[rung];
      if (!best || from > budgets_[best->bracket][best->rung - 1])
        best = RungJob{bracket, rung + 1, ladder[rung + 1], trials[i].second};
      break;
    }
  }
  if (best) return *best;
  const int bracket = bracket_for(configurations);
  return RungJob{bracket, 0, budgets_[bracket][0], -1};
}

std::vector<Observation> SuccessiveHalving::by_configuration(
    std::span<const RungRun> runs, std::span<const Observation> history) const {
  std::map<std::int64_t, const RungRun*> run_of;
  for (const RungRun& r : runs) run_of[r.number] = &r;
  auto root = [&](std::int64_t n) {
    for (int hops = 0; hops < 64; ++hops) {
      auto it = run_of.find(n);
      if (it == run_of.end() || it->second->resumed_from < 0) break;
      n = it->second->resumed_from;
    }
    return n;
  };
  // configuration -> its deepest finished trial with a value (else any finished one).
  std::map<std::int64_t, std::pair<double, const Observation*>> deepest;
  for (const Observation& o : history) {
    auto it = run_of.find(o.number);
    if (it == run_of.end()) continue;
    const double budget = o.value ? budget_of(*it->second) : -1;
    auto [at, fresh] = deepest.try_emplace(root(o.number), budget, &o);
    if (!fresh && budget > at->second.first) at->second = {budget, &o};
  }
  std::vector<Observation> out;
  out.reserve(deepest.size());
  for (const auto& [config, found] : deepest) {
    Observation o = *found.second;
    if (o.value && found.first < config_.max_budget) {
      o.outcome = TrialOutcome::kPruned;
      o.curve = {{static_cast<std::int64_t>(std::llround(found.first * 1000)), *o.value}};
    }
    out.push_back(std::move(o));
  }
  std::sort(out.begin(), out.end(),
            [](const Observation& a, const Observation& b) { return a.number < b.number; });
  return out;
}

std::optional<double> SuccessiveHalving::model_budget(std::span<const RungRun> runs,
                                                      std::size_t min_points) const {
  std::map<double, std::size_t> count;
  for (const RungRun& r : runs)
    if (r.finished && r.value && std::isfinite(*r.value)) ++count[budget_of(r)];
  if (count.empty()) return std::nullopt;
  for (auto it = count.rbegin(); it != count.rend(); ++it)
    if (it->second >= min_points) return it->first;
  return count.begin()->first;
}

}  // namespace hpo::search
