// The REST handlers. Each handler borrows a store, makes one or a few store
// calls, and encodes the result with json_codec; any Error goes out through
// error_response. Sorting and filtering of trials is done here by loading the
// sweep's trials in pages (the store pages by number only); for 10,000 trials
// that is 10 store calls, acceptable until the store grows an index.
#include "web/api.hpp"

#include "trials/artifacts.hpp"
#include "trials/data_roots.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <set>

#include <fmt/format.h>

#include "core/log.hpp"
#include "trials/spec.hpp"
#include "trials/trial_csv.hpp"
#include "web/api_errors.hpp"
#include "web/download.hpp"
#include "web/json_codec.hpp"
#include "web/trial_columns.hpp"

namespace hpo::web {

class Api::StoreLease {
 public:
  StoreLease(Api& api, std::unique_ptr<trials::Store> store)
      : api_(api), store_(std::move(store)) {}
  StoreLease(StoreLease&&) = default;
  ~StoreLease() {
    if (store_ && !broken_) api_.give_back(std::move(store_));
  }
  explicit operator bool() const { return store_ != nullptr; }
  trials::Store* operator->() { return store_.get(); }
  trials::Store& operator*() { return *store_; }
  // Marks the store broken when a call says the backend is unreachable.
  template <class T>
  Result<T> track(Result<T> r) {
    if (!r.ok() && r.error().code == ErrorCode::kUnavailable) broken_ = true;
    return r;
  }

 private:
  Api& api_;
  std::unique_ptr<trials::Store> store_;
  bool broken_ = false;
};

namespace {

// Artifact names are plain file names, never paths.
bool plain_artifact_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         std::all_of(name.begin(), name.end(), [](unsigned char c) {
           return std::isalnum(c) || c == '.' || c == '_' || c == '-';
         });
}

Response json_ok(int status, const Json& j) {
  return Response::json(status, dump(j));
}

Result<std::int64_t> int_param(const Request& req, const std::string& name, std::int64_t fallback,
                               std::int64_t min, std::int64_t max) {
  auto it = req.query.find(name);
  if (it == req.query.end() || it->second.empty()) return fallback;
  std::int64_t v = 0;
  const auto& s = it->second;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size())
    return Error::invalid(name, "expected an integer, got '" + s + "'");
  if (v < min || v > max)
    return Error::invalid(name,
                          "must be between " + std::to_string(min) + " and " + std::to_string(max));
  return v;
}

bool constant_time_equal(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

// Sort key of a trial for ?sort=: a number, a string, or nothing (sorts last).
struct SortKey {
  int rank = 2;  // 0 number, 1 string, 2 missing
  double number = 0;
  std::string text;
};

SortKey key_of(const trials::Trial& t, const std::string& field) {
  SortKey k;
  auto from_value = [&](const search::Value& v) {
    if (auto d = search::as_double(v)) {
      k.rank = 0;
      k.number = *d;
    } else {
      k.rank = 1;
      k.text = search::to_string(v);
    }
  };
  if (field == "number") {
    k.rank = 0;
    k.number = static_cast<double>(t.number);
  } else if (field == "value") {
    if (t.value && !std::isnan(*t.value)) k = {0, *t.value, {}};
  } else if (field.rfind("metric:", 0) == 0) {
    auto it = t.metrics.find(field.substr(7));
    if (it != t.metrics.end() && !std::isnan(it->second)) k = {0, it->second, {}};
  } else if (field.rfind("param:", 0) == 0) {
    auto it = t.params.find(field.substr(6));
    if (it != t.params.end()) from_value(it->second);
  } else if (field == "started") {
    k = {0, static_cast<double>(t.started_ms), {}};
  } else if (field == "finished") {
    k = {0, static_cast<double>(t.finished_ms), {}};
  }
  return k;
}

bool valid_sort_field(const std::string& f) {
  return f == "number" || f == "value" || f == "started" || f == "finished" ||
         (f.rfind("metric:", 0) == 0 && f.size() > 7) ||
         (f.rfind("param:", 0) == 0 && f.size() > 6);
}

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

Api::Api(ApiOptions options, StoreFactory factory, EventHub& hub)
    : options_(std::move(options)), factory_(std::move(factory)), hub_(hub) {
  if (!options_.specs) options_.specs = std::make_shared<trials::SpecCache>();
  if (!options_.static_dir.empty()) static_files_.emplace(options_.static_dir);
  auto& r = router_;
  r.add("POST", "/api/sweeps",
        [this](const Request& q, const PathParams&) { return create_sweep(q); });
  r.add("POST", "/api/sweeps/import",
        [this](const Request& q, const PathParams&) { return import_sweep(q); });
  r.add("GET", "/api/sweeps",
        [this](const Request& q, const PathParams&) { return list_sweeps(q); });
  r.add("GET", "/api/sweeps/{id}",
        [this](const Request&, const PathParams& p) { return get_sweep(p.at("id")); });
  r.add("GET", "/api/sweeps/{id}/pareto",
        [this](const Request&, const PathParams& p) { return pareto(p.at("id")); });
  r.add("GET", "/api/sweeps/{id}/trials",
        [this](const Request& q, const PathParams& p) { return list_trials(q, p.at("id")); });
  r.add("GET", "/api/sweeps/{id}/ensemble", [this](const Request&, const PathParams& p) {
    // The record the ensemble stage stores with the sweep
    // (scheduler/ensemble_stage.hpp).
    const std::string& id = p.at("id");
    auto store = borrow();
    if (!store) return error_response(Error::unavailable("no store"));
    auto sweep = store.track(store->sweeps().get_sweep(id));
    if (!sweep) return error_response(sweep.error());
    auto record =
        store.track(store->artifacts().get_sweep_artifact(id, trials::artifact::kEnsembleRecord));
    if (!record) return error_response(record.error());
    if (!*record)
      return error_response(
          Error::not_found("sweep " + id +
                           " has no ensemble record (yet): it is written when every ensemble "
                           "member has finished; sweep stage is '" +
                           trials::to_string(sweep->stage) + "'"));
    return Response::json(200, std::move(**record));
  });
  r.add("GET", "/api/sweeps/{id}/artifacts/{name}", [this](const Request& q, const PathParams& p) {
    return artifact(q, Owner::kSweep, p.at("id"), p.at("name"));
  });
  r.add("DELETE", "/api/sweeps/{id}",
        [this](const Request&, const PathParams& p) { return delete_sweep(p.at("id")); });
  r.add("POST", "/api/sweeps/{id}/cancel",
        [this](const Request&, const PathParams& p) { return cancel_sweep(p.at("id")); });
  r.add("GET", "/api/trials/{id}",
        [this](const Request& r, const PathParams& p) { return get_trial(r, p.at("id")); });
  r.add("GET", "/api/trials/{id}/artifacts/{name}", [this](const Request& q, const PathParams& p) {
    return artifact(q, Owner::kTrial, p.at("id"), p.at("name"));
  });
  r.add("GET", "/api/workers",
        [this](const Request&, const PathParams&) { return list_workers(); });
  r.add("GET", "/api/events", [this](const Request& q, const PathParams&) { return events(q); });
  r.add("GET", "/api/openapi.json",
        [](const Request&, const PathParams&) { return Response::json(200, openapi_json()); });
  r.add("GET", "/healthz", [this](const Request&, const PathParams&) { return healthz(); });
  r.add("GET", "/metrics", [this](const Request&, const PathParams&) { return metrics(); });
  if (static_files_) {
    r.set_fallback([this](const Request& q) {
      if (q.path.rfind("/api/", 0) == 0 || q.path == "/api")
        return error_response(Error::not_found("no route for " + q.path));
      return static_files_->handle(q);
    });
  }
}

Api::~Api() = default;

// Raw bytes of one stored artifact: a trial's (model.pt, predictions, log.txt)
// or a sweep's own records (ensemble.json, manifest.json); what `hpo export`
// downloads. Names are plain file names, never paths.
Response Api::artifact(const Request& request, Owner owner, const std::string& id,
                       const std::string& name) {
  if (!plain_artifact_name(name))
    return error_response(
        Error::invalid("name", "artifact names are made of A-Z a-z 0-9 . _ - only"));
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  const bool of_sweep = owner == Owner::kSweep;
  // The owner must exist: an unknown id is 404 naming it, not an absent artifact.
  if (of_sweep) {
    if (auto sweep = store.track(store->sweeps().get_sweep(id)); !sweep)
      return error_response(sweep.error());
  } else if (auto trial = store.track(store->trials().get_trial(id)); !trial) {
    return error_response(trial.error());
  }
  auto& artifacts = store->artifacts();
  auto none = [&] {
    return error_response(Error::not_found(std::string(of_sweep ? "sweep " : "trial ") + id +
                                           " has no artifact '" + name + "'"));
  };
  if (of_sweep) {
    auto bytes = store.track(artifacts.get_sweep_artifact(id, name));
    if (!bytes) return error_response(bytes.error());
    if (!*bytes) return none();
    trials::ArtifactLocation at;
    at.size = static_cast<std::int64_t>((*bytes)->size());
    at.bytes = std::move(**bytes);
    return download(request, std::move(at));
  }
  auto at = store.track(artifacts.locate_artifact(id, name));
  if (!at) return error_response(at.error());
  if (!*at) return none();
  return download(request, std::move(**at));
}

Api::StoreLease Api::borrow() {
  {
    std::lock_guard lock(pool_mu_);
    if (!pool_.empty()) {
      auto s = std::move(pool_.back());
      pool_.pop_back();
      return StoreLease(*this, std::move(s));
    }
  }
  auto made = factory_();
  return StoreLease(*this, made ? std::move(*made) : nullptr);
}

void Api::give_back(std::unique_ptr<trials::Store> store) {
  std::lock_guard lock(pool_mu_);
  pool_.push_back(std::move(store));
}

bool Api::authorized(const Request& request) const {
  if (options_.token.empty()) return true;
  const std::string& m = request.method;
  const bool read = m == "GET" || m == "HEAD" || m == "OPTIONS";
  if (read && (!options_.auth_reads || request.path == "/healthz")) return true;
  std::string auth = request.header("authorization");
  constexpr std::string_view prefix = "Bearer ";
  if (auth.size() > prefix.size() &&
      iequals(std::string_view(auth).substr(0, prefix.size()), prefix))
    return constant_time_equal(auth.substr(prefix.size()), options_.token);
  // EventSource cannot send headers: protected reads may carry ?access_token=.
  if (read) {
    auto it = request.query.find("access_token");
    if (it != request.query.end()) return constant_time_equal(it->second, options_.token);
  }
  return false;
}

// DNS rebinding: a page from evil.example whose name the attacker re-points to
// 127.0.0.1 reaches this server from the victim's browser as same-origin, with
// "Host: evil.example". Names not configured are refused; IP literals (which
// no DNS answer can rebind) and requests without Host (not a browser) pass.
bool Api::host_allowed(const Request& request) const {
  if (options_.allowed_hosts.empty()) return true;
  std::string host = ascii_lower(request.header("host"));
  if (host.empty()) return true;
  if (host.front() == '[') {  // [v6]:port
    auto close = host.find(']');
    if (close == std::string::npos) return false;
    host = host.substr(1, close - 1);
  } else if (auto colon = host.find(':'); colon != std::string::npos) {
    host.resize(colon);
  }
  if (!host.empty() && host.back() == '.') host.pop_back();
  unsigned char buf[sizeof(in6_addr)];
  if (::inet_pton(AF_INET, host.c_str(), buf) == 1 || ::inet_pton(AF_INET6, host.c_str(), buf) == 1)
    return true;
  return std::any_of(options_.allowed_hosts.begin(), options_.allowed_hosts.end(),
                     [&](const std::string& h) { return iequals(h, host); });
}

Response Api::handle(const Request& request) {
  if (!host_allowed(request)) {
    return error_response(Error::invalid(
        "Host", "'" + request.header("host").substr(0, 200) +
                    "' is not a name this server answers to (its --allowed-host list)"));
  }
  if (!authorized(request))
    return error_response(
        Error{ErrorCode::kUnauthorized, "this call needs Authorization: Bearer <token>", {}});
  auto t0 = std::chrono::steady_clock::now();
  Response r = router_.handle(request);
  std::string route = router_.pattern_for(request);
  request_metrics_.record(
      request.method, route.empty() ? (static_files_ ? "static" : "unmatched") : route, r.status,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (r.status >= 500)
    log_warn("request failed", {{"method", request.method},
                                {"path", request.path},
                                {"status", std::to_string(r.status)},
                                {"body", r.body.substr(0, 300)}});
  if (request.path.rfind("/api/", 0) == 0 && !r.stream)
    r.headers.emplace_back("Cache-Control", "no-store");
  return r;
}

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
  auto all = store.track(trial_cache_.load(*store, id, trials::TrialRole::kTrial));
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

Response Api::list_trials(const Request& request, const std::string& sweep_id) {
  auto offset = int_param(request, "offset", 0, 0, INT64_MAX);
  if (!offset) return error_response(offset.error());
  const std::string format = request.query_or("format", "json");
  if (format != "json" && format != "csv" && format != "columns")
    return error_response(
        Error::invalid("format", "unknown format '" + format + "': expected json, csv or columns"));
  const bool csv = format == "csv";
  // CSV and columns are whole exports by default (the dashboard reads every
  // trial of a sweep in one request); a JSON page is capped.
  const bool whole = format != "json";
  auto limit = int_param(request, "limit", whole ? INT64_MAX : options_.default_page, 0,
                         whole ? INT64_MAX : options_.max_page);
  if (!limit) return error_response(limit.error());
  auto role = trials::parse_trial_role(request.query_or("kind", "trial"));
  if (!role) return error_response(Error::invalid("kind", "must be 'trial' or 'member'"));
  const trials::TrialRole kind = *role;
  std::optional<trials::TrialState> state;
  if (auto s = request.query_or("state"); !s.empty()) {
    state = trials::parse_trial_state(s);
    if (!state) return error_response(Error::invalid("state", "unknown trial state '" + s + "'"));
  }
  std::string sort = request.query_or("sort", "number");
  bool descending = !sort.empty() && sort[0] == '-';
  std::string field = descending ? sort.substr(1) : sort;
  if (!valid_sort_field(field))
    return error_response(Error::invalid(
        "sort", "expected [-]number, value, started, finished, metric:NAME or param:NAME"));

  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  std::vector<TrialPtr> rows;
  std::int64_t total = 0;
  if (!state && field == "number" && !descending && !csv) {
    // Only the page's range; its finished trials from the cache.
    auto page = store.track(trial_cache_.load(*store, sweep_id, kind, *offset, *limit, &total));
    if (!page) return error_response(page.error());
    rows = std::move(*page);
  } else {
    // Every trial of the sweep (finished ones cached), then filter, sort and slice.
    auto all = store.track(trial_cache_.load(*store, sweep_id, kind));
    if (!all) return error_response(all.error());
    std::vector<std::pair<SortKey, TrialPtr>> keyed;
    keyed.reserve(all->size());
    for (auto& t : *all)
      if (!state || t->state == *state) keyed.emplace_back(key_of(*t, field), std::move(t));
    // A total order (ties go by number, which is unique), so only the rows up
    // to the page's end need sorting: O(n log page) for a sweep of n trials.
    auto before = [&](const auto& a, const auto& b) {
      const SortKey &x = a.first, &y = b.first;
      if (x.rank != y.rank) return x.rank < y.rank;  // missing values last either way
      if (x.rank == 0 && x.number != y.number)
        return descending ? x.number > y.number : x.number < y.number;
      if (x.rank == 1 && x.text != y.text) return descending ? x.text > y.text : x.text < y.text;
      return a.second->number < b.second->number;
    };
    total = static_cast<std::int64_t>(keyed.size());
    auto begin = std::min<std::int64_t>(*offset, total);
    auto end = begin + std::min<std::int64_t>(*limit, total - begin);
    std::partial_sort(keyed.begin(), keyed.begin() + end, keyed.end(), before);
    for (auto i = begin; i < end; ++i) rows.push_back(std::move(keyed[i].second));
  }
  if (csv) {
    std::vector<const trials::Trial*> view;
    view.reserve(rows.size());
    for (const auto& row : rows) view.push_back(row.get());
    Response r = Response::text(200, trials::write_trials_csv(view), "text/csv; charset=utf-8");
    r.headers.emplace_back("Content-Disposition",
                           "attachment; filename=\"" + percent_encode(sweep_id) + "-trials.csv\"");
    return r;
  }
  if (format == "columns") return json_ok(200, trials_columns(rows, total, *offset, *limit));
  Json list = Json::array();
  for (const auto& t : rows) list.push_back(to_json(*t));
  return json_ok(200, {{"trials", list}, {"total", total}, {"offset", *offset}, {"limit", *limit}});
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

Response Api::get_trial(const Request& request, const std::string& id) {
  // Reports are paged: a trial may hold trials::kMaxReportsPerTrial of them.
  auto offset = int_param(request, "reports_offset", 0, 0, INT64_MAX);
  if (!offset) return error_response(offset.error());
  auto limit = int_param(request, "reports_limit", trials::kMaxReportsPerTrial, 0,
                         trials::kMaxReportsPerTrial);
  if (!limit) return error_response(limit.error());
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto trial = store.track(store->trials().get_trial(id));
  if (!trial) return error_response(trial.error());
  auto attempts = store.track(store->trials().get_attempts(id));
  if (!attempts) return error_response(attempts.error());
  auto reports = store.track(store->trials().get_reports(id, *offset, *limit));
  if (!reports) return error_response(reports.error());
  Json doc = to_json(*trial);
  doc["attempts"] = Json::array();
  for (const auto& a : *attempts) doc["attempts"].push_back(to_json(a));
  doc["reports"] = Json::array();
  for (const auto& r : reports->reports) doc["reports"].push_back(to_json(r));
  doc["reports_total"] = reports->total;
  doc["reports_offset"] = *offset;
  doc["reports_limit"] = *limit;
  // The worker stores the tail of each attempt's log when the attempt ends.
  auto log = store.track(store->artifacts().get_artifact(id, trials::artifact::kLog));
  if (!log) return error_response(log.error());
  doc["log_tail"] = *log ? Json(**log) : Json(nullptr);
  return json_ok(200, doc);
}

Response Api::list_workers() {
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto workers = store.track(store->workers().list_workers());
  if (!workers) return error_response(workers.error());
  Json list = Json::array();
  for (const auto& w : *workers) list.push_back(to_json(w));
  return json_ok(200, {{"workers", list}, {"total", workers->size()}});
}

Response Api::healthz() {
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto r = store.track(store->sweeps().list_sweeps(0, 1));
  if (!r) return error_response(Error::unavailable("store: " + r.error().message));
  Json doc = {{"status", "ok"}};
  // Fewer Redis replicas than acknowledged writes wait for: still serving
  // (200), but saying so, for probes, alerts and the dashboard's banner.
  if (auto h = store.track(store->health()); h && h->replicas_wanted > 0) {
    doc["replication"] = {{"replicas", h->replicas},
                          {"wanted", h->replicas_wanted},
                          {"missing_replicas", h->pauses ? "pause" : "continue"}};
    if (!h->degraded.empty()) {
      doc["status"] = "degraded";
      doc["degraded"] = h->degraded;
    }
  }
  return json_ok(200, doc);
}

Response Api::metrics() {
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  ClusterSnapshot snap;
  constexpr std::int64_t kChunk = 1000;
  for (std::int64_t at = 0;; at += kChunk) {
    auto sweeps = store.track(store->sweeps().list_sweeps(at, kChunk));
    if (!sweeps) return error_response(sweeps.error());
    for (const auto& s : *sweeps) {
      ++snap.sweeps_by_state[trials::to_string(s.state)];
      for (const auto* c : {&s.counts, &s.member_counts}) {
        snap.trials.queued += c->queued;
        snap.trials.running += c->running;
        snap.trials.completed += c->completed;
        snap.trials.failed += c->failed;
        snap.trials.pruned += c->pruned;
        snap.trials.cancelled += c->cancelled;
      }
    }
    if (static_cast<std::int64_t>(sweeps->size()) < kChunk) break;
  }
  auto workers = store.track(store->workers().list_workers());
  if (!workers) return error_response(workers.error());
  for (const auto& w : *workers) {
    ++snap.workers;
    snap.slots += w.slots;
    snap.busy_slots += w.busy_slots;
  }
  if (auto h = store.track(store->health()); h && h->replicas_wanted > 0) {
    snap.replicas_wanted = h->replicas_wanted;
    snap.replicas = h->replicas;
  }
  return Response::text(200, render_cluster(snap) + request_metrics_.render(),
                        "text/plain; version=0.0.4; charset=utf-8");
}

Response Api::events(const Request& request) {
  std::string last = request.header("last-event-id");
  if (last.empty()) last = request.query_or("last_event_id");
  std::string sweep = request.query_or("sweep");
  // Subscribe first, replay second: an event that arrives in between is both
  // queued and replayed, and the subscription drops the queued copy by id.
  // Streams are limited per peer address (the port differs per connection).
  const std::string client = request.remote.substr(0, request.remote.rfind(':'));
  auto sub = hub_.subscribe(sweep, client);
  if (!sub) {
    Response busy = error_response(
        503, "unavailable",
        "too many event streams (at most " + std::to_string(hub_.limits().max_per_client) +
            " per client and " + std::to_string(hub_.limits().max_subscribers) + " in all)");
    busy.headers.emplace_back("Retry-After", "5");
    return busy;
  }
  std::string body = "retry: " + std::to_string(options_.sse_retry_ms) + "\n\n";
  if (!last.empty()) {
    sub->skip_through(last);
    auto store = borrow();
    if (!store) return error_response(Error::unavailable("no store"));
    std::string after = last;
    int replayed = 0;
    while (replayed < options_.max_replay) {
      auto batch = store.track(store->events().read_events(after, 1000, 0));
      if (!batch) return error_response(batch.error());
      for (const auto& e : *batch) {
        after = e.id;
        if (!sweep.empty() && e.sweep_id != sweep) continue;
        body += format_sse_frame(to_hub_event(e));
        ++replayed;
      }
      if (batch->size() < 1000) break;
    }
    sub->skip_through(after);
  }
  Response r;
  r.status = 200;
  r.content_type = "text/event-stream";
  r.body = std::move(body);
  r.stream = std::move(sub);
  return r;
}

}  // namespace hpo::web
