// `hpo submit`, `import`, `cancel` and `delete`: the commands that create or
// end sweeps. A submit or an import is retried through a scheduler restart
// under one Idempotency-Key, so a retry never makes a second sweep; `submit
// --follow` then watches the sweep to its end.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/backoff.hpp"
#include "core/http_client.hpp"
#include "trials/json_limits.hpp"
#include "trials/record_json.hpp"
#include "trials/trial.hpp"
#include "web/http_message.hpp"

namespace hpo::cli {

namespace {

// How long `submit` keeps retrying while the scheduler is unreachable or answers 5xx.
constexpr auto kSubmitRetryFor = std::chrono::seconds(120);

std::string random_key() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}{:08x}{:08x}", rd(), rd(), rd(), rd());
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

}  // namespace

// `--project P` among a command's arguments, taken out: the ?project= of its request.
static std::string take_project(std::vector<std::string>& args) {
  for (std::size_t i = 1; i < args.size(); ++i) {
    std::string value;
    if (args[i].rfind("--project=", 0) == 0) {
      value = args[i].substr(10);
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (args[i] == "--project" && i + 1 < args.size()) {
      value = args[i + 1];
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i),
                 args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
    } else {
      continue;
    }
    return value.empty() ? "" : "?project=" + hpo::web::percent_encode(value);
  }
  return "";
}

int cmd_import(Client& client, const Options& options) {
  Options o = options;
  const std::string project = take_project(o.args);
  if (o.args.size() != 3)
    return fail(kUsage, "usage: hpo import SPEC.json TRIALS.csv [--project P]");
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
  auto r =
      post_idempotent(client, "/api/sweeps/import" + project, record::dump(body), "import", code);
  if (!r) return code;
  if (o.json)
    std::printf("%s\n", r->dump().c_str());
  else
    std::printf("%s\n", r->value("id", "").c_str());
  std::fflush(stdout);
  return kOk;
}

int cmd_submit(Client& client, const Options& options) {
  Options o = options;
  const std::string project = take_project(o.args);
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
  if (path.empty()) return fail(kUsage, "usage: hpo submit SPEC.json [--follow] [--project P]");
  std::ifstream in(path);
  if (!in) return fail(kUsage, "cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  int code = 0;
  auto r = post_idempotent(client, "/api/sweeps" + project, ss.str(), "submit", code);
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

}  // namespace hpo::cli
