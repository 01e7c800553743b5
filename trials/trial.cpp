#include "trials/trial.hpp"

#include <array>
#include <string_view>

#include "core/result.hpp"

namespace hpo {

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kConflict:
      return "conflict";
    case ErrorCode::kLeaseLost:
      return "lease_lost";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kUnauthorized:
      return "unauthorized";
    case ErrorCode::kPayloadTooLarge:
      return "payload_too_large";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "internal";
}

}  // namespace hpo

namespace hpo::trials {
namespace {
constexpr std::array<const char*, 6> kTrialStates = {"queued", "running", "completed",
                                                     "failed", "pruned",  "cancelled"};
constexpr std::array<const char*, 4> kSweepStates = {"running", "finished", "cancelled", "failed"};
}  // namespace

const char* to_string(TrialState s) {
  return kTrialStates[static_cast<size_t>(s)];
}
const char* to_string(SweepState s) {
  return kSweepStates[static_cast<size_t>(s)];
}
const char* to_string(Control c) {
  switch (c) {
    case Control::kNone:
      return "none";
    case Control::kPrune:
      return "prune";
    case Control::kCancel:
      return "cancel";
    case Control::kRelease:
      return "release";
  }
  return "none";
}

std::optional<TrialState> parse_trial_state(std::string_view s) {
  for (size_t i = 0; i < kTrialStates.size(); ++i)
    if (s == kTrialStates[i]) return static_cast<TrialState>(i);
  return std::nullopt;
}

const char* to_string(SweepStage s) {
  switch (s) {
    case SweepStage::kSearch:
      return "search";
    case SweepStage::kEnsemble:
      return "ensemble";
    case SweepStage::kDone:
      return "done";
  }
  return "search";
}

std::optional<Control> parse_control(std::string_view s) {
  for (auto v : {Control::kNone, Control::kPrune, Control::kCancel, Control::kRelease})
    if (s == to_string(v)) return v;
  return std::nullopt;
}

std::optional<SweepStage> parse_sweep_stage(std::string_view s) {
  for (auto v : {SweepStage::kSearch, SweepStage::kEnsemble, SweepStage::kDone})
    if (s == to_string(v)) return v;
  return std::nullopt;
}

const char* to_string(TrialRole r) {
  return r == TrialRole::kMember ? "member" : "trial";
}

std::optional<TrialRole> parse_trial_role(std::string_view s) {
  if (s == "trial") return TrialRole::kTrial;
  if (s == "member") return TrialRole::kMember;
  return std::nullopt;
}

std::optional<SweepState> parse_sweep_state(std::string_view s) {
  for (size_t i = 0; i < kSweepStates.size(); ++i)
    if (s == kSweepStates[i]) return static_cast<SweepState>(i);
  return std::nullopt;
}

bool is_finished(TrialState s) {
  return s != TrialState::kQueued && s != TrialState::kRunning;
}

}  // namespace hpo::trials
