// Which OpenBLAS kernels the trials' processes get.
//
// Debian's OpenBLAS (0.3.21, built with DYNAMIC_ARCH) picks its kernels from
// the CPU's family and model number when it loads. A CPU it does not know — a
// newer one, or a VM that hides the model, as this project's machines do —
// falls back to the generic Prescott (SSE3) kernels, although the CPU runs
// AVX2 or AVX-512: the mlp's GEMMs then run ~3x slower (measured: 25,000 vs
// 80,000 samples/s on one thread). OPENBLAS_CORETYPE, read when the library
// loads, names the kernels instead. The worker asks the OpenBLAS it loaded
// which kernels it chose and, when that is the generic fallback on a CPU
// with AVX, starts its trial processes with OPENBLAS_CORETYPE naming the
// kernels the CPU's features allow. A user's OPENBLAS_CORETYPE is kept; a
// choice the library made for a CPU it knows is kept.
#pragma once

#include <string>

namespace hpo::workers {

// The instruction sets OpenBLAS's x86-64 kernel families need.
struct CpuFeatures {
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool avx512 = false;  // F, CD, BW, DQ and VL: SkylakeX's kernels
};

// This CPU's (__builtin_cpu_supports).
CpuFeatures cpu_features();

// The kernel family the features allow: "SkylakeX", "Haswell", "Sandybridge"
// or "" (none of them).
std::string best_blas_core(const CpuFeatures& cpu);

// What trial processes get in OPENBLAS_CORETYPE ("" for nothing): the best
// family when `loaded` (the library's own choice, openblas_get_corename) is a
// pre-AVX one and `user` (the environment's OPENBLAS_CORETYPE) is empty.
std::string blas_core_override(const std::string& loaded, const CpuFeatures& cpu,
                               const std::string& user);

// The kernels the OpenBLAS loaded in this process uses ("" without OpenBLAS).
std::string loaded_blas_core();

// blas_core_override() for this process: its OpenBLAS, its CPU, its environment.
std::string trial_blas_core();

}  // namespace hpo::workers
