// RedisStore's TrialStore: creating a batch of trials (one Function call) and
// the plain reads of trials, their reports and their attempts (HGETALL, LRANGE
// and pipelines of them), and a trial's control. The records a worker writes
// while it holds a lease are in redis_store_queue.cpp.
#include "trials/redis/redis_store.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trials/record_json.hpp"
#include "trials/redis/redis_store_codec.hpp"
#include "trials/spec/spec.hpp"

namespace hpo::trials::redis {

using detail::expect_ok;
using detail::refusal;
using detail::to_hash;
using detail::to_i64;
using detail::trial_from_hash;

Result<std::vector<Trial>> RedisStore::create_trials(const std::vector<NewTrial>& trials) {
  if (trials.empty()) return std::vector<Trial>{};
  if (auto st = check_new_trials(trials); !st) return st.error();
  const NewTrial& first = trials.front();
  std::vector<std::string> args{first.sweep_id, to_string(first.role), std::to_string(first.number),
                                std::to_string(first.limit), std::to_string(trials.size())};
  args.reserve(args.size() + 4 * trials.size());
  for (const auto& t : trials) {
    args.push_back(params_to_json(t.params));
    args.push_back(std::to_string(std::max(1, t.max_attempts)));
    args.push_back(std::to_string(std::max(1, t.slots)));
    args.push_back(plan_to_json(t.plan, t.sweep_id));
  }
  auto r = fcall("create_trials", std::move(args));
  if (!r) return r.error();
  const auto& e = r->elements;
  // Fewer than asked where the project's max_queued_trials stops the rest.
  if (e.size() < 2 || e.size() > trials.size() + 1)
    return Error::internal("create_trials: unexpected reply of " + std::to_string(e.size()));
  const std::int64_t created_ms = to_i64(e[0].str);
  std::vector<Trial> out;
  out.reserve(e.size() - 1);
  for (std::size_t i = 0; i + 1 < e.size(); ++i) {
    const NewTrial& nt = trials[i];
    Trial t;
    t.id = e[i + 1].str;
    t.sweep_id = nt.sweep_id;
    t.number = first.number + static_cast<std::int64_t>(i);
    t.role = nt.role;
    t.params = nt.params;
    t.max_attempts = std::max(1, nt.max_attempts);
    t.slots = std::max(1, nt.slots);
    t.created_ms = created_ms;
    t.plan = nt.plan;
    out.push_back(std::move(t));
  }
  return out;
}

Result<std::vector<Trial>> RedisStore::get_trials(const std::vector<std::string>& trial_ids) {
  std::vector<Trial> out;
  if (trial_ids.empty()) return out;
  std::vector<std::vector<std::string>> cmds;
  cmds.reserve(trial_ids.size());
  for (const auto& id : trial_ids) cmds.push_back({"HGETALL", key("trial:" + id)});
  auto r = client_.pipeline(cmds);
  if (!r) return r.error();
  out.reserve(trial_ids.size());
  for (const auto& reply : *r) {
    if (reply.is_error()) return refusal(reply.str);
    if (reply.elements.empty()) continue;  // no such trial (deleted)
    auto t = trial_from_hash(to_hash(reply));
    if (!t) return t.error();
    out.push_back(std::move(*t));
  }
  return out;
}

Result<Trial> RedisStore::get_trial(const std::string& trial_id) {
  auto r = client_.command({"HGETALL", key("trial:" + trial_id)});
  if (!r) return r.error();
  if (r->is_error()) return refusal(r->str);
  if (r->elements.empty()) return Error::not_found("trial " + trial_id);
  return trial_from_hash(to_hash(*r));
}

Result<TrialPage> RedisStore::list_trials(const std::string& sweep_id, TrialRole role,
                                          std::int64_t offset, std::int64_t limit) {
  std::string list = key("trials:" + sweep_id + ":" + to_string(role));
  offset = std::max<std::int64_t>(0, offset);
  auto r = client_.pipeline({{"LLEN", list},
                             {"LRANGE", list, std::to_string(offset),
                              std::to_string(offset + std::max<std::int64_t>(0, limit) - 1)}});
  if (!r) return r.error();
  TrialPage page;
  page.total = (*r)[0].integer;
  if (limit <= 0) return page;
  std::vector<std::vector<std::string>> cmds;
  for (const auto& id : (*r)[1].elements) cmds.push_back({"HGETALL", key("trial:" + id.str)});
  if (cmds.empty()) return page;
  auto hashes = client_.pipeline(cmds);
  if (!hashes) return hashes.error();
  for (const auto& h : *hashes) {
    auto t = trial_from_hash(to_hash(h));
    if (!t) return t.error();
    page.trials.push_back(std::move(*t));
  }
  return page;
}

Result<ReportPage> RedisStore::get_reports(const std::string& trial_id, std::int64_t offset,
                                           std::int64_t limit) {
  ReportPage page;
  const std::string rkey = key("reports:" + trial_id);
  auto n = client_.command({"LLEN", rkey});
  if (!n) return n.error();
  if (n->is_error()) return refusal(n->str);
  page.total = n->integer;
  offset = std::max<std::int64_t>(offset, 0);
  if (limit <= 0 || offset >= page.total) return page;
  // Reports are only appended: the range read after LLEN is within the count.
  const std::int64_t last = std::min(page.total, offset + limit) - 1;
  auto r = client_.command({"LRANGE", rkey, std::to_string(offset), std::to_string(last)});
  if (!r) return r.error();
  if (r->is_error()) return refusal(r->str);
  for (const auto& e : r->elements) {
    StepReport rep;
    if (auto st = record::from_text(e.str, "report", rep); !st)
      return Error::internal("bad report of " + trial_id + ": " + st.error().message);
    page.reports.push_back(std::move(rep));
  }
  return page;
}

Result<std::vector<AttemptRecord>> RedisStore::get_attempts(const std::string& trial_id) {
  // The ended attempts are stored; the running one is the trial itself.
  auto r = client_.pipeline(
      {{"LRANGE", key("attempts:" + trial_id), "0", "-1"},
       {"HMGET", key("trial:" + trial_id), "state", "attempt", "worker", "started_ms"}});
  if (!r) return r.error();
  const Reply& list = (*r)[0];
  const Reply& now = (*r)[1];
  if (list.is_error()) return refusal(list.str);
  if (now.is_error()) return refusal(now.str);
  std::vector<AttemptRecord> out;
  for (const auto& e : list.elements) {
    AttemptRecord a;
    if (auto st = record::from_text(e.str, "attempt", a); !st)
      return Error::internal("bad attempt record of " + trial_id + ": " + st.error().message);
    out.push_back(std::move(a));
  }
  if (now.elements.size() == 4 && now.elements[0].str == "running") {
    const int attempt = static_cast<int>(to_i64(now.elements[1].str));
    if (out.empty() || out.back().attempt != attempt)  // earlier versions stored it at the claim
      out.push_back(AttemptRecord{attempt, now.elements[2].str, to_i64(now.elements[3].str), 0,
                                  "running", ""});
  }
  return out;
}

Status RedisStore::set_control(const std::string& trial_id, Control control) {
  if (auto st = expect_ok(fcall("set_control", {trial_id, to_string(control)})); !st) return st;
  return replicated("the " + std::string(to_string(control)) + " of trial " + trial_id);
}

}  // namespace hpo::trials::redis
