// What an attempt that was stopped from outside becomes.
//
// Every executor (command, synthetic, torch) ends the same way when
// Reporter::stop_reason() turns non-kNone, so the mapping lives here once:
// prune -> pruned, cancel -> cancelled, timeout -> failed (not retried: the
// same parameters would time out again), lease lost / shutdown -> failed and
// retryable (the agent does not send these; the lease expiry re-queues them).
#pragma once

#include "trials/store.hpp"
#include "workers/executor.hpp"

namespace hpo::workers {

const char* to_string(StopReason reason);

// A failed attempt: `retryable` re-queues it while attempts remain.
trials::TrialResult failed_result(std::string error, bool retryable);

// Whether another attempt may store what this one could not: not when it
// was too large for the store, nor past its project's byte limits (both
// stay so until somebody changes them).
bool store_failure_retryable(const Error& error);

// `timeout_s`: the trial's limit, quoted in the timeout message.
trials::TrialResult stopped_result(StopReason reason, double timeout_s);

}  // namespace hpo::workers
