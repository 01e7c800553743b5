// RedisStore's TrialQueue, as the worker and the reaper call it: claims,
// gangs' ranks and rendezvous, the wait for work, heartbeats, reports,
// results, releases and the reaper. The Functions fence each call on a lease
// by its attempt; this file encodes the batches and reads their per-item
// answers. Artifact writes, though fenced the same way, are in
// redis_store_artifacts.cpp.
#include "trials/redis/redis_store.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/log.hpp"
#include "trials/artifact_dir.hpp"
#include "trials/placement.hpp"
#include "trials/redis/redis_store_codec.hpp"

namespace hpo::trials::redis {

using detail::expect_ok;
using detail::format_double;
using detail::get;
using detail::Hash;
using detail::metrics_to_json;
using detail::refusal;
using detail::to_i64;
using detail::trial_from_hash;

// A batch's per-item answer: a refusal's text starts with its code, anything
// else is the success value.
static Result<std::string> item_result(const Reply& r) {
  if (r.is_error()) return refusal(r.str);
  const std::string code = r.str.substr(0, r.str.find(' '));
  if (code == "NOT_FOUND" || code == "CONFLICT" || code == "LEASE_LOST" || code == "INVALID")
    return refusal(r.str);
  return r.str;
}

Result<Claims> RedisStore::claim_batch(const std::string& worker, const Offer& offer,
                                       int max_trials, std::int64_t lease_ms) {
  auto r = fcall("claim_batch", {worker, to_json(offer), std::to_string(max_trials),
                                 std::to_string(lease_ms), std::to_string(config_.claim_scan)});
  if (!r) return r.error();
  if (r->elements.size() < 3) return Error::internal("claim_batch: unexpected reply");
  std::map<std::string, std::string> specs;
  const auto& spec_list = r->elements[1].elements;
  for (std::size_t i = 0; i + 1 < spec_list.size(); i += 2)
    specs[spec_list[i].str] = spec_list[i + 1].str;
  Claims out;
  out.wake_cursor = r->elements[2].str;
  // Each claim is a row of the fields a worker needs, in this order
  // (kClaimFields in functions/03_sweeps_create.lua).
  static constexpr const char* kClaimFields[] = {
      "id",         "sweep",    "number",       "kind",           "params", "state",
      "attempt",    "released", "max_attempts", "slots",          "worker", "created_ms",
      "started_ms", "control",  "extra",        "lease_deadline", "gang",   "placed"};
  constexpr std::size_t kRow = std::size(kClaimFields);
  for (const auto& row : r->elements[0].elements) {
    if (row.elements.size() != kRow) return Error::internal("claim_batch: unexpected claim row");
    Hash h;
    for (std::size_t i = 0; i < row.elements.size(); ++i)
      h.emplace(kClaimFields[i], row.elements[i].str);
    auto t = trial_from_hash(h);
    if (!t) return t.error();
    std::string spec = specs.count(t->sweep_id) ? specs[t->sweep_id] : std::string();
    auto placed = placed_from_text(get(h, "placed"));
    if (!placed) return placed.error();
    out.claims.push_back(Claim{std::move(*t), to_i64(get(h, "lease_deadline")), std::move(spec),
                               std::move(placed->slots), std::move(placed->devices),
                               placed->devices_named});
  }
  if (r->elements.size() > 3)
    for (const auto& share : r->elements[3].elements) {
      if (share.elements.size() != 3) return Error::internal("claim_batch: unexpected rank share");
      auto s = rank_share_from_json(share.elements[0].str);
      if (!s) return s.error();
      s->spec_json = share.elements[1].str;
      auto placed = placed_from_text(share.elements[2].str);
      if (!placed) return placed.error();
      s->slots = std::move(placed->slots);
      s->devices = std::move(placed->devices);
      s->devices_named = placed->devices_named;
      out.ranks.push_back(std::move(*s));
    }
  return out;
}

Result<bool> RedisStore::rank_heartbeat(const std::string& trial_id, int attempt,
                                        const std::string& worker, std::int64_t lease_ms) {
  auto r = fcall("rank_heartbeat",
                 {trial_id, std::to_string(attempt), worker, std::to_string(lease_ms)});
  if (!r) return r.error();
  return r->integer == 1;
}

Result<bool> RedisStore::release_gang(const std::string& trial_id, int attempt,
                                      const std::string& worker) {
  auto r = fcall("release_gang", {trial_id, std::to_string(attempt), worker});
  if (!r) return r.error();
  return r->integer == 1;
}

Status RedisStore::publish_rendezvous(const std::string& trial_id, int attempt,
                                      const std::string& worker, const std::string& address,
                                      std::int64_t ttl_ms) {
  auto r = fcall("publish_rendezvous",
                 {trial_id, std::to_string(attempt), worker, address, std::to_string(ttl_ms)});
  if (!r) return r.error();
  return {};
}

Result<std::optional<std::string>> RedisStore::rendezvous(const std::string& trial_id, int attempt,
                                                          const std::string& worker) {
  auto r = fcall("rendezvous", {trial_id, std::to_string(attempt), worker});
  if (!r) return r.error();
  if (r->is_nil() || r->str.empty()) return std::optional<std::string>{};
  return std::optional<std::string>{r->str};
}

Result<bool> RedisStore::wait_for_work(const std::string& cursor, int block_ms) {
  const int block = std::max(1, block_ms);
  auto r = client_.command({"XREAD", "COUNT", "1", "BLOCK", std::to_string(block), "STREAMS",
                            key("wake"), cursor.empty() ? "$" : cursor},
                           config_.command_timeout + std::chrono::milliseconds(block));
  if (!r) return r.error();
  if (r->is_error()) return refusal(r->str);
  return !r->is_nil();
}

Result<std::vector<Result<Control>>> RedisStore::heartbeat_batch(
    const std::string& worker, const std::vector<HeldLease>& leases, std::int64_t lease_ms) {
  std::vector<Result<Control>> out;
  if (leases.empty()) return out;
  std::vector<std::string> args{worker, std::to_string(lease_ms), std::to_string(leases.size())};
  args.reserve(args.size() + 2 * leases.size());
  for (const auto& l : leases) {
    args.push_back(l.trial_id);
    args.push_back(std::to_string(l.attempt));
  }
  auto r = fcall("heartbeat_batch", std::move(args));
  if (!r) return r.error();
  if (r->elements.size() != leases.size())
    return Error::internal("heartbeat_batch: unexpected reply");
  out.reserve(leases.size());
  for (const auto& e : r->elements) {
    auto text = item_result(e);
    if (!text)
      out.emplace_back(text.error());
    else
      out.emplace_back(parse_control(*text).value_or(Control::kNone));
  }
  return out;
}

Result<Control> RedisStore::report_batch(const std::string& trial_id, int attempt,
                                         const std::string& worker,
                                         const std::vector<StepReport>& reports) {
  std::vector<std::string> args{
      trial_id, std::to_string(attempt), worker,
      std::to_string(std::max<std::int64_t>(0, config_.max_reports_per_trial)),
      std::to_string(reports.size())};
  args.reserve(args.size() + 2 * reports.size());
  for (const auto& rep : reports) {
    args.push_back(std::to_string(rep.step));
    args.push_back(metrics_to_json(rep.metrics));
  }
  auto r = fcall("report", args);
  if (!r) return r.error();
  return parse_control(r->str).value_or(Control::kNone);
}

Result<std::vector<Status>> RedisStore::complete_batch(const std::string& worker,
                                                       const std::vector<Completion>& done) {
  std::vector<Status> out;
  if (done.empty()) return out;
  std::vector<std::string> args{worker, std::to_string(done.size())};
  args.reserve(args.size() + 8 * done.size());
  for (const auto& c : done) {
    const TrialResult& result = c.result;
    std::string value;
    if (result.value && std::isfinite(*result.value)) value = format_double(*result.value);
    args.push_back(c.trial_id);
    args.push_back(std::to_string(c.attempt));
    args.push_back(to_string(result.outcome));
    args.push_back(std::move(value));
    args.push_back(metrics_to_json(result.metrics));
    args.push_back(result.error);
    args.push_back(result.retryable ? "1" : "0");
    // A log over the artifact limit is kept in part (its end: the newest lines).
    const auto max =
        static_cast<std::size_t>(std::max<std::int64_t>(0, config_.max_artifact_bytes));
    args.push_back(encode_inline(c.log.size() > max ? c.log.substr(c.log.size() - max) : c.log));
  }
  auto r = fcall("complete_batch", std::move(args));
  if (!r) return r.error();
  // Sent again after a shortfall, what was accepted is refused the second time.
  if (auto st = replicated(fmt::format("{} results", done.size())); !st) return st.error();
  if (r->elements.size() != done.size()) return Error::internal("complete_batch: unexpected reply");
  out.reserve(done.size());
  for (std::size_t i = 0; i < done.size(); ++i) {
    auto text = item_result(r->elements[i]);
    if (text) {
      out.emplace_back();
      continue;
    }
    if (text.error().code == ErrorCode::kLeaseLost)
      log_warn("stale result refused", {{"trial", done[i].trial_id},
                                        {"attempt", std::to_string(done[i].attempt)},
                                        {"worker", worker},
                                        {"outcome", to_string(done[i].result.outcome)},
                                        {"reason", text.error().message}});
    out.emplace_back(text.error());
  }
  return out;
}

Status RedisStore::release(const std::string& trial_id, int attempt, const std::string& worker,
                           const std::string& reason, bool counted) {
  if (auto st = expect_ok(fcall(
          "release", {trial_id, std::to_string(attempt), worker, reason, counted ? "1" : "0"}));
      !st)
    return st;
  return replicated("the release of trial " + trial_id);
}

Result<std::vector<HeldLease>> RedisStore::worker_leases(const std::string& worker) {
  auto r = fcall("worker_leases", {worker});
  if (!r) return r.error();
  std::vector<HeldLease> out;
  for (size_t i = 0; i + 1 < r->elements.size(); i += 2)
    out.push_back({r->elements[i].str, static_cast<int>(to_i64(r->elements[i + 1].str))});
  return out;
}

Result<int> RedisStore::reap(int max, std::int64_t outage_ms) {
  auto r = fcall("reap", {std::to_string(std::max(1, max)),
                          std::to_string(std::max<std::int64_t>(0, outage_ms))});
  if (!r) return r.error();
  return static_cast<int>(r->integer);
}

}  // namespace hpo::trials::redis
