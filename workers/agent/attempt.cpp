#include "workers/agent/attempt.hpp"

#include <fmt/format.h>

namespace hpo::workers::agent {

std::string GangShare::key() const {
  return fmt::format("{}:{}:{}", share.trial.id, share.trial.attempt, share.first);
}

StopReason stop_for(trials::Control c) {
  switch (c) {
    case trials::Control::kPrune:
      return StopReason::kPruned;
    case trials::Control::kCancel:
      return StopReason::kCancelled;
    case trials::Control::kRelease:  // as our own drain: checkpoint, stop, release
      return StopReason::kPreempted;
    case trials::Control::kNone:
      break;
  }
  return StopReason::kNone;
}

LogFields trial_fields(const trials::Trial& t, const std::string& worker, LogFields more) {
  LogFields f{{"trial", t.id},
              {"sweep", t.sweep_id},
              {"attempt", std::to_string(t.attempt)},
              {"worker", worker}};
  f.insert(f.end(), more.begin(), more.end());
  return f;
}

void ThrottledLog::warn(std::string_view what, const LogFields& fields) {
  constexpr auto kEvery = std::chrono::seconds(10);
  auto now = Clock::now();
  if (last_ && now - *last_ < kEvery) return;
  last_ = now;
  log_warn(what, fields);
}

}  // namespace hpo::workers::agent
