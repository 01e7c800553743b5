// Worker credentials in the Api: a service admin makes one per worker host
// (bound to one project or not), lists and revokes them; each change is in
// the service's audit log. What a worker token can do is the worker relay's
// (trials/redis/worker_relay.hpp); the secret is shown once and stored hashed.
#include <string>

#include "trials/access.hpp"
#include "web/api.hpp"
#include "web/api_errors.hpp"
#include "web/api_helpers.hpp"
#include "web/store_lease.hpp"

namespace hpo::web {

namespace {

Json token_doc(const trials::WorkerTokenRecord& t) {
  return {{"id", t.id},
          {"host", t.host},
          {"project", t.project.empty() ? Json() : Json(t.project)},
          {"created_ms", t.created_ms},
          {"created_by", t.created_by}};
}

}  // namespace

void Api::add_worker_token_routes() {
  auto& r = router_;
  r.add("GET", "/api/worker-tokens",
        [this](const Request& q, const PathParams&) { return list_worker_tokens(q); });
  r.add("POST", "/api/worker-tokens",
        [this](const Request& q, const PathParams&) { return create_worker_token(q); });
  r.add("DELETE", "/api/worker-tokens/{id}", [this](const Request& q, const PathParams& p) {
    return revoke_worker_token(q, p.at("id"));
  });
}

Response Api::create_worker_token(const Request& request) {
  if (!request.principal->service_admin)
    return forbidden("making a worker token needs a service admin's token");
  auto body = object_body(request, {"host", "project"});
  if (!body) return error_response(body.error());
  auto host = string_field(*body, "host", true);
  if (!host) return error_response(host.error());
  if (auto st = trials::check_worker_name("host", *host, /*prefix_ok=*/true); !st)
    return error_response(st.error());
  auto project = string_field(*body, "project", false);
  if (!project) return error_response(project.error());
  if (!project->empty())
    if (auto st = trials::check_access_name("project", *project); !st)
      return error_response(st.error());
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  trials::WorkerTokenRecord rec{"", *host, *project, 0, request.principal->user};
  auto t = trials::store_new_token([&](const trials::NewToken& t) {
    rec.id = "w" + t.id;
    return store.track(store->access().add_worker_token(rec, trials::token_digest(t.secret)));
  });
  if (!t) return error_response(t.error());
  audit(store, request, *project, "worker_token.create", rec.id,
        (rec.names_many() ? "workers " : "worker ") + *host +
            (project->empty() ? ", any project" : ", project " + *project));
  Json doc = token_doc(rec);
  doc["token"] = t->secret;
  return json_ok(201, doc);
}

Response Api::list_worker_tokens(const Request& request) {
  if (!request.principal->service_admin)
    return forbidden("listing worker tokens needs a service admin's token");
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto tokens = store.track(store->access().list_worker_tokens());
  if (!tokens) return error_response(tokens.error());
  Json list = Json::array();
  for (const auto& t : *tokens) list.push_back(token_doc(t));
  return json_ok(200, {{"worker_tokens", list}});
}

Response Api::revoke_worker_token(const Request& request, const std::string& id) {
  // As for another user's token: to anyone else, one that does not exist.
  if (!request.principal->service_admin)
    return error_response(Error::not_found("worker token " + id));
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto gone = store.track(store->access().revoke_worker_token(id));
  if (!gone) return error_response(gone.error());
  audit(store, request, gone->project, "worker_token.revoke", id, "worker " + gone->host);
  Response r;
  r.status = 204;
  return r;
}

}  // namespace hpo::web
