// Tenancy in the Api: what each handler asks before it answers (may the
// caller read this sweep, this trial?), the audit record of each mutation,
// and the routes of projects, members, users, tokens and the audit log.
// Split from api.cpp by concern; the rules themselves are trials/access.hpp's.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/log.hpp"
#include "trials/access.hpp"
#include "web/api.hpp"
#include "web/api_errors.hpp"
#include "web/api_helpers.hpp"
#include "web/store_lease.hpp"

namespace hpo::web {

namespace {

Json project_doc(const trials::ProjectRecord& p, std::optional<trials::ProjectRole> role) {
  return {
      {"name", p.name},
      {"weight", p.weight},
      {"created_ms", p.created_ms},
      {"limits",
       {{"max_slots", p.limits.max_slots},
        {"max_queued_trials", p.limits.max_queued_trials},
        {"max_active_sweeps", p.limits.max_active_sweeps},
        {"max_gpus", p.limits.max_gpus},
        {"max_store_bytes", p.limits.max_store_bytes},
        {"max_file_bytes", p.limits.max_file_bytes}}},
      {"use",
       {{"slots", p.use.slots},
        {"queued_trials", p.use.queued_trials},
        {"active_sweeps", p.use.active_sweeps},
        {"gpus", p.use.gpus},
        {"store_bytes", p.use.store_bytes},
        {"file_bytes", p.use.file_bytes}}},
      {"byte_limits", {{"store_bytes", p.store_bytes_limit}, {"file_bytes", p.file_bytes_limit}}},
      {"role", role ? Json(trials::to_string(*role)) : Json(nullptr)}};
}

// The weight and limits of a project body onto `p`: each optional, each checked.
Status read_project_settings(const Json& body, trials::ProjectRecord& p) {
  if (body.contains("weight")) {
    const Json& w = body["weight"];
    if (!w.is_number() || !(w.get<double>() > 0) || w.get<double>() > 1e6)
      return Error::invalid("weight", "expected a number in (0, 1e6]");
    p.weight = w.get<double>();
  }
  constexpr std::int64_t kCounts = 1'000'000;
  constexpr std::int64_t kBytes = std::int64_t{1} << 53;  // 8 PiB, exact in every JSON reader
  constexpr const char* kCountsText = "expected an integer in [0, 1000000] (0: no limit)";
  constexpr const char* kBytesText =
      "expected a number of bytes in [0, 2^53] (0: the scheduler's default)";
  struct Limit {
    const char* key;
    std::int64_t* out;
    std::int64_t max;
    const char* expected;
  };
  const Limit limits[] = {{"max_slots", &p.limits.max_slots, kCounts, kCountsText},
                          {"max_queued_trials", &p.limits.max_queued_trials, kCounts, kCountsText},
                          {"max_active_sweeps", &p.limits.max_active_sweeps, kCounts, kCountsText},
                          {"max_gpus", &p.limits.max_gpus, kCounts, kCountsText},
                          {"max_store_bytes", &p.limits.max_store_bytes, kBytes, kBytesText},
                          {"max_file_bytes", &p.limits.max_file_bytes, kBytes, kBytesText}};
  for (const auto& l : limits) {
    if (!body.contains(l.key)) continue;
    const Json& v = body[l.key];
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > l.max)
      return Error::invalid(l.key, l.expected);
    *l.out = v.get<std::int64_t>();
  }
  return {};
}

Json audit_doc(const trials::AuditEntry& e) {
  return {{"id", e.id},         {"time_ms", e.time_ms}, {"user", e.user},    {"project", e.project},
          {"action", e.action}, {"target", e.target},   {"detail", e.detail}};
}

std::string settings_text(const trials::ProjectRecord& p) {
  return fmt::format(
      "weight {} max_slots {} max_queued_trials {} max_active_sweeps {} max_gpus {} "
      "max_store_bytes {} max_file_bytes {}",
      p.weight, p.limits.max_slots, p.limits.max_queued_trials, p.limits.max_active_sweeps,
      p.limits.max_gpus, p.limits.max_store_bytes, p.limits.max_file_bytes);
}

Response service_admins_only(const std::string& what) {
  return forbidden(what + " needs a service admin's token");
}

}  // namespace

Result<trials::Sweep> Api::readable_sweep(StoreLease& store, const Request& request,
                                          const std::string& id) {
  auto sweep = store.track(store->sweeps().get_sweep(id));
  if (!sweep) return sweep;
  if (!request.principal->can_read(sweep->project)) return Error::not_found("sweep " + id);
  return sweep;
}

Result<trials::Trial> Api::readable_trial(StoreLease& store, const Request& request,
                                          const std::string& id) {
  auto trial = store.track(store->trials().get_trial(id));
  if (!trial) return trial;
  if (!can_read(store, request, trial->sweep_id)) return Error::not_found("trial " + id);
  return trial;
}

bool Api::can_read(StoreLease& store, const Request& request, const std::string& sweep_id,
                   std::map<std::string, bool>* seen) {
  const trials::Principal& who = *request.principal;
  if (who.sees_all_projects()) return true;
  if (seen)
    if (auto it = seen->find(sweep_id); it != seen->end()) return it->second;
  // Read each time, not remembered across requests: a deleted sweep's id may
  // come back in another project.
  auto project = store.track(store->sweeps().sweep_project(sweep_id));
  const bool ok = project && who.can_read(*project);
  if (seen) (*seen)[sweep_id] = ok;
  return ok;
}

void Api::audit(StoreLease& store, const Request& request, const std::string& project,
                const std::string& action, const std::string& target, const std::string& detail) {
  trials::AuditEntry e;
  e.user = request.principal->user.empty() ? "(open)" : request.principal->user;
  e.project = project;
  e.action = action;
  e.target = target;
  e.detail = detail.substr(0, 300);
  if (auto st = store.track(store->access().record(e)); !st)
    log_warn("a mutation is done but its audit record is not",
             {{"action", action}, {"target", target}, {"error", st.error().message}});
}

void Api::add_access_routes() {
  auto& r = router_;
  r.add("GET", "/api/whoami", [this](const Request& q, const PathParams&) { return whoami(q); });
  r.add("GET", "/api/projects",
        [this](const Request& q, const PathParams&) { return list_projects(q); });
  r.add("POST", "/api/projects",
        [this](const Request& q, const PathParams&) { return create_project(q); });
  r.add("PATCH", "/api/projects/{name}",
        [this](const Request& q, const PathParams& p) { return update_project(q, p.at("name")); });
  r.add("GET", "/api/projects/{name}/members",
        [this](const Request& q, const PathParams& p) { return project_members(q, p.at("name")); });
  r.add("PUT", "/api/projects/{name}/members/{user}",
        [this](const Request& q, const PathParams& p) {
          return set_member(q, p.at("name"), p.at("user"), false);
        });
  r.add("DELETE", "/api/projects/{name}/members/{user}",
        [this](const Request& q, const PathParams& p) {
          return set_member(q, p.at("name"), p.at("user"), true);
        });
  r.add("GET", "/api/projects/{name}/audit",
        [this](const Request& q, const PathParams& p) { return read_audit(q, p.at("name")); });
  r.add("GET", "/api/audit",
        [this](const Request& q, const PathParams&) { return read_audit(q, ""); });
  r.add("GET", "/api/users", [this](const Request& q, const PathParams&) { return list_users(q); });
  r.add("PATCH", "/api/users/{name}",
        [this](const Request& q, const PathParams& p) { return update_user(q, p.at("name")); });
  r.add("POST", "/api/users",
        [this](const Request& q, const PathParams&) { return create_user(q); });
  r.add("GET", "/api/users/{name}/tokens",
        [this](const Request& q, const PathParams& p) { return list_tokens(q, p.at("name")); });
  r.add("POST", "/api/users/{name}/tokens",
        [this](const Request& q, const PathParams& p) { return create_token(q, p.at("name")); });
  r.add("DELETE", "/api/tokens/{id}",
        [this](const Request& q, const PathParams& p) { return revoke_token(q, p.at("id")); });
}

Response Api::whoami(const Request& request) {
  const trials::Principal& who = *request.principal;
  Json roles = Json::object();
  for (const auto& [p, role] : who.roles) roles[p] = trials::to_string(role);
  return json_ok(200, {{"user", who.user.empty() ? Json(nullptr) : Json(who.user)},
                       {"service_admin", who.service_admin},
                       {"reads_everything", who.sees_all_projects()},
                       {"roles", roles}});
}

Response Api::list_projects(const Request& request) {
  const trials::Principal& who = *request.principal;
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto projects = store.track(store->access().list_projects());
  if (!projects) return error_response(projects.error());
  Json list = Json::array();
  for (const auto& p : *projects)
    if (who.can_read(p.name)) list.push_back(project_doc(p, who.role_in(p.name)));
  return json_ok(200, {{"projects", list}});
}

Response Api::create_project(const Request& request) {
  if (!request.principal->service_admin) return service_admins_only("creating a project");
  auto body =
      object_body(request, {"name", "weight", "max_slots", "max_queued_trials", "max_active_sweeps",
                            "max_gpus", "max_store_bytes", "max_file_bytes"});
  if (!body) return error_response(body.error());
  auto name = string_field(*body, "name", true);
  if (!name) return error_response(name.error());
  if (auto st = trials::check_access_name("name", *name); !st) return error_response(st.error());
  trials::ProjectRecord p{*name, 1, 0, {}, {}};
  if (auto st = read_project_settings(*body, p); !st) return error_response(st.error());
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  if (auto st = store.track(store->access().create_project(p)); !st)
    return error_response(st.error());
  audit(store, request, p.name, "project.create", p.name, settings_text(p));
  return json_ok(201, project_doc(p, trials::ProjectRole::kAdmin));
}

Response Api::update_project(const Request& request, const std::string& name) {
  const trials::Principal& who = *request.principal;
  if (!who.can_read(name)) return error_response(Error::not_found("project " + name));
  if (!who.service_admin) return service_admins_only("changing a project's weight or limits");
  auto body = object_body(request, {"weight", "max_slots", "max_queued_trials", "max_active_sweeps",
                                    "max_gpus", "max_store_bytes", "max_file_bytes"});
  if (!body) return error_response(body.error());
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto found = store.track(find_project(store->access(), name));
  if (!found) return error_response(found.error());
  trials::ProjectRecord p = std::move(*found);
  if (auto st = read_project_settings(*body, p); !st) return error_response(st.error());
  if (auto st = store.track(store->access().update_project(p)); !st)
    return error_response(st.error());
  audit(store, request, name, "project.update", name, settings_text(p));
  return json_ok(200, project_doc(p, who.role_in(name)));
}

Response Api::project_members(const Request& request, const std::string& project) {
  if (!request.principal->can_read(project))
    return error_response(Error::not_found("project " + project));
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto members = store.track(store->access().members(project));
  if (!members) return error_response(members.error());
  Json list = Json::array();
  for (const auto& [user, role] : *members)
    list.push_back({{"user", user}, {"role", trials::to_string(role)}});
  return json_ok(200, {{"project", project}, {"members", list}});
}

Response Api::set_member(const Request& request, const std::string& project,
                         const std::string& user, bool remove) {
  const trials::Principal& who = *request.principal;
  if (!who.can_read(project)) return error_response(Error::not_found("project " + project));
  if (!who.can_manage(project))
    return forbidden("only an admin of project " + project + " may change its members");
  std::optional<trials::ProjectRole> role;
  if (!remove) {
    auto body = object_body(request, {"role"});
    if (!body) return error_response(body.error());
    auto text = string_field(*body, "role", true);
    if (!text) return error_response(text.error());
    role = trials::parse_project_role(*text);
    if (!role)
      return error_response(Error::invalid(
          "role", "'" + text->substr(0, 40) + "': expected viewer, member or admin"));
  }
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  if (auto st = store.track(store->access().set_member(project, user, role)); !st)
    return error_response(st.error());
  audit(store, request, project, remove ? "member.remove" : "member.set", user,
        role ? trials::to_string(*role) : "");
  if (remove) {
    Response r;
    r.status = 204;
    return r;
  }
  return json_ok(200, {{"project", project}, {"user", user}, {"role", trials::to_string(*role)}});
}

Response Api::read_audit(const Request& request, const std::string& project) {
  const trials::Principal& who = *request.principal;
  if (project.empty()) {
    if (!who.service_admin) return service_admins_only("the service's audit log");
  } else {
    if (!who.can_read(project)) return error_response(Error::not_found("project " + project));
    if (!who.can_manage(project))
      return forbidden("only an admin of project " + project + " may read its audit log");
  }
  auto limit = int_param(request, "limit", 1000, 1, 10000);
  if (!limit) return error_response(limit.error());
  const std::string after = request.query_or("after");
  const auto dash = after.find('-');
  const bool digits = !after.empty() &&
                      after.find_first_not_of("0123456789-") == std::string::npos &&
                      dash != std::string::npos && dash > 0 && dash + 1 < after.size() &&
                      after.find('-', dash + 1) == std::string::npos;
  if (!after.empty() && (!digits || after.size() > 40))
    return error_response(Error::invalid("after", "expected an entry id such as 1765000000000-0"));
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  if (!project.empty()) {  // a project that does not exist has no log either
    if (auto found = store.track(find_project(store->access(), project)); !found)
      return error_response(found.error());
  }
  auto entries = store.track(store->access().audit(project, after, static_cast<int>(*limit)));
  if (!entries) return error_response(entries.error());
  Json list = Json::array();
  for (const auto& e : *entries) list.push_back(audit_doc(e));
  return json_ok(200, {{"project", project}, {"entries", list}});
}

Response Api::list_users(const Request& request) {
  if (!request.principal->service_admin) return service_admins_only("the list of users");
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto users = store.track(store->access().list_users());
  if (!users) return error_response(users.error());
  Json list = Json::array();
  for (const auto& u : *users)
    list.push_back({{"name", u.name},
                    {"service_admin", u.service_admin},
                    {"disabled", u.disabled},
                    {"created_ms", u.created_ms}});
  return json_ok(200, {{"users", list}});
}

Response Api::update_user(const Request& request, const std::string& name) {
  // Who the users are is a service admin's to know: to others, any name is none.
  if (!request.principal->service_admin) return error_response(Error::not_found("user " + name));
  auto body = object_body(request, {"disabled", "service_admin"});
  if (!body) return error_response(body.error());
  auto flag = [&](const char* field) -> Result<std::optional<bool>> {
    if (!body->contains(field)) return std::optional<bool>{};
    if (!(*body)[field].is_boolean())
      return Error::invalid(field, fmt::format("{} is not true or false", (*body)[field].dump()));
    return std::optional<bool>((*body)[field].get<bool>());
  };
  auto disabled = flag("disabled");
  if (!disabled) return error_response(disabled.error());
  auto admin = flag("service_admin");
  if (!admin) return error_response(admin.error());
  if (!*disabled && !*admin)
    return error_response(Error::invalid("", "expected disabled or service_admin"));
  if (name == trials::kBootstrapAdmin)
    return error_response(Error::conflict(fmt::format(
        "user {} holds the scheduler's own token (--token, --token-file, or the one it made up): "
        "it is neither disabled nor demoted; start the scheduler with another token instead",
        name)));
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  if (auto st = store.track(store->access().update_user(name, *disabled, *admin)); !st)
    return error_response(st.error());
  std::string detail;
  if (*disabled) detail = **disabled ? "disabled" : "enabled";
  if (*admin)
    detail +=
        (detail.empty() ? "" : ", ") + std::string(**admin ? "service admin" : "not service admin");
  audit(store, request, "", "user.update", name, detail);
  return json_ok(200, {{"name", name}, {"changed", detail}});
}

// A new token for `user`, stored hashed; the secret is in the reply only.
static Result<Json> issue_token(trials::AccessStore& access, const std::string& user,
                                const std::string& label, std::int64_t lifetime_ms = 0) {
  auto t = trials::store_new_token([&](const trials::NewToken& t) {
    return access.add_token(user, {t.id, user, label, 0, 0, lifetime_ms},
                            trials::token_digest(t.secret));
  });
  if (!t) return t.error();
  return Json{{"id", t->id},
              {"user", user},
              {"label", label},
              {"token", t->secret},
              {"expires_in_days", lifetime_ms > 0 ? Json(lifetime_ms / 86'400'000.0) : Json()}};
}

Response Api::create_user(const Request& request) {
  if (!request.principal->service_admin) return service_admins_only("creating a user");
  auto body = object_body(request, {"name", "service_admin", "label"});
  if (!body) return error_response(body.error());
  auto name = string_field(*body, "name", true);
  if (!name) return error_response(name.error());
  if (auto st = trials::check_access_name("name", *name); !st) return error_response(st.error());
  bool admin = false;
  if (body->contains("service_admin")) {
    if (!(*body)["service_admin"].is_boolean())
      return error_response(Error::invalid("service_admin", "expected true or false"));
    admin = (*body)["service_admin"].get<bool>();
  }
  auto label = string_field(*body, "label", false, "first token");
  if (!label) return error_response(label.error());
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  if (auto st = store.track(store->access().create_user({*name, admin, 0})); !st)
    return error_response(st.error());
  audit(store, request, "", "user.create", *name, admin ? "service admin" : "");
  auto token = store.track(issue_token(store->access(), *name, label->substr(0, 100)));
  if (!token) return error_response(token.error());
  audit(store, request, "", "token.create", (*token)["id"].get<std::string>(), *name);
  return json_ok(201, {{"name", *name}, {"service_admin", admin}, {"token", *token}});
}

Response Api::create_token(const Request& request, const std::string& user) {
  const trials::Principal& who = *request.principal;
  if (!who.service_admin && who.user != user)
    return error_response(Error::not_found("user " + user));
  auto body = object_body(request, {"label", "expires_in_days"});
  if (!body) return error_response(body.error());
  auto label = string_field(*body, "label", false);
  if (!label) return error_response(label.error());
  std::int64_t lifetime_ms = 0;
  if (body->contains("expires_in_days")) {
    const Json& d = (*body)["expires_in_days"];
    if (!d.is_number() || !(d.get<double>() > 0) || d.get<double>() > 3650)
      return error_response(Error::invalid(
          "expires_in_days",
          fmt::format("{} is not a number of days above 0 and at most 3650", d.dump())));
    lifetime_ms = static_cast<std::int64_t>(d.get<double>() * 86'400'000.0);
    if (lifetime_ms < 1) lifetime_ms = 1;
  }
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto token = store.track(issue_token(store->access(), user, label->substr(0, 100), lifetime_ms));
  if (!token) return error_response(token.error());
  audit(store, request, "", "token.create", (*token)["id"].get<std::string>(), user);
  return json_ok(201, *token);
}

Response Api::list_tokens(const Request& request, const std::string& user) {
  const trials::Principal& who = *request.principal;
  if (!who.service_admin && who.user != user)
    return error_response(Error::not_found("user " + user));
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto tokens = store.track(store->access().list_tokens(user));
  if (!tokens) return error_response(tokens.error());
  Json list = Json::array();
  for (const auto& t : *tokens)
    list.push_back({{"id", t.id},
                    {"label", t.label},
                    {"created_ms", t.created_ms},
                    {"expires_ms", t.expires_ms > 0 ? Json(t.expires_ms) : Json()}});
  return json_ok(200, {{"user", user}, {"tokens", list}});
}

Response Api::revoke_token(const Request& request, const std::string& id) {
  const trials::Principal& who = *request.principal;
  if (id == "bootstrap" && who.service_admin)
    return error_response(Error::conflict(
        "token bootstrap is the scheduler's own (--token, --token-file, or the one it made up): "
        "it changes when the scheduler restarts with another"));
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  if (!who.service_admin) {
    // One's own tokens only; another's id is one that does not exist.
    auto mine = store.track(store->access().list_tokens(who.user));
    if (!mine) return error_response(mine.error());
    if (std::none_of(mine->begin(), mine->end(), [&](const auto& t) { return t.id == id; }))
      return error_response(Error::not_found("token " + id));
  }
  auto user = store.track(store->access().revoke_token(id));
  if (!user) return error_response(user.error());
  audit(store, request, "", "token.revoke", id, *user);
  Response r;
  r.status = 204;
  return r;
}

}  // namespace hpo::web
