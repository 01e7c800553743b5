// GangFollower: runs the ranks of a data-parallel trial that another
// worker leads (a gang share the claimer handed a slot thread), in a box of
// their own, until the leader's attempt ends (the lease keeper marks the
// share stale) or the agent stops. Nothing is reported: the leader reports.
#pragma once

#include <memory>
#include <vector>

#include "workers/agent/attempt.hpp"

namespace hpo::workers::agent {

struct Shared;
class WorkRoot;

class GangFollower {
 public:
  GangFollower(Shared& shared, const ExecutorRegistry& executors, const WorkRoot& work_root);

  // Runs the share's ranks on `slots` until they end.
  void run(const GangShare& share, const std::vector<int>& slots, AttemptRoles store);

 private:
  Shared& shared_;
  const ExecutorRegistry& executors_;
  const WorkRoot& work_root_;
};

}  // namespace hpo::workers::agent
