// JSON documents of the REST API, shared by the server (encode) and the `hpo`
// client and tests (decode). Each to_json has a from_json that reads back what
// it wrote, so `hpo status --json` and GET /api/sweeps/{id} are one document.
//
// This is the edge: nlohmann::json appears here and in web/api.cpp only. A
// from_json that meets a missing or mistyped field returns kInvalidArgument
// naming the field; unknown fields are ignored (newer servers may add some).
//
// Sweep document (GET /api/sweeps/{id}):
//   {"id", "name", "state", "stage", "objective": {"metric", "mode"},
//    "counts": {queued, running, completed, failed, pruned, cancelled},
//    "member_counts": {...}, "best": {"trial_id", "number", "params", "value"} | null,
//    "max_trials", "created_ms", "finished_ms", "error", "spec": {...}}
// Trial document: {"id", "sweep_id", "number", "kind", "state", "params", "value" | null,
//    "attempt", "max_attempts", "slots", "worker", "metrics", "error", "control",
//    "created_ms", "started_ms", "finished_ms"}
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trials/result.hpp"
#include "trials/spec.hpp"
#include "trials/store.hpp"
#include "trials/trial.hpp"

namespace hpo::web {

// Ordered: objects keep the order they were built or parsed in, so a stored
// spec is shown with its parameters in the order the user wrote them.
using Json = nlohmann::ordered_json;

Json to_json(const search::Params& params);
Json to_json(const trials::Metrics& metrics);
Json to_json(const trials::Counts& counts);
Json to_json(const trials::BestTrial& best);
// With "spec", "objective", "max_trials"; the objective and budget come from
// `typed` (the sweep's parsed spec) when given, else from a lenient read of
// the stored text.
Json to_json(const trials::Sweep& sweep, const trials::SweepSpec* typed = nullptr);
Json to_json(const trials::Trial& trial);
Json to_json(const trials::AttemptRecord& attempt);
Json to_json(const trials::StepReport& report);
Json to_json(const trials::GpuInfo& gpu);
Json to_json(const trials::WorkerInfo& worker);
Json to_json(const trials::Event& event);  // "data" parsed back into an object when it is JSON

Status from_json(const Json& j, search::Params& out);
Status from_json(const Json& j, trials::Metrics& out);
Status from_json(const Json& j, trials::Counts& out);
Status from_json(const Json& j, trials::BestTrial& out);
Status from_json(const Json& j, trials::Sweep& out);
Status from_json(const Json& j, trials::Trial& out);
Status from_json(const Json& j, trials::AttemptRecord& out);
Status from_json(const Json& j, trials::StepReport& out);
Status from_json(const Json& j, trials::GpuInfo& out);
Status from_json(const Json& j, trials::WorkerInfo& out);
Status from_json(const Json& j, trials::Event& out);

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

// Text helpers: parse without exceptions; dump that never throws on bad UTF-8.
Result<Json> parse_json(std::string_view text);
std::string dump(const Json& j);

// The objective metric and max_trials of a stored spec, read leniently
// (the spec was validated when it was submitted).
struct SpecSummary {
  std::string metric;
  std::int64_t max_trials = 0;
};
SpecSummary summarize_spec(const std::string& spec_json);

}  // namespace hpo::web
