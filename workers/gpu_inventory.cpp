// NVML through dlopen: we declare the handful of NVML types and entry points
// we use ourselves (their ABI has been stable since the _v2 functions) instead
// of needing nvml.h at build time. Every call's result is checked; a device
// that fails a query is still listed, with what could be read.
#include "workers/gpu_inventory.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

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
  std::vector<NvmlDevice> visible;  // in CUDA ordinal order

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
  load(lib, "nvmlDeviceGetHandleByUUID", n->by_uuid);  // optional
  if (!ok || init() != 0) return;                      // ~Nvml closes the library
  load(lib, "nvmlShutdown", n->shutdown);
  unsigned int physical = 0;
  if (n->get_count(&physical) != 0) return;
  auto selected =
      parse_visible_devices(std::getenv("CUDA_VISIBLE_DEVICES"), static_cast<int>(physical));
  if (!selected) {
    for (unsigned int i = 0; i < physical; ++i) {
      NvmlDevice d = nullptr;
      if (n->by_index(i, &d) == 0) n->visible.push_back(d);
    }
  } else {
    for (const auto& v : *selected) {
      NvmlDevice d = nullptr;
      bool found = v.index ? n->by_index(static_cast<unsigned int>(*v.index), &d) == 0
                           : (n->by_uuid && n->by_uuid(v.uuid.c_str(), &d) == 0);
      if (!found) break;  // as CUDA: the list ends at the first device it cannot use
      n->visible.push_back(d);
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
    if (nvml_->get_util(d, &util) == 0) g.utilization_pct = static_cast<int>(util.gpu);
    out.push_back(std::move(g));
  }
  return out;
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
