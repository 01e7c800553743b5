#include "workers/torch/rank_job.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "trials/json_limits.hpp"
#include "trials/spec/spec.hpp"

namespace hpo::workers::torch_trainer {
namespace {

using Json = nlohmann::json;

Result<Json> object_of(std::string_view text, const char* what) {
  if (auto st = trials::check_json_depth(text, what); !st) return st.error();
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error::invalid(what, "expected a JSON object");
  return j;
}

// Reads `key` of `j` into `out` when present; a value of the wrong type is an error.
template <class T>
Status read(const Json& j, const char* key, T& out, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  try {
    out = it->get<T>();
  } catch (const Json::exception&) {
    return Error::invalid(where + "." + key, "has the wrong type");
  }
  return {};
}

}  // namespace

std::string encode_rank_job(const RankJob& job) {
  const auto& t = job.trial;
  Json j{{"spec", job.spec},
         {"trial",
          {{"id", t.id},
           {"sweep_id", t.sweep_id},
           {"kind", trials::to_string(t.role)},
           {"attempt", t.attempt},
           {"params", Json::parse(trials::params_to_json(t.params))},
           {"extra", trials::plan_json(t.plan, t.sweep_id)}}},
         {"world", job.world},
         {"threads", job.threads},
         {"first_rank", job.first_rank},
         {"gpus", job.gpus},
         {"store", job.store},
         {"address", job.address},
         {"out", job.out},
         {"timeout_ms", job.timeout_ms},
         {"data_roots", job.data_roots},
         {"dataset_cache", job.dataset_cache},
         {"resume", job.resume}};
  return j.dump();
}

Result<RankJob> decode_rank_job(std::string_view text) {
  auto j = object_of(text, "job");
  if (!j) return j.error();
  RankJob job;
  for (Status st :
       {read(*j, "spec", job.spec, "job"), read(*j, "world", job.world, "job"),
        read(*j, "threads", job.threads, "job"), read(*j, "gpus", job.gpus, "job"),
        read(*j, "first_rank", job.first_rank, "job"), read(*j, "address", job.address, "job"),
        read(*j, "store", job.store, "job"), read(*j, "out", job.out, "job"),
        read(*j, "timeout_ms", job.timeout_ms, "job"),
        read(*j, "data_roots", job.data_roots, "job"),
        read(*j, "dataset_cache", job.dataset_cache, "job"), read(*j, "resume", job.resume, "job")})
    if (!st) return st.error();
  const auto t = j->find("trial");
  if (t == j->end() || !t->is_object()) return Error::invalid("job.trial", "expected an object");
  auto& trial = job.trial;
  for (Status st :
       {read(*t, "id", trial.id, "job.trial"), read(*t, "sweep_id", trial.sweep_id, "job.trial"),
        read(*t, "attempt", trial.attempt, "job.trial")})
    if (!st) return st.error();
  if (auto e = t->find("extra"); e != t->end()) trial.plan = trials::plan_from_json(*e);
  trial.role =
      trials::parse_trial_role(t->value("kind", "trial")).value_or(trials::TrialRole::kTrial);
  auto params = trials::params_from_json(t->value("params", Json::object()).dump());
  if (!params) return params.error();
  trial.params = std::move(params).value();
  if (job.world < 1) return Error::invalid("job.world", "must be at least 1");
  return job;
}

std::string encode_rank_result(const RankResult& r) {
  Json metrics = Json::object();
  for (const auto& [k, v] : r.metrics)
    if (std::isfinite(v)) metrics[k] = v;  // one rule: a metric that is not finite is left out
  return Json{{"end", r.end},
              {"error", r.error},
              {"retryable", r.retryable},
              {"metrics", metrics},
              {"artifacts", r.artifacts}}
      .dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<RankResult> decode_rank_result(std::string_view text) {
  auto j = object_of(text, "result");
  if (!j) return j.error();
  RankResult r;
  for (Status st :
       {read(*j, "end", r.end, "result"), read(*j, "error", r.error, "result"),
        read(*j, "retryable", r.retryable, "result"), read(*j, "artifacts", r.artifacts, "result")})
    if (!st) return st.error();
  if (auto m = j->find("metrics"); m != j->end() && m->is_object())
    for (auto it = m->begin(); it != m->end(); ++it)
      if (it->is_number()) r.metrics[it.key()] = it->get<double>();
  return r;
}

}  // namespace hpo::workers::torch_trainer
