// Population-based training benchmark: the noisy quadratic
// (search::noisy_quadratic_step: SGD's expected loss on w^2 with unit
// gradient noise, from 1; a large learning rate falls fast to a high floor,
// a small one slowly to a low one), where the best schedule decays the rate.
// PBT (search/population_based.hpp, the schedule the scheduler runs: population
// P, intervals of I steps, bottom quarter exploits the top, lr explored)
// against random search over a fixed lr with the same total budget (P trials
// of the full length), on a simulated pool of W workers.
//
//   pbt_bench [--seeds 20] [--population 8] [--interval 10] [--steps 100] [--workers 4]
//
// Rows: "pbt\t<method>\t<seed>\t<best final loss>\t<steps spent>\t<exploits>"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "search/population_based.hpp"
#include "search/sampler.hpp"
#include "search/test_functions.hpp"

namespace {

using namespace hpo::search;

struct Options {
  int seeds = 20;
  int population = 8;
  double interval = 10;
  double steps = 100;
  int workers = 4;
};

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

void random_search(int seed, const Options& o) {
  const SearchSpace space = lr_space();
  auto sampler = make_sampler({Algorithm::kRandom, static_cast<std::uint64_t>(seed)}, space);
  double best = 1e300;
  for (int t = 0; t < o.population; ++t) {
    const double lr = lr_of(*sampler->ask({}, {}, t));
    double v = 1;
    for (int s = 0; s < static_cast<int>(o.steps); ++s) v = noisy_quadratic_step(v, lr);
    best = std::min(best, v);
  }
  std::printf("pbt\trandom\t%d\t%.6g\t%g\t0\n", seed, best, o.population * o.steps);
}

void pbt(int seed, const Options& o) {
  const SearchSpace space = lr_space();
  PbtConfig c;
  c.population = o.population;
  c.interval = o.interval;
  c.max_budget = o.steps;
  c.seed = static_cast<std::uint64_t>(seed);
  PopulationSchedule schedule(c);
  auto sampler = make_sampler({Algorithm::kRandom, static_cast<std::uint64_t>(seed)}, space);
  struct Running {
    double ends;
    std::int64_t number;
  };
  std::vector<MemberRun> runs;
  std::map<std::int64_t, double> loss;  // a finished trial's state: its checkpoint
  std::vector<Running> running;
  double now = 0, spent = 0;
  int exploits = 0;
  std::int64_t next = 0;
  auto budget_of = [&](const MemberRun& r) { return schedule.budget(r.generation); };
  for (;;) {
    while (static_cast<int>(running.size()) < o.workers) {
      auto job = schedule.next(
          runs, [&](std::int64_t n) { return loss.count(n) > 0; }, next);
      if (!job) break;
      MemberRun r;
      r.number = next;
      r.member = job->member;
      r.generation = job->generation;
      r.resumed_from = job->resume;
      r.exploited = job->exploit;
      double from = 0;
      if (job->resume < 0) {
        r.params = *sampler->ask({}, {}, job->member);
      } else {
        const MemberRun& parent = runs[static_cast<std::size_t>(job->resume)];
        r.params = job->exploit >= 0 ? schedule.explore(space, parent.params, next) : parent.params;
        from = budget_of(parent);
        exploits += job->exploit >= 0;
      }
      running.push_back({now + budget_of(r) - from, next});
      runs.push_back(r);
      ++next;
    }
    if (running.empty()) break;
    auto first =
        std::min_element(running.begin(), running.end(),
                         [](const Running& a, const Running& b) { return a.ends < b.ends; });
    const Running done = *first;
    running.erase(first);
    now = done.ends;
    MemberRun& r = runs[static_cast<std::size_t>(done.number)];
    double v = r.resumed_from >= 0 ? loss.at(r.resumed_from) : 1.0;
    const double from = r.resumed_from >= 0 ? budget_of(runs[r.resumed_from]) : 0;
    for (double s = from; s < budget_of(r); ++s) v = noisy_quadratic_step(v, lr_of(r.params));
    spent += budget_of(r) - from;
    loss[r.number] = v;
    r.finished = true;
    r.value = v;
  }
  double best = 1e300;
  for (const MemberRun& r : runs)
    if (r.value && schedule.budget(r.generation) >= o.steps) best = std::min(best, *r.value);
  std::printf("pbt\tpbt\t%d\t%.6g\t%g\t%d\n", seed, best, spent, exploits);
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
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  // Context: the best fixed rate of all (a fine grid in log scale), what no
  // search over a fixed rate can beat.
  double oracle = 1e300, oracle_lr = 0;
  for (int i = 0; i <= 2000; ++i) {
    const double lr = 1e-3 * std::pow(500.0, i / 2000.0);
    double v = 1;
    for (int s = 0; s < static_cast<int>(o.steps); ++s) v = noisy_quadratic_step(v, lr);
    if (v < oracle) oracle = v, oracle_lr = lr;
  }
  std::printf("oracle\tbest fixed lr %.4g\t%.6g\n", oracle_lr, oracle);
  for (int seed = 0; seed < o.seeds; ++seed) {
    random_search(seed, o);
    pbt(seed, o);
  }
  return 0;
}
