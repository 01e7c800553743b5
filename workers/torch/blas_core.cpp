#include "workers/torch/blas_core.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <string_view>

#include "core/text.hpp"

namespace hpo::workers {

CpuFeatures cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.avx = __builtin_cpu_supports("avx");
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl");
#endif
  return f;
}

std::string best_blas_core(const CpuFeatures& cpu) {
  if (cpu.avx512 && cpu.avx2 && cpu.fma) return "SkylakeX";
  if (cpu.avx2 && cpu.fma) return "Haswell";
  if (cpu.avx) return "Sandybridge";
  return "";
}

namespace {

// OpenBLAS's x86 kernel families from before AVX (its generic fallback is the first).
constexpr std::array<std::string_view, 12> kPreAvx = {
    "prescott", "core2",      "penryn",    "dunnington", "nehalem", "atom",
    "katmai",   "coppermine", "northwood", "banias",     "opteron", "barcelona"};

}  // namespace

std::string blas_core_override(const std::string& loaded, const CpuFeatures& cpu,
                               const std::string& user) {
  if (!user.empty() || loaded.empty()) return "";
  const auto name = ascii_lower(loaded);
  if (std::find(kPreAvx.begin(), kPreAvx.end(), name) == kPreAvx.end()) return "";
  return best_blas_core(cpu);
}

std::string loaded_blas_core() {
  using CoreName = char* (*)();
  const auto fn = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  if (!fn) return "";
  const char* name = fn();
  return name ? std::string(name) : std::string();
}

std::string trial_blas_core() {
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  return blas_core_override(loaded_blas_core(), cpu_features(), user ? user : "");
}

}  // namespace hpo::workers
