// The `hpo-metric {json}` line a command trial prints on stdout: a report
// (with "step"), or the result ("final": true); every numeric field but step
// is a metric. What a user's program prints reaches the worker unfiltered, so
// the parser bounds what it keeps (and is fuzzed: tests/fuzz/metric_line_fuzz.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/result.hpp"
#include "trials/trial.hpp"

namespace hpo::workers {

// Bounds on one metric line (a longer name or more metrics: the line is refused).
inline constexpr std::size_t kMaxMetricName = 128;
inline constexpr std::size_t kMaxMetricsPerLine = 256;

// One `hpo-metric {...}` stdout line.
struct MetricLine {
  std::optional<std::int64_t> step;  // intermediate report
  bool final = false;                // "final": true
  trials::Metrics metrics;           // every numeric field except step
};

// nullopt: the line is not a metric line (it is log). A line with the prefix
// but a malformed object gives an Error saying why (the caller logs it).
std::optional<Result<MetricLine>> parse_metric_line(std::string_view line);

}  // namespace hpo::workers
