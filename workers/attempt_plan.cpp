#include "workers/attempt_plan.hpp"

#include "ensemble/bagging_json.hpp"
#include "workers/executor.hpp"

namespace hpo::workers {

std::shared_ptr<const AttemptPlan> AttemptPlan::of(const trials::Trial& trial) {
  return std::make_shared<const AttemptPlan>(AttemptPlan{
      trials::rung_from_json(trial.extra), ensemble::member_spec_from_json(trial.extra)});
}

std::shared_ptr<const AttemptPlan> plan_for(const TrialTask& task) {
  return task.plan ? task.plan : AttemptPlan::of(task.trial);
}

}  // namespace hpo::workers
