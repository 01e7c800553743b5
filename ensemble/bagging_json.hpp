// JSON codec of a MemberSpec: what the scheduler stores in a member trial's
// `extra` field and the worker reads back to recompute the member's BaggingPlan.
//
//   {"member": 3, "seed": 1234567890123, "bootstrap": true,
//    "sample_fraction": 1.0, "max_features": 0.5}
//
// Unknown keys are ignored on read, so the scheduler may add its own (e.g. the
// configuration rank for base top_k) to the same object.
#pragma once

#include <string>
#include <string_view>

#include "core/result.hpp"
#include "ensemble/bagging.hpp"

namespace hpo::ensemble {

std::string member_spec_to_json(const MemberSpec& spec);
Result<MemberSpec> member_spec_from_json(std::string_view json_text);

}  // namespace hpo::ensemble
