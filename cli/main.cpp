// hpo: the command-line client. Talks to the scheduler's REST API only.
//
//   hpo [--server URL] [--token T] [--json] COMMAND ...
//
// Exit codes (scripts rely on them):
//   0 success (a followed sweep finished), 1 the followed sweep failed,
//   2 usage error or rejected input (400), 3 the followed sweep was cancelled,
//   4 the server is unreachable or answered 5xx, 5 not found, 6 unauthorized (401)
//   or forbidden (403).
//
// This file reads the global flags and picks the command; the commands are in
// the *_commands.cpp files (commands.hpp), what they share in common.cpp.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/http_client.hpp"
#include "core/local_state.hpp"

namespace hpo::cli {

namespace {

const char* kUsageText = R"(usage: hpo [--server URL] [--token T] [--json] COMMAND [ARGS]

commands:
  submit SPEC.json [--follow] [--project P]
                                submit a sweep (to project P; default: "default");
                                prints its id. --follow shows a live progress line
                                until the sweep ends
  status [ID] [--project P] [--tag T]
                                one sweep (state, counts, best trial), or the sweeps
                                (of one project, with one tag)
  trials ID [--csv] [--state S] [--kind trial|member] [--tag T] [--limit N] [--offset N]
                                the sweep's search trials, or its ensemble members
  import SPEC.json TRIALS.csv [--project P]
                                store past trials (the CSV `trials --csv` writes, checked
                                against the spec they were run with) as an ended sweep;
                                prints its id, which search.warm_start.sweeps can name
  pareto ID                     the Pareto front of a sweep's objectives (its trials no
                                other trial beats in every objective) and its hypervolume
  workers                       the live workers
  cancel ID                     cancel a sweep (queued trials are dropped, running
                                ones are stopped)
  delete ID                     delete an ended sweep with its trials and artifacts
  export --sweep ID DIR         write the sweep's ensemble to DIR (manifest.json,
                                ensemble.json, spec.json, members/<trial>/model.pt);
                                hpo-predict uses it without Redis or a scheduler
  predict --sweep ID INPUT [--output F] [--device cpu|cuda]
                                predict INPUT (CSV or IDX images) with the sweep's
                                ensemble: export to a temporary directory, then run
                                hpo-predict (beside hpo, ../workers/, or on PATH)
  whoami                        the token's user and their role in each project
  project list | create NAME [SETTINGS] | set NAME SETTINGS | members NAME
        | add-member NAME USER viewer|member|admin | remove-member NAME USER
                                projects, what each holds and may hold (creating and
                                settings: a service admin; members: the project's
                                admins). SETTINGS: --weight W (its share of free
                                slots) --max-slots N --max-gpus N
                                --max-queued-trials N --max-active-sweeps N (0: no
                                limit) --max-store-bytes SIZE --max-file-bytes SIZE
                                (what it keeps in Redis and in artifact files:
                                512MiB, 20GiB; 0: the scheduler's default)
  user list | create NAME [--service-admin] | disable NAME | enable NAME
       | promote NAME | demote NAME
                                users (a service admin); create prints the first token;
                                a disabled user's tokens are refused; promote/demote
                                make or unmake a service admin
  token create [--user U] [--label L] [--expires-days D] | list [--user U] | revoke ID
                                your tokens (a service admin: anyone's); a token is
                                printed once, the server keeps only its hash; one with
                                --expires-days is refused after that many days
  worker-token create NAME [--project P] | list | revoke ID
                                worker hosts' credentials (a service admin): a worker
                                started with --scheduler URL and this token holds no
                                Redis credential and may act only as worker NAME (and
                                on project P's trials); NAME ending in * is a prefix:
                                every worker named so, each as itself; printed once
  annotate ID [--tag T]... [--untag T]... [--note TEXT] [--priority N]
                                tags and a note on a sweep or a trial (its sweep's
                                owner or the project's admins); a sweep's priority
                                within its project (the project's admins)
  audit [--project P] [--after ID] [--limit N]
                                who did what: the project's log (its admins), or the
                                service's own (users, tokens; a service admin)

flags:
  --server URL   the scheduler [HPO_SERVER] (default: the local scheduler from
                 $HPO_HOME/scheduler.json, else http://127.0.0.1:8080)
  --token T      your API token [HPO_TOKEN] (default: the local scheduler's admin token,
                 from scheduler.json, and only when --server is that scheduler)
  --ca-file F    an https:// scheduler: trust the PEM CA certificate(s) in F instead of
                 the system's [HPO_CA_FILE] (default for the local scheduler: its own)
  --json         print the API's JSON documents instead of text
  --help         this text

exit codes: 0 ok, 1 followed sweep failed, 2 usage or rejected input, 3 followed
sweep cancelled, 4 server unreachable or failing, 5 not found, 6 unauthorized or
forbidden
)";

// The global flags (then the environment, then a local scheduler's
// scheduler.json) and the command they run.
int run(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> std::optional<std::string> {
      if (a.rfind(std::string(flag) + "=", 0) == 0) return a.substr(std::strlen(flag) + 1);
      if (a == flag && i + 1 < argc) return std::string(argv[++i]);
      return std::nullopt;
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsageText, stdout);
      return kOk;
    }
    if (a == "--json")
      o.json = true;
    else if (auto v = value("--server"))
      o.server = *v;
    else if (auto t = value("--token"))
      o.token = *t;
    else if (auto c = value("--ca-file"))
      o.ca_file = *c;
    else if (a == "--server" || a == "--token" || a == "--ca-file")
      return fail(kUsage, a + " needs a value");
    else
      o.args.push_back(a);
  }
  if (o.args.empty()) {
    std::fputs(kUsageText, stderr);
    return kUsage;
  }
  auto local = hpo::read_local_state();
  if (const char* env = std::getenv("HPO_CA_FILE"); o.ca_file.empty() && env && *env)
    o.ca_file = env;
  if (o.server.empty()) {
    if (const char* env = std::getenv("HPO_SERVER"); env && *env) {
      o.server = env;
    } else if (local && !local->api.empty()) {
      o.server = local->api;
      if (o.ca_file.empty()) o.ca_file = local->ca_file;
    } else {
      o.server = "http://127.0.0.1:8080";
    }
  }
  auto url = hpo::parse_http_url(o.server);
  if (!url) return fail(kUsage, "bad --server: " + url.error().message);
  std::string withheld;  // why the local token was not sent, for a 401
  if (o.token.empty()) {
    if (const char* env = std::getenv("HPO_TOKEN"); env && *env) {
      o.token = env;
    } else if (local && !local->token.empty()) {
      // The local scheduler's admin token goes to that scheduler alone, never
      // to another server named by --server or HPO_SERVER.
      if (issued_by(*local, *url))
        o.token = local->token;
      else
        withheld = fmt::format(
            "no token was sent: the local scheduler's token (in {}) is for {} only; give "
            "--token or HPO_TOKEN for {}",
            hpo::local_state_path(), local->api, o.server);
    }
  }
  Client client(*url, o.token);
  client.unauthorized_hint = withheld;
  if (!o.ca_file.empty()) client.http.set_ca_file(o.ca_file);
  const std::string& cmd = o.args[0];
  if (cmd == "submit") return cmd_submit(client, o);
  if (cmd == "import") return cmd_import(client, o);
  if (cmd == "status") return cmd_status(client, o);
  if (cmd == "trials") return cmd_trials(client, o);
  if (cmd == "workers") return cmd_workers(client, o);
  if (cmd == "pareto") return cmd_pareto(client, o);
  if (cmd == "cancel") return cmd_cancel(client, o);
  if (cmd == "delete") return cmd_delete(client, o);
  if (cmd == "export") return cmd_export(client, o);
  if (cmd == "predict") return cmd_predict(client, o);
  if (cmd == "whoami") return cmd_whoami(client, o);
  if (cmd == "project") return cmd_project(client, o);
  if (cmd == "user") return cmd_user(client, o);
  if (cmd == "token") return cmd_token(client, o);
  if (cmd == "worker-token") return cmd_worker_token(client, o);
  if (cmd == "audit") return cmd_audit(client, o);
  if (cmd == "annotate") return cmd_annotate(client, o);
  return fail(kUsage, "unknown command \"" + cmd + "\" (see hpo --help)");
}

}  // namespace

}  // namespace hpo::cli

int main(int argc, char** argv) {
  return hpo::cli::run(argc, argv);
}
