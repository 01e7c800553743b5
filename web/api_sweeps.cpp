// The sweep handlers: submit and import (the spec checked before anything is
// stored), list, get, the Pareto front, cancel and delete. Split from api.cpp
// by resource; the shared pieces are in store_lease.hpp and api_helpers.hpp.
#include "web/api.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/log.hpp"
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

// The sweep to store for `spec` (its text `spec_text`), with the request's Idempotency-Key.
Result<trials::NewSweep> new_sweep(const Request& request, const trials::SweepSpec& spec,
                                   std::string spec_text) {
  trials::NewSweep sweep{spec.name, std::move(spec_text), spec.objective.maximize};
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

Response Api::create_sweep(const Request& request) {
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
  // A warm start reads ended sweeps only: their trials no longer change, so a
  // restarted controller seeds its sampler with exactly the same ones.
  const auto& warm = spec->search.warm_start_sweeps;
  for (std::size_t i = 0; i < warm.size(); ++i) {
    const std::string path = fmt::format("search.warm_start.sweeps[{}]", i);
    auto earlier = store.track(store->sweeps().get_sweep(warm[i]));
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
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto sweeps = store.track(store->sweeps().list_sweeps(*offset, *limit));
  if (!sweeps) return error_response(sweeps.error());
  Json list = Json::array();
  for (const auto& s : *sweeps) list.push_back(sweep_doc(s));
  return json_ok(200, {{"sweeps", list}, {"offset", *offset}, {"limit", *limit}});
}

Response Api::get_sweep(const std::string& id) {
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto sweep = store.track(store->sweeps().get_sweep(id));
  if (!sweep) return error_response(sweep.error());
  return json_ok(200, sweep_doc(*sweep));
}

Response Api::pareto(const std::string& id) {
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto sweep = store.track(store->sweeps().get_sweep(id));
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

Response Api::cancel_sweep(const std::string& id) {
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  if (auto s = store.track(store->sweeps().cancel_sweep(id)); !s) return error_response(s.error());
  log_info("sweep cancel requested", {{"sweep", id}});
  auto sweep = store.track(store->sweeps().get_sweep(id));
  if (!sweep) return error_response(sweep.error());
  return json_ok(200, sweep_doc(*sweep));
}

Response Api::delete_sweep(const std::string& id) {
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  if (auto s = store.track(store->sweeps().delete_sweep(id)); !s) return error_response(s.error());
  log_info("sweep deleted", {{"sweep", id}});
  Response r;
  r.status = 204;
  return r;
}

}  // namespace hpo::web
