// Which OpenBLAS kernels the trials' processes are given (blas_core.hpp).
#include "workers/torch/blas_core.hpp"

#include <gtest/gtest.h>

namespace hpo::workers {
namespace {

CpuFeatures avx512() {
  return {true, true, true, true};
}
CpuFeatures avx2() {
  return {true, true, true, false};
}
CpuFeatures avx_only() {
  return {true, false, false, false};
}

TEST(BlasCore, TheBestKernelsFollowTheFeatures) {
  EXPECT_EQ(best_blas_core(avx512()), "SkylakeX");
  EXPECT_EQ(best_blas_core(avx2()), "Haswell");
  EXPECT_EQ(best_blas_core({true, true, false, false}), "Sandybridge");  // AVX2 without FMA
  EXPECT_EQ(best_blas_core(avx_only()), "Sandybridge");
  EXPECT_EQ(best_blas_core({}), "");
}

TEST(BlasCore, TheGenericFallbackOnAnAvxCpuIsReplaced) {
  EXPECT_EQ(blas_core_override("Prescott", avx512(), ""), "SkylakeX");
  EXPECT_EQ(blas_core_override("prescott", avx2(), ""), "Haswell");
  EXPECT_EQ(blas_core_override("Nehalem", avx_only(), ""), "Sandybridge");
}

TEST(BlasCore, TheLibrarysOwnChoiceAndTheUsersAreKept) {
  EXPECT_EQ(blas_core_override("Haswell", avx512(), ""), "");  // chosen for a CPU it knows
  EXPECT_EQ(blas_core_override("Zen", avx512(), ""), "");
  EXPECT_EQ(blas_core_override("SkylakeX", avx512(), ""), "");
  EXPECT_EQ(blas_core_override("Prescott", avx512(), "Haswell"), "");  // the user's
  EXPECT_EQ(blas_core_override("Prescott", {}, ""), "");               // nothing better to give
  EXPECT_EQ(blas_core_override("", avx512(), ""), "");                 // no OpenBLAS
}

}  // namespace
}  // namespace hpo::workers
