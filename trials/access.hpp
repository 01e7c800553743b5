// Who may do what: users, their tokens, projects, the role a user has in a
// project, and the audit log of every mutation. One concept each, used by the
// API (authorisation), the scheduler (its bootstrap admin) and the CLI.
//
//   role     may
//   viewer   read the project's sweeps, trials, logs, artifacts, events
//   member   that, submit, and cancel or delete the sweeps they submitted
//   admin    everything in the project: others' sweeps, members, the audit log
//
// A service admin (a user flag, not a project role) creates users and
// projects and is an admin of every project. A token is a random secret shown
// once; the store keeps only its SHA-256, under a short id that lists and
// revokes it. Another project's resources are invisible, not forbidden: the
// API answers for them exactly as for ids that do not exist.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace hpo::trials {

enum class ProjectRole { kViewer, kMember, kAdmin };

std::string to_string(ProjectRole role);
std::optional<ProjectRole> parse_project_role(std::string_view text);

// What a one-person install has: the scheduler's token is this admin's, and
// sweeps submitted without a project (and those of earlier versions) are this
// project's.
inline constexpr std::string_view kBootstrapAdmin = "admin";
inline constexpr std::string_view kDefaultProject = "default";

// User and project names: 1 to 64 of a-z 0-9 . _ -, starting with a letter or
// digit. `what` names the field in the error ("user", "project").
Status check_access_name(const std::string& what, const std::string& name);

// Who a request comes from, and what they may see and do.
struct Principal {
  std::string user;               // "" for an anonymous reader
  bool service_admin = false;     // every project, users and projects themselves
  bool reads_everything = false;  // a reader of every project (one-person install, open mode)
  std::map<std::string, ProjectRole> roles;  // project -> role

  std::optional<ProjectRole> role_in(const std::string& project) const;
  bool can_read(const std::string& project) const;
  bool can_submit(const std::string& project) const;  // member or admin
  bool can_manage(const std::string& project) const;  // admin (or a service admin)
  // Cancel or delete a sweep of `project` submitted by `owner`.
  bool can_change(const std::string& project, const std::string& owner) const;
  // Every project it may read is listed (not reads_everything / service_admin).
  bool sees_all_projects() const { return service_admin || reads_everything; }
};

// A project's limits; 0 is none. max_slots and max_gpus hold in the claim
// itself (a project at one gets no more slots, or no more GPU slots, however
// many workers claim, across scheduler restarts; a trial that asks for GPUs
// holds one per slot); a submit past max_queued_trials or max_active_sweeps
// is refused (kQuotaExceeded, naming the limit).
//
// Bytes: max_store_bytes bounds what the project keeps in the store (specs,
// params, reports, results, logs, artifacts kept there), max_file_bytes its
// artifact files in the pool's artifact folder; 0 there means the pool's
// default (hpo-scheduler --project-store-mb, --project-file-gb). Counted
// where they are written: a submit, an import or an artifact past one is
// refused (kQuotaExceeded naming it), reports past it are counted in the
// trial's reports_dropped, a log is left out; a trial's result never is.
struct ProjectLimits {
  std::int64_t max_slots = 0;
  std::int64_t max_queued_trials = 0;
  std::int64_t max_active_sweeps = 0;
  std::int64_t max_gpus = 0;
  std::int64_t max_store_bytes = 0;
  std::int64_t max_file_bytes = 0;
};

// What a project holds now.
struct ProjectUse {
  std::int64_t slots = 0;  // taken by its running trials
  std::int64_t queued_trials = 0;
  std::int64_t active_sweeps = 0;  // running
  std::int64_t gpus = 0;           // taken by its running trials that asked for GPUs
  std::int64_t store_bytes = 0;
  std::int64_t file_bytes = 0;
};

struct ProjectRecord {
  std::string name;
  double weight = 1;  // its share of free slots against other projects with ready work
  std::int64_t created_ms = 0;
  ProjectLimits limits;
  ProjectUse use;  // filled by list_projects
  // The byte limits in force (its own, else the pool's default; 0: none),
  // filled by list_projects.
  std::int64_t store_bytes_limit = 0;
  std::int64_t file_bytes_limit = 0;
};

struct UserRecord {
  std::string name;
  bool service_admin = false;
  std::int64_t created_ms = 0;
  bool disabled = false;  // its tokens are refused until it is enabled again
};

struct TokenRecord {
  std::string id;  // short, not secret: what lists and revocations name
  std::string user;
  std::string label;
  std::int64_t created_ms = 0;
  std::int64_t expires_ms = 0;  // refused from then on (the store's clock); 0: never
  // add_token: how long from now (the store's clock) it is accepted; 0: forever.
  std::int64_t lifetime_ms = 0;
};

// A token as made: `secret` is shown once, the store keeps token_digest(secret).
struct NewToken {
  std::string id;
  std::string secret;
};
NewToken make_token();
// A new token, stored by `add` (with the secret's digest, token_digest):
// when `add` answers kConflict (an id already taken) another is made, a few
// times; the token as stored, or `add`'s error.
Result<NewToken> store_new_token(const std::function<Status(const NewToken&)>& add);
// `bytes` random bytes (OpenSSL's generator) as lower-case hex: tokens, stream tickets.
std::string random_hex(std::size_t bytes);
std::string token_digest(std::string_view secret);

// One mutation: who, in which project (empty: of the service itself, such as
// a new user), what, on what, when (the store's clock, filled by the store).
struct AuditEntry {
  std::string id;  // the store's id, in time order; what `after` takes
  std::int64_t time_ms = 0;
  std::string user;
  std::string project;
  std::string action;  // "sweep.submit", "sweep.cancel", "token.revoke", ...
  std::string target;  // the sweep, trial, user, token or project acted on
  std::string detail;  // a short human text (a name, a role)
};

// A worker host's credential (hpo worker-token create): the scheduler's
// worker endpoint (trials/redis/worker_relay.hpp) runs its holder's calls for
// the worker named `host` only, and takes only `project`'s trials for it when
// that is set. Stored as token_digest(secret), like users' tokens.
//
// A `host` ending in '*' is a name prefix: the token is each worker whose
// name starts with what comes before it ("slurm-*": the tasks of a Slurm
// array, the pods of a DaemonSet, which share one secret). Each request then
// names its worker (worker_channel.hpp), and runs as that worker alone; the
// holders of one such token may act as one another (they share the secret),
// never as a worker outside the prefix.
struct WorkerTokenRecord {
  std::string id;  // short, not secret
  std::string host;
  std::string project;  // empty: any project's trials
  std::int64_t created_ms = 0;
  std::string created_by;

  bool names_many() const { return !host.empty() && host.back() == '*'; }
  // The record of worker `name`'s requests under this token; kUnauthorized,
  // saying why, when the token is not that worker's. `name` empty: a
  // request that names no worker (only a token for one worker takes it).
  Result<WorkerTokenRecord> as_worker(const std::string& name) const;
};

// A worker's name as hpo-worker --name takes it (1 to 128 of A-Z a-z 0-9 . _
// - @): it becomes part of keys. `prefix_ok`: a worker token's host, which
// may end in '*' after at least one character. kInvalidArgument naming `what`.
Status check_worker_name(const std::string& what, const std::string& name, bool prefix_ok = false);

// The store role of users, tokens, projects, members and the audit log.
// Kept apart from the keys workers may write: a worker's credential can
// neither read tokens nor change who may do what.
class AccessStore {
 public:
  virtual ~AccessStore() = default;
  // The one-person install (run at each scheduler start): `admin` exists and
  // is a service admin whose token "bootstrap" has `digest` (replacing the
  // last start's), `project` exists with `admin` as its admin, and every
  // sweep without a project (earlier versions') is in `project`.
  virtual Status bootstrap(const std::string& admin, const std::string& digest,
                           const std::string& project) = 0;
  virtual Status create_user(const UserRecord& user) = 0;  // kConflict when it exists
  virtual Result<std::vector<UserRecord>> list_users() = 0;
  // Disables or enables a user, makes or unmakes a service admin (nullopt:
  // unchanged); kNotFound without the user.
  virtual Status update_user(const std::string& name, std::optional<bool> disabled,
                             std::optional<bool> service_admin) = 0;
  // kNotFound without the user; kConflict for a digest already stored.
  virtual Status add_token(const std::string& user, const TokenRecord& token,
                           const std::string& digest) = 0;
  // The user the revoked token belonged to; kNotFound for an unknown id.
  virtual Result<std::string> revoke_token(const std::string& token_id) = 0;
  virtual Result<std::vector<TokenRecord>> list_tokens(const std::string& user) = 0;
  // The user behind a token digest and their roles; nullopt for no such
  // token; kUnauthorized, saying why, for an expired token or a disabled user.
  virtual Result<std::optional<Principal>> resolve_token(const std::string& digest) = 0;
  virtual Status create_project(const ProjectRecord& project) = 0;  // kConflict when it exists
  // Its weight and limits (kNotFound without it); claims and submits obey them at once.
  virtual Status update_project(const ProjectRecord& project) = 0;
  virtual Result<std::vector<ProjectRecord>> list_projects() = 0;
  // nullopt removes the user from the project. kNotFound without either.
  virtual Status set_member(const std::string& project, const std::string& user,
                            std::optional<ProjectRole> role) = 0;
  virtual Result<std::map<std::string, ProjectRole>> members(const std::string& project) = 0;
  // Appends to the project's audit log (bounded: the oldest entries go first).
  virtual Status record(const AuditEntry& entry) = 0;
  // The project's entries after `after` ("" from the first), at most `count`.
  virtual Result<std::vector<AuditEntry>> audit(const std::string& project,
                                                const std::string& after, int count) = 0;
  // Worker credentials: kConflict for an id or digest already stored,
  // kNotFound for a project that does not exist.
  virtual Status add_worker_token(const WorkerTokenRecord& token, const std::string& digest) = 0;
  virtual Result<std::vector<WorkerTokenRecord>> list_worker_tokens() = 0;
  // The revoked credential; kNotFound for an unknown id.
  virtual Result<WorkerTokenRecord> revoke_worker_token(const std::string& id) = 0;
  // The credential behind a digest; nullopt for none (never made, revoked).
  virtual Result<std::optional<WorkerTokenRecord>> resolve_worker_token(
      const std::string& digest) = 0;
};

}  // namespace hpo::trials
