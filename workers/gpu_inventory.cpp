// NVML through dlopen: we declare the handful of NVML types and entry points
// we use ourselves (their ABI has been stable since the _v2 functions) instead
// of needing nvml.h at build time. Every call's result is checked; a device
// that fails a query is still listed, with what could be read.
#include "workers/gpu_inventory.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace hpo::workers {
namespace {

using NvmlReturn = int;  // nvmlReturn_t; 0 = NVML_SUCCESS
using NvmlDevice = struct NvmlDeviceOpaque*;
struct NvmlMemory {
  unsigned long long total, free, used;
};
struct NvmlUtilization {
  unsigned int gpu, memory;
};
struct NvmlProcessInfo {  // nvmlProcessInfo_v2_t (the _v2 and _v3 calls)
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id, compute_instance_id;
};
struct NvmlProcessSample {  // nvmlProcessUtilizationSample_t
  unsigned int pid;
  unsigned long long time_stamp;
  unsigned int sm, mem, enc, dec;
};
constexpr NvmlReturn kInsufficientSize = 7;

}  // namespace

struct GpuInventory::Nvml {
  void* lib = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*get_count)(unsigned int*) = nullptr;
  NvmlReturn (*by_index)(unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*by_uuid)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*get_name)(NvmlDevice, char*, unsigned int) = nullptr;
  NvmlReturn (*get_memory)(NvmlDevice, NvmlMemory*) = nullptr;
  NvmlReturn (*get_util)(NvmlDevice, NvmlUtilization*) = nullptr;
  // Optional: a driver without them has no MIG, no UUIDs or no accounting.
  NvmlReturn (*get_uuid)(NvmlDevice, char*, unsigned int) = nullptr;
  NvmlReturn (*mig_mode)(NvmlDevice, unsigned int*, unsigned int*) = nullptr;
  NvmlReturn (*mig_count)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*mig_by_index)(NvmlDevice, unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*processes)(NvmlDevice, unsigned int*, NvmlProcessInfo*) = nullptr;
  NvmlReturn (*process_util)(NvmlDevice, NvmlProcessSample*, unsigned int*,
                             unsigned long long) = nullptr;
  NvmlReturn (*get_minor)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*mig_parent)(NvmlDevice, NvmlDevice*) = nullptr;
  std::vector<NvmlDevice> visible;  // in CUDA_VISIBLE_DEVICES order, MIG instances in place

  // `d`, or its MIG instances when MIG is on.
  void add(NvmlDevice d) {
    unsigned int current = 0, pending = 0, most = 0;
    if (mig_mode && mig_count && mig_by_index && mig_mode(d, &current, &pending) == 0 &&
        current == 1 && mig_count(d, &most) == 0) {
      for (unsigned int i = 0; i < most; ++i) {
        NvmlDevice m = nullptr;
        if (mig_by_index(d, i, &m) == 0) visible.push_back(m);
      }
      return;
    }
    visible.push_back(d);
  }

  ~Nvml() {
    if (shutdown) shutdown();
    if (lib) ::dlclose(lib);
  }
};

namespace {
template <class F>
bool load(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(::dlsym(lib, name));
  return fn != nullptr;
}
}  // namespace

GpuInventory::GpuInventory() {
  void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return;
  auto n = std::make_unique<Nvml>();
  n->lib = lib;
  NvmlReturn (*init)() = nullptr;
  bool ok = load(lib, "nvmlInit_v2", init) && load(lib, "nvmlDeviceGetCount_v2", n->get_count) &&
            load(lib, "nvmlDeviceGetHandleByIndex_v2", n->by_index) &&
            load(lib, "nvmlDeviceGetName", n->get_name) &&
            load(lib, "nvmlDeviceGetMemoryInfo", n->get_memory) &&
            load(lib, "nvmlDeviceGetUtilizationRates", n->get_util);
  load(lib, "nvmlDeviceGetHandleByUUID", n->by_uuid);  // optional, as below
  load(lib, "nvmlDeviceGetUUID", n->get_uuid);
  load(lib, "nvmlDeviceGetMigMode", n->mig_mode);
  load(lib, "nvmlDeviceGetMaxMigDeviceCount", n->mig_count);
  load(lib, "nvmlDeviceGetMigDeviceHandleByIndex", n->mig_by_index);
  if (!load(lib, "nvmlDeviceGetComputeRunningProcesses_v3", n->processes))
    load(lib, "nvmlDeviceGetComputeRunningProcesses_v2", n->processes);
  load(lib, "nvmlDeviceGetProcessUtilization", n->process_util);
  load(lib, "nvmlDeviceGetMinorNumber", n->get_minor);
  load(lib, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", n->mig_parent);
  if (!ok || init() != 0) return;  // ~Nvml closes the library
  load(lib, "nvmlShutdown", n->shutdown);
  unsigned int physical = 0;
  if (n->get_count(&physical) != 0) return;
  auto selected =
      parse_visible_devices(std::getenv("CUDA_VISIBLE_DEVICES"), static_cast<int>(physical));
  if (!selected) {
    for (unsigned int i = 0; i < physical; ++i) {
      NvmlDevice d = nullptr;
      if (n->by_index(i, &d) == 0) n->add(d);
    }
  } else {
    for (const auto& v : *selected) {
      NvmlDevice d = nullptr;
      bool found = v.index ? n->by_index(static_cast<unsigned int>(*v.index), &d) == 0
                           : (n->by_uuid && n->by_uuid(v.uuid.c_str(), &d) == 0);
      if (!found) break;  // as CUDA: the list ends at the first device it cannot use
      if (v.uuid.rfind("MIG-", 0) == 0)
        n->visible.push_back(d);  // one MIG instance, named
      else
        n->add(d);
    }
  }
  nvml_ = std::move(n);
}

GpuInventory::~GpuInventory() = default;

bool GpuInventory::available() const {
  return nvml_ != nullptr;
}

std::vector<trials::GpuInfo> GpuInventory::snapshot() const {
  std::vector<trials::GpuInfo> out;
  if (!nvml_) return out;
  for (std::size_t i = 0; i < nvml_->visible.size(); ++i) {
    NvmlDevice d = nvml_->visible[i];
    trials::GpuInfo g;
    g.index = static_cast<int>(i);
    char name[96] = {};
    if (nvml_->get_name(d, name, sizeof name - 1) == 0) g.name = name;
    NvmlMemory mem{};
    if (nvml_->get_memory(d, &mem) == 0) {
      g.memory_total_mb = static_cast<std::int64_t>(mem.total >> 20);
      g.memory_used_mb = static_cast<std::int64_t>(mem.used >> 20);
    }
    NvmlUtilization util{};
    // -1: the driver gives none (a MIG instance)
    g.utilization_pct = nvml_->get_util(d, &util) == 0 ? static_cast<int>(util.gpu) : -1;
    char uuid[96] = {};
    if (nvml_->get_uuid && nvml_->get_uuid(d, uuid, sizeof uuid - 1) == 0) g.uuid = uuid;
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<std::string> GpuInventory::device_files(int index) const {
  if (!nvml_ || !nvml_->get_minor || index < 0 ||
      static_cast<std::size_t>(index) >= nvml_->visible.size())
    return {};
  NvmlDevice d = nvml_->visible[static_cast<std::size_t>(index)];
  NvmlDevice parent = nullptr;
  const bool mig = nvml_->mig_parent && nvml_->mig_parent(d, &parent) == 0 && parent;
  unsigned int minor = 0;
  if (nvml_->get_minor(mig ? parent : d, &minor) != 0) return {};
  std::vector<std::string> files = {fmt::format("/dev/nvidia{}", minor)};
  if (mig) files.emplace_back("/dev/nvidia-caps");  // the instances' capabilities
  return files;
}

std::optional<GpuInventory::DeviceUse> GpuInventory::use(int index) const {
  if (!nvml_ || index < 0 || static_cast<std::size_t>(index) >= nvml_->visible.size())
    return std::nullopt;
  NvmlDevice d = nvml_->visible[static_cast<std::size_t>(index)];
  DeviceUse u;
  NvmlMemory mem{};
  if (nvml_->get_memory(d, &mem) == 0) u.memory_used_mb = static_cast<std::int64_t>(mem.used >> 20);
  NvmlUtilization util{};
  if (nvml_->get_util(d, &util) == 0) u.utilization_pct = static_cast<int>(util.gpu);
  if (nvml_->processes) {
    std::vector<NvmlProcessInfo> infos(64);
    auto n = static_cast<unsigned int>(infos.size());
    NvmlReturn r = nvml_->processes(d, &n, infos.data());
    if (r == kInsufficientSize && n <= 4096) {
      infos.resize(n);
      r = nvml_->processes(d, &n, infos.data());
    }
    if (r == 0)
      for (unsigned int i = 0; i < n && i < infos.size(); ++i) {
        // NVML_VALUE_NOT_AVAILABLE (all ones): the driver does not say (WDDM, some MIG setups)
        const auto mem = infos[i].used_gpu_memory;
        u.processes.push_back({static_cast<long>(infos[i].pid),
                               mem == ~0ULL ? 0 : static_cast<std::int64_t>(mem >> 20), -1});
      }
  }
  if (nvml_->process_util && !u.processes.empty()) {
    // Only samples of the last few seconds (CPU time in microseconds): the
    // driver keeps older ones, of processes long gone among them.
    const auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    const auto since = static_cast<unsigned long long>(now_us - 5'000'000);
    std::vector<NvmlProcessSample> samples(u.processes.size() + 16);
    auto n = static_cast<unsigned int>(samples.size());
    NvmlReturn r = nvml_->process_util(d, samples.data(), &n, since);
    if (r == kInsufficientSize && n <= 4096) {
      samples.resize(n);
      r = nvml_->process_util(d, samples.data(), &n, since);
    }
    if (r == 0)
      for (unsigned int i = 0; i < n && i < samples.size(); ++i)
        for (auto& p : u.processes)
          if (p.pid == static_cast<long>(samples[i].pid))
            p.sm_pct = std::max(p.sm_pct, static_cast<int>(samples[i].sm));
  }
  return u;
}

std::optional<std::vector<VisibleDevice>> parse_visible_devices(const char* value, int physical) {
  if (!value) return std::nullopt;
  std::vector<VisibleDevice> out;
  std::string s(value);
  std::size_t start = 0;
  while (start < s.size()) {
    auto comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    std::string item = s.substr(start, comma - start);
    start = comma + 1;
    while (!item.empty() && item.front() == ' ') item.erase(0, 1);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item.rfind("GPU-", 0) == 0 || item.rfind("MIG-", 0) == 0) {
      out.push_back({std::nullopt, item});
      continue;
    }
    char* end = nullptr;
    long idx = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || idx < 0 || idx >= physical) break;
    bool dup = false;
    for (const auto& v : out) dup = dup || (v.index && *v.index == idx);
    if (dup) break;
    out.push_back({static_cast<int>(idx), {}});
  }
  return out;
}

}  // namespace hpo::workers
