// RedisStore's AccessStore: users, token digests, projects, members and the
// audit log, each one call of functions/14_access.lua (its keys live under a
// prefix of their own, out of a worker's reach).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "trials/access.hpp"
#include "trials/redis/redis_store.hpp"
#include "trials/redis/redis_store_codec.hpp"

namespace hpo::trials::redis {

using detail::expect_ok;
using detail::to_i64;

namespace {

// The flat {a, b, c, a, b, c, ...} reply of a listing, `width` at a time.
template <class F>
void each_row(const Reply& r, std::size_t width, F&& f) {
  for (std::size_t i = 0; i + width <= r.elements.size(); i += width) f(&r.elements[i]);
}

// Tokens in the order they were made (ids break ties).
template <class Record>
void oldest_first(std::vector<Record>& records) {
  std::sort(records.begin(), records.end(), [](const Record& a, const Record& b) {
    return a.created_ms < b.created_ms || (a.created_ms == b.created_ms && a.id < b.id);
  });
}

}  // namespace

Status RedisStore::bootstrap(const std::string& admin, const std::string& digest,
                             const std::string& project) {
  return expect_ok(fcall("access_bootstrap", {admin, digest, project}));
}

Status RedisStore::create_user(const UserRecord& user) {
  if (auto st = expect_ok(fcall("create_user", {user.name, user.service_admin ? "1" : "0"})); !st)
    return st;
  return replicated("user " + user.name);
}

Status RedisStore::update_user(const std::string& name, std::optional<bool> disabled,
                               std::optional<bool> service_admin) {
  auto flag = [](std::optional<bool> v) { return v ? std::string(*v ? "1" : "0") : ""; };
  if (auto st = expect_ok(fcall("update_user", {name, flag(disabled), flag(service_admin)})); !st)
    return st;
  return replicated("user " + name);
}

Result<std::vector<UserRecord>> RedisStore::list_users() {
  auto r = fcall("list_users", {});
  if (!r) return r.error();
  std::vector<UserRecord> out;
  each_row(*r, 4, [&](const Reply* e) {
    out.push_back({e[0].str, e[1].str == "1", to_i64(e[2].str), e[3].str == "1"});
  });
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return out;
}

Status RedisStore::add_token(const std::string& user, const TokenRecord& token,
                             const std::string& digest) {
  if (auto st = expect_ok(fcall(
          "add_token", {user, token.id, digest, token.label, std::to_string(token.lifetime_ms)}));
      !st)
    return st;
  return replicated("token " + token.id);
}

Result<std::string> RedisStore::revoke_token(const std::string& token_id) {
  auto r = fcall("revoke_token", {token_id});
  if (!r) return r.error();
  if (auto st = replicated("the revocation of token " + token_id); !st) return st.error();
  return r->str;
}

Result<std::vector<TokenRecord>> RedisStore::list_tokens(const std::string& user) {
  auto r = fcall("list_tokens", {user});
  if (!r) return r.error();
  std::vector<TokenRecord> out;
  each_row(*r, 4, [&](const Reply* e) {
    out.push_back({e[0].str, user, e[1].str, to_i64(e[2].str), to_i64(e[3].str)});
  });
  oldest_first(out);
  return out;
}

Result<std::optional<Principal>> RedisStore::resolve_token(const std::string& digest) {
  auto r = fcall("resolve_token", {digest});
  if (!r) return r.error();
  if (r->elements.size() < 2) return std::optional<Principal>{};
  Principal p;
  p.user = r->elements[0].str;
  p.service_admin = r->elements[1].str == "1";
  for (std::size_t i = 2; i + 1 < r->elements.size(); i += 2)
    if (auto role = parse_project_role(r->elements[i + 1].str)) p.roles[r->elements[i].str] = *role;
  return std::optional<Principal>(std::move(p));
}

namespace {

std::vector<std::string> project_args(const ProjectRecord& p) {
  return {p.name,
          fmt::format("{}", p.weight),
          std::to_string(p.limits.max_slots),
          std::to_string(p.limits.max_queued_trials),
          std::to_string(p.limits.max_active_sweeps),
          std::to_string(p.limits.max_gpus),
          std::to_string(p.limits.max_store_bytes),
          std::to_string(p.limits.max_file_bytes)};
}

}  // namespace

Status RedisStore::create_project(const ProjectRecord& project) {
  if (auto st = expect_ok(fcall("create_project", project_args(project))); !st) return st;
  return replicated("project " + project.name);
}

Status RedisStore::update_project(const ProjectRecord& project) {
  return expect_ok(fcall("update_project", project_args(project)));
}

Result<std::vector<ProjectRecord>> RedisStore::list_projects() {
  auto r = fcall("list_projects", {});
  if (!r) return r.error();
  std::vector<ProjectRecord> out;
  each_row(*r, 17, [&](const Reply* e) {
    ProjectRecord p{e[0].str, std::strtod(e[1].str.c_str(), nullptr), to_i64(e[2].str), {}, {}};
    p.limits = {to_i64(e[3].str), to_i64(e[4].str),  to_i64(e[5].str),
                to_i64(e[9].str), to_i64(e[11].str), to_i64(e[12].str)};
    p.use = {to_i64(e[6].str),  to_i64(e[7].str),  to_i64(e[8].str),
             to_i64(e[10].str), to_i64(e[13].str), to_i64(e[14].str)};
    p.store_bytes_limit = to_i64(e[15].str);
    p.file_bytes_limit = to_i64(e[16].str);
    out.push_back(std::move(p));
  });
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return out;
}

Status RedisStore::set_member(const std::string& project, const std::string& user,
                              std::optional<ProjectRole> role) {
  if (auto st = expect_ok(fcall("set_member", {project, user, role ? to_string(*role) : ""})); !st)
    return st;
  return replicated("the role of " + user + " in " + project);
}

Result<std::map<std::string, ProjectRole>> RedisStore::members(const std::string& project) {
  auto r = fcall("list_members", {project});
  if (!r) return r.error();
  std::map<std::string, ProjectRole> out;
  each_row(*r, 2, [&](const Reply* e) {
    if (auto role = parse_project_role(e[1].str)) out[e[0].str] = *role;
  });
  return out;
}

Status RedisStore::record(const AuditEntry& entry) {
  auto r =
      fcall("audit_record", {entry.project, entry.user, entry.action, entry.target, entry.detail});
  if (!r) return r.error();
  return {};
}

Result<std::vector<AuditEntry>> RedisStore::audit(const std::string& project,
                                                  const std::string& after, int count) {
  auto r = fcall("audit_read", {project, after, std::to_string(std::max(1, count))});
  if (!r) return r.error();
  std::vector<AuditEntry> out;
  for (const auto& e : r->elements) {
    if (e.elements.size() != 2) continue;
    AuditEntry a;
    a.id = e.elements[0].str;
    a.project = project;
    const auto& fields = e.elements[1].elements;
    for (std::size_t i = 0; i + 1 < fields.size(); i += 2) {
      const std::string& k = fields[i].str;
      const std::string& v = fields[i + 1].str;
      if (k == "time")
        a.time_ms = to_i64(v);
      else if (k == "user")
        a.user = v;
      else if (k == "action")
        a.action = v;
      else if (k == "target")
        a.target = v;
      else if (k == "detail")
        a.detail = v;
    }
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace hpo::trials::redis

namespace hpo::trials::redis {

Status RedisStore::add_worker_token(const WorkerTokenRecord& token, const std::string& digest) {
  if (auto st = expect_ok(fcall("add_worker_token",
                                {token.id, digest, token.host, token.project, token.created_by}));
      !st)
    return st;
  return replicated("worker token " + token.id);
}

Result<std::vector<WorkerTokenRecord>> RedisStore::list_worker_tokens() {
  auto r = fcall("list_worker_tokens", {});
  if (!r) return r.error();
  std::vector<WorkerTokenRecord> out;
  each_row(*r, 5, [&](const Reply* e) {
    out.push_back({e[0].str, e[1].str, e[2].str, to_i64(e[3].str), e[4].str});
  });
  oldest_first(out);
  return out;
}

Result<WorkerTokenRecord> RedisStore::revoke_worker_token(const std::string& id) {
  auto r = fcall("revoke_worker_token", {id});
  if (!r) return r.error();
  if (auto st = replicated("the revocation of worker token " + id); !st) return st.error();
  WorkerTokenRecord out;
  out.id = id;
  if (r->elements.size() == 2) {
    out.host = r->elements[0].str;
    out.project = r->elements[1].str;
  }
  return out;
}

Result<std::optional<WorkerTokenRecord>> RedisStore::resolve_worker_token(
    const std::string& digest) {
  auto r = fcall("resolve_worker_token", {digest});
  if (!r) return r.error();
  if (r->elements.size() != 3) return std::optional<WorkerTokenRecord>{};
  WorkerTokenRecord out;
  out.id = r->elements[0].str;
  out.host = r->elements[1].str;
  out.project = r->elements[2].str;
  return std::optional<WorkerTokenRecord>{std::move(out)};
}

}  // namespace hpo::trials::redis
