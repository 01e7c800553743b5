// Small search spaces shared by the search tests.
#pragma once

#include "search/space.hpp"

namespace hpo::search::testing {

inline ParamSpec float_param(std::string name, double min, double max, bool log = false) {
  ParamSpec p;
  p.name = std::move(name);
  p.type = ParamType::kFloat;
  p.min = min;
  p.max = max;
  p.log = log;
  return p;
}

inline ParamSpec int_param(std::string name, double min, double max, bool log = false) {
  ParamSpec p = float_param(std::move(name), min, max, log);
  p.type = ParamType::kInt;
  return p;
}

inline ParamSpec cat_param(std::string name, std::vector<Value> choices) {
  ParamSpec p;
  p.name = std::move(name);
  p.type = ParamType::kCategorical;
  p.choices = std::move(choices);
  return p;
}

inline ParamSpec when(ParamSpec p, std::string parent, std::vector<Value> values) {
  p.when = Condition{std::move(parent), std::move(values)};
  return p;
}

// lr (log float), layers (int 1..4), opt {sgd, adam}, momentum (only for sgd).
inline SearchSpace mixed_space() {
  SearchSpace s;
  s.params.push_back(float_param("lr", 1e-4, 0.1, true));
  s.params.push_back(int_param("layers", 1, 4));
  s.params.push_back(cat_param("opt", {std::string("sgd"), std::string("adam")}));
  s.params.push_back(when(float_param("momentum", 0, 0.99), "opt", {std::string("sgd")}));
  return s;
}

inline SearchSpace box_space(int d, double lo = 0, double hi = 1) {
  SearchSpace s;
  for (int i = 1; i <= d; ++i) s.params.push_back(float_param("x" + std::to_string(i), lo, hi));
  return s;
}

}  // namespace hpo::search::testing
