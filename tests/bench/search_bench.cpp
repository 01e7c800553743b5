// Search benchmark: best value found after 30/60/100 evaluations on standard
// test functions, 15 seeds, for random, sobol, tpe and bayesian; plus the time
// of one ask at 100/500/1000 observations. Prints tab-separated rows that
// tests/bench/search_bench.sh merges with Optuna's figures (search_optuna.py)
// into one table.
//
//   search_bench [--seeds N] [--budgets 30,60,100] [--functions a,b] [--samplers a,b]
//                [--no-quality] [--no-timing] [--timing-n 100,500,1000]
//                [--timing-reps R] [--pending K]
//   search_bench --warm-start [--seeds 10] [--functions branin,hartmann6] [--samplers tpe,bayesian]
//                [--opposite]
//   search_bench --pareto [--seeds 10] [--budgets 100,200,400]
//                [--functions zdt1,zdt2,zdt3,dtlz2] [--samplers nsga2,random] [--pending K]
//
// A sampler "bayesian@N" is the Bayesian sampler with a GP subset of N
// points (the default is BayesianSampler::kMaxGpPoints; a large N is the
// unbounded GP), to measure what the subset costs in quality and time.
// --timing-reps: asks timed per size (default 5, 3 from 1,000 observations);
// --pending: trials in flight beside the history (K Sobol points), as a
// controller with max_concurrent K asks; with --pareto, K trials in flight
// (each ask sees the others as pending; the oldest finishes first).
//
// Rows: "hv\t<function>\t<sampler>\t<budget>\t<median>\t<q25>\t<q75>" (--pareto: the
//       hypervolume of the trials so far at the function's reference point)
//       "best\t<function>\t<sampler>\t<budget>\t<median>\t<q25>\t<q75>"
//       "ask_ms\t<sampler>\t<dims>\t<n>\t<median wall ms>\t<median thread-CPU ms>\t<p99 wall
//       ms>\t<pending>"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <random>
#include "search/bayesian_sampler.hpp"
#include "search/ehvi_sampler.hpp"
#include "search/nsga2_sampler.hpp"
#include "search/pareto.hpp"
#include "search/random_sampler.hpp"
#include "search/rng.hpp"
#include "search/sampler.hpp"
#include "search/test_functions.hpp"
#include "search/tpe_sampler.hpp"
#include "search/warm_start.hpp"

namespace {

using namespace hpo::search;

struct Problem {
  std::string name;
  SearchSpace space;
  std::function<double(const Params&)> f;
};

SearchSpace box(const TestFunctionInfo& info) {
  SearchSpace s;
  for (int i = 0; i < info.dims; ++i) {
    ParamSpec p;
    p.name = "x" + std::to_string(i + 1);
    p.min = info.lower[std::size_t(i)];
    p.max = info.upper[std::size_t(i)];
    s.params.push_back(p);
  }
  return s;
}

// Branin plus a categorical "kind" (a: +1, b: + 10 (s - 0.3)^2 with s active
// only for b, c: +5) and an int k in 1..5 (+ 0.1 (k - 3)^2). Minimum 0.397887.
// search_optuna.py defines the same function.
Problem mixed() {
  auto info = *test_function_info("branin");
  Problem p{"mixed", box(info), nullptr};
  ParamSpec kind;
  kind.name = "kind";
  kind.type = ParamType::kCategorical;
  kind.choices = {std::string("a"), std::string("b"), std::string("c")};
  ParamSpec s;
  s.name = "s";
  s.min = 0;
  s.max = 1;
  s.when = Condition{"kind", {std::string("b")}};
  ParamSpec k;
  k.name = "k";
  k.type = ParamType::kInt;
  k.min = 1;
  k.max = 5;
  p.space.params.push_back(kind);
  p.space.params.push_back(s);
  p.space.params.push_back(k);
  p.f = [](const Params& x) {
    double v = *evaluate_test_function("branin", x);
    auto kind = std::get<std::string>(x.at("kind"));
    if (kind == "a") v += 1;
    if (kind == "b") v += 10 * std::pow(std::get<double>(x.at("s")) - 0.3, 2);
    if (kind == "c") v += 5;
    double kk = static_cast<double>(std::get<std::int64_t>(x.at("k")));
    return v + 0.1 * (kk - 3) * (kk - 3);
  };
  return p;
}

Problem problem(const std::string& name) {
  if (name == "mixed") return mixed();
  auto info = test_function_info(name);
  if (!info) {
    std::fprintf(stderr, "unknown function %s\n", name.c_str());
    std::exit(2);
  }
  return {name, box(*info), [name](const Params& x) { return *evaluate_test_function(name, x); }};
}

Algorithm algorithm(const std::string& s) {
  if (s == "random") return Algorithm::kRandom;
  if (s == "sobol") return Algorithm::kSobol;
  if (s == "tpe") return Algorithm::kTpe;
  if (s == "bayesian") return Algorithm::kBayesian;
  std::fprintf(stderr, "unknown sampler %s\n", s.c_str());
  std::exit(2);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  double pos = q * double(v.size() - 1);
  auto lo = static_cast<std::size_t>(pos);
  auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
}

// Thread CPU time: the machine is shared, so wall time alone overstates cost.
double cpu_ms() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::unique_ptr<Sampler> sampler_named(const std::string& name, std::uint64_t seed,
                                       const SearchSpace& space) {
  if (name.rfind("bayesian@", 0) == 0)
    return std::make_unique<BayesianSampler>(space, seed, 0, std::stoi(name.substr(9)));
  return make_sampler({algorithm(name), seed, 0}, space);
}

void quality(const Problem& pr, const std::string& sampler, int seeds,
             const std::vector<int>& budgets) {
  const int max_budget = *std::max_element(budgets.begin(), budgets.end());
  std::vector<std::vector<double>> best_at(budgets.size());
  auto t0 = std::chrono::steady_clock::now();
  for (int seed = 0; seed < seeds; ++seed) {
    auto s = sampler_named(sampler, std::uint64_t(seed), pr.space);
    std::vector<Observation> history;
    double best = 1e300;
    for (int t = 0; t < max_budget; ++t) {
      auto p = s->ask(history, {}, t);
      if (!p) break;
      Observation o;
      o.number = t;
      o.params = *p;
      o.value = pr.f(*p);
      best = std::min(best, *o.value);
      history.push_back(std::move(o));
      for (std::size_t b = 0; b < budgets.size(); ++b)
        if (t + 1 == budgets[b]) best_at[b].push_back(best);
    }
  }
  for (std::size_t b = 0; b < budgets.size(); ++b)
    std::printf("best\t%s\t%s\t%d\t%.6g\t%.6g\t%.6g\n", pr.name.c_str(), sampler.c_str(),
                budgets[b], quantile(best_at[b], 0.5), quantile(best_at[b], 0.25),
                quantile(best_at[b], 0.75));
  std::fprintf(stderr, "# %s %s: %.1f s\n", pr.name.c_str(), sampler.c_str(), ms_since(t0) / 1e3);
  std::fflush(stdout);
}

void timing(const std::string& sampler, const std::string& fname, const std::vector<int>& sizes,
            int reps_asked, int n_pending) {
  Problem pr = problem(fname);
  for (int n : sizes) {
    // History: n Sobol points of the function (what a long sweep looks like
    // to the model, without spending n model-based asks to build it).
    auto init = make_sampler({Algorithm::kSobol, 11, 0}, pr.space);
    std::vector<Observation> history;
    for (int t = 0; t < n; ++t) {
      Observation o;
      o.number = t;
      o.params = *init->ask({}, {}, t);
      o.value = pr.f(o.params);
      history.push_back(std::move(o));
    }
    std::vector<Params> pending;
    for (int k = 0; k < n_pending; ++k) pending.push_back(*init->ask({}, {}, n + k));
    auto s = sampler_named(sampler, 5, pr.space);
    std::vector<double> ms, cpu;
    const int reps = reps_asked > 0 ? reps_asked : (n >= 1000 ? 3 : 5);
    for (int r = 0; r < reps; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      double c0 = cpu_ms();
      auto p = s->ask(history, pending, n + n_pending + r);
      cpu.push_back(cpu_ms() - c0);
      ms.push_back(ms_since(t0));
      if (!p) std::exit(3);
    }
    std::printf("ask_ms\t%s\t%d\t%d\t%.3f\t%.3f\t%.3f\t%d\n", sampler.c_str(),
                int(pr.space.params.size()), n, quantile(ms, 0.5), quantile(cpu, 0.5),
                quantile(ms, 0.99), n_pending);
    std::fflush(stdout);
  }
}

// Warm start on a family of related tasks: f's inputs shifted by up to 5% of
// each range and its value scaled by a in [0.5, 5] and offset by b in
// [-10, 10], drawn per seed for an earlier task and (independently) for the
// task at hand. The earlier sweep runs 100 evaluations of the same sampler;
// then the task at hand is searched cold (100 evaluations) and warm-started
// from the earlier sweep. Reported: the evaluations the warm sweep needs to
// reach the cold sweep's best after 100 (101: not within 100), their median
// over the seeds and how many seeds reach it within 30, and both sweeps'
// median regret after 30 (in units of the unscaled function). --opposite:
// the earlier sweep's values are negated before the warm start sees them
// (an earlier sweep that ranks this task's points the other way, what a
// warm start must survive).
// Row: "warm\t<function>\t<sampler>\t<median evals>\t<seeds within 30>\t<seeds>\t
//       <warm regret@30>\t<cold regret@30>"
void warm_start(const std::string& fname, const std::string& sampler, int seeds, bool opposite) {
  const auto info = *test_function_info(fname);
  const SearchSpace space = box(info);
  struct Task {
    std::vector<double> shift;
    double scale = 1, offset = 0;
  };
  auto draw = [&](std::mt19937_64& rng) {
    std::uniform_real_distribution<double> u(0, 1);
    Task t;
    for (int d = 0; d < info.dims; ++d)
      t.shift.push_back((u(rng) - 0.5) * 0.1 *
                        (info.upper[std::size_t(d)] - info.lower[std::size_t(d)]));
    t.scale = 0.5 + 4.5 * u(rng);
    t.offset = -10 + 20 * u(rng);
    return t;
  };
  auto eval = [&](const Task& t, const Params& p) {
    std::vector<double> x;
    for (int d = 0; d < info.dims; ++d) {
      const double v =
          std::get<double>(p.at("x" + std::to_string(d + 1))) + t.shift[std::size_t(d)];
      x.push_back(std::clamp(v, info.lower[std::size_t(d)], info.upper[std::size_t(d)]));
    }
    return t.scale * *evaluate_test_function(fname,
                                             [&] {
                                               Params q;
                                               for (int d = 0; d < info.dims; ++d)
                                                 q["x" + std::to_string(d + 1)] = x[std::size_t(d)];
                                               return q;
                                             }()) +
           t.offset;
  };
  // The best value after each evaluation (index n-1: after n).
  auto run = [&](const Task& t, std::uint64_t seed, const WarmStart* warm, int n,
                 std::vector<PriorTrial>* record) {
    auto s = sampler_named(sampler, seed, space);
    if (warm) s->learn_from(*warm);  // as the sweep controller does
    std::vector<Observation> own;
    std::vector<double> best_after;
    double best = 1e300;
    for (int i = 0; i < n; ++i) {
      auto p = warm ? warm->initial(i) : std::nullopt;
      if (!p) p = s->ask(own, {}, i);
      if (!p) break;
      Observation o;
      o.number = i;
      o.params = *p;
      o.value = eval(t, *p);
      if (record) record->push_back({*p, *o.value});
      best = std::min(best, *o.value);
      best_after.push_back(best);
      own.push_back(std::move(o));
    }
    return best_after;
  };
  std::vector<double> reach, warm30, cold30;
  int within30 = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int seed = 0; seed < seeds; ++seed) {
    std::mt19937_64 rng(0x5eedULL + std::uint64_t(seed));
    const Task earlier = draw(rng), now = draw(rng);
    // The tasks, for the Optuna reference (search_warm_optuna.py) to run the same ones.
    for (const auto* t : {&earlier, &now}) {
      std::printf("task\t%s\t%d\t%s\t%.17g\t%.17g\t", fname.c_str(), seed,
                  t == &earlier ? "earlier" : "now", t->scale, t->offset);
      for (std::size_t d = 0; d < t->shift.size(); ++d)
        std::printf("%s%.17g", d ? "," : "", t->shift[d]);
      std::printf("\t%d\n", opposite ? 1 : 0);
    }
    std::vector<PriorTrial> source;
    run(earlier, 2000 + std::uint64_t(seed), nullptr, 100, &source);
    if (opposite)  // the worst case: its best are this task's worst
      for (auto& t : source) t.value = -t.value;
    const auto cold = run(now, 1000 + std::uint64_t(seed), nullptr, 100, nullptr);
    WarmStart warm(space, {source}, sampler_named(sampler, 0, space)->initial_design());
    const auto warmed = run(now, 1000 + std::uint64_t(seed), &warm, 100, nullptr);
    int n = 101;
    for (std::size_t i = 0; i < warmed.size(); ++i)
      if (warmed[i] <= cold.back()) {
        n = int(i) + 1;
        break;
      }
    reach.push_back(n);
    within30 += n <= 30;
    const double floor = now.scale * info.minimum + now.offset;
    warm30.push_back((warmed[29] - floor) / now.scale);
    cold30.push_back((cold[29] - floor) / now.scale);
  }
  std::printf("warm\t%s\t%s\t%.1f\t%d\t%d\t%.4g\t%.4g\n", fname.c_str(), sampler.c_str(),
              quantile(reach, 0.5), within30, seeds, quantile(warm30, 0.5), quantile(cold30, 0.5));
  std::fprintf(stderr, "# warm %s %s: %.1f s\n", fname.c_str(), sampler.c_str(),
               ms_since(t0) / 1e3);
  std::fflush(stdout);
}

// Multi-objective: each sampler asks `max(budgets)` trials one at a time on a
// ZDT/DTLZ problem (inputs in [0, 1]); the hypervolume of the trials so far
// at each budget, over seeds 1..seeds. search_pareto_optuna.py prints the same
// rows for Optuna's NSGAIISampler and RandomSampler. ZDT3's f2 goes below 0:
// both sides count the volume from each point up to the reference with no
// floor, so their figures stay comparable.
void pareto(const std::string& fname, const std::string& sampler, int seeds,
            const std::vector<int>& budgets, int in_flight) {
  auto info = multi_objective_info(fname);
  if (!info) {
    std::fprintf(stderr, "unknown multi-objective function %s\n", fname.c_str());
    std::exit(2);
  }
  SearchSpace space;
  for (int i = 1; i <= info->dims; ++i) {
    ParamSpec p;
    p.name = "x" + std::to_string(i);
    p.min = 0;
    p.max = 1;
    space.params.push_back(p);
  }
  const int last = *std::max_element(budgets.begin(), budgets.end());
  std::vector<std::vector<double>> hv(budgets.size());
  for (int seed = 1; seed <= seeds; ++seed) {
    std::unique_ptr<Sampler> s;
    if (sampler == "nsga2")
      s = std::make_unique<Nsga2Sampler>(space, seed);
    else if (sampler == "ehvi")  // the spec's `bayesian` with the functions' reference declared
      s = std::make_unique<EhviSampler>(space, seed, 0, info->reference);
    else if (sampler == "ehvi-noref")
      s = std::make_unique<EhviSampler>(space, seed);
    else if (sampler == "tpe")  // with several objectives: MOTPE
      s = std::make_unique<TpeSampler>(space, seed, 0);
    else if (sampler == "random")
      s = std::make_unique<RandomSampler>(space, seed);
    else {
      std::fprintf(stderr, "unknown multi-objective sampler %s\n", sampler.c_str());
      std::exit(2);
    }
    std::vector<Observation> history;
    std::vector<Point> points;
    std::deque<std::pair<int, Params>> flying;  // asked, not finished: oldest first
    int asked = 0;
    for (int done = 0; done < last; ++done) {
      while (asked < last && int(flying.size()) < in_flight) {
        std::vector<Params> pending;
        for (const auto& f : flying) pending.push_back(f.second);
        flying.push_back({asked, *s->ask(history, pending, asked)});
        ++asked;
      }
      Observation o;
      o.number = flying.front().first;
      o.params = std::move(flying.front().second);
      flying.pop_front();
      o.values = *evaluate_multi_objective(fname, o.params);
      points.push_back(o.values);
      history.push_back(std::move(o));
      for (std::size_t b = 0; b < budgets.size(); ++b)
        if (done + 1 == budgets[b]) hv[b].push_back(hypervolume(points, info->reference));
    }
  }
  for (std::size_t b = 0; b < budgets.size(); ++b)
    std::printf("hv\t%s\t%s\t%d\t%.4f\t%.4f\t%.4f\n", fname.c_str(), sampler.c_str(), budgets[b],
                quantile(hv[b], 0.5), quantile(hv[b], 0.25), quantile(hv[b], 0.75));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int seeds = 15;
  std::vector<int> budgets = {30, 60, 100};
  std::vector<std::string> functions = {"branin", "hartmann6", "rosenbrock", "ackley", "mixed"};
  std::vector<std::string> samplers = {"random", "sobol", "tpe", "bayesian"};
  std::vector<int> timing_n = {100, 500, 1000};
  int timing_reps = 0, pending = 0;
  bool do_quality = true, do_timing = true, do_warm = false, do_pareto = false, opposite = false;
  bool chose_functions = false, chose_samplers = false, chose_budgets = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--seeds")
      seeds = std::stoi(next());
    else if (a == "--budgets") {
      budgets.clear();
      for (auto& b : split(next())) budgets.push_back(std::stoi(b));
      chose_budgets = true;
    } else if (a == "--functions")
      functions = split(next()), chose_functions = true;
    else if (a == "--samplers")
      samplers = split(next()), chose_samplers = true;
    else if (a == "--timing-n") {
      timing_n.clear();
      for (auto& b : split(next())) timing_n.push_back(std::stoi(b));
    } else if (a == "--no-quality")
      do_quality = false;
    else if (a == "--timing-reps")
      timing_reps = std::stoi(next());
    else if (a == "--pending")
      pending = std::stoi(next());
    else if (a == "--no-timing")
      do_timing = false;
    else if (a == "--warm-start")
      do_warm = true;
    else if (a == "--opposite")
      opposite = true;
    else if (a == "--pareto")
      do_pareto = true;
    else {
      std::fprintf(stderr, "usage: see the top of search_bench.cpp\n");
      return 2;
    }
  }
  if (do_pareto) {
    if (!chose_functions) functions = {"zdt1", "zdt2", "zdt3", "dtlz2"};
    if (!chose_samplers) samplers = {"nsga2", "random"};
    if (!chose_budgets) budgets = {100, 200, 400};
    for (const auto& f : functions)
      for (const auto& s : samplers) pareto(f, s, seeds, budgets, std::max(1, pending));
    return 0;
  }
  if (do_warm) {  // its own table: the functions and samplers given (default branin, hartmann6)
    for (const auto& f : functions)
      for (const auto& s : samplers) warm_start(f, s, seeds, opposite);
    return 0;
  }
  if (do_quality)
    for (const auto& f : functions) {
      Problem pr = problem(f);
      for (const auto& s : samplers) quality(pr, s, seeds, budgets);
    }
  if (do_timing) {
    for (const auto& s : samplers)
      if (s.rfind("bayesian", 0) == 0 || s == "tpe")
        timing(s, "hartmann6", timing_n, timing_reps, pending);
  }
  return 0;
}
