// EnsembleStage: the sweep's second stage, bagged members trained across the
// worker pool and combined into one ensemble (issue 5).
//
// Members are trials of role member (TrialRole::kMember), so the store queues, leases, retries
// and fences them exactly like search trials; a killed worker loses none. The
// stage holds no state the store lacks: every step re-reads the sweep's
// member counters, creates the next members up to search.max_concurrent
// (create_trial is a compare-and-set on next_member, so a restarted or racing
// scheduler never creates member i twice), and once every member has
// finished it loads their prediction artifacts, calls evaluate_ensemble and
// stores the record. Writing the record is idempotent, so a restart between
// the write and the end of the sweep only writes it again.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "scheduler/sweep_controller.hpp"
#include "scheduler/sweep_roles.hpp"
#include "trials/artifacts.hpp"
#include "trials/spec/spec.hpp"
#include "trials/store.hpp"

namespace hpo::scheduler {

// Where the result lives: the record and the manifest are the sweep's own
// records (ArtifactStore::put_sweep_record), deleted with it.
inline constexpr const char* kEnsembleRecordArtifact = trials::artifact::kEnsembleRecord;
inline constexpr const char* kEnsembleManifestArtifact = trials::artifact::kEnsembleManifest;

// The most memory the combination may take: the validation predictions it
// holds (members' and the candidate search trials', which the combination is
// fitted on), counted from their stored sizes before any is read, plus the
// blocks the test and out-of-bag predictions stream through (kStreamRows
// rows of every model; their files are never read whole, whatever their
// size). Past it the sweep fails with the sizes and the flag
// (--ensemble-memory-mb), instead of a scheduler killed for memory restarting
// into the same stage.
inline constexpr std::int64_t kDefaultEnsembleMemory = std::int64_t{2} << 30;

class EnsembleStage : public Stage {
 public:
  // `spec.ensemble` must be set.
  EnsembleStage(std::string sweep_id, trials::SweepSpec spec,
                std::int64_t memory_budget = kDefaultEnsembleMemory);

  // Creates members while fewer than `members` exist; returns true once the
  // ensemble record is stored, or once the stage has failed the sweep itself
  // (finish_sweep failed, with the reason) — the controller then sees the
  // sweep is no longer running.
  Result<bool> step(SweepRoles store, const trials::Sweep& sweep) override;

 private:
  Status load_configs(SweepRoles store);
  Result<bool> create_members(SweepRoles store, const trials::Sweep& sweep);
  Result<bool> combine(SweepRoles store);
  Result<bool> fail(SweepRoles store, const std::string& reason);

  // The memory combining the predictions of `trials` would take (see above).
  struct PredictionMemory {
    std::int64_t held = 0;      // the validation predictions
    std::int64_t streamed = 0;  // the blocks of test and out-of-bag rows
  };
  Result<PredictionMemory> prediction_bytes(SweepRoles store,
                                            const std::vector<const trials::Trial*>& trials);
  // Why combining `members` (the completed ones) and the best search trials
  // would take more than memory_budget_, to fail the sweep with; nothing when
  // it fits.
  Result<std::optional<std::string>> over_memory_budget(SweepRoles store,
                                                        const std::vector<trials::Trial>& members);

  std::string sweep_id_;
  trials::SweepSpec spec_;
  std::int64_t memory_budget_;
  // Completed search trials, best first (ties: lower number); finished trials
  // are immutable, so this is read once per stage object.
  std::optional<std::vector<trials::Trial>> ranked_;
};

}  // namespace hpo::scheduler
