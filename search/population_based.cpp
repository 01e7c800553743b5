#include "search/population_based.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "search/encoding.hpp"
#include "search/rng.hpp"

namespace hpo::search {
namespace {

constexpr std::uint64_t kExploitSalt = 0x504254;  // "PBT"

bool later(const MemberRun& a, const MemberRun& b) {
  return a.generation != b.generation ? a.generation > b.generation : a.number > b.number;
}

}  // namespace

PopulationSchedule::PopulationSchedule(PbtConfig config) : config_(std::move(config)) {
  generations_ =
      std::max(1, static_cast<int>(std::ceil(config_.max_budget / config_.interval - 1e-9)));
}

double PopulationSchedule::budget(int generation) const {
  return std::min(config_.max_budget, (generation + 1) * config_.interval);
}

std::optional<PbtJob> PopulationSchedule::next(
    std::span<const MemberRun> runs, const std::function<bool(std::int64_t)>& has_checkpoint,
    std::int64_t key) const {
  const int n = config_.population;
  // Per member: its latest trial.
  std::vector<const MemberRun*> latest(n, nullptr);
  for (const MemberRun& r : runs)
    if (r.member >= 0 && r.member < n && (!latest[r.member] || later(r, *latest[r.member])))
      latest[r.member] = &r;
  for (int m = 0; m < n; ++m)
    if (!latest[m]) return PbtJob{m, 0, budget(0), -1, -1};

  // A member whose interval g just ended is ranked among every member's
  // interval g (the same training so far, whatever the timing).
  for (int m = 0; m < n; ++m) {
    const MemberRun& last = *latest[m];
    if (!last.finished || !last.value || last.generation + 1 >= generations_) continue;
    std::map<int, const MemberRun*> peers;  // member -> its completed interval g
    for (const MemberRun& r : runs)
      if (r.generation == last.generation && r.finished && r.value && std::isfinite(*r.value) &&
          r.member >= 0 && r.member < n &&
          (!peers.count(r.member) || r.number > peers[r.member]->number))
        peers[r.member] = &r;
    std::vector<std::pair<double, const MemberRun*>> ranked;
    for (const auto& [member, r] : peers) ranked.emplace_back(*r->value, r);
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second->number < b.second->number;
    });
    const std::size_t k =
        ranked.size() < 2
            ? 0
            : std::max<std::size_t>(1, static_cast<std::size_t>(std::floor(
                                           config_.quantile * static_cast<double>(ranked.size()))));
    const auto place = static_cast<std::size_t>(
        std::find_if(ranked.begin(), ranked.end(),
                     [&](const auto& e) { return e.second->member == m; }) -
        ranked.begin());
    if (k > 0 && place >= ranked.size() - k && place >= k) {
      std::vector<const MemberRun*> donors;
      for (std::size_t i = 0; i < k; ++i)
        if (ranked[i].second->member != m && has_checkpoint(ranked[i].second->number))
          donors.push_back(ranked[i].second);
      if (!donors.empty()) {
        Rng rng(config_.seed, key, kExploitSalt);
        const MemberRun& d = *donors[rng.below(donors.size())];
        return PbtJob{m, d.generation + 1, budget(d.generation + 1), d.number, d.number};
      }
    }
    return PbtJob{m, last.generation + 1, budget(last.generation + 1), last.number, -1};
  }
  return std::nullopt;
}

bool PopulationSchedule::done(std::span<const MemberRun> runs) const {
  const int n = config_.population;
  std::vector<const MemberRun*> latest(n, nullptr);
  for (const MemberRun& r : runs)
    if (r.member >= 0 && r.member < n && (!latest[r.member] || later(r, *latest[r.member])))
      latest[r.member] = &r;
  for (int m = 0; m < n; ++m) {
    if (!latest[m] || !latest[m]->finished) return false;
    if (latest[m]->value && latest[m]->generation + 1 < generations_) return false;
  }
  return true;
}

Params PopulationSchedule::explore(const SearchSpace& space, const Params& donor,
                                   std::int64_t key) const {
  Rng rng(config_.seed, key, kExploitSalt + 1);
  std::vector<double> u(space.params.size());
  for (std::size_t i = 0; i < space.params.size(); ++i) {
    const ParamSpec& p = space.params[i];
    auto v = donor.find(p.name);
    const double fresh = rng.uniform();  // drawn for every parameter: a fixed stream
    const double coin = rng.uniform();
    const bool up = rng.uniform() < 0.5;
    u[i] = v == donor.end() ? fresh : to_unit(p, v->second);
    const bool mutable_param =
        config_.mutable_params.empty() ||
        std::find(config_.mutable_params.begin(), config_.mutable_params.end(), p.name) !=
            config_.mutable_params.end();
    if (!mutable_param || v == donor.end()) continue;
    if (coin < config_.resample_probability) {
      u[i] = fresh;
    } else if (p.type == ParamType::kCategorical) {
      const double cell = 1.0 / static_cast<double>(p.choices.size());
      u[i] = std::clamp(u[i] + (up ? cell : -cell), 0.0, 1.0 - 1e-12);
    } else if (auto x = as_double(v->second)) {
      const double scaled = *x * (up ? 1.2 : 0.8);
      u[i] = to_unit(p, p.type == ParamType::kInt
                            ? Value(static_cast<std::int64_t>(std::llround(scaled)))
                            : Value(scaled));
    }
  }
  return params_from_unit(space, u);
}

}  // namespace hpo::search
