// The one spelling of each value of the records' enums (trial.hpp): trial
// and sweep states, a sweep's stage, a trial's role and its control flag.
// The record codec, the store and the REST API read and write these; the
// Functions library gets them from here (RedisStore writes them into the
// library's text as Lua tables ahead of the functions: TrialState.running),
// and the OpenAPI document's enums are filled in from them.
#pragma once

#include <cstddef>

#include "core/name_table.hpp"
#include "trials/trial.hpp"

namespace hpo::trials {

inline constexpr NameTable<TrialState, 6> kTrialStateNames{
    {"queued", "running", "completed", "failed", "pruned", "cancelled"}};
static_assert(static_cast<std::size_t>(TrialState::kCancelled) == 5);

inline constexpr NameTable<SweepState, 4> kSweepStateNames{
    {"running", "finished", "cancelled", "failed"}};
static_assert(static_cast<std::size_t>(SweepState::kFailed) == 3);

inline constexpr NameTable<SweepStage, 3> kSweepStageNames{{"search", "ensemble", "done"}};
static_assert(static_cast<std::size_t>(SweepStage::kDone) == 2);

inline constexpr NameTable<TrialRole, 2> kTrialRoleNames{{"trial", "member"}};
static_assert(static_cast<std::size_t>(TrialRole::kMember) == 1);

inline constexpr NameTable<Control, 4> kControlNames{{"none", "prune", "cancel", "release"}};
static_assert(static_cast<std::size_t>(Control::kRelease) == 3);

}  // namespace hpo::trials
