#include "workers/agent/trial_reporter.hpp"

#include <algorithm>

#include "trials/artifacts.hpp"
#include "trials/trial_plan.hpp"
#include "workers/agent/shared.hpp"

namespace hpo::workers::agent {
namespace {

constexpr std::size_t kLogTailLines = 200;  // the trial log kept (artifact "log.txt")
constexpr std::size_t kLogLineMax = 2000;   // longer lines are cut
constexpr double kReportBurst = 200;        // reports a trial may send at once,
constexpr double kReportsPerSecond = 50;    // then at most this many per second
constexpr std::size_t kReportBatch = 64;
constexpr auto kReportLinger = std::chrono::milliseconds(100);
// How long a gang's rendezvous address is kept (longer than any rank waits for it).
constexpr std::int64_t kRendezvousTtlMs = 3'600'000;

// The trial whose checkpoint an attempt of `t` falls back to when it has
// none of its own (empty: none).
std::string resumed_trial(const trials::Trial& t, const std::string& name) {
  if (name != trials::artifact::kCheckpoint) return {};
  // Budgets of training rows retrain: a model fitted on fewer rows has no
  // epoch to go on from.
  if (!t.plan.lineage || t.plan.lineage->resource == "subset") return {};
  return trials::resumed_trial_id(t.sweep_id, t.plan);
}

}  // namespace

Result<std::optional<std::string>> trial_artifact(trials::ArtifactStore& artifacts,
                                                  const trials::Trial& t, const std::string& name) {
  auto got = artifacts.get_artifact(t.id, name);
  if (!got || *got) return got;
  const std::string from = resumed_trial(t, name);
  return from.empty() ? got : artifacts.get_artifact(from, name);
}

Result<bool> read_trial_artifact(trials::ArtifactStore& artifacts, const trials::Trial& t,
                                 const std::string& name, ByteSink& out) {
  auto got = artifacts.read_artifact(t.id, name, out);
  if (!got || *got) return got;
  const std::string from = resumed_trial(t, name);
  return from.empty() ? got : artifacts.read_artifact(from, name, out);
}

TrialReporter::TrialReporter(Shared& shared, RunningAttempt& run, AttemptRoles store,
                             std::optional<Clock::time_point> deadline)
    : shared_(shared), run_(run), store_(store), deadline_(deadline), tokens_(kReportBurst) {}

bool TrialReporter::report(std::int64_t step, const trials::Metrics& metrics) {
  trials::StepReport r;
  r.step = step;
  r.metrics = metrics;
  {
    std::lock_guard lk(mu_);
    // A program printing metric lines in a tight loop is thinned out here;
    // the result carries the final metrics.
    const auto now = Clock::now();
    tokens_ = std::min(
        kReportBurst,
        tokens_ + kReportsPerSecond * std::chrono::duration<double>(now - refilled_).count());
    refilled_ = now;
    if (tokens_ < 1) return stop_reason() == StopReason::kNone;
    tokens_ -= 1;
    pending_.push_back(std::move(r));
    if (pending_.size() >= kReportBatch || now - last_send_ >= kReportLinger) send_locked(now);
  }
  return stop_reason() == StopReason::kNone;
}

void TrialReporter::flush(bool always) {
  std::unique_lock lk(mu_, std::defer_lock);
  if (always) {
    lk.lock();
  } else if (!lk.try_lock()) {
    return;
  }
  const auto now = Clock::now();
  if (!pending_.empty() && (always || now - last_send_ >= kReportLinger)) send_locked(now);
}

StopReason TrialReporter::stop_reason() const {
  StopReason r = run_.stop.load();
  if (r != StopReason::kNone) return r;
  if (shared_.stopping.load()) return StopReason::kShutdown;
  if (deadline_ && Clock::now() >= *deadline_) return StopReason::kTimeout;
  return StopReason::kNone;
}

void TrialReporter::program_started(long group) {
  run_.program_group = group;
}

void TrialReporter::checkpoints_on_stop() {
  // Agent::drain sets draining, then reads checkpoints; this the other way
  // round: one of the two sees the other.
  run_.checkpoints = true;
  if (shared_.draining.load()) run_.set_stop(StopReason::kShutdown);
}

void TrialReporter::log(std::string_view line) {
  std::lock_guard lk(mu_);
  tail_.emplace_back(line.substr(0, kLogLineMax));
  if (tail_.size() > kLogTailLines) tail_.pop_front();
}

Status TrialReporter::put_artifact(const std::string& name, const std::string& bytes) {
  std::lock_guard lk(mu_);
  return shared_.retry_through_outage([&] {
    return store_.queue.put_artifact(run_.trial.id, run_.trial.attempt, shared_.options.name, name,
                                     bytes);
  });
}

Result<std::optional<std::string>> TrialReporter::get_artifact(const std::string& name) {
  std::lock_guard lk(mu_);
  Result<std::optional<std::string>> got = std::optional<std::string>{};
  (void)shared_.retry_through_outage([&]() -> Status {
    got = trial_artifact(store_.artifacts(), run_.trial, name);
    return got ? Status{} : Status(got.error());
  });
  return got;
}

Status TrialReporter::put_artifact_stream(const std::string& name, const ByteProducer& produce) {
  std::lock_guard lk(mu_);
  return shared_.retry_through_outage([&] {
    return store_.queue.put_artifact_stream(run_.trial.id, run_.trial.attempt, shared_.options.name,
                                            name, produce);
  });
}

std::int64_t TrialReporter::inline_artifact_limit() const {
  return store_.queue.inline_artifact_limit();
}

Result<bool> TrialReporter::read_artifact(const std::string& name, ByteSink& out) {
  std::lock_guard lk(mu_);
  CountingSink counting(out);
  Result<bool> got = false;
  (void)shared_.retry_through_outage([&]() -> Status {
    got = read_trial_artifact(store_.artifacts(), run_.trial, name, counting);
    if (!got && counting.count() > 0) return Error::internal(got.error().message);  // no retry
    return got ? Status{} : Status(got.error());
  });
  return got;
}

Status TrialReporter::publish_rendezvous(const std::string& address) {
  std::lock_guard lk(mu_);
  return shared_.retry_through_outage([&] {
    return store_.queue.publish_rendezvous(run_.trial.id, run_.trial.attempt, shared_.options.name,
                                           address, kRendezvousTtlMs);
  });
}

std::string TrialReporter::log_tail() {
  std::lock_guard lk(mu_);
  std::string out;
  for (const auto& l : tail_) (out += l) += '\n';
  return out;
}

void TrialReporter::send_locked(Clock::time_point now) {
  last_send_ = now;
  auto c =
      store_.queue.report_batch(run_.trial.id, run_.trial.attempt, shared_.options.name, pending_);
  pending_.clear();
  if (c) {
    run_.set_stop(stop_for(*c));
  } else if (c.error().code == ErrorCode::kLeaseLost || c.error().code == ErrorCode::kNotFound) {
    run_.set_stop(StopReason::kLeaseLost);
  } else {  // intermediate reports are best effort: the result carries the final metrics
    errors_.warn("report failed",
                 trial_fields(run_.trial, shared_.options.name, {{"error", c.error().message}}));
  }
}

}  // namespace hpo::workers::agent
