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

}  // namespace hpo::search
