// SlotRunner: the slot threads. Each waits for what the claimer hands it (a
// claimed trial, or a gang follower's ranks), runs it on the slots reserved
// for it and frees them. A trial runs through the executor registered for
// its kind, in the attempt's box and directory, reporting through a
// TrialReporter; its result goes to the Completer. A spec that does not
// parse fails the attempt (it will not parse on a retry); a claim without a
// spec (another version's functions) gives the trial back uncounted.
#pragma once

#include <memory>
#include <string>

#include "workers/agent/attempt.hpp"
#include "workers/agent/gang_follower.hpp"

namespace hpo::workers::agent {

struct Shared;
class Completer;
class WorkRoot;

class SlotRunner {
 public:
  SlotRunner(Shared& shared, const ExecutorRegistry& executors, const WorkRoot& work_root,
             Completer& completer);

  // Slot `slot`'s thread: runs until no more work can come.
  void run(int slot);

 private:
  // Runs a trial the claimer handed out (and registered in `running`).
  void run_trial(const trials::Claim& claim, AttemptRoles store);
  // Spec, task, executor: the attempt's result (and its log tail).
  trials::TrialResult execute(RunningAttempt& run, const trials::SweepSpec& spec,
                              AttemptRoles store, std::string& log_tail);
  // The executor's part of execute(): box, directory, run.
  trials::TrialResult run_executor(const ExecutorFactory& factory, RunningAttempt& run,
                                   const trials::SweepSpec& spec, TrialTask& task,
                                   TrialReporter& reporter);

  Shared& shared_;
  const ExecutorRegistry& executors_;
  const WorkRoot& work_root_;
  Completer& completer_;
  GangFollower follower_;
};

}  // namespace hpo::workers::agent
