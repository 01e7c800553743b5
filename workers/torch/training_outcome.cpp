// A torch training's outcome as the trial's result. What the training itself
// got wrong fails the trial for good unless the caller knows better (a lost
// rank may have caused it); storing the artifacts is retried (Redis away)
// unless the store refused them for their size. Rank 0's files and lines are
// the trial user's output, so they are checked, not trusted: a listed
// artifact must exist, a report line that does not parse is only logged.
#include "workers/torch/training_outcome.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/byte_stream.hpp"
#include "trials/artifacts.hpp"
#include "trials/json_limits.hpp"
#include "workers/outcome.hpp"
#include "workers/torch/rank_job.hpp"
#include "workers/torch/torch_executor.hpp"
#include "workers/trial_files.hpp"

namespace hpo::workers::torch_exec {
namespace {

using Json = nlohmann::json;

std::optional<std::string> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Streams the file `name` in `dir` (which the trial user owns) to the store.
Status put_file_artifact(Reporter& reporter, const std::string& name, const fs::path& dir,
                         const std::string& file) {
  return reporter.put_artifact_stream(name, [&](ByteSink& out) -> Status {
    auto opened = open_beneath(dir.string(), file);
    // Not kUnavailable: a link or a missing file is no outage to wait out.
    if (!opened) return Error::invalid((dir / file).string(), opened.error().message);
    auto n = copy_fd(opened->fd(), out, (dir / file).string());
    return n ? Status{} : Status(n.error());
  });
}

// first_step_ms: from the claim (the attempt's started_ms, the store's clock)
// to the trainer's first step (this host's clock; one clock on one host, and
// NTP-close across hosts), in place of the trainer's wall-clock stamp.
void first_step_from_claim(trials::Metrics& metrics, std::int64_t claimed_ms) {
  auto it = metrics.find(tt::kFirstStepUnixMs);
  if (it == metrics.end()) return;
  if (claimed_ms > 0)
    metrics["first_step_ms"] = std::max(0.0, it->second - static_cast<double>(claimed_ms));
  metrics.erase(it);
}

}  // namespace

trials::TrialResult failed(std::string error, bool retryable) {
  return failed_result(std::move(error), retryable);
}

std::vector<TrainedArtifact> in_memory(std::vector<std::pair<std::string, std::string>> named) {
  std::vector<TrainedArtifact> out;
  for (auto& [name, bytes] : named) out.push_back({name, std::move(bytes), {}});
  return out;
}

RankZeroResult read_rank_zero_result(const fs::path& dir, int k, bool stopped) {
  RankZeroResult r;
  auto text = read_file(dir / "result.json");
  auto result = text ? tt::decode_rank_result(*text) : Result<tt::RankResult>(Error::not_found(""));
  if (!result) {
    r.out.end = stopped ? tt::TrainOutput::End::kStopped : tt::TrainOutput::End::kFailed;
    r.out.error = fmt::format(
        "{} left no result{}",
        k > 1 ? fmt::format("data-parallel rank 0 of {}", k) : std::string("the training process"),
        stopped ? " (stopped)" : "");
    return r;
  }
  r.out.end = tt::end_from_string(result->end);
  r.out.error = result->error;
  if (r.out.end == tt::TrainOutput::End::kFailed && !r.out.error.empty() && k > 1)
    r.out.error = fmt::format("data-parallel rank 0 of {}: {}", k, r.out.error);
  r.retryable = result->retryable;
  r.out.metrics = result->metrics;
  for (const auto& name : result->artifacts) {
    std::error_code ec;
    if (!fs::exists(dir / name,
                    ec)) {  // listed but gone: fail rather than store a trial without it
      r.out.end = tt::TrainOutput::End::kFailed;
      r.out.error =
          fmt::format("data-parallel rank 0 of {} listed artifact {} but left no file", k, name);
      r.artifacts.clear();
      return r;
    }
    r.artifacts.push_back({name, {}, dir});
  }
  return r;
}

trials::TrialResult finish(const trials::SweepSpec& spec, tt::TrainOutput out,
                           std::vector<TrainedArtifact> artifacts, bool failure_retryable,
                           std::int64_t claimed_ms, Reporter& reporter) {
  first_step_from_claim(out.metrics, claimed_ms);
  switch (out.end) {
    case tt::TrainOutput::End::kStopped: {
      auto reason = reporter.stop_reason();
      auto r = stopped_result(reason == StopReason::kNone ? StopReason::kPruned : reason,
                              spec.trial.timeout_s);
      r.metrics = out.metrics;
      return r;
    }
    case tt::TrainOutput::End::kDiverged:
    case tt::TrainOutput::End::kFailed: {
      auto r = failed(out.error, failure_retryable && out.end == tt::TrainOutput::End::kFailed);
      r.metrics = out.metrics;
      return r;
    }
    case tt::TrainOutput::End::kCompleted:
      break;
  }
  for (const auto& a : artifacts) {
    if (a.dir.empty() && a.bytes.empty()) continue;
    auto st = a.dir.empty() ? reporter.put_artifact(a.name, a.bytes)
                            : put_file_artifact(reporter, a.name, a.dir, a.name);
    if (!st)
      return failed(fmt::format("storing artifact {}: {}", a.name, st.error().message),
                    store_failure_retryable(st.error()));
  }
  trials::TrialResult r;
  r.outcome = trials::TrialState::kCompleted;
  r.metrics = std::move(out.metrics);
  auto it = r.metrics.find(spec.objective.metric);
  if (it == r.metrics.end()) {
    std::string names;
    for (const auto& [name, v] : r.metrics) names += (names.empty() ? "" : ", ") + name;
    auto f = failed(fmt::format("the objective metric '{}' is not reported by kind torch ({})",
                                spec.objective.metric, names));
    f.metrics = std::move(r.metrics);
    return f;
  }
  r.value = it->second;
  return r;
}

std::optional<std::string> stored_checkpoint(Reporter& reporter) {
  auto got = reporter.get_artifact(trials::artifact::kCheckpoint);
  if (!got) {
    reporter.log("torch: cannot read the trial's checkpoint (" + got.error().message +
                 "); starting from the first epoch");
    return std::nullopt;
  }
  return std::move(*got);
}

void store_checkpoint(Reporter& reporter, const std::string& bytes, std::int64_t epoch,
                      std::int64_t batch) {
  auto st = reporter.put_artifact(trials::artifact::kCheckpoint, bytes);
  if (!st)
    reporter.log(fmt::format("torch: the checkpoint of epoch {} was not stored: {}", epoch + 1,
                             st.error().message));
  else if (batch > 0)
    reporter.log(fmt::format("torch: checkpoint stored at epoch {}, batch {} ({} bytes)", epoch + 1,
                             batch + 1, bytes.size()));
}

bool relay_rank0_line(std::string_view line, Reporter& reporter, const fs::path& dir,
                      std::optional<CheckpointRefused>& refused) {
  if (line.starts_with(kRankCheckpointPrefix)) {
    std::int64_t epoch = 0, batch = 0;
    std::istringstream(std::string(line.substr(kRankCheckpointPrefix.size()))) >> epoch >> batch;
    auto st = put_file_artifact(reporter, trials::artifact::kCheckpoint, dir, kRankCheckpointFile);
    if (!st) {
      const bool too_large = st.error().code == ErrorCode::kPayloadTooLarge;
      refused = CheckpointRefused{
          fmt::format("the checkpoint of epoch {} could not be stored ({}){}", epoch + 1,
                      st.error().message,
                      too_large ? "; a pool with an artifact folder (hpo-scheduler --artifacts "
                                  "DIR) stores checkpoints of any size"
                                : ""),
          !too_large};
      reporter.log("torch: " + refused->error);
      return false;
    }
    if (batch > 0)
      reporter.log(
          fmt::format("torch: checkpoint stored at epoch {}, batch {}", epoch + 1, batch + 1));
    return true;
  }
  if (!line.starts_with(kRankReportPrefix)) {
    reporter.log(line);
    return true;
  }
  const auto body = line.substr(kRankReportPrefix.size());
  if (!trials::check_json_depth(body, "hpo-rank-report")) {
    reporter.log(line);
    return true;
  }
  auto j = Json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("step") || !j.contains("metrics")) {
    reporter.log(line);
    return true;
  }
  trials::Metrics metrics;
  for (auto it = j["metrics"].begin(); it != j["metrics"].end(); ++it)
    if (it->is_number()) metrics[it.key()] = it->get<double>();
  return reporter.report(j["step"].get<std::int64_t>(), metrics);
}

}  // namespace hpo::workers::torch_exec
