#include "web/metrics.hpp"

#include <fmt/format.h>

#include "trials/record_names.hpp"

namespace hpo::web {

namespace {
// Label values: escape backslash, quote and newline (Prometheus text format).
std::string label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}
}  // namespace

void RequestMetrics::record(const std::string& method, const std::string& route, int status,
                            double seconds) {
  std::lock_guard lock(mu_);
  auto& s = latency_[{method, route}];
  for (std::size_t i = 0; i < kBuckets.size(); ++i)
    if (seconds <= kBuckets[i]) {
      ++s.buckets[i];
      break;
    }
  ++s.count;
  s.sum += seconds;
  ++requests_[{method, route, std::to_string(status)}];
}

std::string RequestMetrics::render() const {
  std::lock_guard lock(mu_);
  std::string out =
      "# HELP hpo_http_requests_total HTTP requests by method, route and status.\n"
      "# TYPE hpo_http_requests_total counter\n";
  for (const auto& [k, n] : requests_)
    out += fmt::format("hpo_http_requests_total{{method=\"{}\",route=\"{}\",code=\"{}\"}} {}\n",
                       label(std::get<0>(k)), label(std::get<1>(k)), std::get<2>(k), n);
  out +=
      "# HELP hpo_http_request_duration_seconds Time from request parsed to response ready.\n"
      "# TYPE hpo_http_request_duration_seconds histogram\n";
  for (const auto& [k, s] : latency_) {
    std::string labels = fmt::format("method=\"{}\",route=\"{}\"", label(k.first), label(k.second));
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < kBuckets.size(); ++i) {
      cumulative += s.buckets[i];
      out += fmt::format("hpo_http_request_duration_seconds_bucket{{{},le=\"{}\"}} {}\n", labels,
                         kBuckets[i], cumulative);
    }
    out += fmt::format("hpo_http_request_duration_seconds_bucket{{{},le=\"+Inf\"}} {}\n", labels,
                       s.count);
    out += fmt::format("hpo_http_request_duration_seconds_sum{{{}}} {}\n", labels, s.sum);
    out += fmt::format("hpo_http_request_duration_seconds_count{{{}}} {}\n", labels, s.count);
  }
  return out;
}

std::string render_cluster(const ClusterSnapshot& s) {
  std::string out =
      "# HELP hpo_sweeps Sweeps by state.\n"
      "# TYPE hpo_sweeps gauge\n";
  for (const char* st : trials::kSweepStateNames.all()) {
    auto it = s.sweeps_by_state.find(st);
    out += fmt::format("hpo_sweeps{{state=\"{}\"}} {}\n", st,
                       it == s.sweeps_by_state.end() ? 0 : it->second);
  }
  const auto& c = s.trials;
  out +=
      "# HELP hpo_trials Trials (and ensemble members) by state, over every sweep.\n"
      "# TYPE hpo_trials gauge\n";
  for (trials::TrialState st : trials::kTrialStateNames.values())
    out += fmt::format("hpo_trials{{state=\"{}\"}} {}\n", trials::to_string(st), c.of(st));
  out += fmt::format(
      "# HELP hpo_results_total Trial results accepted (completed, failed or pruned); rate() "
      "gives results per second.\n"
      "# TYPE hpo_results_total counter\n"
      "hpo_results_total {}\n"
      "# HELP hpo_queue_depth Trials waiting in the queue.\n"
      "# TYPE hpo_queue_depth gauge\n"
      "hpo_queue_depth {}\n"
      "# HELP hpo_active_leases Trials held by a worker under a lease.\n"
      "# TYPE hpo_active_leases gauge\n"
      "hpo_active_leases {}\n"
      "# HELP hpo_workers Live workers.\n"
      "# TYPE hpo_workers gauge\n"
      "hpo_workers {}\n"
      "# HELP hpo_worker_slots Slots of live workers.\n"
      "# TYPE hpo_worker_slots gauge\n"
      "hpo_worker_slots {}\n"
      "# HELP hpo_worker_busy_slots Busy slots of live workers.\n"
      "# TYPE hpo_worker_busy_slots gauge\n"
      "hpo_worker_busy_slots {}\n",
      c.completed + c.failed + c.pruned, c.queued, c.running, s.workers, s.slots, s.busy_slots);
  if (s.replicas_wanted > 0)
    out += fmt::format(
        "# HELP hpo_redis_replicas Redis replicas connected to the primary now.\n"
        "# TYPE hpo_redis_replicas gauge\n"
        "hpo_redis_replicas {}\n"
        "# HELP hpo_redis_replicas_wanted Replicas an acknowledged write waits for "
        "(fewer connected: degraded).\n"
        "# TYPE hpo_redis_replicas_wanted gauge\n"
        "hpo_redis_replicas_wanted {}\n",
        s.replicas, s.replicas_wanted);
  return out;
}

}  // namespace hpo::web
