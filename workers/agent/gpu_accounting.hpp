// GpuAccounting: what each running attempt uses of its GPUs, sampled every
// second (by the heartbeat thread) and kept with the trial as final metrics (so the trial
// page, the trials table and the CSV show them like any other metric):
//   gpu.memory_peak_mb, gpu.memory_mean_mb   its GPU memory
//   gpu.util_peak_pct,  gpu.util_mean_pct    its GPU utilisation
// An attempt that holds its devices alone (whole GPUs, MIG instances) is
// measured by the devices' own figures; an attempt sharing a device by the
// processes NVML lists on it that are in its program's process group (the
// memory each holds, the SM utilisation the driver samples for it). A process
// that left the group (setsid) is not counted, nor is an in-process LibTorch
// trial on a shared device (it is the worker's own process).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "trials/trial.hpp"
#include "workers/gpu_inventory.hpp"

namespace hpo::workers::agent {

// Peak and mean of an attempt's samples. Thread-safe.
class GpuUse {
 public:
  // One sample: memory in MB, utilisation in percent (< 0: not known).
  void add(std::int64_t memory_mb, int utilization_pct);
  // Adds the gpu.* metrics (none before the first sample).
  void to_metrics(trials::Metrics& metrics) const;

 private:
  mutable std::mutex mu_;
  int samples_ = 0, util_samples_ = 0;
  double memory_sum_ = 0, util_sum_ = 0;
  std::int64_t memory_peak_ = 0;
  int util_peak_ = 0;
};

struct GpuSample {
  std::int64_t memory_mb = 0;
  int utilization_pct = -1;
};

// One sample of an attempt on `devices` (indices of the inventory's): alone
// (it holds them whole), or its processes' share, those in process group
// `group` (0: none known). nullopt: no figures (no NVML, no such device).
std::optional<GpuSample> sample_attempt(const GpuInventory& gpus, const std::vector<int>& devices,
                                        bool alone, long group);

// The process group of `pid` (/proc/<pid>/stat), 0 when it is gone.
long process_group_of(long pid);

}  // namespace hpo::workers::agent
