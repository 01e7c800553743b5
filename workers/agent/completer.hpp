// Completer: what becomes of an attempt's result. deliver() (a slot thread)
// hands it to the completer thread, gives the trial back when this worker
// stopped it (a drain, a shutdown: no failure counted), or drops it when the
// lease was lost (a stale attempt must not report). The completer thread
// sends every result waiting in one complete_batch, the attempt's log with
// it, retried through an outage. A result waits for its reply under its
// lease: the attempt stays among the running ones (heartbeats keep its lease)
// until the store has answered, while its slots already take the next trial.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "workers/agent/attempt.hpp"

namespace hpo::workers::agent {

struct Shared;

class Completer {
 public:
  explicit Completer(Shared& shared);

  // True when the completer now owns the result (else the caller forgets the attempt).
  bool deliver(const std::shared_ptr<RunningAttempt>& run, const trials::TrialResult& result,
               const std::string& log_tail, trials::TrialQueue& queue);
  // The completer thread: runs until finish() and every result is sent.
  void run();
  // Every result there will be was delivered: send what is left, then end.
  void finish();
  // Before the thread starts (again).
  void reset();

 private:
  struct Outgoing {
    std::shared_ptr<RunningAttempt> run;
    trials::Completion completion;
  };
  // The store's reply: stats, logs, and the attempt leaves `running`.
  void delivered(const std::shared_ptr<RunningAttempt>& run, const trials::TrialResult& result,
                 const Status& st);
  // Gives back an attempt this worker stopped (its log stored first).
  void release_stopped(const RunningAttempt& run, const std::string& log_tail,
                       trials::TrialQueue& queue);

  Shared& shared_;
  std::mutex mu_;  // guards the two below
  std::vector<Outgoing> outbox_;
  bool stop_ = false;
  std::condition_variable cv_;
};

}  // namespace hpo::workers::agent
