// The sweep handlers: submit and import (the spec checked before anything is
// stored), list, get, the Pareto front, cancel and delete. Split from api.cpp
// by resource; the shared pieces are in store_lease.hpp and api_helpers.hpp.
#include "web/api.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/log.hpp"
#include "trials/access.hpp"
#include "trials/artifacts.hpp"
#include "trials/data_roots.hpp"
#include "trials/pareto_front.hpp"
#include "trials/placement.hpp"
#include "trials/spec/spec.hpp"
#include "trials/trial_csv.hpp"
#include "web/api_errors.hpp"
#include "web/api_helpers.hpp"
#include "web/json_codec.hpp"
#include "web/store_lease.hpp"

namespace hpo::web {

namespace {

// The Idempotency-Key header: at most 200 printable ASCII characters, no spaces.
Result<std::string> idempotency_key(const Request& request) {
  std::string key = request.header("idempotency-key");
  constexpr std::size_t kMaxKey = 200;
  const bool ok = key.size() <= kMaxKey && std::all_of(key.begin(), key.end(), [](unsigned char c) {
                    return c > 0x20 && c < 0x7f;
                  });
  if (!ok)
    return Error::invalid(
        "Idempotency-Key",
        fmt::format("expected at most {} printable ASCII characters without spaces, got {} bytes",
                    kMaxKey, key.size()));
  return key;
}

// The ?project= a submit or import goes to (the default one without).
std::string project_of(const Request& request) {
  return request.query_or("project", std::string(trials::kDefaultProject));
}

// May the caller submit to the request's project? Asked before anything else,
// so that the answer about a project they cannot read is the one about a
// project that does not exist: 404. A viewer: 403.
std::optional<Response> refuse_submit(const Request& request) {
  const std::string project = project_of(request);
  if (auto st = trials::check_access_name("project", project); !st)
    return error_response(st.error());
  const trials::Principal& who = *request.principal;
  if (!who.can_read(project)) return error_response(Error::not_found("project " + project));
  if (!who.can_submit(project))
    return forbidden("a viewer of project " + project + " cannot submit to it");
  return std::nullopt;
}

// The sweep to store for `spec` (its text `spec_text`), with the request's
// Idempotency-Key, in its project, owned by the caller.
Result<trials::NewSweep> new_sweep(const Request& request, const trials::SweepSpec& spec,
                                   std::string spec_text) {
  trials::NewSweep sweep{spec.name, std::move(spec_text), spec.objective.maximize};
  sweep.project = project_of(request);
  sweep.owner = request.principal->user;
  sweep.needs = trials::request_for(spec.trial);
  sweep.constraints = spec.constraints;
  auto key = idempotency_key(request);
  if (!key) return key.error();
  sweep.idempotency_key = std::move(*key);
  return sweep;
}

// `e` as found inside the request body's member `member`: its paths and message prefixed.
Error inside(const std::string& member, Error e) {
  for (auto& f : e.fields) f.path = f.path.empty() ? member : member + "." + f.path;
  e.message = member + "." + e.message;
  return e;
}

}  // namespace

// A torch model whose weights a store without an artifact folder cannot keep
// (`limit` bytes per artifact; 0: no limit) is refused at submit, not after
// it trained: its model.pt and checkpoints would be refused. Models whose
// sizes are parameters of the sweep are checked per trial by the worker.
static Status check_model_fits(const trials::SweepSpec& spec, std::int64_t limit) {
  if (spec.trial.kind != trials::TrialKind::kTorch || limit <= 0) return {};
  const auto params = trials::literal_hidden_parameters(spec.trial.torch);
  if (!params || *params * 4 <= static_cast<double>(limit)) return {};
  return Error::invalid(
      "trial.model",
      fmt::format("its weights are about {:.0f} MiB of float32; without an artifact folder the "
                  "store keeps at most {} MiB per artifact (model.pt, checkpoints): start "
                  "hpo-scheduler with --artifacts DIR (a folder every worker mounts), or make the "
                  "model smaller",
                  *params * 4 / 1048576.0, limit >> 20));
}

// A trial wider than its project's max_slots, or (asking for GPUs, one per
// slot) than its max_gpus, could never be claimed: refused at submit.
static Status check_fits_project(const trials::SweepSpec& spec,
                                 const trials::ProjectRecord& project) {
  const auto& limits = project.limits;
  const int slots = spec.trial.slots();
  if (limits.max_slots > 0 && slots > limits.max_slots)
    return Error::invalid(
        "trial", fmt::format("each trial takes {} slots; project {} may hold at most {} at once "
                             "(its max_slots)",
                             slots, project.name, limits.max_slots));
  if (limits.max_gpus > 0 && trials::request_for(spec.trial).gpus > 0 && slots > limits.max_gpus)
    return Error::invalid(
        "trial", fmt::format("each trial takes {} GPUs; project {} may hold at most {} at once "
                             "(its max_gpus)",
                             slots, project.name, limits.max_gpus));
  return {};
}

Response Api::create_sweep(const Request& request) {
  if (auto refused = refuse_submit(request)) return std::move(*refused);
  auto spec = trials::parse_spec(request.body);
  if (!spec) return error_response(spec.error());
  if (spec->trial.kind == trials::TrialKind::kTorch) {
    auto outside = trials::check_data_paths(spec->trial.torch.data, options_.data_roots);
    if (!outside.empty()) {
      std::string message = outside.front().path + ": " + outside.front().message;
      return error_response(
          Error{ErrorCode::kInvalidArgument, std::move(message), std::move(outside)});
    }
  }
  // Stored as submitted: the order of its parameters is meaningful (grid
  // order, conditional parents), so the text is not re-serialised.
  auto sweep = new_sweep(request, *spec, request.body);
  if (!sweep) return error_response(sweep.error());
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  if (auto st = check_model_fits(*spec, store->queue().inline_artifact_limit()); !st)
    return error_response(st.error());
  // A trial wider than its project's slot or GPU limit could never be claimed.
  auto project = store.track(find_project(store->access(), sweep->project));
  if (!project && project.error().code != ErrorCode::kNotFound)  // the default is made on submit
    return error_response(project.error());
  if (project)
    if (auto st = check_fits_project(*spec, *project); !st) return error_response(st.error());
  // A warm start reads ended sweeps only: their trials no longer change, so a
  // restarted controller seeds its sampler with exactly the same ones.
  const auto& warm = spec->search.warm_start_sweeps;
  for (std::size_t i = 0; i < warm.size(); ++i) {
    const std::string path = fmt::format("search.warm_start.sweeps[{}]", i);
    // Only from sweeps the caller may read: others do not exist for them.
    auto earlier = readable_sweep(store, request, warm[i]);
    if (!earlier && earlier.error().code == ErrorCode::kNotFound)
      return error_response(Error::invalid(path, fmt::format("no sweep \"{}\"", warm[i])));
    if (!earlier) return error_response(earlier.error());
    if (earlier->state == trials::SweepState::kRunning)
      return error_response(Error::invalid(
          path,
          fmt::format("sweep \"{}\" is still running; a warm start reads ended sweeps", warm[i])));
  }
  auto id = store.track(store->sweeps().create_sweep(*sweep));
  if (!id) return error_response(id.error());
  audit(store, request, sweep->project, "sweep.submit", *id, spec->name);
  const std::string name = spec->name;
  options_.specs->put(*id, std::make_shared<const trials::SweepSpec>(std::move(spec).value()));
  log_info("sweep submitted", {{"sweep", *id},
                               {"name", name},
                               {"remote", request.remote},
                               {"idempotency_key", sweep->idempotency_key}});
  Response r = json_ok(201, Json{{"id", *id}});
  r.headers.emplace_back("Location", "/api/sweeps/" + *id);
  return r;
}

Response Api::import_sweep(const Request& request) {
  // {"spec": <the spec the trials were run with>, "csv": "<hpo trials --csv>"}
  if (auto refused = refuse_submit(request)) return std::move(*refused);
  auto body = parse_json(request.body);
  if (!body) return error_response(body.error());
  if (!body->is_object())
    return error_response(
        Error::invalid("body", "expected an object {\"spec\": {...}, \"csv\": \"...\"}"));
  for (const auto& [k, v] : body->items())
    if (k != "spec" && k != "csv")
      return error_response(Error::invalid(k, "unknown key; expected spec and csv"));
  if (!body->contains("spec") || !(*body)["spec"].is_object())
    return error_response(Error::invalid("spec",
                                         "expected the sweep spec (an object) the trials "
                                         "were run with"));
  if (!body->contains("csv") || !(*body)["csv"].is_string())
    return error_response(
        Error::invalid("csv", "expected the trials as text, as `hpo trials --csv` writes them"));
  const std::string spec_text = dump((*body)["spec"]);
  auto spec = trials::parse_spec(spec_text);
  if (!spec) return error_response(inside("spec", spec.error()));
  auto rows = trials::read_trials_csv((*body)["csv"].get_ref<const std::string&>(), *spec, "csv");
  if (!rows) return error_response(rows.error());
  auto sweep = new_sweep(request, *spec, spec_text);
  if (!sweep) return error_response(sweep.error());
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto id = store.track(store->sweeps().import_sweep(*sweep, *rows));
  if (!id) return error_response(id.error());
  audit(store, request, sweep->project, "sweep.import", *id,
        sweep->name + " (" + std::to_string(rows->size()) + " trials)");
  options_.specs->put(*id, std::make_shared<const trials::SweepSpec>(std::move(spec).value()));
  log_info("sweep imported", {{"sweep", *id},
                              {"name", sweep->name},
                              {"trials", std::to_string(rows->size())},
                              {"remote", request.remote}});
  Response r = json_ok(201, Json{{"id", *id}, {"trials", rows->size()}});
  r.headers.emplace_back("Location", "/api/sweeps/" + *id);
  return r;
}

Response Api::list_sweeps(const Request& request) {
  auto offset = int_param(request, "offset", 0, 0, INT64_MAX);
  if (!offset) return error_response(offset.error());
  auto limit = int_param(request, "limit", options_.default_page, 0, options_.max_page);
  if (!limit) return error_response(limit.error());
  const trials::Principal& who = *request.principal;
  const std::string project = request.query_or("project");
  if (!project.empty() && !who.can_read(project))
    return error_response(Error::not_found("project " + project));
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  // Only the projects the caller may read, or the one asked for.
  std::vector<std::string> projects;
  if (!project.empty())
    projects.push_back(project);
  else if (!who.sees_all_projects())
    for (const auto& [p, role] : who.roles) projects.push_back(p);
  auto page = [&](std::int64_t at, std::int64_t n) {
    return store.track(project.empty() && who.sees_all_projects()
                           ? store->sweeps().list_sweeps(at, n)
                           : store->sweeps().list_sweeps_in(projects, at, n));
  };
  // ?tag=: the sweeps carrying it, `offset` and `limit` counted among them
  // (the list is read in chunks until the page is full).
  const std::string tag = request.query_or("tag");
  Result<std::vector<trials::Sweep>> sweeps = std::vector<trials::Sweep>{};
  if (tag.empty()) {
    sweeps = page(*offset, *limit);
  } else {
    constexpr std::int64_t kChunk = 500;
    std::int64_t skipped = 0;
    for (std::int64_t at = 0; sweeps && static_cast<std::int64_t>(sweeps->size()) < *limit;
         at += kChunk) {
      auto chunk = page(at, kChunk);
      if (!chunk) {
        sweeps = chunk.error();
        break;
      }
      for (auto& s : *chunk) {
        const auto& t = s.annotation.tags;
        if (std::find(t.begin(), t.end(), tag) == t.end()) continue;
        if (skipped++ < *offset) continue;
        if (static_cast<std::int64_t>(sweeps->size()) < *limit) sweeps->push_back(std::move(s));
      }
      if (static_cast<std::int64_t>(chunk->size()) < kChunk) break;
    }
  }
  if (!sweeps) return error_response(sweeps.error());
  Json list = Json::array();
  for (const auto& s : *sweeps) list.push_back(sweep_doc(s));
  return json_ok(200, {{"sweeps", list}, {"offset", *offset}, {"limit", *limit}});
}

Response Api::get_sweep(const Request& request, const std::string& id) {
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto sweep = readable_sweep(store, request, id);
  if (!sweep) return error_response(sweep.error());
  return json_ok(200, sweep_doc(*sweep));
}

Response Api::ensemble(const Request& request, const std::string& id) {
  // The record the ensemble stage stores with the sweep (scheduler/ensemble_stage.hpp).
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto sweep = readable_sweep(store, request, id);
  if (!sweep) return error_response(sweep.error());
  auto record =
      store.track(store->artifacts().get_sweep_artifact(id, trials::artifact::kEnsembleRecord));
  if (!record) return error_response(record.error());
  if (!*record)
    return error_response(Error::not_found(
        "sweep " + id +
        " has no ensemble record (yet): it is written when every ensemble member has finished; "
        "sweep stage is '" +
        trials::to_string(sweep->stage) + "'"));
  return Response::json(200, std::move(**record));
}

Response Api::pareto(const Request& request, const std::string& id) {
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto sweep = readable_sweep(store, request, id);
  if (!sweep) return error_response(sweep.error());
  auto spec = options_.specs->get(sweep->id, sweep->spec_json);
  if (!spec) return error_response(spec.error());
  auto all = store.track(
      trial_cache_.load(store->sweeps(), store->trials(), id, trials::TrialRole::kTrial));
  if (!all) return error_response(all.error());
  std::vector<const trials::Trial*> view;
  view.reserve(all->size());
  std::int64_t completed = 0;  // the front's version: completed trials only grow
  for (const auto& t : *all) {
    view.push_back(t.get());
    completed += t->state == trials::TrialState::kCompleted;
  }
  Json doc =
      pareto_cache_.get(id, completed, [&] { return to_json(trials::pareto_front(**spec, view)); });
  doc["sweep"] = id;
  return json_ok(200, doc);
}

Json Api::sweep_doc(const trials::Sweep& sweep) {
  auto spec = options_.specs->get(sweep.id, sweep.spec_json);
  return to_json(sweep, spec ? spec->get() : nullptr);
}

// A sweep the caller may change (cancel, delete): its owner's or a project
// admin's; 404 when they may not read it; kInvalidArgument (the handlers'
// 403) when they may read only.
static Result<trials::Sweep> changeable(Result<trials::Sweep> sweep, const trials::Principal& who,
                                        const char* what) {
  if (!sweep) return sweep;
  if (who.can_change(sweep->project, sweep->owner)) return sweep;
  return Error::invalid("sweep", std::string("only its owner (") +
                                     (sweep->owner.empty() ? "none recorded" : sweep->owner) +
                                     ") or an admin of project " + sweep->project + " may " + what +
                                     " sweep " + sweep->id);
}

Response Api::cancel_sweep(const Request& request, const std::string& id) {
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto mine = changeable(readable_sweep(store, request, id), *request.principal, "cancel");
  if (!mine)
    return mine.error().code == ErrorCode::kInvalidArgument ? forbidden(mine.error().message)
                                                            : error_response(mine.error());
  if (auto s = store.track(store->sweeps().cancel_sweep(id)); !s) return error_response(s.error());
  audit(store, request, mine->project, "sweep.cancel", id, mine->name);
  log_info("sweep cancel requested", {{"sweep", id}, {"user", request.principal->user}});
  auto sweep = store.track(store->sweeps().get_sweep(id));
  if (!sweep) return error_response(sweep.error());
  return json_ok(200, sweep_doc(*sweep));
}

Response Api::delete_sweep(const Request& request, const std::string& id) {
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto mine = changeable(readable_sweep(store, request, id), *request.principal, "delete");
  if (!mine)
    return mine.error().code == ErrorCode::kInvalidArgument ? forbidden(mine.error().message)
                                                            : error_response(mine.error());
  if (auto s = store.track(store->sweeps().delete_sweep(id)); !s) return error_response(s.error());
  audit(store, request, mine->project, "sweep.delete", id, mine->name);
  log_info("sweep deleted", {{"sweep", id}, {"user", request.principal->user}});
  Response r;
  r.status = 204;
  return r;
}

// {"tags": [...], "note": "...", "priority": N} (each optional: what is
// absent stays; priority only for a sweep) onto `a` and `priority`, checked.
static Status read_annotation(const std::string& body, bool of_sweep, trials::Annotation& a,
                              std::optional<std::int64_t>& priority) {
  auto j = parse_json(body);
  if (!j) return j.error();
  if (!j->is_object())
    return Error::invalid("body", "expected {\"tags\": [...], \"note\": \"...\"}");
  for (const auto& [k, v] : j->items()) {
    if (k == "priority" && of_sweep) {
      if (!v.is_number_integer() || v.get<std::int64_t>() < -1000 || v.get<std::int64_t>() > 1000)
        return Error::invalid("priority", "expected an integer in [-1000, 1000]");
      priority = v.get<std::int64_t>();
      continue;
    }
    if (k == "tags") {
      if (!v.is_array()) return Error::invalid("tags", "expected an array of strings");
      a.tags.clear();
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_string())
          return Error::invalid(fmt::format("tags[{}]", i), "expected a string");
        const std::string t = v[i].get<std::string>();
        if (std::find(a.tags.begin(), a.tags.end(), t) == a.tags.end()) a.tags.push_back(t);
      }
    } else if (k == "note") {
      if (!v.is_string()) return Error::invalid("note", "expected a string");
      a.note = v.get<std::string>();
    } else {
      return Error::invalid(k, of_sweep ? "unknown key; expected tags, note and priority"
                                        : "unknown key; expected tags and note");
    }
  }
  return trials::check_annotation(a);
}

Response Api::annotate(const Request& request, const std::string& id, bool of_trial) {
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  std::string sweep_id = id;
  trials::Annotation now;
  if (of_trial) {
    auto trial = readable_trial(store, request, id);
    if (!trial) return error_response(trial.error());
    sweep_id = trial->sweep_id;
    auto notes = store.track(store->sweeps().trial_annotations(sweep_id));
    if (!notes) return error_response(notes.error());
    if (auto it = notes->find(id); it != notes->end()) now = it->second;
  }
  auto mine = changeable(readable_sweep(store, request, sweep_id), *request.principal, "annotate");
  if (!mine) {
    if (mine.error().code == ErrorCode::kInvalidArgument) return forbidden(mine.error().message);
    if (mine.error().code != ErrorCode::kNotFound) return error_response(mine.error());
    return error_response(of_trial ? Error::not_found("trial " + id) : mine.error());
  }
  if (!of_trial) now = mine->annotation;
  std::optional<std::int64_t> priority;
  if (auto st = read_annotation(request.body, !of_trial, now, priority); !st)
    return error_response(st.error());
  if (priority) {
    // Priority weighs a sweep against the project's others: its admins' call.
    if (!request.principal->can_manage(mine->project))
      return forbidden("only an admin of project " + mine->project + " may set a sweep's priority");
    if (auto st = store.track(store->sweeps().set_priority(sweep_id, *priority)); !st)
      return error_response(st.error());
    audit(store, request, mine->project, "sweep.priority", id, std::to_string(*priority));
  }
  if (auto st = store.track(store->sweeps().annotate(sweep_id, of_trial ? id : "", now)); !st)
    return error_response(st.error());
  audit(store, request, mine->project, of_trial ? "trial.annotate" : "sweep.annotate", id,
        fmt::format("tags [{}]", fmt::join(now.tags, ", ")));
  Json doc = to_json(now);
  doc["id"] = id;
  if (!of_trial) doc["priority"] = priority.value_or(mine->priority);
  return json_ok(200, doc);
}

}  // namespace hpo::web
