// hpo: the command-line client. Talks to the scheduler's REST API only.
//
//   hpo [--server URL] [--token T] [--json] COMMAND ...
//
// Exit codes (scripts rely on them):
//   0 success (a followed sweep finished), 1 the followed sweep failed,
//   2 usage error or rejected input (400), 3 the followed sweep was cancelled,
//   4 the server is unreachable or answered 5xx, 5 not found, 6 unauthorized.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include "cli/download.hpp"
#include "core/backoff.hpp"
#include "core/local_state.hpp"
#include "trials/artifacts.hpp"
#include "trials/json_limits.hpp"
#include "trials/record_json.hpp"
#include "web/http_client.hpp"

namespace {

namespace record = hpo::trials::record;
using record::Json;

enum Exit {
  kOk = 0,
  kSweepFailed = 1,
  kUsage = 2,
  kCancelled = 3,
  kUnreachable = 4,
  kNotFound = 5,
  kUnauthorized = 6
};

const char* kUsageText = R"(usage: hpo [--server URL] [--token T] [--json] COMMAND [ARGS]

commands:
  submit SPEC.json [--follow]   submit a sweep; prints its id. --follow shows a live
                                progress line until the sweep ends
  status [ID]                   one sweep (state, counts, best trial), or all sweeps
  trials ID [--csv] [--state S] [--kind trial|member] [--limit N] [--offset N]
                                the sweep's search trials, or its ensemble members
  import SPEC.json TRIALS.csv   store past trials (the CSV `trials --csv` writes, checked
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

flags:
  --server URL   the scheduler [HPO_SERVER] (default: the local scheduler from
                 $HPO_HOME/scheduler.json, else http://127.0.0.1:8080)
  --token T      API token for submit/cancel [HPO_TOKEN] (default: from scheduler.json)
  --ca-file F    an https:// scheduler: trust the PEM CA certificate(s) in F instead of
                 the system's [HPO_CA_FILE] (default for the local scheduler: its own)
  --json         print the API's JSON documents instead of text
  --help         this text

exit codes: 0 ok, 1 followed sweep failed, 2 usage or rejected input, 3 followed
sweep cancelled, 4 server unreachable or failing, 5 not found, 6 unauthorized
)";

struct Options {
  std::string server;
  std::string token;
  std::string ca_file;
  bool json = false;
  std::vector<std::string> args;  // the command and its arguments
};

// How long `submit` keeps retrying while the scheduler is unreachable or answers 5xx.
constexpr auto kSubmitRetryFor = std::chrono::seconds(120);

std::string random_key() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}{:08x}{:08x}", rd(), rd(), rd(), rd());
}

int fail(int code, const std::string& message) {
  std::fprintf(stderr, "hpo: %s\n", message.c_str());
  return code;
}

// Maps an HTTP error response to an exit code, printing the server's message
// and each field error with its path.
int http_error(const hpo::web::ClientResponse& r) {
  std::string message = fmt::format("HTTP {}", r.status);
  auto j = Json::parse(r.body, nullptr, false);
  std::vector<std::string> fields;
  if (!j.is_discarded() && j.contains("error") && j["error"].is_object()) {
    const auto& e = j["error"];
    message = e.value("message", message);
    if (e.contains("fields") && e["fields"].is_array())
      for (const auto& f : e["fields"])
        fields.push_back(f.value("path", "") + ": " + f.value("message", ""));
  }
  int code = r.status == 400 || r.status == 413 ? kUsage
             : r.status == 404                  ? kNotFound
             : r.status == 401                  ? kUnauthorized
                                                : kUnreachable;
  fail(code, message);
  for (const auto& f : fields) std::fprintf(stderr, "  %s\n", f.c_str());
  return code;
}

struct Client {
  hpo::web::HttpClient http;  // prefixes every target with the URL's base path

  Client(const hpo::web::HttpUrl& url, const std::string& token)
      : http(url, std::chrono::milliseconds(15000)) {
    http.set_token(token);
  }
  // Returns the parsed body of a 2xx response, or sets `exit_code`.
  std::optional<Json> call(const std::string& method, const std::string& path, int& exit_code,
                           const std::string& body = "", std::string* raw = nullptr,
                           std::map<std::string, std::string> headers = {}) {
    if (!body.empty()) headers.emplace("Content-Type", "application/json");
    return interpret(http.request(method, path, body, headers), exit_code, raw);
  }
  // A response (or the failure to get one) as call() returns it.
  std::optional<Json> interpret(const hpo::Result<hpo::web::ClientResponse>& r, int& exit_code,
                                std::string* raw = nullptr) {
    if (!r) {
      exit_code = fail(kUnreachable, "cannot reach the scheduler: " + r.error().message);
      return std::nullopt;
    }
    if (r->status < 200 || r->status >= 300) {
      exit_code = http_error(*r);
      return std::nullopt;
    }
    if (raw) {
      *raw = r->body;
      return Json::object();
    }
    auto j = Json::parse(r->body, nullptr, false);
    if (j.is_discarded()) {
      exit_code = fail(kUnreachable, "the server answered with something that is not JSON");
      return std::nullopt;
    }
    return j;
  }
};

std::string fmt_number(double v) {
  return std::isfinite(v) ? fmt::format("{:.6g}", v) : "-";
}

std::string fmt_params(const hpo::search::Params& params) {
  std::string s;
  for (const auto& [name, value] : params) {
    std::string text = std::visit(
        [](const auto& x) -> std::string {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, double>)
            return fmt_number(x);
          else if constexpr (std::is_same_v<T, bool>)
            return x ? "true" : "false";
          else if constexpr (std::is_same_v<T, std::string>)
            return x;
          else
            return std::to_string(x);
        },
        value);
    s += (s.empty() ? "" : " ") + name + "=" + text;
  }
  return s;
}

std::string fmt_duration(double seconds) {
  auto s = static_cast<long>(seconds);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{:02}:{:02}", s / 60, s % 60);
}

// A document of the server decoded with the records' codec; a document that
// does not decode is the server's fault (exit code 4, the field named).
template <class T>
std::optional<T> decode(const Json& j, int& exit_code) {
  T out;
  if (auto st = record::from_json(j, out); !st) {
    exit_code = fail(kUnreachable, "the server's answer does not decode: " + st.error().message);
    return std::nullopt;
  }
  return out;
}

template <class T>
std::optional<std::vector<T>> decode_list(const Json& j, const char* key, int& exit_code) {
  std::vector<T> out;
  if (auto st = record::from_json_list(j, key, out); !st) {
    exit_code = fail(kUnreachable, "the server's answer does not decode: " + st.error().message);
    return std::nullopt;
  }
  return out;
}

void print_sweep(const record::SweepDocument& d) {
  const auto& s = d.sweep;
  const auto& c = s.counts;
  std::printf("sweep %s  %s\n", s.id.c_str(), s.name.c_str());
  std::printf("  state      %s (stage %s)\n", hpo::trials::to_string(s.state),
              hpo::trials::to_string(s.stage));
  std::printf("  objective  %s %s\n", s.maximize ? "max" : "min", d.metric.c_str());
  for (const auto& b : d.constraints)
    std::printf("  constraint %s%s%s\n", b.min ? (fmt_number(*b.min) + " <= ").c_str() : "",
                b.metric.c_str(), b.max ? (" <= " + fmt_number(*b.max)).c_str() : "");
  std::printf(
      "  trials     %lld/%lld finished: %lld completed, %lld failed, %lld pruned, %lld "
      "cancelled; %lld running, %lld queued\n",
      static_cast<long long>(c.finished()), static_cast<long long>(d.max_trials),
      static_cast<long long>(c.completed), static_cast<long long>(c.failed),
      static_cast<long long>(c.pruned), static_cast<long long>(c.cancelled),
      static_cast<long long>(c.running), static_cast<long long>(c.queued));
  if (s.best)
    std::printf("  best       %s = %s  (trial %s%s)  %s\n", d.metric.c_str(),
                fmt_number(s.best->value).c_str(), s.best->trial_id.c_str(),
                d.constraints.empty() ? "" : ", within the constraints",
                fmt_params(s.best->params).c_str());
  if (!s.error.empty()) std::printf("  error      %s\n", s.error.c_str());
  if (!s.unschedulable.empty())
    std::printf("  waiting    unschedulable: %s\n", s.unschedulable.c_str());
}

// The live progress line of `submit --follow`.
std::string progress_line(const record::SweepDocument& d, double elapsed) {
  const auto& c = d.sweep.counts;
  long long total = d.max_trials;
  long long done = c.finished();
  int width = 24;
  int filled = total > 0 ? static_cast<int>(std::min<long long>(done, total) * width / total) : 0;
  std::string bar = std::string(filled, '#') + std::string(width - filled, '.');
  std::string best = d.sweep.best ? fmt_number(d.sweep.best->value) : "-";
  std::string eta = "--:--";
  if (done > 0 && total > done) eta = fmt_duration(elapsed / done * (total - done));
  if (done >= total) eta = "00:00";
  // The member stage, once it has begun: its own count (before " | best", so a
  // non-terminal prints a new line when it moves).
  std::string members;
  if (d.members_requested > 0 && d.sweep.stage != hpo::trials::SweepStage::kSearch) {
    const auto& m = d.sweep.member_counts;
    members = fmt::format(" | members {}/{} done, {} running, {} failed", m.finished(),
                          d.members_requested, m.running, m.failed);
    if (d.sweep.stage == hpo::trials::SweepStage::kEnsemble && m.active() == 0 &&
        m.finished() >= d.members_requested)
      members += ", combining";
  }
  return fmt::format("[{}] {}/{} done | {} running | {} failed{} | best {} | {} elapsed | ETA {}",
                     bar, done, total, c.running, c.failed, members, best, fmt_duration(elapsed),
                     eta);
}

int follow(Client& client, const std::string& id, bool json) {
  auto start = std::chrono::steady_clock::now();
  bool tty = ::isatty(STDOUT_FILENO);
  std::string last;
  int failures = 0;
  while (true) {
    int code = 0;
    auto s = client.call("GET", "/api/sweeps/" + id, code);
    if (!s) {
      // The scheduler may be restarting: keep trying for a while.
      if (code != kUnreachable || ++failures > 120) return code;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));  // refresh period
      continue;
    }
    failures = 0;
    auto doc = decode<record::SweepDocument>(*s, code);
    if (!doc) return code;
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto state = doc->sweep.state;
    if (!json) {
      std::string line = progress_line(*doc, elapsed);
      if (tty)
        std::printf("\r%s\033[K", line.c_str());
      else if (line.substr(0, line.find(" | best")) != last.substr(0, last.find(" | best")))
        std::printf("%s\n", line.c_str());
      std::fflush(stdout);
      last = line;
    }
    if (state != hpo::trials::SweepState::kRunning) {
      if (json) {
        std::printf("%s\n", s->dump(2).c_str());
      } else {
        if (tty) std::printf("\n");
        print_sweep(*doc);
      }
      return state == hpo::trials::SweepState::kFinished    ? kOk
             : state == hpo::trials::SweepState::kCancelled ? kCancelled
                                                            : kSweepFailed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // refresh period
  }
}

// POSTs `body` (JSON) to `path` until it is answered, retrying a lost reply or
// a 5xx with one Idempotency-Key for every try, so a retry gets what the first
// try created, not a second one. The reply's document, or nullopt with `code`.
std::optional<Json> post_idempotent(Client& client, const std::string& path,
                                    const std::string& body, const char* what, int& code) {
  const std::string key = random_key();
  const auto give_up = std::chrono::steady_clock::now() + kSubmitRetryFor;
  hpo::Backoff backoff(std::chrono::milliseconds(250), std::chrono::milliseconds(4000));
  for (;;) {
    auto resp = client.http.request(
        "POST", path, body, {{"Content-Type", "application/json"}, {"Idempotency-Key", key}});
    const bool retry = !resp || resp->status >= 500;
    const auto wait = backoff.next();
    if (!retry || std::chrono::steady_clock::now() + wait >= give_up)
      return client.interpret(resp, code);
    std::fprintf(
        stderr, "hpo: %s: %s; retrying\n", what,
        resp ? fmt::format("HTTP {}", resp->status).c_str() : resp.error().message.c_str());
    std::this_thread::sleep_for(wait);  // pacing the retries of a failed request
  }
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int cmd_import(Client& client, const Options& o) {
  if (o.args.size() != 3) return fail(kUsage, "usage: hpo import SPEC.json TRIALS.csv");
  auto spec_text = read_file(o.args[1]);
  if (!spec_text) return fail(kUsage, "cannot read " + o.args[1]);
  auto csv = read_file(o.args[2]);
  if (!csv) return fail(kUsage, "cannot read " + o.args[2]);
  if (auto st = hpo::trials::check_json_depth(*spec_text, o.args[1]); !st)
    return fail(kUsage, st.error().message);
  Json spec = Json::parse(*spec_text, nullptr, false);
  if (spec.is_discarded() || !spec.is_object())
    return fail(kUsage, o.args[1] + ": not a JSON object (expected the sweep spec)");
  Json body = Json::object();
  body["spec"] = std::move(spec);
  body["csv"] = std::move(*csv);
  int code = 0;
  auto r = post_idempotent(client, "/api/sweeps/import", record::dump(body), "import", code);
  if (!r) return code;
  if (o.json)
    std::printf("%s\n", r->dump().c_str());
  else
    std::printf("%s\n", r->value("id", "").c_str());
  std::fflush(stdout);
  return kOk;
}

int cmd_submit(Client& client, const Options& o) {
  std::string path;
  bool do_follow = false;
  for (std::size_t i = 1; i < o.args.size(); ++i) {
    if (o.args[i] == "--follow" || o.args[i] == "-f")
      do_follow = true;
    else if (path.empty())
      path = o.args[i];
    else
      return fail(kUsage, "submit takes one spec file");
  }
  if (path.empty()) return fail(kUsage, "usage: hpo submit SPEC.json [--follow]");
  std::ifstream in(path);
  if (!in) return fail(kUsage, "cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  int code = 0;
  auto r = post_idempotent(client, "/api/sweeps", ss.str(), "submit", code);
  if (!r) return code;
  std::string id = r->value("id", "");
  if (o.json && !do_follow)
    std::printf("%s\n", r->dump().c_str());
  else
    std::printf("%s\n", id.c_str());
  std::fflush(stdout);
  return do_follow ? follow(client, id, o.json) : kOk;
}

int cmd_delete(Client& client, const Options& o) {
  if (o.args.size() != 2) return fail(kUsage, "usage: hpo delete ID");
  int code = 0;
  std::string raw;
  if (!client.call("DELETE", "/api/sweeps/" + o.args[1], code, "", &raw)) return code;
  if (!o.json) std::printf("deleted %s\n", o.args[1].c_str());
  return kOk;
}

int cmd_status(Client& client, const Options& o) {
  int code = 0;
  if (o.args.size() >= 2) {
    auto s = client.call("GET", "/api/sweeps/" + o.args[1], code);
    if (!s) return code;
    if (o.json) {
      std::printf("%s\n", s->dump(2).c_str());
      return kOk;
    }
    auto doc = decode<record::SweepDocument>(*s, code);
    if (!doc) return code;
    print_sweep(*doc);
    return kOk;
  }
  auto list = client.call("GET", "/api/sweeps?limit=100", code);
  if (!list) return code;
  if (o.json) {
    std::printf("%s\n", list->dump(2).c_str());
    return kOk;
  }
  auto sweeps = decode_list<record::SweepDocument>(*list, "sweeps", code);
  if (!sweeps) return code;
  std::printf("%-10s %-24s %-10s %-12s %s\n", "ID", "NAME", "STATE", "DONE", "BEST");
  for (const auto& d : *sweeps) {
    const auto& s = d.sweep;
    std::string best = s.best ? fmt_number(s.best->value) : "-";
    std::printf("%-10s %-24s %-10s %-12s %s\n", s.id.c_str(), s.name.substr(0, 24).c_str(),
                hpo::trials::to_string(s.state),
                fmt::format("{}/{}", s.counts.finished(), d.max_trials).c_str(), best.c_str());
  }
  return kOk;
}

int cmd_trials(Client& client, const Options& o) {
  if (o.args.size() < 2) return fail(kUsage, "usage: hpo trials ID [--csv] [--state S]");
  std::string query = "?limit=1000";
  bool csv = false;
  for (std::size_t i = 2; i < o.args.size(); ++i) {
    const auto& a = o.args[i];
    if (a == "--csv")
      csv = true;
    else if ((a == "--state" || a == "--kind" || a == "--limit" || a == "--offset") &&
             i + 1 < o.args.size())
      query += "&" + a.substr(2) + "=" + o.args[++i];
    else
      return fail(kUsage, "unknown argument " + a);
  }
  int code = 0;
  if (csv) {
    std::string body;
    if (!client.call("GET", "/api/sweeps/" + o.args[1] + "/trials" + query + "&format=csv", code,
                     "", &body))
      return code;
    std::fputs(body.c_str(), stdout);
    return kOk;
  }
  auto r = client.call("GET", "/api/sweeps/" + o.args[1] + "/trials" + query, code);
  if (!r) return code;
  if (o.json) {
    std::printf("%s\n", r->dump(2).c_str());
    return kOk;
  }
  std::printf("%-6s %-10s %-12s %-8s %-14s %s\n", "NUMBER", "STATE", "VALUE", "ATTEMPT", "WORKER",
              "PARAMS");
  auto trials = decode_list<hpo::trials::Trial>(*r, "trials", code);
  if (!trials) return code;
  for (const auto& t : *trials) {
    std::string value = t.value ? fmt_number(*t.value) : "-";
    std::printf("%-6lld %-10s %-12s %-8d %-14s %s\n", static_cast<long long>(t.number),
                hpo::trials::to_string(t.state), value.c_str(), t.attempt, t.worker.c_str(),
                fmt_params(t.params).c_str());
  }
  const auto total = r->find("total");
  std::printf("(%lld trials)\n",
              static_cast<long long>(total != r->end() && total->is_number_integer()
                                         ? total->get<std::int64_t>()
                                         : static_cast<std::int64_t>(trials->size())));
  return kOk;
}

int cmd_pareto(Client& client, const Options& o) {
  if (o.args.size() != 2) return fail(kUsage, "usage: hpo pareto ID");
  int code = 0;
  auto r = client.call("GET", "/api/sweeps/" + o.args[1] + "/pareto", code);
  if (!r) return code;
  if (o.json) {
    std::printf("%s\n", r->dump(2).c_str());
    return kOk;
  }
  std::vector<std::string> metrics;
  for (const auto& obj : r->value("objectives", Json::array()))
    metrics.push_back(obj.value("metric", "") + " (" + obj.value("mode", "") + ")");
  std::printf("%-8s", "TRIAL");
  for (const auto& m : metrics) std::printf(" %18s", m.c_str());
  std::printf("  PARAMS\n");
  for (const auto& t : r->value("front", Json::array())) {
    std::printf("%-8lld", static_cast<long long>(t.value("number", std::int64_t{0})));
    const Json values = t.value("values", Json::object());
    for (const auto& obj : r->value("objectives", Json::array())) {
      const Json v = values.value(obj.value("metric", ""), Json());
      if (v.is_number())
        std::printf(" %18.6g", v.get<double>());
      else
        std::printf(" %18s", "-");
    }
    std::printf("  %s\n", t.value("params", Json::object()).dump().c_str());
  }
  const Json hv = r->value("hypervolume", Json());
  const Json err = r->value("hypervolume_std_error", Json());
  std::string hv_text = hv.is_number() ? fmt_number(hv.get<double>()) : "-";
  if (!r->value("hypervolume_exact", true) && err.is_number())
    hv_text += " ± " + fmt_number(err.get<double>()) + " (estimated)";
  std::printf("%zu on the front of %lld counted trials; hypervolume %s (reference %s)\n",
              r->value("front", Json::array()).size(),
              static_cast<long long>(r->value("counted", std::int64_t{0})), hv_text.c_str(),
              r->value("reference", Json::array()).dump().c_str());
  return kOk;
}

int cmd_workers(Client& client, const Options& o) {
  int code = 0;
  auto r = client.call("GET", "/api/workers", code);
  if (!r) return code;
  if (o.json) {
    std::printf("%s\n", r->dump(2).c_str());
    return kOk;
  }
  auto workers = decode_list<hpo::trials::WorkerInfo>(*r, "workers", code);
  if (!workers) return code;
  std::printf("%-20s %-16s %-7s %-6s %-30s %s\n", "NAME", "HOST", "SLOTS", "BUSY", "LABELS",
              "TRIALS");
  for (const auto& w : *workers) {
    std::string trials, labels;
    for (const auto& t : w.trials) trials += (trials.empty() ? "" : ",") + t;
    for (const auto& [k, v] : w.labels)
      labels += (labels.empty() ? "" : ",") + (v.empty() ? k : k + "=" + v);
    std::printf("%-20s %-16s %-7d %-6d %-30s %s\n", w.name.c_str(), w.host.c_str(), w.slots,
                w.busy_slots, labels.empty() ? "-" : labels.c_str(), trials.c_str());
  }
  return kOk;
}

int cmd_cancel(Client& client, const Options& o) {
  if (o.args.size() != 2) return fail(kUsage, "usage: hpo cancel ID");
  int code = 0;
  auto r = client.call("POST", "/api/sweeps/" + o.args[1] + "/cancel", code, "{}");
  if (!r) return code;
  if (o.json)
    std::printf("%s\n", r->dump().c_str());
  else
    std::printf("cancelled %s\n", o.args[1].c_str());
  return kOk;
}

// Downloads the ensemble of sweep `id` into `dir`: the record and the manifest
// (the sweep's own records), the spec (its trial recipe rebuilds the
// models) and each member's model.pt under members/<trial>/, the manifest's
// artifact paths rewritten to match. REST only: the CLI never links LibTorch.
int export_ensemble(Client& client, const std::string& id, const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  int code = 0;
  auto sweep = client.call("GET", "/api/sweeps/" + id, code);
  if (!sweep) return code;
  std::string record;
  if (!client.call("GET", "/api/sweeps/" + id + "/ensemble", code, "", &record)) return code;
  std::string manifest_text;
  if (!client.call("GET",
                   "/api/sweeps/" + id + "/artifacts/" + hpo::trials::artifact::kEnsembleManifest,
                   code, "", &manifest_text))
    return code;
  auto manifest = Json::parse(manifest_text, nullptr, false);
  if (manifest.is_discarded() || !manifest.contains("members") || !manifest["members"].is_array())
    return fail(kUnreachable, "the stored manifest of sweep " + id + " is not a manifest");
  std::error_code ec;
  fs::create_directories(dir / "members", ec);
  if (ec) return fail(kUsage, "cannot create " + (dir / "members").string() + ": " + ec.message());
  auto write = [&](const fs::path& p, const std::string& bytes) {
    fs::create_directories(p.parent_path(), ec);
    std::ofstream out(p, std::ios::binary);
    out << bytes;
    return static_cast<bool>(out);
  };
  for (auto& m : manifest["members"]) {
    const std::string trial = m.value("trial_id", "");
    namespace artifact = hpo::trials::artifact;
    const std::string rel = "members/" + trial + "/" + artifact::kModel;
    fs::create_directories((dir / rel).parent_path(), ec);
    // Streamed to disk (a model of gigabytes), resumed where a broken connection stopped.
    if (auto st = hpo::cli::download_file(
            client.http, "/api/trials/" + trial + "/artifacts/" + artifact::kModel, dir / rel);
        !st)
      return fail(st.error().code == hpo::ErrorCode::kUnavailable ? kUnreachable : kUsage,
                  "member " + trial + "'s model: " + st.error().message);
    m["artifact"] = rel;
  }
  if (!write(dir / hpo::trials::artifact::kEnsembleManifest, manifest.dump(2) + "\n") ||
      !write(dir / hpo::trials::artifact::kEnsembleRecord, record) ||
      !write(dir / "spec.json", (*sweep)["spec"].dump(2) + "\n"))
    return fail(kUsage, "cannot write into " + dir.string());
  return kOk;
}

// Takes "--sweep ID" out of the command's arguments.
std::optional<std::string> take_sweep(std::vector<std::string>& rest, const Options& o) {
  std::optional<std::string> sweep;
  for (std::size_t i = 1; i < o.args.size(); ++i) {
    if (o.args[i] == "--sweep" && i + 1 < o.args.size())
      sweep = o.args[++i];
    else if (o.args[i].rfind("--sweep=", 0) == 0)
      sweep = o.args[i].substr(8);
    else
      rest.push_back(o.args[i]);
  }
  return sweep;
}

int cmd_export(Client& client, const Options& o) {
  std::vector<std::string> rest;
  auto sweep = take_sweep(rest, o);
  if (!sweep || rest.size() != 1) return fail(kUsage, "usage: hpo export --sweep ID DIR");
  int code = export_ensemble(client, *sweep, rest[0]);
  if (code == kOk) std::printf("%s\n", rest[0].c_str());
  return code;
}

// hpo-predict: beside this binary, in the build tree's workers/, or on PATH.
std::string find_predictor() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (const fs::path& p : {self.parent_path() / "hpo-predict",
                              self.parent_path().parent_path() / "workers" / "hpo-predict"})
      if (::access(p.c_str(), X_OK) == 0) return p.string();
  return "hpo-predict";
}

int cmd_predict(Client& client, const Options& o) {
  namespace fs = std::filesystem;
  std::vector<std::string> rest;
  auto sweep = take_sweep(rest, o);
  std::vector<std::string> args{"hpo-predict", "--ensemble", ""};
  std::string input;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if ((rest[i] == "--output" || rest[i] == "-o" || rest[i] == "--device") &&
        i + 1 < rest.size()) {
      args.push_back(rest[i]);
      args.push_back(rest[++i]);
    } else if (input.empty() && rest[i].rfind("-", 0) != 0) {
      input = rest[i];
    } else {
      return fail(kUsage, "unknown argument " + rest[i]);
    }
  }
  if (!sweep || input.empty())
    return fail(kUsage, "usage: hpo predict --sweep ID INPUT [--output F] [--device cpu|cuda]");
  std::string tmpl = (fs::temp_directory_path() / "hpo-ensemble-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return fail(kUsage, "cannot create a temporary directory");
  const fs::path dir(tmpl);
  int code = export_ensemble(client, *sweep, dir);
  if (code == kOk) {
    args[2] = dir.string();
    args.push_back(input);
    const std::string exe = find_predictor();
    std::fflush(stdout);
    pid_t pid = ::fork();
    if (pid == 0) {
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::close_range(3, ~0U, 0);  // the API connection is the CLI's, not the predictor's
      ::execvp(exe.c_str(), argv.data());
      std::fprintf(stderr, "hpo: cannot run %s: %s (build the hpo-predict target, LibTorch)\n",
                   exe.c_str(), std::strerror(errno));
      ::_exit(127);
    }
    int status = 0;
    if (pid < 0 || ::waitpid(pid, &status, 0) < 0)
      code = fail(kUnreachable, "fork failed");
    else
      code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
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
  if (o.token.empty()) {
    if (const char* env = std::getenv("HPO_TOKEN"); env && *env)
      o.token = env;
    else if (local)
      o.token = local->token;
  }
  auto url = hpo::web::parse_http_url(o.server);
  if (!url) return fail(kUsage, "bad --server: " + url.error().message);
  Client client(*url, o.token);
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
  return fail(kUsage, "unknown command \"" + cmd + "\" (see hpo --help)");
}
