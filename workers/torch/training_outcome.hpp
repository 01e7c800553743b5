// What a torch training leaves, turned into the trial's outcome: its
// artifacts stored through the reporter, rank 0's result file and stdout
// lines read back, checkpoints stored. Internal to the torch executor (its
// .cpp files share these; nothing outside workers/torch/ includes this), kept
// apart from the code that starts and supervises the rank processes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "trials/spec/spec.hpp"
#include "trials/store.hpp"
#include "workers/executor.hpp"
#include "workers/torch/trainer.hpp"

// The torch executor's internals, shared between its .cpp files.
namespace hpo::workers::torch_exec {

namespace tt = torch_trainer;
namespace fs = std::filesystem;

trials::TrialResult failed(std::string error, bool retryable = false);

// An artifact a training leaves: its bytes (in-process training), or a file
// rank 0 wrote in `dir` (the ranks' folder, the trial user's: read the way
// trial_files.hpp reads, and streamed to the store).
struct TrainedArtifact {
  std::string name;
  std::string bytes;
  fs::path dir;
};

std::vector<TrainedArtifact> in_memory(std::vector<std::pair<std::string, std::string>> named);

// What rank 0 left in the attempt directory: result.json and the artifacts it lists.
struct RankZeroResult {
  tt::TrainOutput out;
  std::vector<TrainedArtifact> artifacts;
  bool retryable = true;
};

RankZeroResult read_rank_zero_result(const fs::path& dir, int k, bool stopped);

// The trial's result from a finished training and its artifacts.
trials::TrialResult finish(const trials::SweepSpec& spec, tt::TrainOutput out,
                           std::vector<TrainedArtifact> artifacts, bool failure_retryable,
                           std::int64_t claimed_ms, Reporter& reporter);

// The checkpoint an earlier attempt left (nullopt: none, or the store would
// not say: then the attempt starts afresh, which is never wrong).
std::optional<std::string> stored_checkpoint(Reporter& reporter);

void store_checkpoint(Reporter& reporter, const std::string& bytes, std::int64_t epoch,
                      std::int64_t batch);

// A checkpoint the store refused: the attempt ends, failed with the reason,
// rather than training on unprotected (not retried when it is too large).
struct CheckpointRefused {
  std::string error;
  bool retryable = true;
};

// Rank 0's stdout line: a report, a checkpoint it left in `dir`, or a log
// line. Returns false when the trial must stop; `refused` is set when a
// checkpoint could not be stored.
bool relay_rank0_line(std::string_view line, Reporter& reporter, const fs::path& dir,
                      std::optional<CheckpointRefused>& refused);

}  // namespace hpo::workers::torch_exec
