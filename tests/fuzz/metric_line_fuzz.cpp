// Fuzz target: the `hpo-metric {json}` stdout line of a command trial (what a
// user's program prints reaches the worker unfiltered) and the trial
// parameters codec the same programs are handed.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "trials/spec/spec.hpp"
#include "workers/metric_line.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view line(reinterpret_cast<const char*>(data), size);
  auto parsed = hpo::workers::parse_metric_line(line);
  if (parsed && *parsed) {
    for (const auto& [name, value] : (*parsed)->metrics) {
      if (!std::isfinite(value)) std::abort();  // only finite metrics
    }
  }
  auto params = hpo::trials::params_from_json(line);
  if (params) {
    // What was read is written back as JSON that reads the same way.
    auto again = hpo::trials::params_from_json(hpo::trials::params_to_json(*params));
    if (!again || hpo::trials::params_to_json(*again) != hpo::trials::params_to_json(*params))
      std::abort();
  }
  return 0;
}
