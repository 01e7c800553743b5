// GpuInventory: the GPUs this worker may use, for its slots and its heartbeat.
//
// NVML is loaded with dlopen("libnvidia-ml.so.1") at run time instead of being
// linked, so one hpo-worker binary runs on hosts with and without an NVIDIA
// driver: no library, no driver, or any NVML error gives an empty list, never
// a failure. CUDA_VISIBLE_DEVICES is respected: only the devices it lists are
// reported, in its order, and GpuInfo::index is the device's place in that
// list, which is what TrialTask::gpus holds. A GPU in MIG mode is reported as
// its MIG instances, each a device of its own with its UUID ("MIG-..."),
// which is how a trial's CUDA_VISIBLE_DEVICES names it.
#pragma once

#include <cstdint>
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

  // What runs on device `index` (of snapshot()) now: its memory in use, its
  // utilisation (-1 where the driver gives none, as for a MIG instance) and
  // its compute processes with their memory and, where the driver samples
  // it, their SM utilisation (-1 otherwise). nullopt: no such device.
  struct ProcessUse {
    long pid = 0;
    std::int64_t memory_mb = 0;
    int sm_pct = -1;
  };
  struct DeviceUse {
    std::int64_t memory_used_mb = 0;
    int utilization_pct = -1;
    std::vector<ProcessUse> processes;
  };
  std::optional<DeviceUse> use(int index) const;

  // The driver's device files a trial needs for device `index` (of
  // snapshot()): /dev/nvidia<minor> of it (of its GPU, for a MIG instance,
  // with /dev/nvidia-caps). Empty: unknown (no NVML, or no minor number).
  std::vector<std::string> device_files(int index) const;

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
