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

  // Each member's completed intervals, generation -> its latest trial there.
  std::vector<std::map<int, const MemberRun*>> scored(n);
  for (const MemberRun& r : runs)
    if (r.finished && r.value && std::isfinite(*r.value) && r.member >= 0 && r.member < n) {
      const MemberRun*& at = scored[r.member][r.generation];
      if (!at || r.number > at->number) at = &r;
    }
  // A member whose interval g just ended is ranked against the population:
  // every other member at their common budget — the other's interval g when
  // it has completed one, else its interval g - 1 — against this member's
  // own score at that interval. So the member that finishes first is ranked
  // too (by where it stood an interval ago), not only the last one to get
  // there. A member further behind, or stopped for good (its last interval
  // failed), is not ranked; an interval whose value is no number ranks below
  // every other.
  for (int m = 0; m < n; ++m) {
    const MemberRun& last = *latest[m];
    if (!last.finished || !last.value || last.generation + 1 >= generations_) continue;
    const int g = last.generation;
    const bool diverged = !std::isfinite(*last.value);
    struct Peer {
      int at;                // their common interval
      double margin;         // its score minus the member's there (diverged: its score)
      const MemberRun* run;  // its trial there
    };
    std::vector<Peer> ahead;  // the peers ranked above the member
    std::size_t compared = 1;
    for (int x = 0; x < n; ++x) {
      if (x == m || (latest[x]->finished && !latest[x]->value)) continue;
      const MemberRun* theirs = nullptr;
      const MemberRun* mine = nullptr;
      int at = g;
      for (; at >= std::max(0, g - 1); --at) {
        auto t = scored[x].find(at);
        auto own = scored[m].find(at);
        if (t != scored[x].end() && (diverged || own != scored[m].end())) {
          theirs = t->second;
          mine = diverged ? nullptr : own->second;
          break;
        }
      }
      if (!theirs) continue;
      ++compared;
      if (diverged) {
        ahead.push_back({at, *theirs->value, theirs});
        continue;
      }
      const double margin = *theirs->value - *mine->value;
      if (margin < 0 || (margin == 0 && theirs->number < mine->number))
        ahead.push_back({at, margin, theirs});
    }
    const std::size_t k =
        compared < 2
            ? 0
            : std::max<std::size_t>(1, static_cast<std::size_t>(std::floor(
                                           config_.quantile * static_cast<double>(compared))));
    const std::size_t place = ahead.size();
    if (k > 0 && place >= compared - k && place >= k) {
      // The top quantile: the k members furthest ahead of it, those compared
      // at interval g first (margins at one budget are on one scale); a donor
      // is taken at that common interval (never past the member's next budget).
      std::sort(ahead.begin(), ahead.end(), [](const Peer& a, const Peer& b) {
        if (a.at != b.at) return a.at > b.at;
        return a.margin != b.margin ? a.margin < b.margin : a.run->number < b.run->number;
      });
      std::vector<const MemberRun*> donors;
      for (std::size_t i = 0; i < k; ++i)
        if (has_checkpoint(ahead[i].run->number)) donors.push_back(ahead[i].run);
      if (!donors.empty()) {
        Rng rng(config_.seed, key, kExploitSalt);
        const MemberRun& d = *donors[rng.below(donors.size())];
        return PbtJob{m, last.generation + 1, budget(last.generation + 1), d.number, d.number};
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
