#include "workers/metric_line.hpp"

#include <cmath>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "trials/json_limits.hpp"

namespace hpo::workers {
namespace {

constexpr std::string_view kMetricPrefix = "hpo-metric";

}  // namespace

std::optional<Result<MetricLine>> parse_metric_line(std::string_view line) {
  if (line.substr(0, kMetricPrefix.size()) != kMetricPrefix) return std::nullopt;
  std::string_view rest = line.substr(kMetricPrefix.size());
  if (rest.empty() || (rest[0] != ' ' && rest[0] != '\t')) return std::nullopt;
  if (auto st = trials::check_json_depth(rest, "hpo-metric"); !st)
    return Result<MetricLine>(st.error());
  auto j = nlohmann::json::parse(rest, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Result<MetricLine>(Error::invalid("hpo-metric", "expected a JSON object"));
  MetricLine out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const auto& key = it.key();
    const auto& v = it.value();
    if (key == "final") {
      if (!v.is_boolean()) return Result<MetricLine>(Error::invalid("final", "expected a boolean"));
      out.final = v.get<bool>();
    } else if (key == "step") {
      if (!v.is_number()) return Result<MetricLine>(Error::invalid("step", "expected an integer"));
      double d = v.get<double>();
      if (d != std::floor(d) || d < 0 || d > 9007199254740992.0)  // 2^53: exact, fits int64
        return Result<MetricLine>(
            Error::invalid("step", "expected a non-negative integer up to 2^53"));
      out.step = static_cast<std::int64_t>(d);
    } else if (v.is_number()) {
      // Names and counts are bounded: a metric line is stored with the trial
      // and shown in the dashboard.
      if (key.empty() || key.size() > kMaxMetricName)
        return Result<MetricLine>(Error::invalid(
            "hpo-metric", fmt::format("metric names are 1 to {} characters", kMaxMetricName)));
      double d = v.get<double>();
      if (std::isfinite(d)) out.metrics[key] = d;
      if (out.metrics.size() > kMaxMetricsPerLine)
        return Result<MetricLine>(Error::invalid(
            "hpo-metric", fmt::format("at most {} metrics per line", kMaxMetricsPerLine)));
    }
    // Strings, booleans, objects: not metrics; ignored rather than failing the trial.
  }
  return Result<MetricLine>(std::move(out));
}

}  // namespace hpo::workers
