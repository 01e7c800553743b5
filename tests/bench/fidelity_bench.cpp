// Multi-fidelity benchmark: a pool of W workers (simulated time: a trial
// occupies a worker for the budget it spends) runs random search at the full
// budget, ASHA and Hyperband with promotions (random new configurations) and
// BOHB (Hyperband + TPE fitted on the largest budget with d + 2 results) and
// asha-tpe (ASHA's one bracket + the same model) and bohb-gp (Hyperband +
// the bayesian sampler's GP on the largest budget with d + 2 results), with
// the very schedule (search/successive_halving.hpp) and samplers the
// scheduler uses, on a learning-curve function:
//   value(x, b) = hartmann6(x) + exp(-(0.5 + 4.5 x1) b / M) + noise
// (search::learning_curve, crossing: fast learners lead early, the final
// ranking differs). A promotion resumes: it spends only the budget above its
// parent's. The incumbent is the best trial at the largest budget any trial
// has completed; its quality is its noise-free value at the full budget M.
//
//   fidelity_bench [--seeds 10] [--total 2700] [--max 27] [--eta 3] [--workers 4]
//                  [--noise 0.05] [--methods random,asha,hyperband,bohb,asha-tpe,bohb-gp]
//
// Rows: "traj\t<method>\t<seed>\t<budget spent>\t<incumbent's full-budget value>"
// at each change of the incumbent, and "end\t<method>\t<seed>\t<budget spent>\t<trials>".
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "search/rng.hpp"
#include "search/sampler.hpp"
#include "search/successive_halving.hpp"
#include "search/test_functions.hpp"

namespace {

using namespace hpo::search;

struct Options {
  int seeds = 10;
  double total = 2700;
  double max = 27;
  double eta = 3;
  int workers = 4;
  double noise = 0.05;
  std::vector<std::string> methods = {"random", "asha", "hyperband", "bohb", "bohb-gp", "asha-tpe"};
};

SearchSpace space6() {
  SearchSpace s;
  for (int i = 1; i <= 6; ++i) {
    ParamSpec p;
    p.name = "x" + std::to_string(i);
    p.min = 0;
    p.max = 1;
    s.params.push_back(p);
  }
  return s;
}

double f_of(const Params& p) {
  return *evaluate_test_function("hartmann6", p);
}

double full_value(const SearchSpace& space, const Params& p, double max) {
  return learning_curve(f_of(p), learning_speed(space, p), static_cast<std::int64_t>(max),
                        static_cast<std::int64_t>(max), true);
}

struct Running {
  double ends = 0;
  std::int64_t number = 0;
  double budget = 0;
  Params params;
};

void run(const std::string& method, int seed, const Options& o) {
  const SearchSpace space = space6();
  FidelityConfig fc;
  fc.schedule = method.rfind("asha", 0) == 0 ? Schedule::kAsha : Schedule::kHyperband;
  const bool model = method == "bohb" || method == "asha-tpe";
  const bool gp = method == "bohb-gp";
  fc.min_budget = 1;
  fc.max_budget = o.max;
  fc.reduction_factor = o.eta;
  const bool staged = method != "random";
  SuccessiveHalving sh(fc);
  auto sampler = make_sampler({model ? Algorithm::kTpe
                               : gp  ? Algorithm::kBayesian
                                     : Algorithm::kRandom,
                               static_cast<std::uint64_t>(seed)},
                              space);
  Rng noise(static_cast<std::uint64_t>(seed), 0, 0x4e4f49);

  std::vector<RungRun> runs;
  std::vector<Observation> history;  // finished, ascending number
  std::map<std::int64_t, double> budget_of;
  std::vector<Running> running;
  std::int64_t next = 0, configurations = 0;
  double now = 0, spent = 0, started = 0;
  double incumbent_budget = -1, incumbent_seen = 1e300, incumbent_value = 1e300;

  auto start_one = [&] {
    Params params;
    double budget = o.max, from = 0;
    RungRun r{next, 0, 0, -1, false, std::nullopt};
    if (staged) {
      RungJob job = sh.next(runs);
      r.bracket = job.bracket;
      r.rung = job.rung;
      r.resumed_from = job.promote;
      budget = job.budget;
      if (job.promote >= 0) {
        params = std::lower_bound(history.begin(), history.end(), job.promote,
                                  [](const Observation& h, std::int64_t n) { return h.number < n; })
                     ->params;
        from = budget_of.at(job.promote);
      }
    }
    if (r.resumed_from < 0) {
      std::vector<Observation> seen;
      if (model) seen = sh.by_configuration(runs, history);
      // The scheduler's rule for the GP (SweepController::model_history).
      if (gp)
        if (const auto b = sh.model_budget(runs, space.params.size() + 2))
          for (const Observation& h : history)
            if (budget_of.at(h.number) == *b) seen.push_back(h);
      std::vector<Params> pending;
      for (const auto& x : running) pending.push_back(x.params);
      params = *sampler->ask(seen, pending, configurations++);
    }
    runs.push_back(r);
    budget_of[next] = budget;
    running.push_back({now + budget - from, next, budget, params});
    started += budget - from;
    ++next;
  };

  while (spent < o.total) {
    while (static_cast<int>(running.size()) < o.workers && started < o.total) start_one();
    if (running.empty()) break;
    auto first =
        std::min_element(running.begin(), running.end(),
                         [](const Running& a, const Running& b) { return a.ends < b.ends; });
    Running done = *first;
    running.erase(first);
    const double resumed =
        runs[done.number].resumed_from >= 0 ? budget_of.at(runs[done.number].resumed_from) : 0;
    spent += done.budget - resumed;
    now = done.ends;
    const double value = learning_curve(f_of(done.params), learning_speed(space, done.params),
                                        static_cast<std::int64_t>(done.budget),
                                        static_cast<std::int64_t>(o.max), true) +
                         o.noise * noise.normal();
    runs[done.number].finished = true;
    runs[done.number].value = value;
    Observation h;
    h.number = done.number;
    h.params = done.params;
    h.value = value;
    history.insert(
        std::lower_bound(history.begin(), history.end(), done.number,
                         [](const Observation& x, std::int64_t n) { return x.number < n; }),
        std::move(h));
    // The incumbent: the best seen at the largest budget completed so far.
    if (done.budget > incumbent_budget ||
        (done.budget == incumbent_budget && value < incumbent_seen)) {
      incumbent_budget = done.budget;
      incumbent_seen = value;
      const double v = full_value(space, done.params, o.max);
      if (v != incumbent_value) {
        incumbent_value = v;
        std::printf("traj\t%s\t%d\t%.6g\t%.6g\n", method.c_str(), seed, spent, v);
      }
    }
  }
  std::printf("end\t%s\t%d\t%.6g\t%lld\n", method.c_str(), seed, spent,
              static_cast<long long>(next));
  std::fflush(stdout);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seeds")
      o.seeds = std::stoi(value());
    else if (a == "--total")
      o.total = std::stod(value());
    else if (a == "--max")
      o.max = std::stod(value());
    else if (a == "--eta")
      o.eta = std::stod(value());
    else if (a == "--workers")
      o.workers = std::stoi(value());
    else if (a == "--noise")
      o.noise = std::stod(value());
    else if (a == "--methods")
      o.methods = split(value());
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  for (const auto& m : o.methods) {
    if (m != "random" && m != "asha" && m != "hyperband" && m != "bohb" && m != "asha-tpe" &&
        m != "bohb-gp") {
      std::fprintf(stderr, "unknown method %s\n", m.c_str());
      return 2;
    }
    for (int seed = 0; seed < o.seeds; ++seed) run(m, seed, o);
  }
  return 0;
}
