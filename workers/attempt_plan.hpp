// AttemptPlan: what a trial's `extra` says of one attempt — its place in a
// multi-fidelity or PBT schedule (trials/rung.hpp: budget, rung, the trial it
// resumes) and an ensemble member's plan (ensemble/bagging_json.hpp) —
// decoded once, when the agent takes the claim, and handed to all that needs
// it: the executor (HPO_BUDGET, HPO_BAGGING_FILE, the epochs), its outputs
// (the member's out-of-bag rows), the reporter (the checkpoint a promotion
// resumes). Each part is the decoder's answer as is: whoever uses it decides
// whether an error fails the attempt (a member's plan must decode; a search
// trial has none).
#pragma once

#include <memory>
#include <optional>

#include "core/result.hpp"
#include "ensemble/bagging.hpp"
#include "trials/rung.hpp"
#include "trials/trial.hpp"

namespace hpo::workers {

struct AttemptPlan {
  Result<std::optional<trials::RungInfo>> rung;
  Result<ensemble::MemberSpec> member;

  static std::shared_ptr<const AttemptPlan> of(const trials::Trial& trial);
};

}  // namespace hpo::workers
