// What a trial used of its GPUs (workers/agent/gpu_accounting.hpp): peak and
// mean of the heartbeat's samples as gpu.* metrics, none before a sample, no
// utilisation where the driver gave none; a process's group read from /proc.
// Sampling itself runs through the real worker on the stand-in NVML
// (tests/e2e/gpu_packing_e2e_test.cpp).
#include "workers/agent/gpu_accounting.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

namespace hpo::workers::agent {
namespace {

TEST(GpuUse, PeakAndMeanOfTheSamplesBecomeMetrics) {
  GpuUse use;
  trials::Metrics m;
  use.to_metrics(m);
  EXPECT_TRUE(m.empty()) << "no sample, no figures";
  use.add(1000, 20);
  use.add(3000, -1);  // no utilisation in this sample
  use.add(2000, 50);
  use.to_metrics(m);
  EXPECT_DOUBLE_EQ(m.at("gpu.memory_peak_mb"), 3000);
  EXPECT_DOUBLE_EQ(m.at("gpu.memory_mean_mb"), 2000);
  EXPECT_DOUBLE_EQ(m.at("gpu.util_peak_pct"), 50);
  EXPECT_DOUBLE_EQ(m.at("gpu.util_mean_pct"), 35);
}

TEST(GpuUse, NoUtilisationMetricsWhenNoSampleHadOne) {
  GpuUse use;
  use.add(512, -1);
  trials::Metrics m;
  use.to_metrics(m);
  EXPECT_DOUBLE_EQ(m.at("gpu.memory_peak_mb"), 512);
  EXPECT_EQ(m.count("gpu.util_peak_pct"), 0u);
}

TEST(GpuUse, AProcessGroupIsReadFromProc) {
  EXPECT_EQ(process_group_of(::getpid()), static_cast<long>(::getpgrp()));
  EXPECT_EQ(process_group_of(-5), 0);
}

}  // namespace
}  // namespace hpo::workers::agent
