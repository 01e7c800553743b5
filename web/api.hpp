// Api: the REST handlers of hpo on top of the store (trials/store.hpp), as one pure Handler
// (Request -> Response) for HttpServer.
//
// Stores: a Store connection is used by one thread at a time (RedisStore
// holds one connection), so the Api keeps a small pool: a request borrows an
// instance (making one with the factory when none is free) and gives it back;
// an instance whose call failed with kUnavailable is dropped, not reused, and
// a factory that cannot connect makes the request a 503.
//
// Host: a request whose Host header names a host not in `allowed_hosts` (IP
// literals always pass) gets 400 before anything else (DNS rebinding).
//
// Auth (web/access_control.hpp): `token` is the bootstrap admin's; users'
// own tokens name them, and every handler shows and changes only what their
// role in each project allows (trials/access.hpp). A sweep, trial, artifact or
// event of a project the caller may not read answers exactly as an id that
// does not exist (404); one they may read but not change answers 403. Without
// `token` the API is open. Errors of every kind leave through web/api_errors.
//
// Routes (the OpenAPI document at /api/openapi.json lists them all; a test
// keeps the two equal):
//   POST /api/sweeps                 submit a spec -> 201 {"id"}; 400 with field paths
//   GET  /api/sweeps                 ?offset&limit, newest first
//   GET  /api/sweeps/{id}            the sweep document (json_codec.hpp)
//   GET  /api/sweeps/{id}/trials     ?offset&limit&state&sort&kind&format=csv
//   POST /api/sweeps/{id}/cancel
//   PATCH /api/sweeps/{id}, /api/trials/{id}   {"tags", "note"}; GET lists take ?tag=
//   GET  /api/sweeps/{id}/ensemble   the ensemble record (404 until every member finished)
//   GET  /api/trials/{id}            trial + attempts + reports (?reports_offset&reports_limit)
//   GET  /api/workers
//   GET  /api/events                 server-sent events; Last-Event-ID resumes
//   GET  /api/whoami, /api/projects[/{name}/members|audit], /api/users[/{name}/tokens],
//        /api/audit; POST /api/projects, /api/users, /api/users/{name}/tokens;
//        PATCH /api/projects/{name}; PUT|DELETE /api/projects/{name}/members/{user};
//        DELETE /api/tokens/{id}
//                                    projects, users, tokens, the audit log (api_access.cpp)
//   GET|POST /api/worker-tokens, DELETE /api/worker-tokens/{id}
//                                    worker hosts' credentials (api_worker_tokens.cpp); the
//                                    scheduler serves their endpoint, POST /api/worker/redis
//   GET  /api/openapi.json
//   GET  /healthz                    200 when the store answers, else 503
//   GET  /metrics                    Prometheus text: trials by state, queue, leases,
//                                    workers, results, request latency histograms
// Anything else under GET goes to the static dashboard when `static_dir` is set.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/idle_pool.hpp"
#include "trials/spec/spec_cache.hpp"
#include "trials/store.hpp"
#include "web/access_control.hpp"
#include "web/event_hub.hpp"
#include "web/event_pump.hpp"
#include "web/http_message.hpp"
#include "web/json_codec.hpp"
#include "web/metrics.hpp"
#include "web/pareto_cache.hpp"
#include "web/router.hpp"
#include "web/static_files.hpp"
#include "web/trial_cache.hpp"

namespace hpo::web {

struct ApiOptions {
  std::string token;        // empty: mutating calls are open
  bool auth_reads = false;  // reads need the token too (see above)
  std::string static_dir;   // empty: no dashboard
  // Dataset files a torch spec may name (trials/data_roots.hpp); empty: any.
  std::vector<std::string> data_roots;
  // The process's spec cache (trials/spec/spec_cache.hpp): submit puts each
  // accepted spec in, sweep documents read their typed spec from it. One is
  // made when null.
  std::shared_ptr<trials::SpecCache> specs;
  // Host names requests may carry (DNS rebinding); IP literals always pass.
  // Empty: no check.
  std::vector<std::string> allowed_hosts;
  std::uint64_t body_limit = 1 << 20;  // passed on to ServerOptions by the caller
  int handler_threads = 4;             // likewise
  std::int64_t max_page = 1000;        // largest `limit` accepted
  std::int64_t default_page = 100;
  int max_replay = 10000;   // SSE events replayed after Last-Event-ID
  int sse_retry_ms = 3000;  // the `retry:` line
};

class Api {
 public:
  Api(ApiOptions options, StoreFactory factory, EventHub& hub);
  ~Api();

  Response handle(const Request& request);
  Handler handler() {
    return [this](const Request& r) { return handle(r); };
  }
  std::vector<RouteInfo> routes() const { return router_.routes(); }
  // The OpenAPI 3 document (JSON text).
  static const std::string& openapi_json();

 private:
  class StoreLease;
  StoreLease borrow();
  void give_back(std::unique_ptr<trials::Store> store);

  bool host_allowed(const Request& request) const;
  // Tenancy (api_access.cpp): the sweep if the caller may read it, else the
  // store's own answer for an id that does not exist.
  Result<trials::Sweep> readable_sweep(StoreLease& store, const Request& request,
                                       const std::string& id);
  // The trial if the caller may read its sweep, else as for a missing trial.
  Result<trials::Trial> readable_trial(StoreLease& store, const Request& request,
                                       const std::string& id);
  // Whether the caller may read sweep `sweep_id`'s project (for what names
  // only its sweep); `seen` (optional) remembers answers within one request.
  bool can_read(StoreLease& store, const Request& request, const std::string& sweep_id,
                std::map<std::string, bool>* seen = nullptr);
  // Records a mutation in its project's audit log (a failure is logged, not returned).
  void audit(StoreLease& store, const Request& request, const std::string& project,
             const std::string& action, const std::string& target, const std::string& detail = "");
  void add_access_routes();
  Response whoami(const Request& request);
  Response list_projects(const Request& request);
  Response create_project(const Request& request);
  Response update_project(const Request& request, const std::string& name);
  Response project_members(const Request& request, const std::string& project);
  Response set_member(const Request& request, const std::string& project, const std::string& user,
                      bool remove);
  Response read_audit(const Request& request, const std::string& project);
  Response list_users(const Request& request);
  Response create_user(const Request& request);
  Response update_user(const Request& request, const std::string& name);
  Response event_ticket(const Request& request);
  Response create_token(const Request& request, const std::string& user);
  Response list_tokens(const Request& request, const std::string& user);
  Response revoke_token(const Request& request, const std::string& id);
  // Worker credentials (api_worker_tokens.cpp).
  void add_worker_token_routes();
  Response create_worker_token(const Request& request);
  Response list_worker_tokens(const Request& request);
  Response revoke_worker_token(const Request& request, const std::string& id);
  Response create_sweep(const Request& request);
  Response import_sweep(const Request& request);
  Response list_sweeps(const Request& request);
  Response get_sweep(const Request& request, const std::string& id);
  Response pareto(const Request& request, const std::string& id);
  Response ensemble(const Request& request, const std::string& id);
  // The sweep document, its objective and budget from the typed spec.
  Json sweep_doc(const trials::Sweep& sweep);
  Response list_trials(const Request& request, const std::string& sweep_id);
  Response cancel_sweep(const Request& request, const std::string& id);
  // PATCH a sweep's or a trial's tags and note (its sweep's owner or project admin).
  Response annotate(const Request& request, const std::string& id, bool of_trial);
  Response delete_sweep(const Request& request, const std::string& id);
  Response get_trial(const Request& request, const std::string& id);
  enum class Owner { kTrial, kSweep };
  Response artifact(const Request& request, Owner owner, const std::string& id,
                    const std::string& name);
  Response list_workers(const Request& request);
  Response events(const Request& request);
  Response healthz();
  Response metrics(const Request& request);

  ApiOptions options_;
  StoreFactory factory_;
  EventHub& hub_;
  Router router_;
  std::optional<StaticFiles> static_files_;
  RequestMetrics request_metrics_;
  ParetoCache pareto_cache_;
  TrialCache trial_cache_;
  std::shared_ptr<AccessControl> access_;  // shared with event filters
  IdlePool<trials::Store> pool_;
};

}  // namespace hpo::web
