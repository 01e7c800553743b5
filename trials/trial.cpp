#include "trials/trial.hpp"

#include <string>
#include <string_view>

#include <fmt/format.h>

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

Status check_annotation(const Annotation& a) {
  if (a.tags.size() > kMaxTags)
    return Error::invalid("tags", fmt::format("{} tags; at most {}", a.tags.size(), kMaxTags));
  for (std::size_t i = 0; i < a.tags.size(); ++i) {
    const std::string& t = a.tags[i];
    bool ok = !t.empty() && t.size() <= kMaxTagBytes;
    for (char c : t)
      ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  std::string_view("._:/=+-").find(c) != std::string_view::npos);
    if (!ok)
      return Error::invalid(
          fmt::format("tags[{}]", i),
          fmt::format("expected 1 to {} of A-Z a-z 0-9 . _ : / = + -", kMaxTagBytes));
  }
  if (a.note.size() > kMaxNoteBytes)
    return Error::invalid("note",
                          fmt::format("{} bytes; at most {}", a.note.size(), kMaxNoteBytes));
  return {};
}

}  // namespace hpo::trials
