#include "search/test_functions.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace hpo::search {

double branin(const std::vector<double>& x) {
  constexpr double kPi = std::numbers::pi;
  const double b = 5.1 / (4 * kPi * kPi), c = 5 / kPi, t = 1 / (8 * kPi);
  double u = x[1] - b * x[0] * x[0] + c * x[0] - 6;
  return u * u + 10 * (1 - t) * std::cos(x[0]) + 10;
}

double hartmann6(const std::vector<double>& x) {
  static constexpr double kAlpha[4] = {1.0, 1.2, 3.0, 3.2};
  static constexpr double kA[4][6] = {{10, 3, 17, 3.5, 1.7, 8},
                                      {0.05, 10, 17, 0.1, 8, 14},
                                      {3, 3.5, 1.7, 10, 17, 8},
                                      {17, 8, 0.05, 10, 0.1, 14}};
  static constexpr double kP[4][6] = {{1312, 1696, 5569, 124, 8283, 5886},
                                      {2329, 4135, 8307, 3736, 1004, 9991},
                                      {2348, 1451, 3522, 2883, 3047, 6650},
                                      {4047, 8828, 8732, 5743, 1091, 381}};
  double f = 0;
  for (int i = 0; i < 4; ++i) {
    double s = 0;
    for (int j = 0; j < 6; ++j) {
      double d = x[j] - kP[i][j] * 1e-4;
      s += kA[i][j] * d * d;
    }
    f -= kAlpha[i] * std::exp(-s);
  }
  return f;
}

double rosenbrock(const std::vector<double>& x) {
  double f = 0;
  for (std::size_t i = 0; i + 1 < x.size(); ++i) {
    double a = x[i + 1] - x[i] * x[i];
    double b = 1 - x[i];
    f += 100 * a * a + b * b;
  }
  return f;
}

double ackley(const std::vector<double>& x) {
  constexpr double kPi = std::numbers::pi;
  double sq = 0, cs = 0;
  for (double v : x) {
    sq += v * v;
    cs += std::cos(2 * kPi * v);
  }
  auto n = static_cast<double>(x.size());
  return -20 * std::exp(-0.2 * std::sqrt(sq / n)) - std::exp(cs / n) + 20 + std::numbers::e;
}

std::optional<TestFunctionInfo> test_function_info(std::string_view name) {
  auto box = [](int d, double lo, double hi, double min) {
    return TestFunctionInfo{d, std::vector<double>(d, lo), std::vector<double>(d, hi), min};
  };
  if (name == "noop") return TestFunctionInfo{};
  if (name == "branin") return TestFunctionInfo{2, {-5, 0}, {10, 15}, 0.397887};
  if (name == "hartmann6") return box(6, 0, 1, -3.32237);
  if (name == "rosenbrock") return box(4, -5, 10, 0);
  if (name == "ackley") return box(5, -32.768, 32.768, 0);
  return std::nullopt;
}

int test_function_dims(std::string_view name) {
  auto info = test_function_info(name);
  return info ? info->dims : -1;
}

namespace {

// x1..xd of `params`, or nullopt when one is missing or not numeric.
std::optional<std::vector<double>> inputs(const Params& params, int dims) {
  std::vector<double> x;
  for (int i = 1; i <= dims; ++i) {
    auto it = params.find("x" + std::to_string(i));
    if (it == params.end()) return std::nullopt;
    auto v = as_double(it->second);
    if (!v || std::holds_alternative<bool>(it->second)) return std::nullopt;
    x.push_back(*v);
  }
  return x;
}

// ZDT's g: 1 + 9 mean(x2..xd).
double zdt_g(const std::vector<double>& x) {
  double sum = 0;
  for (std::size_t i = 1; i < x.size(); ++i) sum += x[i];
  return 1 + 9 * sum / static_cast<double>(x.size() - 1);
}

}  // namespace

std::vector<double> zdt1(const std::vector<double>& x) {
  const double g = zdt_g(x);
  return {x[0], g * (1 - std::sqrt(x[0] / g))};
}

std::vector<double> zdt2(const std::vector<double>& x) {
  const double g = zdt_g(x);
  return {x[0], g * (1 - (x[0] / g) * (x[0] / g))};
}

std::vector<double> zdt3(const std::vector<double>& x) {
  const double g = zdt_g(x), r = x[0] / g;
  return {x[0], g * (1 - std::sqrt(r) - r * std::sin(10 * std::numbers::pi * x[0]))};
}

std::vector<double> dtlz2(const std::vector<double>& x) {
  double g = 0;
  for (std::size_t i = 2; i < x.size(); ++i) g += (x[i] - 0.5) * (x[i] - 0.5);
  const double a = x[0] * std::numbers::pi / 2, b = x[1] * std::numbers::pi / 2;
  return {(1 + g) * std::cos(a) * std::cos(b), (1 + g) * std::cos(a) * std::sin(b),
          (1 + g) * std::sin(a)};
}

std::optional<MultiObjectiveInfo> multi_objective_info(std::string_view name) {
  if (name == "zdt1" || name == "zdt2" || name == "zdt3")
    return MultiObjectiveInfo{6, 2, {1.1, 1.1}};
  if (name == "dtlz2") return MultiObjectiveInfo{7, 3, {1.1, 1.1, 1.1}};
  return std::nullopt;
}

std::optional<std::vector<double>> evaluate_multi_objective(std::string_view name,
                                                            const Params& params) {
  auto info = multi_objective_info(name);
  if (!info) return std::nullopt;
  auto x = inputs(params, info->dims);
  if (!x) return std::nullopt;
  if (name == "zdt1") return zdt1(*x);
  if (name == "zdt2") return zdt2(*x);
  if (name == "zdt3") return zdt3(*x);
  return dtlz2(*x);
}

std::optional<double> evaluate_test_function(std::string_view name, const Params& params) {
  auto info = test_function_info(name);
  if (!info) return std::nullopt;
  auto in = inputs(params, info->dims);
  if (!in) return std::nullopt;
  const std::vector<double>& x = *in;
  if (name == "noop") return 0.0;
  if (name == "branin") return branin(x);
  if (name == "hartmann6") return hartmann6(x);
  if (name == "rosenbrock") return rosenbrock(x);
  return ackley(x);
}

double learning_curve(double f, double u, std::int64_t s, std::int64_t n, bool crossing) {
  const double t = n > 0 ? static_cast<double>(s) / static_cast<double>(n) : 1.0;
  if (!crossing) return f + (1 - t);
  return f + std::exp(-(0.5 + 4.5 * std::clamp(u, 0.0, 1.0)) * t);
}

double learning_speed(const SearchSpace& space, const Params& params) {
  const ParamSpec* p = space.find("x1");
  auto v = params.find("x1");
  if (!p || v == params.end() || p->type == ParamType::kCategorical || !(p->max > p->min))
    return 0.5;
  auto x = as_double(v->second);
  if (!x) return 0.5;
  return std::clamp((*x - p->min) / (p->max - p->min), 0.0, 1.0);
}

double noisy_quadratic_step(double v, double lr) {
  const double r = std::clamp(lr, 0.0, 0.99);
  return (1 - 2 * r) * (1 - 2 * r) * v + r * r;
}

}  // namespace hpo::search
