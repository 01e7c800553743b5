// The JSON codec of every record hpo stores or serves, one per record: params,
// metrics, a step report, an attempt, a worker entry and its GPUs, counts, the
// best trial, a trial, a sweep and an event. The Redis and memory stores, the
// REST API (web/json_codec.hpp re-exports these), the worker's rank job, the
// ensemble manifest and the `hpo` CLI all encode and decode with them, so a
// record reads the same wherever it is read.
//
// One rule for numbers that may be missing or not finite: NaN and ±inf are
// written as null, and null reads back as NaN (a metric, a float parameter,
// the best value) or as "no value" where the field is optional (a trial's
// objective value). One rule for integers: an integer that fits int64
// (trials/json_limits.hpp: never wrapped), or an integral float within ±2^53
// (Lua's cjson writes a millisecond time as 1.7330688e+12).
//
// Decoding never throws: a missing or mistyped field is kInvalidArgument
// naming its path ("trial.params.lr"); unknown fields are ignored (a newer
// writer may add some). Dumping never throws either: bytes that are not
// UTF-8 are replaced.
//
// The documents (REST shapes; the Redis store keeps params, metrics, reports,
// attempts and worker entries in exactly these forms, sweeps and trials as
// hashes of their own):
//   Sweep  {"id", "name", "state", "stage", "objective": {"metric", "mode"},
//           "counts": {queued, running, completed, failed, pruned, cancelled},
//           "member_counts": {...}, "best": {"trial_id", "number", "params", "value"} | null,
//           "max_trials", "next_number", "next_member", "created_ms", "finished_ms", "error",
//           "unschedulable", "spec": {...}}
//   Trial  {"id", "sweep_id", "number", "kind", "state", "params", "value" | null, "attempt",
//           "released", "max_attempts", "slots", "worker", "metrics", "error", "control",
//           "created_ms", "started_ms", "finished_ms", "extra"}
//   StepReport {"step", "metrics", "time_ms"}     AttemptRecord {"attempt", "worker",
//           "started_ms", "ended_ms", "outcome", "error"}
//   WorkerInfo {"name", "host", "slots", "busy_slots", "trials", "gpus": [GpuInfo],
//           "last_heartbeat_ms", "started_ms"}   GpuInfo {"index", "name",
//           "memory_total_mb", "memory_used_mb", "utilization_pct"}
//   Event  {"id", "type", "sweep_id", "trial_id", "data"}
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "trials/pareto_front.hpp"
#include "trials/spec/spec.hpp"
#include "trials/trial.hpp"

namespace hpo::trials::record {

// Ordered: objects keep the order they were built or parsed in, so a stored
// spec is shown with its parameters in the order the user wrote them.
using Json = nlohmann::ordered_json;

// The number rule above: a finite v, else null.
Json number_or_null(double v);
// A parameter value: numbers (non-finite ones as null), strings, bools.
Json value_to_json(const search::Value& v);

Json to_json(const search::Params& params);
Json to_json(const Metrics& metrics);
Json to_json(const Counts& counts);
Json to_json(const BestTrial& best);
// [{metric, max?, min?}, ...] (the Redis sweep's `constraints`, the spec's).
Json to_json(const std::vector<MetricBound>& bounds);
// {objectives: [{metric, mode}], reference, hypervolume, counted,
//  front: [{trial_id, number, params, values: {metric: v}}]}
Json to_json(const ParetoFront& front);
// "objective" and "max_trials" come from the sweep's parsed spec (`typed`);
// without it they are empty and 0 (the stored text is never read leniently).
Json to_json(const Sweep& sweep, const SweepSpec* typed = nullptr);
Json to_json(const Trial& trial);
Json to_json(const Annotation& annotation);  // {"tags", "note"}
Json to_json(const AttemptRecord& attempt);
Json to_json(const StepReport& report);
Json to_json(const GpuInfo& gpu);
Json to_json(const WorkerInfo& worker);
Json to_json(const Event& event);  // "data" parsed back into an object when it is JSON

Status from_json(const Json& j, search::Params& out);
Status from_json(const Json& j, Metrics& out);
Status from_json(const Json& j, Counts& out);
Status from_json(const Json& j, BestTrial& out);
Status from_json(const Json& j, Sweep& out);
Status from_json(const Json& j, Trial& out);
Status from_json(const Json& j, Annotation& out);
Status from_json(const Json& j, AttemptRecord& out);
Status from_json(const Json& j, StepReport& out);
Status from_json(const Json& j, GpuInfo& out);
Status from_json(const Json& j, WorkerInfo& out);
Status from_json(const Json& j, Event& out);

// The REST sweep document with what it adds to the record: the objective
// metric and the trial budget (from the spec). What the CLI reads.
struct SweepDocument {
  Sweep sweep;
  std::string metric;
  std::int64_t max_trials = 0;
  std::int64_t members_requested = 0;    // the ensemble stage's members; 0 without one
  std::vector<MetricBound> constraints;  // the spec's (entries that do not decode are left out)
};
Status from_json(const Json& j, SweepDocument& out);

// A list document {"<key>": [...], "total": N} (trials, sweeps, workers).
template <class T>
Status from_json_list(const Json& j, const char* key, std::vector<T>& out) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_array())
    return Error::invalid(key, "expected an array");
  out.clear();
  for (const auto& item : j[key]) {
    T t;
    if (auto s = from_json(item, t); !s) return s;
    out.push_back(std::move(t));
  }
  return {};
}

// Text: parse without exceptions (nesting depth checked first; `what` names
// the text in the error), and dump that never throws.
Result<Json> parse(std::string_view text, const std::string& what);
std::string dump(const Json& j);

// A record from its stored text: parse + from_json, the error naming `what`.
template <class T>
Status from_text(std::string_view text, const std::string& what, T& out) {
  auto j = parse(text, what);
  if (!j) return j.error();
  return from_json(*j, out);
}

}  // namespace hpo::trials::record
