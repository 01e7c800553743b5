// The sweep spec of the end-to-end tests' toy trial (tests/e2e/toy_trial):
// a command trial over x (float) and y (int) whose value the tests can
// recompute, (x - 1)^2 + (y + 2)^2 + 0.5; random search, 4 at once, seed 11.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace hpo::testing {

inline nlohmann::json toy_command_spec(int trials, int sleep_ms) {
  const std::string bin = HPO_BINARY_DIR;
  nlohmann::json spec = {
      {"name", "e2e toy"},
      {"objective", {{"metric", "value"}, {"mode", "min"}}},
      {"parameters",
       {{"x", {{"type", "float"}, {"min", -3.0}, {"max", 3.0}}},
        {"y", {{"type", "int"}, {"min", -4}, {"max", 2}}}}},
      {"search",
       {{"algorithm", "random"}, {"max_trials", trials}, {"max_concurrent", 4}, {"seed", 11}}},
      {"trial",
       {{"kind", "command"},
        {"argv",
         {bin + "/tests/e2e/toy_trial", "--x={x}", "--y={y}",
          "--sleep-ms=" + std::to_string(sleep_ms)}},
        {"max_attempts", 5},
        {"timeout_s", 60}}}};
  return spec;
}

}  // namespace hpo::testing
