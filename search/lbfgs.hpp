// A small L-BFGS minimiser for smooth unconstrained problems of a few dozen
// variables (GP hyperparameters, acquisition refinement).
//
// Two-loop recursion with a memory of `memory` pairs and a backtracking
// Armijo line search; a pair with non-positive curvature is skipped, which
// keeps the inverse-Hessian estimate positive definite. Bounds are handled by
// callers through smooth reparametrisation. Deterministic: no randomness.
#pragma once

#include <Eigen/Core>
#include <functional>

namespace hpo::search {

struct LbfgsOptions {
  int max_iterations = 50;
  int max_evaluations = 100;
  int memory = 8;
  double gradient_tolerance = 1e-5;  // stop when |g|_inf is below
  double relative_tolerance = 1e-9;  // stop when f improves by less, relatively
};

struct LbfgsResult {
  Eigen::VectorXd x;
  double value = 0;
  int iterations = 0;
  int evaluations = 0;
};

// f(x, grad) returns the value and writes the gradient into `grad` (already
// sized). A non-finite value is treated as "step too long".
using Objective = std::function<double(const Eigen::VectorXd& x, Eigen::VectorXd& grad)>;

LbfgsResult lbfgs_minimize(const Objective& f, Eigen::VectorXd x0, const LbfgsOptions& options);

}  // namespace hpo::search
