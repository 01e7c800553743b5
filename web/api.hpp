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
// Auth: when `token` is set, every mutating call (POST, PUT, PATCH, DELETE)
// needs `Authorization: Bearer <token>` (compared in constant time); reads are
// open unless `auth_reads` (then GETs but /healthz need it too, as the header
// or ?access_token=). Errors of every kind leave through web/api_errors.
//
// Routes (the OpenAPI document at /api/openapi.json lists them all; a test
// keeps the two equal):
//   POST /api/sweeps                 submit a spec -> 201 {"id"}; 400 with field paths
//   GET  /api/sweeps                 ?offset&limit, newest first
//   GET  /api/sweeps/{id}            the sweep document (json_codec.hpp)
//   GET  /api/sweeps/{id}/trials     ?offset&limit&state&sort&kind&format=csv
//   POST /api/sweeps/{id}/cancel
//   GET  /api/sweeps/{id}/ensemble   the ensemble record (404 until every member finished)
//   GET  /api/trials/{id}            trial + attempts + reports (?reports_offset&reports_limit)
//   GET  /api/workers
//   GET  /api/events                 server-sent events; Last-Event-ID resumes
//   GET  /api/openapi.json
//   GET  /healthz                    200 when the store answers, else 503
//   GET  /metrics                    Prometheus text: trials by state, queue, leases,
//                                    workers, results, request latency histograms
// Anything else under GET goes to the static dashboard when `static_dir` is set.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "trials/spec/spec_cache.hpp"
#include "trials/store.hpp"
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

  bool authorized(const Request& request) const;
  bool host_allowed(const Request& request) const;
  Response create_sweep(const Request& request);
  Response import_sweep(const Request& request);
  Response list_sweeps(const Request& request);
  Response get_sweep(const std::string& id);
  Response pareto(const std::string& id);
  // The sweep document, its objective and budget from the typed spec.
  Json sweep_doc(const trials::Sweep& sweep);
  Response list_trials(const Request& request, const std::string& sweep_id);
  Response cancel_sweep(const std::string& id);
  Response delete_sweep(const std::string& id);
  Response get_trial(const Request& request, const std::string& id);
  enum class Owner { kTrial, kSweep };
  Response artifact(const Request& request, Owner owner, const std::string& id,
                    const std::string& name);
  Response list_workers();
  Response events(const Request& request);
  Response healthz();
  Response metrics();

  ApiOptions options_;
  StoreFactory factory_;
  EventHub& hub_;
  Router router_;
  std::optional<StaticFiles> static_files_;
  RequestMetrics request_metrics_;
  ParetoCache pareto_cache_;
  TrialCache trial_cache_;
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<trials::Store>> pool_;
};

}  // namespace hpo::web
