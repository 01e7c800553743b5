// The RedisStore's decoding of the sweep and trial hashes into the domain
// structs, the formatting of its exact numbers, and the reading of refusals:
// the definitions behind redis_store_codec.hpp that are too large to inline.
#include "trials/redis/redis_store_codec.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <utility>

#include "core/log.hpp"
#include "trials/access.hpp"
#include "trials/record_json.hpp"
#include "trials/record_names.hpp"
#include "trials/spec/spec.hpp"

namespace hpo::trials::redis::detail {

namespace {

// The trial hash's control; one this build does not know reads as none.
Control control_of(const Hash& h) {
  return parse_control(get(h, "control")).value_or(Control::kNone);
}

Counts counts_from_hash(const Hash& h, const std::string& kind) {
  Counts counts;
  for (TrialState s : kTrialStateNames.values())
    counts.of(s) = to_i64(get(h, (kind + "." + to_string(s)).c_str()));
  return counts;
}

}  // namespace

Annotation annotation_from_json(const std::string& text) {
  Annotation a;
  auto j = record::Json::parse(text, nullptr, false);
  if (!j.is_discarded()) (void)record::from_json(j, a);
  return a;
}

std::vector<std::string> tags_from_json(const std::string& text) {
  std::vector<std::string> out;
  auto j = record::Json::parse(text, nullptr, false);
  if (j.is_array())
    for (const auto& t : j)
      if (t.is_string()) out.push_back(t.get<std::string>());
  return out;
}

std::string format_double(double v) {
  return fmt::format("{}", v);
}

std::string metrics_to_json(const Metrics& m) {
  return record::dump(record::to_json(m));
}

Result<Trial> trial_from_hash(const Hash& h) {
  Trial t;
  t.id = get(h, "id");
  t.sweep_id = get(h, "sweep");
  t.number = to_i64(get(h, "number"));
  t.role = parse_trial_role(get(h, "kind")).value_or(TrialRole::kTrial);
  auto params = params_from_json(get(h, "params"));
  if (!params) return Error::internal("trial " + t.id + ": bad params: " + params.error().message);
  t.params = std::move(*params);
  auto state = parse_trial_state(get(h, "state"));
  if (!state) return Error::internal("trial " + t.id + ": bad state " + get(h, "state"));
  t.state = *state;
  t.attempt = static_cast<int>(to_i64(get(h, "attempt")));
  t.released = static_cast<int>(to_i64(get(h, "released")));
  t.max_attempts = static_cast<int>(to_i64(get(h, "max_attempts")));
  t.slots = static_cast<int>(to_i64(get(h, "slots")));
  t.worker = get(h, "worker");
  t.created_ms = to_i64(get(h, "created_ms"));
  t.started_ms = to_i64(get(h, "started_ms"));
  t.finished_ms = to_i64(get(h, "finished_ms"));
  if (auto v = h.find("value"); v != h.end() && !v->second.empty())
    t.value = std::strtod(v->second.c_str(), nullptr);
  // Metrics that do not decode are shown as none (and logged): one damaged
  // field must not hide the trial, or the page it is on.
  if (auto m = get(h, "metrics"); !m.empty())
    if (auto st = record::from_text(m, "metrics", t.metrics); !st) {
      log_warn("trial metrics do not decode", {{"trial", t.id}, {"error", st.error().message}});
      t.metrics.clear();
    }
  t.error = get(h, "error");
  t.control = control_of(h);
  t.plan = plan_from_text(get(h, "extra"));
  t.gang = get(h, "gang");
  return t;
}

Result<Sweep> sweep_from_hash(const Hash& h) {
  Sweep s;
  s.id = get(h, "id");
  s.name = get(h, "name");
  auto state = parse_sweep_state(get(h, "state"));
  if (!state) return Error::internal("sweep " + s.id + ": bad state " + get(h, "state"));
  s.state = *state;
  s.spec_json = get(h, "spec");
  s.maximize = get(h, "maximize") == "1";
  s.created_ms = to_i64(get(h, "created_ms"));
  s.finished_ms = to_i64(get(h, "finished_ms"));
  s.next_number = to_i64(get(h, "next_trial"));
  s.next_member = to_i64(get(h, "next_member"));
  // A stage this build does not know (a newer scheduler's) reads as the search.
  s.stage = parse_sweep_stage(get(h, "stage")).value_or(SweepStage::kSearch);
  s.counts = counts_from_hash(h, "trial");
  s.member_counts = counts_from_hash(h, "member");
  s.error = get(h, "error");
  s.unschedulable = get(h, "unschedulable");
  s.project = get(h, "project");
  if (s.project.empty()) s.project = std::string(kDefaultProject);  // before projects existed
  s.owner = get(h, "owner");
  if (auto tags = h.find("tags"); tags != h.end() && !tags->second.empty())
    s.annotation.tags = tags_from_json(tags->second);
  s.annotation.note = get(h, "note");
  s.priority = to_i64(get(h, "priority"));
  if (auto b = h.find("best_trial"); b != h.end() && !b->second.empty()) {
    BestTrial best;
    best.trial_id = b->second;
    best.number = to_i64(get(h, "best_number"));
    auto params = params_from_json(get(h, "best_params"));
    if (params) best.params = std::move(*params);
    best.value = std::strtod(get(h, "best_value").c_str(), nullptr);
    s.best = std::move(best);
  }
  return s;
}

Error refusal(const std::string& text) {
  auto space = text.find(' ');
  std::string code = text.substr(0, space);
  std::string msg = space == std::string::npos ? text : text.substr(space + 1);
  if (code == "NOT_FOUND") return Error::not_found(msg);
  if (code == "CONFLICT") return Error::conflict(msg);
  if (code == "LEASE_LOST") return Error::lease_lost(msg);
  if (code == "INVALID") return Error{ErrorCode::kInvalidArgument, msg, {}};
  if (code == "QUOTA") return Error{ErrorCode::kQuotaExceeded, msg, {}};
  if (code == "UNAUTHORIZED") return Error{ErrorCode::kUnauthorized, msg, {}};
  if (code == "LOADING" || code == "BUSY" || code == "READONLY" || code == "TRYAGAIN" ||
      code == "MASTERDOWN" || code == "OOM")
    return Error::unavailable("redis: " + text);
  return Error::internal("redis: " + text);
}

}  // namespace hpo::trials::redis::detail
