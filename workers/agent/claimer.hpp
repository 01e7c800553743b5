// Claimer: the thread that takes trials for every free slot in one
// claim_batch and hands each to the slot thread that will run it (a trial
// needing k slots occupies k: its thread's and k-1 other free ones), with
// the gang shares other workers' claims placed on this one. When the store
// had less than it asked for, it blocks on the store's wake stream
// (wait_for_work) and claims again as soon as work is queued: no polling.
// It claims nothing before the registry took this worker, nor once stopping
// or draining.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "workers/agent/attempt.hpp"

namespace hpo::workers::agent {

struct Shared;

class Claimer {
 public:
  // `torch`: the worker offers torch trials.
  Claimer(Shared& shared, bool torch);

  // The claimer thread: runs until stopping or draining.
  void run();

 private:
  using SharePlan = std::pair<std::shared_ptr<GangShare>, std::shared_ptr<const trials::SweepSpec>>;

  bool no_claims() const;
  // Waits for a free slot; the offer for it (claiming set), or false when no
  // more claims will be made.
  bool next_offer(trials::Offer& offer);
  // What each claim asks (its sweep's spec, parsed once per sweep).
  std::vector<trials::ResourceRequest> requests_of(const trials::Claims& got);
  // The gang shares promised to this worker's slots, with what they take.
  std::vector<SharePlan> shares_of(trials::Claims& got);
  // Under the lock: reserves slots and fills the slot threads' inboxes; the
  // slot threads to wake, and the claims that do not fit.
  void hand_out(std::vector<SharePlan>& shares, trials::Claims* got,
                const std::vector<trials::ResourceRequest>& requests, std::vector<int>& woken,
                std::vector<trials::Claim>& misfits);
  void release_misfits(trials::TrialQueue& queue, const std::vector<trials::Claim>& misfits,
                       int free);

  Shared& shared_;
  bool torch_;
};

}  // namespace hpo::workers::agent
