// GpuInventory: the GPUs this worker may use, for its slots and its heartbeat.
//
// NVML is loaded with dlopen("libnvidia-ml.so.1") at run time instead of being
// linked, so one hpo-worker binary runs on hosts with and without an NVIDIA
// driver: no library, no driver, or any NVML error gives an empty list, never
// a failure. CUDA_VISIBLE_DEVICES is respected: only the devices it lists are
// reported, in its order, and GpuInfo::index is the ordinal as this process
// sees them (cuda:N), which is what TrialTask::gpus holds.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trials/trial.hpp"

namespace hpo::workers {

class GpuInventory {
 public:
  // Loads NVML if present (see above). Cheap when there is none.
  GpuInventory();
  ~GpuInventory();
  GpuInventory(const GpuInventory&) = delete;
  GpuInventory& operator=(const GpuInventory&) = delete;

  bool available() const;
  // Visible devices with their current memory use and utilisation.
  // Thread-safe (NVML is); called by the heartbeat thread.
  std::vector<trials::GpuInfo> snapshot() const;
  int count() const { return static_cast<int>(snapshot().size()); }

 private:
  struct Nvml;
  std::unique_ptr<Nvml> nvml_;
};

// The devices CUDA_VISIBLE_DEVICES selects out of `physical` devices, as
// physical indices or UUID strings, in order; nullopt: the variable is unset
// (all devices visible). CUDA stops at the first invalid entry; so does this.
struct VisibleDevice {
  std::optional<int> index;  // "3"
  std::string uuid;          // "GPU-8f0e..." (when not an index)
};
std::optional<std::vector<VisibleDevice>> parse_visible_devices(const char* value, int physical);

}  // namespace hpo::workers
