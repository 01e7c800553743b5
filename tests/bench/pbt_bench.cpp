// Population-based training benchmark: the noisy quadratic in D dimensions,
// trained by SGD — w starts at 1 in every coordinate, each step is
// w <- w - lr (2 w + xi) with unit Gaussian gradient noise xi, the loss is the
// mean of w^2 (its expectation is search::noisy_quadratic_step's). A large
// learning rate falls fast to a high floor, a small one slowly to a low one:
// the best schedule decays the rate, which no fixed rate does.
//
// Three methods with about the same budget (P members of S steps; random
// search gets at least the steps either PBT spent), on a simulated
// pool of W workers where every interval takes the same time, so members
// finish in member order (trials go out in member order):
//   random  random search over a fixed lr (trainings of S steps);
//   pbt     the scheduler's schedule (search/population_based.hpp): P
//           members, intervals of I steps, the bottom quantile exploits the
//           top one, ranked against the population at comparable budgets;
//   ray     Ray Tune's rule, written out here: at each interval's end a member
//           is ranked against every member's latest score (whatever its
//           budget); in the bottom quantile it copies a top member's last
//           checkpoint (its weights and its step count) and explores.
// Both PBTs explore the donor's lr the same way (PopulationSchedule::explore).
//
//   pbt_bench [--seeds 10] [--population 8] [--interval 5] [--steps 100]
//             [--workers 8] [--dims 1000]
//
// Rows: "pbt\t<method>\t<seed>\t<best final loss>\t<steps spent>\t<exploits>"
//       "exploit\t<method>\t<member>\t<generation>"      (one per exploit)
//       "oracle\t<text>\t<loss>"                          (the best fixed lr, expected loss)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "search/population_based.hpp"
#include "search/rng.hpp"
#include "search/sampler.hpp"
#include "search/test_functions.hpp"

namespace {

using namespace hpo::search;

struct Options {
  int seeds = 10;
  int population = 8;
  double interval = 5;
  double steps = 100;
  int workers = 8;
  int dims = 1000;
};

constexpr std::uint64_t kNoiseSalt = 0x4e4f495345;  // "NOISE"

SearchSpace lr_space() {
  ParamSpec lr;
  lr.name = "lr";
  lr.min = 1e-3;
  lr.max = 0.5;
  lr.log = true;
  SearchSpace s;
  s.params = {lr};
  return s;
}

double lr_of(const Params& p) {
  return *as_double(p.at("lr"));
}

// One model's weights and how far it has trained.
struct State {
  std::vector<double> w;
  double steps = 0;
  double loss() const {
    double s = 0;
    for (double x : w) s += x * x;
    return s / static_cast<double>(w.size());
  }
};

State fresh(const Options& o) {
  return State{std::vector<double>(static_cast<std::size_t>(o.dims), 1.0), 0};
}

// SGD from `s` up to `to` steps; the noise is a fixed stream of (seed, run).
void train(State& s, double lr, double to, int seed, std::int64_t run) {
  const double r = std::clamp(lr, 0.0, 0.99);
  Rng rng(static_cast<std::uint64_t>(seed), run, kNoiseSalt);
  for (; s.steps < to; ++s.steps)
    for (double& x : s.w) x -= r * (2 * x + rng.normal());
}

// `trials` trainings of the full length.
double random_search(int seed, int trials, const Options& o) {
  const SearchSpace space = lr_space();
  auto sampler = make_sampler({Algorithm::kRandom, static_cast<std::uint64_t>(seed)}, space);
  double best = 1e300;
  for (int t = 0; t < trials; ++t) {
    State s = fresh(o);
    train(s, lr_of(*sampler->ask({}, {}, t)), o.steps, seed, t);
    best = std::min(best, s.loss());
  }
  std::printf("pbt\trandom\t%d\t%.6g\t%g\t0\n", seed, best, trials * o.steps);
  return best;
}

PbtConfig pbt_config(int seed, const Options& o) {
  PbtConfig c;
  c.population = o.population;
  c.interval = o.interval;
  c.max_budget = o.steps;
  c.seed = static_cast<std::uint64_t>(seed);
  return c;
}

// The scheduler's schedule on a pool of o.workers: every interval takes the
// same time; among those that end together, the one started first ends first.
// Returns the steps it spent.
double pbt(int seed, const Options& o) {
  const SearchSpace space = lr_space();
  PopulationSchedule schedule(pbt_config(seed, o));
  auto sampler = make_sampler({Algorithm::kRandom, static_cast<std::uint64_t>(seed)}, space);
  std::vector<MemberRun> runs;
  std::map<std::int64_t, State> checkpoint;  // a finished trial's state
  std::vector<std::int64_t> running;         // in the order they started
  double spent = 0;
  int exploits = 0;
  std::int64_t next = 0;
  for (;;) {
    while (static_cast<int>(running.size()) < o.workers) {
      auto job = schedule.next(
          runs, [&](std::int64_t n) { return checkpoint.count(n) > 0; }, next);
      if (!job) break;
      MemberRun r;
      r.number = next;
      r.member = job->member;
      r.generation = job->generation;
      r.resumed_from = job->resume;
      r.exploited = job->exploit;
      if (job->resume < 0) {
        r.params = *sampler->ask({}, {}, job->member);
      } else {
        const MemberRun& parent = runs[static_cast<std::size_t>(job->resume)];
        r.params = job->exploit >= 0 ? schedule.explore(space, parent.params, next) : parent.params;
      }
      if (job->exploit >= 0) {
        ++exploits;
        std::printf("exploit\tpbt\t%d\t%d\n", job->member, job->generation);
      }
      running.push_back(next);
      runs.push_back(r);
      ++next;
    }
    if (running.empty()) break;
    // Equal intervals: the oldest running one ends first (an exploit that
    // trains a longer interval is rare; its order matters little here).
    const std::int64_t number = running.front();
    running.erase(running.begin());
    MemberRun& r = runs[static_cast<std::size_t>(number)];
    State s = r.resumed_from >= 0 ? checkpoint.at(r.resumed_from) : fresh(o);
    const double from = s.steps;
    train(s, lr_of(r.params), schedule.budget(r.generation), seed, number);
    spent += s.steps - from;
    r.finished = true;
    r.value = s.loss();
    checkpoint[number] = std::move(s);
  }
  double best = 1e300;
  for (const MemberRun& r : runs)
    if (r.value && schedule.budget(r.generation) >= o.steps) best = std::min(best, *r.value);
  std::printf("pbt\tpbt\t%d\t%.6g\t%g\t%d\n", seed, best, spent, exploits);
  return spent;
}

// Ray Tune's PBT rule: the latest scores, whatever each member's budget.
double ray(int seed, const Options& o) {  // returns the steps it spent
  const SearchSpace space = lr_space();
  PopulationSchedule explorer(pbt_config(seed, o));  // for explore() alone
  auto sampler = make_sampler({Algorithm::kRandom, static_cast<std::uint64_t>(seed)}, space);
  struct Member {
    Params params;
    State saved;                  // its last checkpoint
    std::optional<double> score;  // its latest score
    int interval = 0;             // intervals trained (its generation)
  };
  std::vector<Member> members(static_cast<std::size_t>(o.population));
  for (int m = 0; m < o.population; ++m) {
    members[static_cast<std::size_t>(m)].params = *sampler->ask({}, {}, m);
    members[static_cast<std::size_t>(m)].saved = fresh(o);
  }
  std::vector<int> queue;  // members waiting for a worker, then running, in order
  for (int m = 0; m < o.population; ++m) queue.push_back(m);
  double spent = 0;
  int exploits = 0;
  std::int64_t run = 1'000'000;  // noise streams apart from the other methods'
  Rng pick(static_cast<std::uint64_t>(seed), 0, 0x524159);  // "RAY"
  while (!queue.empty()) {
    const int m = queue.front();  // equal intervals: the first started ends first
    queue.erase(queue.begin());
    Member& me = members[static_cast<std::size_t>(m)];
    State s = me.saved;
    const double from = s.steps;
    train(s, lr_of(me.params), std::min(o.steps, s.steps + o.interval), seed, run++);
    spent += s.steps - from;
    me.saved = s;
    me.score = s.loss();
    ++me.interval;
    if (s.steps >= o.steps) continue;  // done
    // Rank every member with a score; Ray's quantile: ceil(q n), at most n / 2.
    std::vector<std::pair<double, int>> ranked;
    for (int x = 0; x < o.population; ++x)
      if (const auto& sc = members[static_cast<std::size_t>(x)].score) ranked.emplace_back(*sc, x);
    std::sort(ranked.begin(), ranked.end());
    const std::size_t n = ranked.size();
    std::size_t k = n <= 1 ? 0 : static_cast<std::size_t>(std::ceil(0.25 * static_cast<double>(n)));
    k = std::min(k, n / 2);
    bool bottom = false;
    for (std::size_t i = n - k; i < n; ++i) bottom = bottom || ranked[i].second == m;
    if (bottom && k > 0) {
      const int donor = ranked[pick.below(k)].second;
      const Member& d = members[static_cast<std::size_t>(donor)];
      me.saved = d.saved;
      me.params = explorer.explore(space, d.params, run);
      ++exploits;
      std::printf("exploit\tray\t%d\t%d\n", m, me.interval);
    }
    queue.push_back(m);
  }
  double best = 1e300;
  for (const Member& me : members)
    if (me.score && me.saved.steps >= o.steps) best = std::min(best, *me.score);
  std::printf("pbt\tray\t%d\t%.6g\t%g\t%d\n", seed, best, spent, exploits);
  return spent;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const double v = std::stod(argv[i + 1]);
    if (a == "--seeds")
      o.seeds = static_cast<int>(v);
    else if (a == "--population")
      o.population = static_cast<int>(v);
    else if (a == "--interval")
      o.interval = v;
    else if (a == "--steps")
      o.steps = v;
    else if (a == "--workers")
      o.workers = static_cast<int>(v);
    else if (a == "--dims")
      o.dims = static_cast<int>(v);
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  // Context: the best fixed rate of all (a fine grid in log scale, the
  // expected loss), what no search over a fixed rate can beat.
  double oracle = 1e300, oracle_lr = 0;
  for (int i = 0; i <= 2000; ++i) {
    const double lr = 1e-3 * std::pow(500.0, i / 2000.0);
    double v = 1;
    for (int s = 0; s < static_cast<int>(o.steps); ++s) v = noisy_quadratic_step(v, lr);
    if (v < oracle) oracle = v, oracle_lr = lr;
  }
  std::printf("oracle\tbest fixed lr %.4g\t%.6g\n", oracle_lr, oracle);
  for (int seed = 0; seed < o.seeds; ++seed) {
    // Random search gets at least the steps either PBT spent (an exploit of a
    // member behind trains a longer interval), in whole trainings.
    const double pbt_spent = pbt(seed, o);
    const double spent = std::max(pbt_spent, ray(seed, o));
    random_search(seed, static_cast<int>(std::ceil(spent / o.steps - 1e-9)), o);
  }
  return 0;
}
