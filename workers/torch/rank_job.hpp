// RankJob and RankResult: what the worker's torch executor hands each
// hpo-train-rank process (job.json in the attempt directory) and what rank 0
// hands back (result.json), as typed structs with one codec each, so the two
// programs cannot drift apart on a field's name or type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "trials/trial.hpp"

namespace hpo::workers::torch_trainer {

struct RankJob {
  std::string spec;                     // the sweep spec's text (each rank parses it once)
  trials::Trial trial;                  // id, sweep_id, kind, attempt, params, extra
  int world = 1;                        // ranks in all
  int threads = 1;                      // CPU threads per rank
  int first_rank = 0;                   // the lowest rank this host runs (a gang's share)
  std::vector<int> gpus;                // rank r uses gpus[r - first_rank] when there is one
  std::string store;                    // the rendezvous: FileStore path or tcp://HOST:PORT
  std::string address;                  // this host's address for Gloo (empty: loopback)
  std::string out;                      // where rank 0 leaves result.json and artifacts
  std::int64_t timeout_ms = 60000;      // a collective slower than this fails the attempt
  std::vector<std::string> data_roots;  // the worker's data roots (trials/data_roots.hpp)
  std::string dataset_cache;            // the worker's on-disk dataset cache; empty: none
  std::string resume;  // a checkpoint file to continue from (trainer.hpp); empty: from the start
};

struct RankResult {
  std::string end = "failed";  // TrainOutput::End as text: completed, stopped, failed
  std::string error;
  bool retryable = true;
  trials::Metrics metrics;
  std::vector<std::string> artifacts;  // file names in `out`, stored with the trial
};

std::string encode_rank_job(const RankJob& job);
// kInvalidArgument naming the field when the text is not a job.
Result<RankJob> decode_rank_job(std::string_view text);

std::string encode_rank_result(const RankResult& result);
Result<RankResult> decode_rank_result(std::string_view text);

}  // namespace hpo::workers::torch_trainer
