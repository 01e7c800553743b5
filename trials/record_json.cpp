// Every from_json is a flat list of fields read through one Reader (the one
// field reader of trials/json_fields.hpp with the record rules on top), so
// the error names the field the way parse_spec does.
#include "trials/record_json.hpp"

#include <cmath>
#include <limits>

#include "trials/json_fields.hpp"
#include "trials/json_limits.hpp"
#include "trials/record_names.hpp"

namespace hpo::trials::record {

Json number_or_null(double v) {
  return std::isfinite(v) ? Json(v) : Json(nullptr);
}

Json value_to_json(const search::Value& v) {
  return std::visit(
      [](const auto& x) -> Json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, double>)
          return number_or_null(x);
        else
          return Json(x);
      },
      v);
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A record's fields through the one field reader (trials/json_fields.hpp),
// plus the record codec's own rules: null reads as NaN for a number, as no
// value for an optional one; a nested record or list decodes with its own
// from_json. The first problem becomes the Error (with its path).
class Reader {
 public:
  Reader(const Json& j, const char* what)
      : j_(j.is_object() ? j : empty()), fields_(j_, what, errors_) {
    if (!j.is_object()) fields_.expected(what, "an object", j);
  }

  void str(const char* key, std::string& out, bool required = true) {
    if (auto v = fields_.string(key, required)) out = std::move(*v);
  }
  template <class Int>
  void integer(const char* key, Int& out, bool required = true) {
    if (auto v = fields_.integer(key, std::numeric_limits<Int>::min(),
                                 std::numeric_limits<Int>::max(), required))
      out = static_cast<Int>(*v);
  }
  // The number rule: null reads as NaN.
  void number(const char* key, double& out, bool required = true) {
    if (const Json* v = raw(key); v && v->is_null()) {
      fields_.mark_seen(key);
      out = kNaN;
    } else if (auto d = fields_.number(key, required)) {
      out = *d;
    }
  }
  void boolean(const char* key, bool& out) {
    if (auto v = fields_.boolean(key)) out = *v;
  }
  void mark_seen(const char* key) { fields_.mark_seen(key); }
  // Null or absent: no value.
  void optional_number(const char* key, std::optional<double>& out) { out = fields_.number(key); }
  template <class T>
  void nested(const char* key, T& out, bool required = true) {
    if (const Json* v = fields_.get(key, required))
      if (auto s = from_json(*v, out); !s) fields_.error(fields_.at(key), s.error().message);
  }
  template <class T>
  void list(const char* key, std::vector<T>& out, bool required = true) {
    const Json* v = fields_.array(key, required);
    if (!v) return;
    out.clear();
    for (std::size_t i = 0; i < v->size(); ++i) {
      const Json& item = (*v)[i];
      const std::string path = OrderedFieldReader::item(fields_.at(key), i);
      T t;
      if constexpr (std::is_same_v<T, std::string>) {
        if (!item.is_string()) return fields_.expected(path, "a string", item);
        t = item.template get<std::string>();
      } else if (auto s = from_json(item, t); !s) {
        return fields_.error(path, s.error().message);
      }
      out.push_back(std::move(t));
    }
  }
  // The member as it is (null included), without checks.
  const Json* raw(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  void fail(const std::string& key, const std::string& message) {
    fields_.error(key.empty() ? fields_.path() : fields_.at(key), message);
  }
  Status status() const {
    if (errors_.empty()) return {};
    return Error::invalid(errors_.front().path, errors_.front().message);
  }

 private:
  static const Json& empty() {
    static const Json kEmpty = Json::object();
    return kEmpty;
  }

  const Json& j_;
  std::vector<FieldError> errors_;
  OrderedFieldReader fields_;
};

}  // namespace

Result<Json> parse(std::string_view text, const std::string& what) {
  if (auto st = check_json_depth(text, what); !st) return st.error();
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error::invalid(what, "is not valid JSON");
  return j;
}

std::string dump(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// --- encode -----------------------------------------------------------------

Json to_json(const search::Params& params) {
  Json j = Json::object();
  for (const auto& [k, v] : params) j[k] = value_to_json(v);
  return j;
}

Json to_json(const Metrics& metrics) {
  Json j = Json::object();
  for (const auto& [k, v] : metrics) j[k] = number_or_null(v);
  return j;
}

Json to_json(const Counts& c) {
  Json out = Json::object();
  for (TrialState s : kTrialStateNames.values()) out[to_string(s)] = c.of(s);
  return out;
}

Json to_json(const BestTrial& b) {
  return {{"trial_id", b.trial_id},
          {"number", b.number},
          {"params", to_json(b.params)},
          {"value", number_or_null(b.value)}};
}

Json to_json(const std::vector<MetricBound>& bounds) {
  Json out = Json::array();
  for (const MetricBound& b : bounds) {
    Json j = {{"metric", b.metric}};
    if (b.max) j["max"] = *b.max;
    if (b.min) j["min"] = *b.min;
    out.push_back(std::move(j));
  }
  return out;
}

Json to_json(const ParetoFront& p) {
  Json objectives = Json::array(), reference = Json::array(), front = Json::array();
  for (std::size_t k = 0; k < p.objectives.size(); ++k) {
    objectives.push_back(
        {{"metric", p.objectives[k].metric}, {"mode", p.objectives[k].maximize ? "max" : "min"}});
    reference.push_back(number_or_null(k < p.reference.size() ? p.reference[k] : NAN));
  }
  for (const auto& m : p.front) {
    Json values = Json::object();
    for (std::size_t k = 0; k < p.objectives.size() && k < m.values.size(); ++k)
      values[p.objectives[k].metric] = number_or_null(m.values[k]);
    front.push_back({{"trial_id", m.trial_id},
                     {"number", m.number},
                     {"params", to_json(m.params)},
                     {"values", std::move(values)}});
  }
  return {{"objectives", std::move(objectives)},
          {"reference", std::move(reference)},
          {"hypervolume", number_or_null(p.hypervolume)},
          {"hypervolume_exact", p.hypervolume_exact},
          {"hypervolume_std_error", number_or_null(p.hypervolume_std_error)},
          {"counted", p.counted},
          {"front", std::move(front)}};
}

Json to_json(const Sweep& s, const SweepSpec* typed) {
  const std::string metric = typed ? typed->objective.metric : "";
  const std::int64_t max_trials = typed ? typed->search.max_trials : 0;
  const std::int64_t members = typed && typed->ensemble ? typed->ensemble->members : 0;
  Json spec = Json::parse(s.spec_json, nullptr, false);
  if (spec.is_discarded()) spec = nullptr;
  return {{"id", s.id},
          {"name", s.name},
          {"state", to_string(s.state)},
          {"stage", to_string(s.stage)},
          {"objective", {{"metric", metric}, {"mode", s.maximize ? "max" : "min"}}},
          {"counts", to_json(s.counts)},
          {"member_counts", to_json(s.member_counts)},
          {"best", s.best ? to_json(*s.best) : Json(nullptr)},
          {"max_trials", max_trials},
          {"members_requested", members},
          {"next_number", s.next_number},
          {"next_member", s.next_member},
          {"created_ms", s.created_ms},
          {"finished_ms", s.finished_ms},
          {"error", s.error},
          {"unschedulable", s.unschedulable},
          {"project", s.project},
          {"owner", s.owner},
          {"tags", s.annotation.tags},
          {"note", s.annotation.note},
          {"priority", s.priority},
          {"spec", spec}};
}

Json to_json(const Trial& t) {
  // A data-parallel attempt across workers: which ranks run where.
  Json gang = t.gang.empty() ? Json(nullptr) : Json::parse(t.gang, nullptr, false);
  if (gang.is_discarded()) gang = nullptr;
  return {{"id", t.id},
          {"sweep_id", t.sweep_id},
          {"number", t.number},
          {"kind", to_string(t.role)},
          {"state", to_string(t.state)},
          {"params", to_json(t.params)},
          {"value", t.value ? number_or_null(*t.value) : Json(nullptr)},
          {"attempt", t.attempt},
          {"released", t.released},
          {"max_attempts", t.max_attempts},
          {"slots", t.slots},
          {"worker", t.worker},
          {"metrics", to_json(t.metrics)},
          {"error", t.error},
          {"control", to_string(t.control)},
          {"created_ms", t.created_ms},
          {"started_ms", t.started_ms},
          {"finished_ms", t.finished_ms},
          {"extra", plan_json(t.plan, t.sweep_id)},
          {"gang", gang}};
}

Json to_json(const AttemptRecord& a) {
  return {{"attempt", a.attempt},   {"worker", a.worker},   {"started_ms", a.started_ms},
          {"ended_ms", a.ended_ms}, {"outcome", a.outcome}, {"error", a.error}};
}

Json to_json(const StepReport& r) {
  return {{"step", r.step}, {"metrics", to_json(r.metrics)}, {"time_ms", r.time_ms}};
}

Json to_json(const GpuInfo& g) {
  Json j{{"index", g.index},
         {"name", g.name},
         {"memory_total_mb", g.memory_total_mb},
         {"memory_used_mb", g.memory_used_mb},
         {"utilization_pct", g.utilization_pct}};
  if (!g.uuid.empty()) j["uuid"] = g.uuid;
  return j;
}

Json to_json(const WorkerInfo& w) {
  Json gpus = Json::array();
  for (const auto& g : w.gpus) gpus.push_back(to_json(g));
  return {{"name", w.name},
          {"host", w.host},
          {"slots", w.slots},
          {"busy_slots", w.busy_slots},
          {"trials", w.trials},
          {"gpus", gpus},
          {"last_heartbeat_ms", w.last_heartbeat_ms},
          {"started_ms", w.started_ms},
          {"torch", w.torch},
          {"cuda", w.cuda},
          {"cpus", w.cpus},
          {"memory_gb", w.memory_gb},
          {"labels", w.labels},
          {"project", w.project},
          {"instance", w.instance},
          {"draining", w.draining}};
}

Json to_json(const Event& e) {
  Json data = e.data.empty() ? Json::object() : Json::parse(e.data, nullptr, false);
  if (data.is_discarded()) data = e.data;
  return {{"id", e.id},
          {"type", e.type},
          {"sweep_id", e.sweep_id},
          {"trial_id", e.trial_id},
          {"data", data}};
}

// --- decode -----------------------------------------------------------------

Status from_json(const Json& j, search::Params& out) {
  if (!j.is_object()) return Error::invalid("params", "expected an object");
  out.clear();
  for (auto it = j.begin(); it != j.end(); ++it) {
    const auto& v = it.value();
    if (v.is_boolean())
      out[it.key()] = v.get<bool>();
    else if (v.is_number_integer() && json_int64(v))  // ints stay ints, never wrapped
      out[it.key()] = *json_int64(v);
    else if (v.is_number_float())
      out[it.key()] = v.get<double>();
    else if (v.is_string())
      out[it.key()] = v.get<std::string>();
    else if (v.is_null())  // the number rule
      out[it.key()] = kNaN;
    else
      return Error::invalid("params." + it.key(), "expected a number, boolean or string");
  }
  return {};
}

Status from_json(const Json& j, Metrics& out) {
  if (!j.is_object()) return Error::invalid("metrics", "expected an object");
  out.clear();
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.value().is_number())
      out[it.key()] = it.value().get<double>();
    else if (it.value().is_null())
      out[it.key()] = kNaN;
    else
      return Error::invalid("metrics." + it.key(), "expected a number");
  }
  return {};
}

Status from_json(const Json& j, Counts& out) {
  Reader r(j, "counts");
  for (TrialState s : kTrialStateNames.values())  // cancelled: optional (older records)
    r.integer(to_string(s), out.of(s), s != TrialState::kCancelled);
  return r.status();
}

Status from_json(const Json& j, BestTrial& out) {
  Reader r(j, "best");
  r.str("trial_id", out.trial_id);
  r.integer("number", out.number, false);
  r.nested("params", out.params);
  r.number("value", out.value);
  return r.status();
}

Status from_json(const Json& j, Sweep& out) {
  Reader r(j, "sweep");
  r.str("id", out.id);
  r.str("name", out.name);
  std::string state;
  r.str("state", state);
  if (auto s = parse_sweep_state(state))
    out.state = *s;
  else if (!state.empty())
    r.fail("state", "unknown sweep state '" + state + "'");
  std::string stage;
  r.str("stage", stage, false);
  if (auto st = parse_sweep_stage(stage))
    out.stage = *st;
  else if (!stage.empty())
    r.fail("stage", "unknown sweep stage '" + stage + "'");
  if (const Json* o = r.raw("objective"); o && o->is_object()) {
    out.maximize = o->value("mode", "min") == "max";
  } else {
    r.fail("objective", "missing");
  }
  r.nested("counts", out.counts);
  r.nested("member_counts", out.member_counts, false);
  out.best.reset();
  if (const Json* b = r.raw("best"); b && !b->is_null()) {
    BestTrial best;
    if (auto s = from_json(*b, best); !s) r.fail("best", s.error().message);
    out.best = std::move(best);
  }
  r.integer("next_number", out.next_number, false);
  r.integer("next_member", out.next_member, false);
  r.integer("created_ms", out.created_ms, false);
  r.integer("finished_ms", out.finished_ms, false);
  r.str("error", out.error, false);
  r.str("unschedulable", out.unschedulable, false);
  r.str("project", out.project, false);
  r.str("owner", out.owner, false);
  r.list("tags", out.annotation.tags, false);
  r.str("note", out.annotation.note, false);
  r.integer("priority", out.priority, false);
  if (const Json* spec = r.raw("spec"); spec && !spec->is_null()) out.spec_json = dump(*spec);
  return r.status();
}

Status from_json(const Json& j, SweepDocument& out) {
  if (auto s = from_json(j, out.sweep); !s) return s;
  Reader r(j, "sweep");
  if (const Json* o = r.raw("objective"); o && o->is_object()) {
    Reader obj(*o, "sweep.objective");
    obj.str("metric", out.metric, false);
    if (auto s = obj.status(); !s) return s;
  }
  r.integer("max_trials", out.max_trials, false);
  r.integer("members_requested", out.members_requested, false);
  if (const Json* spec = r.raw("spec"); spec && spec->is_object() &&
                                        spec->contains("constraints") &&
                                        (*spec)["constraints"].is_array())
    for (const Json& c : (*spec)["constraints"]) {
      if (!c.is_object() || !c.contains("metric") || !c["metric"].is_string()) continue;
      MetricBound b{c["metric"].get<std::string>(), std::nullopt, std::nullopt};
      if (c.contains("max") && c["max"].is_number()) b.max = c["max"].get<double>();
      if (c.contains("min") && c["min"].is_number()) b.min = c["min"].get<double>();
      out.constraints.push_back(std::move(b));
    }
  return r.status();
}

Status from_json(const Json& j, Trial& out) {
  Reader r(j, "trial");
  r.str("id", out.id);
  r.str("sweep_id", out.sweep_id, false);
  r.integer("number", out.number);
  std::string role;
  r.str("kind", role, false);
  if (auto parsed = parse_trial_role(role))
    out.role = *parsed;
  else if (!role.empty())
    r.fail("kind", "expected 'trial' or 'member', got '" + role + "'");
  std::string state;
  r.str("state", state);
  if (auto s = parse_trial_state(state))
    out.state = *s;
  else if (!state.empty())
    r.fail("state", "unknown trial state '" + state + "'");
  r.nested("params", out.params);
  r.optional_number("value", out.value);
  r.integer("attempt", out.attempt);
  r.integer("released", out.released, false);
  r.integer("max_attempts", out.max_attempts, false);
  r.integer("slots", out.slots, false);
  r.str("worker", out.worker);
  r.nested("metrics", out.metrics, false);
  r.str("error", out.error, false);
  std::string control = "none";
  r.str("control", control, false);
  out.control = parse_control(control).value_or(Control::kNone);
  r.integer("created_ms", out.created_ms, false);
  r.integer("started_ms", out.started_ms, false);
  r.integer("finished_ms", out.finished_ms, false);
  if (const Json* e = r.raw("extra"); e && !e->is_null())
    out.plan = e->is_string() ? plan_from_text(e->get<std::string>()) : plan_from_json(*e);
  return r.status();
}

Status from_json(const Json& j, AttemptRecord& out) {
  Reader r(j, "attempt");
  r.integer("attempt", out.attempt);
  r.str("worker", out.worker);
  r.integer("started_ms", out.started_ms, false);
  r.integer("ended_ms", out.ended_ms, false);
  r.str("outcome", out.outcome);
  r.str("error", out.error, false);
  return r.status();
}

Status from_json(const Json& j, StepReport& out) {
  Reader r(j, "report");
  r.integer("step", out.step);
  r.nested("metrics", out.metrics);
  r.integer("time_ms", out.time_ms, false);
  return r.status();
}

Status from_json(const Json& j, GpuInfo& out) {
  Reader r(j, "gpu");
  r.integer("index", out.index);
  r.str("name", out.name, false);
  r.str("uuid", out.uuid, false);
  r.integer("memory_total_mb", out.memory_total_mb, false);
  r.integer("memory_used_mb", out.memory_used_mb, false);
  r.integer("utilization_pct", out.utilization_pct, false);
  return r.status();
}

Status from_json(const Json& j, WorkerInfo& out) {
  Reader r(j, "worker");
  r.str("name", out.name);
  r.str("host", out.host, false);
  r.integer("slots", out.slots);
  r.integer("busy_slots", out.busy_slots, false);
  r.list("trials", out.trials, false);
  r.list("gpus", out.gpus, false);
  r.integer("last_heartbeat_ms", out.last_heartbeat_ms, false);
  r.integer("started_ms", out.started_ms, false);
  r.boolean("torch", out.torch);
  r.boolean("cuda", out.cuda);
  r.number("cpus", out.cpus, false);
  r.number("memory_gb", out.memory_gb, false);
  r.str("instance", out.instance, false);
  r.str("project", out.project, false);
  r.boolean("draining", out.draining);
  if (const Json* l = r.raw("labels"); l && l->is_object()) {
    r.mark_seen("labels");
    for (auto it = l->begin(); it != l->end(); ++it)
      if (it.value().is_string()) out.labels[it.key()] = it.value().get<std::string>();
  }
  return r.status();
}

Status from_json(const Json& j, Event& out) {
  Reader r(j, "event");
  r.str("id", out.id);
  r.str("type", out.type);
  r.str("sweep_id", out.sweep_id, false);
  r.str("trial_id", out.trial_id, false);
  if (const Json* d = r.raw("data"); d && !d->is_null())
    out.data = d->is_string() ? d->get<std::string>() : dump(*d);
  return r.status();
}

Json to_json(const Annotation& a) {
  return {{"tags", a.tags}, {"note", a.note}};
}

Status from_json(const Json& j, Annotation& out) {
  Reader r(j, "annotation");
  r.list("tags", out.tags, false);
  r.str("note", out.note, false);
  return r.status();
}

}  // namespace hpo::trials::record
