#include "trials/trial.hpp"

#include <string_view>

#include "trials/record_names.hpp"

namespace hpo::trials {

const char* to_string(TrialState s) {
  return kTrialStateNames(s);
}
const char* to_string(SweepState s) {
  return kSweepStateNames(s);
}
const char* to_string(Control c) {
  return kControlNames(c);
}
const char* to_string(SweepStage s) {
  return kSweepStageNames(s);
}
const char* to_string(TrialRole r) {
  return kTrialRoleNames(r);
}

std::optional<TrialState> parse_trial_state(std::string_view s) {
  return kTrialStateNames.parse(s);
}
std::optional<SweepState> parse_sweep_state(std::string_view s) {
  return kSweepStateNames.parse(s);
}
std::optional<Control> parse_control(std::string_view s) {
  return kControlNames.parse(s);
}
std::optional<SweepStage> parse_sweep_stage(std::string_view s) {
  return kSweepStageNames.parse(s);
}
std::optional<TrialRole> parse_trial_role(std::string_view s) {
  return kTrialRoleNames.parse(s);
}

bool is_finished(TrialState s) {
  return s != TrialState::kQueued && s != TrialState::kRunning;
}

}  // namespace hpo::trials
