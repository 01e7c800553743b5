// TrialReporter: the executor's window on the agent while one attempt runs.
// Reports, artifacts and the rendezvous go through the slot thread's store
// connection (guarded: an executor may report from a helper thread), retried
// through an outage. Reports are thinned (a token bucket: bursts of 200, then
// 50 a second, so one trial cannot flood Redis) and batched: those that come
// within 100 ms of the last send are held and sent together, up to 64 at a
// time; the lease keeper flushes what a trial that went quiet still holds.
// The attempt's artifacts fall back to the checkpoint of the trial a
// promotion resumes (read_trial_artifact).
#pragma once

#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "workers/agent/attempt.hpp"

namespace hpo::workers::agent {

struct Shared;

// An artifact as an attempt of trial `t` reads it: its own; for the
// checkpoint of a promoted multi-fidelity trial that stored none yet, the one
// of the trial it resumes (trials/trial_plan.hpp), so a promotion continues where
// the rung below stopped.
Result<std::optional<std::string>> trial_artifact(trials::ArtifactStore& artifacts,
                                                  const trials::Trial& t, const std::string& name);
// The same, streamed into `out` (false: none stored).
Result<bool> read_trial_artifact(trials::ArtifactStore& artifacts, const trials::Trial& t,
                                 const std::string& name, ByteSink& out);

class TrialReporter : public Reporter {
 public:
  // `deadline`: the trial's timeout, when it has one.
  TrialReporter(Shared& shared, RunningAttempt& run, AttemptRoles store,
                std::optional<Clock::time_point> deadline);

  bool report(std::int64_t step, const trials::Metrics& metrics) override;
  StopReason stop_reason() const override;
  void log(std::string_view line) override;
  // The attempt now checkpoints on a drain; one already draining stops now.
  void checkpoints_on_stop() override;
  void program_started(long group) override;
  Status put_artifact(const std::string& name, const std::string& bytes) override;
  Result<std::optional<std::string>> get_artifact(const std::string& name) override;
  // The store's answer to a stream is retried through an outage; the
  // producer runs again each time (a Redis outage at the publishing call).
  Status put_artifact_stream(const std::string& name, const ByteProducer& produce) override;
  std::int64_t inline_artifact_limit() const override;
  // Retried through an outage only while `out` has received nothing (the
  // store is asked where the bytes are before any is sent).
  Result<bool> read_artifact(const std::string& name, ByteSink& out) override;
  Status publish_rendezvous(const std::string& address) override;

  // Sends the held reports: `always` at the attempt's end; otherwise (the
  // lease keeper) only once the trial has been quiet for the linger, and only
  // when no report is being sent right now (the lease keeper must not wait).
  void flush(bool always);
  // The last lines of the attempt's log (the artifact "log.txt").
  std::string log_tail();

 private:
  void send_locked(Clock::time_point now);

  Shared& shared_;
  RunningAttempt& run_;
  AttemptRoles store_;
  std::optional<Clock::time_point> deadline_;
  std::mutex mu_;
  std::deque<std::string> tail_;
  ThrottledLog errors_;
  double tokens_;
  Clock::time_point refilled_ = Clock::now();
  std::vector<trials::StepReport> pending_;  // held, not sent yet
  Clock::time_point last_send_{};            // long ago: the first report goes at once
};

}  // namespace hpo::workers::agent
