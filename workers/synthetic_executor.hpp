// SyntheticExecutor: trial kind "synthetic" — a built-in test function
// (search/test_functions.hpp) computed in the worker instead of training.
//
// For tests, demos and benchmarks: it behaves like a real trial (takes
// sleep_s of wall time, reports a learning curve, stops promptly when asked)
// without any program to run. Deterministic: the noise comes from an RNG keyed
// by (trial id, attempt), so a re-run of the same attempt reports the same values.
#pragma once

#include "workers/executor.hpp"

namespace hpo::workers {

class SyntheticExecutor : public Executor {
 public:
  // The metric name the synthetic trial reports.
  static constexpr const char* kMetric = "value";
  // Longest uninterrupted wait: stop_reason() is checked at least this often.
  static constexpr int kCheckMs = 20;

  trials::TrialResult run(const TrialTask& task, Reporter& reporter) override;
  bool needs_work_dir() const override { return false; }
  bool starts_processes() const override { return false; }
};

}  // namespace hpo::workers
