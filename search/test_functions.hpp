// Standard optimisation test functions, shared by the benchmark and by the
// worker's `synthetic` trial kind (which computes them instead of training).
//
// Parameters are read from x1..xd of a trial's params (ints and floats both
// accepted). Formulas and domains follow Surjanovic & Bingham's Virtual
// Library of Simulation Experiments (sfu.ca/~ssurjano).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "search/space.hpp"

namespace hpo::search {

// The function's value at params x1..xd; nullopt when the name is unknown or
// one of x1..xd is missing or not numeric. "noop" takes no inputs and is 0.
std::optional<double> evaluate_test_function(std::string_view name, const Params& params);

// Number of inputs d (noop: 0); -1 for an unknown name.
int test_function_dims(std::string_view name);

struct TestFunctionInfo {
  int dims = 0;
  std::vector<double> lower;  // the usual search domain, per input
  std::vector<double> upper;
  double minimum = 0;  // the global minimum value
};

// Domain and optimum, for building benchmark spaces; nullopt for unknown names.
std::optional<TestFunctionInfo> test_function_info(std::string_view name);

// Direct evaluation on a vector (x.size() must equal the dims).
double branin(const std::vector<double>& x);
double hartmann6(const std::vector<double>& x);
double rosenbrock(const std::vector<double>& x);
double ackley(const std::vector<double>& x);

// Multi-objective test problems (all objectives minimised, inputs in [0, 1]):
// ZDT1 (convex front), ZDT2 (concave front) and ZDT3 (a front of five
// disconnected pieces) of Zitzler, Deb & Thiele (2000) over x1..x6, two
// objectives; DTLZ2 of Deb, Thiele, Laumanns & Zitzler (2002) over x1..x7,
// three objectives (the front is the unit sphere's positive octant).
// ZDT3's f2 goes below 0 (to about -0.773 on its front): a hypervolume needs
// only a reference above every point, not a bound below. x.size() must be
// the dims.
std::vector<double> zdt1(const std::vector<double>& x);
std::vector<double> zdt2(const std::vector<double>& x);
std::vector<double> zdt3(const std::vector<double>& x);
std::vector<double> dtlz2(const std::vector<double>& x);

struct MultiObjectiveInfo {
  int dims = 0;
  int objectives = 0;
  std::vector<double> reference;  // the usual hypervolume reference point
};

// nullopt for names other than zdt1, zdt2, zdt3, dtlz2.
std::optional<MultiObjectiveInfo> multi_objective_info(std::string_view name);
// Objectives at params x1..xd; nullopt as for evaluate_test_function.
std::optional<std::vector<double>> evaluate_multi_objective(std::string_view name,
                                                            const Params& params);

// The synthetic trials' learning curve at step s of n (1 <= s <= n): linear
// f + (n - s) / n, which reaches f at the last step and ranks configurations
// alike at every step; crossing f + exp(-(0.5 + 4.5 u) s / n), u in [0, 1]
// the configuration's learning speed, so a slow learner with a better f is
// behind early and ahead late (what multi-fidelity schedules must cope with).
double learning_curve(double f, double u, std::int64_t s, std::int64_t n, bool crossing);
// u of a configuration: the first parameter x1's place in its range [0, 1]
// (0.5 when the space has no numeric x1).
double learning_speed(const SearchSpace& space, const Params& params);

// The noisy quadratic, a training run whose learning rate should decay: the
// expected loss v of SGD on f(w) = w^2 with unit gradient noise goes, per
// step, to (1 - 2 lr)^2 v + lr^2 (the synthetic function `noisy_quadratic`
// starts at v = 1). A large rate falls fast to a high floor (about lr / 4), a
// small one slowly to a low one, so a decaying schedule beats every fixed rate.
double noisy_quadratic_step(double v, double lr);

}  // namespace hpo::search
