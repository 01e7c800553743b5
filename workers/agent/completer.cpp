#include "workers/agent/completer.hpp"

#include <fmt/format.h>

#include "trials/artifacts.hpp"
#include "workers/agent/shared.hpp"

namespace hpo::workers::agent {

Completer::Completer(Shared& shared) : shared_(shared) {}

void Completer::reset() {
  std::lock_guard lk(mu_);
  stop_ = false;
}

void Completer::finish() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
}

bool Completer::deliver(const std::shared_ptr<RunningAttempt>& run,
                        const trials::TrialResult& result, const std::string& log_tail,
                        trials::TrialQueue& queue) {
  const auto& trial = run->trial;
  const StopReason stop = run->stop.load();
  if (stop == StopReason::kLeaseLost) {
    log_info(
        "trial result dropped",
        trial_fields(trial, shared_.options.name,
                     {{"reason", "lease lost"}, {"outcome", trials::to_string(result.outcome)}}));
    std::lock_guard lk(shared_.mu);
    ++shared_.stats.dropped;
    return false;
  }
  if ((shared_.stopping.load() || checkpoint_stop(stop)) &&
      result.outcome != trials::TrialState::kCompleted) {
    release_stopped(*run, log_tail, queue);
    return false;
  }
  run->delivering = true;
  {
    std::lock_guard lk(mu_);
    outbox_.push_back(Outgoing{run, trials::Completion{trial.id, trial.attempt, result, log_tail}});
  }
  cv_.notify_one();
  return true;
}

void Completer::release_stopped(const RunningAttempt& run, const std::string& log_tail,
                                trials::TrialQueue& queue) {
  const auto& trial = run.trial;
  const std::string& me = shared_.options.name;
  if (!log_tail.empty())
    (void)shared_.retry_through_outage([&] {
      return queue.put_artifact(trial.id, trial.attempt, me, trials::artifact::kLog, log_tail);
    });
  auto st = shared_.retry_through_outage([&] {
    return queue.release(trial.id, trial.attempt, me, "worker " + me + " stopped",
                         /*counted=*/true);
  });
  std::lock_guard lk(shared_.mu);
  if (st) {
    ++shared_.stats.released;
    log_info("trial released", trial_fields(trial, me, {{"reason", "worker stopped"}}));
  } else {
    ++shared_.stats.dropped;
    log_warn("trial release refused; left to lease expiry",
             trial_fields(trial, me, {{"error", st.error().message}}));
  }
}

void Completer::delivered(const std::shared_ptr<RunningAttempt>& run,
                          const trials::TrialResult& result, const Status& st) {
  const auto& trial = run->trial;
  const char* outcome = trials::to_string(result.outcome);
  {
    std::lock_guard lk(shared_.mu);
    if (st)
      ++shared_.stats.completed;
    else
      ++shared_.stats.dropped;
  }
  shared_.forget(trial);
  if (st) {
    LogFields more{{"outcome", outcome},
                   {"value", result.value ? fmt::format("{}", *result.value) : "none"}};
    if (!result.error.empty()) more.emplace_back("error", result.error.substr(0, 200));
    log_info("trial finished", trial_fields(trial, shared_.options.name, std::move(more)));
  } else {
    log_warn(st.error().code == ErrorCode::kLeaseLost ? "trial result refused (stale attempt)"
                                                      : "trial result refused",
             trial_fields(trial, shared_.options.name,
                          {{"outcome", outcome}, {"error", st.error().message}}));
  }
}

void Completer::run() {
  // Its own connection, opened when the first result comes (it must be there
  // to send the last ones while the agent stops).
  std::unique_ptr<trials::Store> conn;
  for (;;) {
    std::vector<Outgoing> batch;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return !outbox_.empty() || stop_; });
      if (outbox_.empty()) break;  // stopping, and everything was sent
      const auto n = std::min(outbox_.size(), static_cast<std::size_t>(shared_.options.max_batch));
      batch.assign(std::make_move_iterator(outbox_.begin()),
                   std::make_move_iterator(outbox_.begin() + static_cast<std::ptrdiff_t>(n)));
      outbox_.erase(outbox_.begin(), outbox_.begin() + static_cast<std::ptrdiff_t>(n));
    }
    std::vector<trials::Completion> done;
    done.reserve(batch.size());
    for (const auto& o : batch) done.push_back(o.completion);
    // The store away: retried through the outage like any result (sending a
    // batch again is safe: what was accepted is refused the second time).
    Result<std::vector<Status>> replies = Error::unavailable("not sent");
    (void)shared_.retry_through_outage([&]() -> Status {
      if (!conn) {
        auto c = shared_.connect();
        if (!c) {
          replies = c.error();
          return c.error();
        }
        conn = std::move(*c);
      }
      replies = conn->queue().complete_batch(shared_.options.name, done);
      return replies ? Status{} : Status(replies.error());
    });
    for (std::size_t i = 0; i < batch.size(); ++i) {
      Status st = replies ? (*replies)[i] : Status(replies.error());
      delivered(batch[i].run, batch[i].completion.result, st);
    }
  }
}

}  // namespace hpo::workers::agent
