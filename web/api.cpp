// The Api itself: its routes, the store pool, and what every request goes
// through before its handler (Host check, auth) and after it (metrics, a log
// line for 5xx, Cache-Control). The handlers live by resource in
// api_sweeps.cpp, api_trials.cpp and api_resources.cpp.
//
// The REST handlers. Each handler borrows a store, makes one or a few store
// calls, and encodes the result with json_codec; any Error goes out through
// error_response.
#include "web/api.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "core/log.hpp"
#include "trials/artifacts.hpp"
#include "trials/trial.hpp"
#include "web/api_errors.hpp"
#include "web/http_message.hpp"
#include "web/store_lease.hpp"

namespace hpo::web {

Api::Api(ApiOptions options, StoreFactory factory, EventHub& hub)
    : options_(std::move(options)),
      factory_(std::move(factory)),
      hub_(hub),
      access_(std::make_shared<AccessControl>(options_.token, options_.auth_reads, factory_)) {
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
        [this](const Request& q, const PathParams& p) { return get_sweep(q, p.at("id")); });
  r.add("GET", "/api/sweeps/{id}/pareto",
        [this](const Request& q, const PathParams& p) { return pareto(q, p.at("id")); });
  r.add("GET", "/api/sweeps/{id}/trials",
        [this](const Request& q, const PathParams& p) { return list_trials(q, p.at("id")); });
  r.add("GET", "/api/sweeps/{id}/ensemble",
        [this](const Request& q, const PathParams& p) { return ensemble(q, p.at("id")); });
  r.add("GET", "/api/sweeps/{id}/artifacts/{name}", [this](const Request& q, const PathParams& p) {
    return artifact(q, Owner::kSweep, p.at("id"), p.at("name"));
  });
  r.add("DELETE", "/api/sweeps/{id}",
        [this](const Request& q, const PathParams& p) { return delete_sweep(q, p.at("id")); });
  r.add("PATCH", "/api/sweeps/{id}",
        [this](const Request& q, const PathParams& p) { return annotate(q, p.at("id"), false); });
  r.add("PATCH", "/api/trials/{id}",
        [this](const Request& q, const PathParams& p) { return annotate(q, p.at("id"), true); });
  r.add("POST", "/api/sweeps/{id}/cancel",
        [this](const Request& q, const PathParams& p) { return cancel_sweep(q, p.at("id")); });
  r.add("GET", "/api/trials/{id}",
        [this](const Request& r, const PathParams& p) { return get_trial(r, p.at("id")); });
  r.add("GET", "/api/trials/{id}/artifacts/{name}", [this](const Request& q, const PathParams& p) {
    return artifact(q, Owner::kTrial, p.at("id"), p.at("name"));
  });
  r.add("GET", "/api/workers",
        [this](const Request& q, const PathParams&) { return list_workers(q); });
  r.add("GET", "/api/events", [this](const Request& q, const PathParams&) { return events(q); });
  r.add("POST", "/api/events/ticket",
        [this](const Request& q, const PathParams&) { return event_ticket(q); });
  r.add("GET", "/api/openapi.json",
        [](const Request&, const PathParams&) { return Response::json(200, openapi_json()); });
  r.add("GET", "/healthz", [this](const Request&, const PathParams&) { return healthz(); });
  r.add("GET", "/metrics", [this](const Request& q, const PathParams&) { return metrics(q); });
  add_access_routes();
  add_worker_token_routes();
  if (static_files_) {
    r.set_fallback([this](const Request& q) {
      if (q.path.rfind("/api/", 0) == 0 || q.path == "/api")
        return error_response(Error::not_found("no route for " + q.path));
      return static_files_->handle(q);
    });
  }
}

Api::~Api() = default;

Api::StoreLease Api::borrow() {
  if (auto idle = pool_.take()) return StoreLease(*this, std::move(idle));
  auto made = factory_();
  return StoreLease(*this, made ? std::move(*made) : nullptr);
}

void Api::give_back(std::unique_ptr<trials::Store> store) {
  pool_.give_back(std::move(store));
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
  std::string digest;
  auto who = access_->identify(request, &digest);
  if (!who) return error_response(who.error());
  auto t0 = std::chrono::steady_clock::now();
  Request call = request;
  call.principal = std::move(*who);
  call.token_digest = std::move(digest);
  Response r = router_.handle(call);
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

}  // namespace hpo::web
