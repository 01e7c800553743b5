// Prometheus text-format metrics: request latency histograms recorded by the
// Api, plus gauges computed from the store when /metrics is scraped (so the
// numbers are the whole cluster's, not this process's, and survive restarts).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "trials/trial.hpp"

namespace hpo::web {

class RequestMetrics {
 public:
  static constexpr std::array<double, 11> kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                      0.1,   0.25,   0.5,   1.0,  2.5};
  // `route` is the router pattern ("/api/sweeps/{id}"), never the raw path, so
  // the label set stays small.
  void record(const std::string& method, const std::string& route, int status, double seconds);
  // hpo_http_requests_total and hpo_http_request_duration_seconds.
  std::string render() const;

 private:
  struct Series {
    std::array<std::uint64_t, kBuckets.size()> buckets{};  // cumulative at render time
    std::uint64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, Series> latency_;  // method, route
  std::map<std::tuple<std::string, std::string, std::string>, std::uint64_t> requests_;  // + code
};

struct ClusterSnapshot {
  std::map<std::string, std::int64_t> sweeps_by_state;
  trials::Counts trials;  // roles trial + member, over every sweep
  std::int64_t workers = 0, slots = 0, busy_slots = 0;
  // Redis replication (0 wanted: none asked for; not rendered).
  std::int64_t replicas_wanted = 0, replicas = 0;
};
std::string render_cluster(const ClusterSnapshot& s);

}  // namespace hpo::web
