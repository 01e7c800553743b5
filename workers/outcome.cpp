#include "workers/outcome.hpp"

#include <fmt/format.h>

namespace hpo::workers {

const char* to_string(StopReason reason) {
  switch (reason) {
    case StopReason::kNone:
      return "none";
    case StopReason::kPruned:
      return "pruned";
    case StopReason::kCancelled:
      return "cancelled";
    case StopReason::kTimeout:
      return "timeout";
    case StopReason::kLeaseLost:
      return "lease lost";
    case StopReason::kShutdown:
      return "worker shutting down";
    case StopReason::kPreempted:
      return "preempted";
  }
  return "unknown";
}

trials::TrialResult failed_result(std::string error, bool retryable) {
  trials::TrialResult r;
  r.outcome = trials::TrialState::kFailed;
  r.error = std::move(error);
  r.retryable = retryable;
  return r;
}

bool store_failure_retryable(const Error& error) {
  return error.code != ErrorCode::kPayloadTooLarge && error.code != ErrorCode::kQuotaExceeded;
}

trials::TrialResult stopped_result(StopReason reason, double timeout_s) {
  trials::TrialResult r;
  r.retryable = false;
  switch (reason) {
    case StopReason::kNone:
      r.outcome = trials::TrialState::kFailed;
      r.error = "stopped without a reason";
      break;
    case StopReason::kPruned:
      r.outcome = trials::TrialState::kPruned;
      r.error = "pruned by the scheduler";
      break;
    case StopReason::kCancelled:
      r.outcome = trials::TrialState::kCancelled;
      r.error = "cancelled";
      break;
    case StopReason::kTimeout:
      r.outcome = trials::TrialState::kFailed;
      r.error = fmt::format("timed out after {:g} s", timeout_s);
      break;
    case StopReason::kLeaseLost:
    case StopReason::kShutdown:
    case StopReason::kPreempted:
      r.outcome = trials::TrialState::kFailed;
      r.error = to_string(reason);
      r.retryable = true;
      break;
  }
  return r;
}

}  // namespace hpo::workers
