// RedisStore's SweepStore: creating and importing sweeps (each under a fresh
// random id), reading them back from their hashes, and the transitions that
// end, stage, park or delete one. Kept apart from the trials' records so the
// sweep's life reads in one place.
#include "trials/redis/redis_store.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/log.hpp"
#include "trials/placement.hpp"
#include "trials/record_json.hpp"
#include "trials/redis/redis_store_codec.hpp"
#include "trials/spec/spec.hpp"

namespace hpo::trials::redis {

using detail::expect_ok;
using detail::format_double;
using detail::metrics_to_json;
using detail::refusal;
using detail::sweep_from_hash;
using detail::to_hash;

namespace {

std::string random_sweep_id() {
  std::random_device rd;  // /dev/urandom on Linux
  return fmt::format("{:08x}", static_cast<std::uint32_t>(rd()));
}

}  // namespace

Result<std::string> RedisStore::create_sweep(const NewSweep& sweep) {
  for (int tries = 0; tries < 8; ++tries) {
    std::string id = random_sweep_id();
    auto r = fcall(
        "create_sweep",
        {id, sweep.name, sweep.spec_json, sweep.maximize ? "1" : "0", sweep.idempotency_key,
         std::to_string(std::max<std::int64_t>(1, sweep.idempotency_ttl_s)), to_json(sweep.needs),
         sweep.constraints.empty() ? "" : record::dump(record::to_json(sweep.constraints)),
         sweep.project, sweep.owner});
    if (r) {  // ours, or the first sweep made with the same idempotency key
      if (auto st = replicated("sweep " + r->str); !st) return st.error();
      return r->str;
    }
    // Only a taken id is worth another random one.
    if (r.error().code != ErrorCode::kConflict || r.error().message.rfind("sweep id ", 0) != 0)
      return r.error();
  }
  return Error::internal("could not find a free sweep id");
}

Result<std::string> RedisStore::import_sweep(const NewSweep& sweep,
                                             const std::vector<ImportedTrial>& trials) {
  const std::string digest = import_digest(trials);
  for (int tries = 0; tries < 8; ++tries) {
    std::vector<std::string> args{
        random_sweep_id(),
        sweep.name,
        sweep.spec_json,
        sweep.maximize ? "1" : "0",
        sweep.idempotency_key,
        std::to_string(std::max<std::int64_t>(1, sweep.idempotency_ttl_s)),
        to_json(sweep.needs),
        sweep.constraints.empty() ? "" : record::dump(record::to_json(sweep.constraints)),
        sweep.project,
        sweep.owner,
        digest,
        std::to_string(trials.size())};
    args.reserve(args.size() + 8 * trials.size());
    for (const auto& t : trials) {
      args.push_back(params_to_json(t.params));
      args.push_back(to_string(t.state));
      args.push_back(t.value && std::isfinite(*t.value) ? format_double(*t.value) : "");
      args.push_back(t.metrics.empty() ? "" : metrics_to_json(t.metrics));
      args.push_back(t.error);
      args.push_back(t.worker);
      args.push_back(std::to_string(std::max<std::int64_t>(0, t.started_ms)));
      args.push_back(std::to_string(std::max<std::int64_t>(0, t.finished_ms)));
    }
    auto r = fcall("import_sweep", std::move(args));
    if (r) {
      if (auto st = replicated("sweep " + r->str); !st) return st.error();
      return r->str;
    }
    if (r.error().code != ErrorCode::kConflict || r.error().message.rfind("sweep id ", 0) != 0)
      return r.error();
  }
  return Error::internal("could not find a free sweep id");
}

Result<Sweep> RedisStore::get_sweep(const std::string& sweep_id) {
  auto r = client_.command({"HGETALL", key("sweep:" + sweep_id)});
  if (!r) return r.error();
  if (r->is_error()) return refusal(r->str);
  if (r->elements.empty()) return Error::not_found("sweep " + sweep_id);
  return sweep_from_hash(to_hash(*r));
}

Result<std::vector<Sweep>> RedisStore::list_sweeps(std::int64_t offset, std::int64_t limit) {
  if (limit <= 0) return std::vector<Sweep>{};
  auto ids =
      client_.command({"ZREVRANGE", key("sweeps"), std::to_string(std::max<int64_t>(0, offset)),
                       std::to_string(std::max<int64_t>(0, offset) + limit - 1)});
  if (!ids) return ids.error();
  if (ids->is_error()) return refusal(ids->str);
  return sweeps_of(*ids);
}

Result<std::vector<Sweep>> RedisStore::list_sweeps_in(const std::vector<std::string>& projects,
                                                      std::int64_t offset, std::int64_t limit) {
  if (limit <= 0 || projects.empty()) return std::vector<Sweep>{};
  std::vector<std::string> args{std::to_string(std::max<int64_t>(0, offset)),
                                std::to_string(limit)};
  args.insert(args.end(), projects.begin(), projects.end());
  auto ids = fcall("list_sweeps_in", std::move(args));
  if (!ids) return ids.error();
  return sweeps_of(*ids);
}

Result<std::string> RedisStore::sweep_project(const std::string& sweep_id) {
  auto r = client_.command({"HMGET", key("sweep:" + sweep_id), "id", "project"});
  if (!r) return r.error();
  if (r->is_error()) return refusal(r->str);
  if (r->elements.size() != 2 || r->elements[0].is_nil())
    return Error::not_found("sweep " + sweep_id);
  if (r->elements[1].is_nil() || r->elements[1].str.empty()) return std::string(kDefaultProject);
  return r->elements[1].str;
}

Result<std::vector<Sweep>> RedisStore::sweeps_of(const Reply& ids) {
  std::vector<std::vector<std::string>> cmds;
  for (const auto& id : ids.elements) cmds.push_back({"HGETALL", key("sweep:" + id.str)});
  std::vector<Sweep> out;
  if (cmds.empty()) return out;
  auto hashes = client_.pipeline(cmds);
  if (!hashes) return hashes.error();
  for (const auto& h : *hashes) {
    if (h.elements.empty()) continue;
    auto s = sweep_from_hash(to_hash(h));
    if (!s) return s.error();
    out.push_back(std::move(*s));
  }
  return out;
}

Result<std::vector<std::string>> RedisStore::active_sweeps() {
  auto r = client_.command({"SMEMBERS", key("sweeps:active")});
  if (!r) return r.error();
  if (r->is_error()) return refusal(r->str);
  std::vector<std::string> out;
  for (const auto& e : r->elements) out.push_back(e.str);
  return out;
}

Status RedisStore::finish_sweep(const std::string& sweep_id, SweepState state,
                                const std::string& error) {
  return expect_ok(fcall("finish_sweep", {sweep_id, to_string(state), error}));
}

Status RedisStore::cancel_sweep(const std::string& sweep_id) {
  if (auto st = expect_ok(fcall("cancel_sweep", {sweep_id})); !st) return st;
  return replicated("the cancel of sweep " + sweep_id);
}

Status RedisStore::set_stage(const std::string& sweep_id, SweepStage from, SweepStage to) {
  return expect_ok(fcall("set_stage", {sweep_id, to_string(from), to_string(to)}));
}

Status RedisStore::set_unschedulable(const std::string& sweep_id, const std::string& reason) {
  return expect_ok(fcall("set_unschedulable", {sweep_id, reason}));
}

Status RedisStore::delete_sweep(const std::string& sweep_id) {
  // Chunks keep each call short: Redis runs one script at a time.
  for (;;) {
    auto r = fcall("delete_sweep", {sweep_id, "500"});
    if (!r) return r.error();
    if (r->integer != 0) continue;
    if (files_)
      if (auto st = files_->remove_sweep(sweep_id); !st)
        log_warn("the sweep is deleted, its artifact files not all",
                 {{"sweep", sweep_id}, {"error", st.error().message}});
    return replicated("the deletion of sweep " + sweep_id);
  }
}

Status RedisStore::annotate(const std::string& sweep_id, const std::string& trial_id,
                            const Annotation& annotation) {
  if (auto st = check_annotation(annotation); !st) return st;
  return expect_ok(
      fcall("annotate",
            {sweep_id, trial_id, record::dump(record::Json(annotation.tags)), annotation.note}));
}

Status RedisStore::set_priority(const std::string& sweep_id, std::int64_t priority) {
  return expect_ok(fcall("set_priority", {sweep_id, std::to_string(priority)}));
}

Result<std::map<std::string, Annotation>> RedisStore::trial_annotations(
    const std::string& sweep_id) {
  auto r = client_.command({"HGETALL", key("notes:" + sweep_id)});
  if (!r) return r.error();
  if (r->is_error()) return refusal(r->str);
  std::map<std::string, Annotation> out;
  for (std::size_t i = 0; i + 1 < r->elements.size(); i += 2)
    out[r->elements[i].str] = detail::annotation_from_json(r->elements[i + 1].str);
  return out;
}

}  // namespace hpo::trials::redis
