#include "workers/agent/gpu_accounting.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace hpo::workers::agent {

void GpuUse::add(std::int64_t memory_mb, int utilization_pct) {
  std::lock_guard lk(mu_);
  ++samples_;
  memory_sum_ += static_cast<double>(memory_mb);
  memory_peak_ = std::max(memory_peak_, memory_mb);
  if (utilization_pct >= 0) {
    ++util_samples_;
    util_sum_ += utilization_pct;
    util_peak_ = std::max(util_peak_, utilization_pct);
  }
}

void GpuUse::to_metrics(trials::Metrics& metrics) const {
  std::lock_guard lk(mu_);
  if (samples_ == 0) return;
  metrics["gpu.memory_peak_mb"] = static_cast<double>(memory_peak_);
  metrics["gpu.memory_mean_mb"] = memory_sum_ / samples_;
  if (util_samples_ == 0) return;
  metrics["gpu.util_peak_pct"] = util_peak_;
  metrics["gpu.util_mean_pct"] = util_sum_ / util_samples_;
}

long process_group_of(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
  const auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(text.substr(close + 1));
  std::string state;
  long ppid = 0, group = 0;
  rest >> state >> ppid >> group;
  return rest ? group : 0;
}

std::optional<GpuSample> sample_attempt(const GpuInventory& gpus, const std::vector<int>& devices,
                                        bool alone, long group) {
  if (devices.empty() || (!alone && group <= 0)) return std::nullopt;  // nothing to tell it by
  GpuSample s;
  int util_sum = 0, util_known = 0;
  for (int d : devices) {
    auto use = gpus.use(d);
    if (!use) return std::nullopt;
    if (alone) {
      s.memory_mb += use->memory_used_mb;
      if (use->utilization_pct >= 0) {
        util_sum += use->utilization_pct;
        ++util_known;
        continue;
      }
    }
    // Shared (or a device without its own utilisation, a MIG instance): its processes.
    int sm = 0;
    bool sm_known = false;
    for (const auto& p : use->processes) {
      if (!alone && process_group_of(p.pid) != group) continue;
      if (!alone) s.memory_mb += p.memory_mb;
      if (p.sm_pct >= 0) {
        sm += p.sm_pct;
        sm_known = true;
      }
    }
    if (sm_known) {
      util_sum += std::min(100, sm);
      ++util_known;
    }
  }
  if (util_known > 0) s.utilization_pct = util_sum / util_known;
  return s;
}

}  // namespace hpo::workers::agent
