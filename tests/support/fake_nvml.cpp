// A stand-in for NVML (libnvidia-ml.so.1) so that the worker's GPU code runs
// in CI without a GPU: the handful of entry points workers/gpu_inventory.cpp
// loads, answering from a text file the test writes (HPO_FAKE_NVML_FILE),
// read again on every call so a test can change what the "driver" reports:
//
//   gpu  <uuid> <total_mb> <used_mb> <util_pct> <name...>
//   mig  <uuid> <parent gpu uuid> <total_mb> <used_mb> <name...>
//   proc <device uuid> <pid> <used_mb> <sm_util_pct>
//
// A GPU with mig lines is in MIG mode. Return codes are NVML's.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr int kSuccess = 0, kNotSupported = 3, kInvalid = 2, kNotFound = 6, kTooSmall = 7;

struct Device {
  std::string uuid, parent, name;
  unsigned long long total_mb = 0, used_mb = 0;
  unsigned util = 0;
  bool mig = false;
};
struct Proc {
  std::string device;
  unsigned pid = 0;
  unsigned long long used_mb = 0;
  unsigned sm = 0;
};
struct State {
  std::vector<Device> devices;  // gpus and migs, in file order
  std::vector<Proc> procs;
};

State read_state() {
  State s;
  const char* path = std::getenv("HPO_FAKE_NVML_FILE");
  if (!path) return s;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string kind;
    l >> kind;
    if (kind == "gpu" || kind == "mig") {
      Device d;
      d.mig = kind == "mig";
      l >> d.uuid;
      if (d.mig) l >> d.parent;
      l >> d.total_mb >> d.used_mb;
      if (!d.mig) l >> d.util;
      std::getline(l >> std::ws, d.name);
      s.devices.push_back(d);
    } else if (kind == "proc") {
      Proc p;
      l >> p.device >> p.pid >> p.used_mb >> p.sm;
      s.procs.push_back(p);
    }
  }
  return s;
}

// A handle is 1 + the device's position in the file (never null).
using Handle = void*;
Handle handle_of(std::size_t i) {
  return reinterpret_cast<Handle>(i + 1);
}
const Device* device_of(const State& s, Handle h) {
  const auto i = reinterpret_cast<std::size_t>(h);
  return i >= 1 && i <= s.devices.size() ? &s.devices[i - 1] : nullptr;
}
std::vector<std::size_t> gpus(const State& s) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < s.devices.size(); ++i)
    if (!s.devices[i].mig) out.push_back(i);
  return out;
}
int copy(const std::string& text, char* out, unsigned length) {
  if (!out || length <= text.size()) return kTooSmall;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return kSuccess;
}

struct Memory {
  unsigned long long total, free, used;
};
struct Utilization {
  unsigned gpu, memory;
};
struct ProcessInfo {  // nvmlProcessInfo_v2_t
  unsigned pid;
  unsigned long long used_gpu_memory;
  unsigned gpu_instance_id, compute_instance_id;
};
struct ProcessSample {  // nvmlProcessUtilizationSample_t
  unsigned pid;
  unsigned long long time_stamp;
  unsigned sm, mem, enc, dec;
};

}  // namespace

extern "C" {

int nvmlInit_v2() {
  return kSuccess;
}
int nvmlShutdown() {
  return kSuccess;
}
int nvmlDeviceGetCount_v2(unsigned* count) {
  *count = static_cast<unsigned>(gpus(read_state()).size());
  return kSuccess;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned index, Handle* out) {
  const auto all = gpus(read_state());
  if (index >= all.size()) return kInvalid;
  *out = handle_of(all[index]);
  return kSuccess;
}
int nvmlDeviceGetHandleByUUID(const char* uuid, Handle* out) {
  const State s = read_state();
  for (std::size_t i = 0; i < s.devices.size(); ++i)
    if (s.devices[i].uuid == uuid) {
      *out = handle_of(i);
      return kSuccess;
    }
  return kNotFound;
}
int nvmlDeviceGetName(Handle h, char* name, unsigned length) {
  const State s = read_state();
  const Device* d = device_of(s, h);
  return d ? copy(d->name, name, length) : kInvalid;
}
int nvmlDeviceGetUUID(Handle h, char* uuid, unsigned length) {
  const State s = read_state();
  const Device* d = device_of(s, h);
  return d ? copy(d->uuid, uuid, length) : kInvalid;
}
int nvmlDeviceGetMemoryInfo(Handle h, Memory* m) {
  const State s = read_state();
  const Device* d = device_of(s, h);
  if (!d) return kInvalid;
  m->total = d->total_mb << 20;
  m->used = d->used_mb << 20;
  m->free = m->total - m->used;
  return kSuccess;
}
int nvmlDeviceGetUtilizationRates(Handle h, Utilization* u) {
  const State s = read_state();
  const Device* d = device_of(s, h);
  if (!d) return kInvalid;
  if (d->mig) return kNotSupported;  // as the driver: no utilisation per MIG instance
  u->gpu = d->util;
  u->memory = 0;
  return kSuccess;
}
int nvmlDeviceGetMigMode(Handle h, unsigned* current, unsigned* pending) {
  const State s = read_state();
  const Device* d = device_of(s, h);
  if (!d || d->mig) return kInvalid;
  unsigned on = 0;
  for (const auto& m : s.devices) on |= m.mig && m.parent == d->uuid;
  *current = *pending = on;
  return kSuccess;
}
int nvmlDeviceGetMaxMigDeviceCount(Handle h, unsigned* count) {
  const State s = read_state();
  const Device* d = device_of(s, h);
  if (!d || d->mig) return kInvalid;
  *count = 7;
  return kSuccess;
}
int nvmlDeviceGetMigDeviceHandleByIndex(Handle h, unsigned index, Handle* out) {
  const State s = read_state();
  const Device* d = device_of(s, h);
  if (!d || d->mig) return kInvalid;
  unsigned n = 0;
  for (std::size_t i = 0; i < s.devices.size(); ++i)
    if (s.devices[i].mig && s.devices[i].parent == d->uuid && n++ == index) {
      *out = handle_of(i);
      return kSuccess;
    }
  return kNotFound;
}
// A GPU's minor number (its /dev/nvidia<minor>): its place among the gpu lines.
int nvmlDeviceGetMinorNumber(Handle h, unsigned* minor) {
  const State s = read_state();
  const Device* d = device_of(s, h);
  if (!d || d->mig) return kInvalid;
  const auto all = gpus(s);
  for (std::size_t i = 0; i < all.size(); ++i)
    if (&s.devices[all[i]] == d) *minor = static_cast<unsigned>(i);
  return kSuccess;
}
int nvmlDeviceGetDeviceHandleFromMigDeviceHandle(Handle h, Handle* out) {
  const State s = read_state();
  const Device* d = device_of(s, h);
  if (!d || !d->mig) return kInvalid;
  for (std::size_t i = 0; i < s.devices.size(); ++i)
    if (!s.devices[i].mig && s.devices[i].uuid == d->parent) {
      *out = handle_of(i);
      return kSuccess;
    }
  return kNotFound;
}
int nvmlDeviceGetComputeRunningProcesses_v3(Handle h, unsigned* count, ProcessInfo* infos) {
  const State s = read_state();
  const Device* d = device_of(s, h);
  if (!d) return kInvalid;
  std::vector<ProcessInfo> out;
  for (const auto& p : s.procs)
    if (p.device == d->uuid) out.push_back({p.pid, p.used_mb << 20, 0, 0});
  if (!infos || *count < out.size()) {
    *count = static_cast<unsigned>(out.size());
    return out.empty() ? kSuccess : kTooSmall;
  }
  *count = static_cast<unsigned>(out.size());
  for (std::size_t i = 0; i < out.size(); ++i) infos[i] = out[i];
  return kSuccess;
}
int nvmlDeviceGetProcessUtilization(Handle h, ProcessSample* samples, unsigned* count,
                                    unsigned long long /*last_seen*/) {
  const State s = read_state();
  const Device* d = device_of(s, h);
  if (!d) return kInvalid;
  if (d->mig) return kNotSupported;
  std::vector<ProcessSample> out;
  for (const auto& p : s.procs)
    if (p.device == d->uuid) out.push_back({p.pid, 1, p.sm, 0, 0, 0});
  if (!samples || *count < out.size()) {
    *count = static_cast<unsigned>(out.size());
    return out.empty() ? kNotFound : kTooSmall;
  }
  *count = static_cast<unsigned>(out.size());
  for (std::size_t i = 0; i < out.size(); ++i) samples[i] = out[i];
  return kSuccess;
}

}  // extern "C"
