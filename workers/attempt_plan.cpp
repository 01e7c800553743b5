#include "workers/attempt_plan.hpp"

#include "ensemble/bagging_json.hpp"
#include "workers/executor.hpp"

namespace hpo::workers {

std::shared_ptr<const AttemptPlan> AttemptPlan::of(const trials::Trial& trial) {
  return std::make_shared<const AttemptPlan>(AttemptPlan{
      trials::rung_from_json(trial.extra), ensemble::member_spec_from_json(trial.extra)});
}

const AttemptPlan& plan_of(const TrialTask& task) {
  static const AttemptPlan none{
      std::optional<trials::RungInfo>{},
      Error::internal("the attempt was handed no plan (TrialTask::plan)")};
  return task.plan ? *task.plan : none;
}

}  // namespace hpo::workers
