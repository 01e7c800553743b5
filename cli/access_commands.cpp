// `hpo whoami`, `project`, `user`, `token` and `audit`: who may do what, over
// the API's access routes (web/api_access.cpp). A token is printed once, when
// it is made; the server keeps only its hash.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "web/http_message.hpp"

namespace hpo::cli {

namespace {

// `--name VALUE` or `--name=VALUE` among args[from..], taken out.
std::optional<std::string> take_flag(std::vector<std::string>& args, const std::string& name) {
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (args[i].rfind(name + "=", 0) == 0) {
      std::string v = args[i].substr(name.size() + 1);
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
      return v;
    }
    if (args[i] == name && i + 1 < args.size()) {
      std::string v = args[i + 1];
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i),
                 args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
      return v;
    }
  }
  return std::nullopt;
}

bool take_switch(std::vector<std::string>& args, const std::string& name) {
  for (std::size_t i = 1; i < args.size(); ++i)
    if (args[i] == name) {
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
      return true;
    }
  return false;
}

std::string when(std::int64_t ms) {
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string enc(const std::string& s) {
  return hpo::web::percent_encode(s);
}

// The caller's user name (for `token` without --user).
std::optional<std::string> me(Client& client, int& code) {
  auto r = client.call("GET", "/api/whoami", code);
  if (!r) return std::nullopt;
  if (!(*r)["user"].is_string()) {
    code = fail(kUsage, "this call is anonymous: give a token (--token or HPO_TOKEN)");
    return std::nullopt;
  }
  return (*r)["user"].get<std::string>();
}

int print_or(const Options& o, const Json& doc, const std::function<void()>& text) {
  if (o.json)
    std::printf("%s\n", doc.dump(2).c_str());
  else
    text();
  return kOk;
}

constexpr const char* kProjectUsage =
    "usage: hpo project list | create NAME [SETTINGS] | set NAME SETTINGS | members NAME | "
    "add-member NAME USER viewer|member|admin | remove-member NAME USER\n"
    "  SETTINGS: --weight W --max-slots N --max-gpus N --max-queued-trials N --max-active-sweeps N "
    "(0: none)\n"
    "            --max-store-bytes SIZE --max-file-bytes SIZE (512MiB, 20GiB; 0: the scheduler's "
    "default)";
constexpr const char* kUserUsage =
    "usage: hpo user list | create NAME [--service-admin] | disable NAME | enable NAME | promote "
    "NAME | demote NAME";
constexpr const char* kTokenUsage =
    "usage: hpo token create [--user U] [--label L] [--expires-days D] | list [--user U] | "
    "revoke ID";

// `hpo ... revoke ID`: DELETE `path`ID, saying what was revoked.
int revoke(Client& client, const Options& o, const std::string& path, const char* what) {
  int code = 0;
  std::string raw;
  if (!client.call("DELETE", path + enc(o.args[2]), code, "", &raw)) return code;
  if (!o.json) std::printf("revoked %s %s\n", what, o.args[2].c_str());
  return kOk;
}

}  // namespace

int cmd_whoami(Client& client, const Options& o) {
  int code = 0;
  auto r = client.call("GET", "/api/whoami", code);
  if (!r) return code;
  return print_or(o, *r, [&] {
    std::printf("%s%s\n",
                (*r)["user"].is_string() ? (*r)["user"].get<std::string>().c_str() : "(anonymous)",
                (*r)["service_admin"].get<bool>() ? " (service admin)" : "");
    for (const auto& [p, role] : (*r)["roles"].items())
      std::printf("  %-24s %s\n", p.c_str(), role.get<std::string>().c_str());
  });
}

int cmd_project(Client& client, const Options& options) {
  Options o = options;
  if (o.args.size() < 2) return fail(kUsage, kProjectUsage);
  const std::string sub = o.args[1];
  int code = 0;
  if (sub == "list" && o.args.size() == 2) {
    auto r = client.call("GET", "/api/projects", code);
    if (!r) return code;
    return print_or(o, *r, [&] {
      // In use / limit ("-": none).
      auto of = [](const Json& use, const Json& limit) {
        const auto l = limit.get<std::int64_t>();
        return fmt::format("{}/{}", use.get<std::int64_t>(), l > 0 ? std::to_string(l) : "-");
      };
      // Bytes held / the limit in force ("-": none).
      auto bytes = [](const Json& p, const char* what) {
        const auto use = p["use"].value(what, Json(0)).get<std::int64_t>();
        const auto limit = p.value("byte_limits", Json::object()).value(what, Json(0));
        const auto l = limit.get<std::int64_t>();
        return fmt::format("{}/{}", fmt_bytes(use), l > 0 ? fmt_bytes(l) : "-");
      };
      std::printf("%-20s %-7s %-9s %-9s %-14s %-14s %-22s %-22s %s\n", "project", "weight", "slots",
                  "gpus", "queued trials", "active sweeps", "store", "files", "your role");
      for (const auto& p : (*r)["projects"])
        std::printf(
            "%-20s %-7s %-9s %-9s %-14s %-14s %-22s %-22s %s\n",
            p["name"].get<std::string>().c_str(), fmt_number(p["weight"].get<double>()).c_str(),
            of(p["use"]["slots"], p["limits"]["max_slots"]).c_str(),
            of(p["use"].value("gpus", Json(0)), p["limits"].value("max_gpus", Json(0))).c_str(),
            of(p["use"]["queued_trials"], p["limits"]["max_queued_trials"]).c_str(),
            of(p["use"]["active_sweeps"], p["limits"]["max_active_sweeps"]).c_str(),
            bytes(p, "store_bytes").c_str(), bytes(p, "file_bytes").c_str(),
            p["role"].is_string() ? p["role"].get<std::string>().c_str() : "");
    });
  }
  if (sub == "create" || sub == "set") {
    Json body = Json::object();
    if (auto weight = take_flag(o.args, "--weight")) {
      char* end = nullptr;
      double w = std::strtod(weight->c_str(), &end);
      if (end == weight->c_str() || *end) return fail(kUsage, "--weight: not a number: " + *weight);
      body["weight"] = w;
    }
    for (const char* flag :
         {"--max-slots", "--max-gpus", "--max-queued-trials", "--max-active-sweeps"}) {
      auto v = take_flag(o.args, flag);
      if (!v) continue;
      char* end = nullptr;
      long long n = std::strtoll(v->c_str(), &end, 10);
      if (end == v->c_str() || *end)
        return fail(kUsage, std::string(flag) + ": not an integer: " + *v);
      std::string key = std::string(flag).substr(2);
      for (auto& c : key) c = c == '-' ? '_' : c;
      body[key] = n;
    }
    for (const char* flag : {"--max-store-bytes", "--max-file-bytes"}) {
      auto v = take_flag(o.args, flag);
      if (!v) continue;
      auto n = parse_byte_size(*v);
      if (!n)
        return fail(kUsage,
                    std::string(flag) + ": not a size in bytes (1000000, 512MiB, 20GiB): " + *v);
      std::string key = std::string(flag).substr(2);
      for (auto& c : key) c = c == '-' ? '_' : c;
      body[key] = *n;
    }
    if (o.args.size() != 3) return fail(kUsage, kProjectUsage);
    std::optional<Json> r;
    if (sub == "create") {
      body["name"] = o.args[2];
      r = client.call("POST", "/api/projects", code, body.dump());
    } else {
      r = client.call("PATCH", "/api/projects/" + enc(o.args[2]), code, body.dump());
    }
    if (!r) return code;
    return print_or(o, *r, [&] {
      std::printf("%s project %s\n", sub == "create" ? "created" : "changed", o.args[2].c_str());
    });
  }
  if (sub == "members" && o.args.size() == 3) {
    auto r = client.call("GET", "/api/projects/" + enc(o.args[2]) + "/members", code);
    if (!r) return code;
    return print_or(o, *r, [&] {
      for (const auto& m : (*r)["members"])
        std::printf("%-24s %s\n", m["user"].get<std::string>().c_str(),
                    m["role"].get<std::string>().c_str());
    });
  }
  if (sub == "add-member" && o.args.size() == 5) {
    auto r = client.call("PUT", "/api/projects/" + enc(o.args[2]) + "/members/" + enc(o.args[3]),
                         code, Json{{"role", o.args[4]}}.dump());
    if (!r) return code;
    return print_or(o, *r, [&] {
      std::printf("%s is %s of %s\n", o.args[3].c_str(), o.args[4].c_str(), o.args[2].c_str());
    });
  }
  if (sub == "remove-member" && o.args.size() == 4) {
    std::string raw;
    if (!client.call("DELETE", "/api/projects/" + enc(o.args[2]) + "/members/" + enc(o.args[3]),
                     code, "", &raw))
      return code;
    if (!o.json) std::printf("%s left %s\n", o.args[3].c_str(), o.args[2].c_str());
    return kOk;
  }
  return fail(kUsage, kProjectUsage);
}

int cmd_user(Client& client, const Options& options) {
  Options o = options;
  if (o.args.size() < 2) return fail(kUsage, kUserUsage);
  int code = 0;
  if (o.args[1] == "list" && o.args.size() == 2) {
    auto r = client.call("GET", "/api/users", code);
    if (!r) return code;
    return print_or(o, *r, [&] {
      for (const auto& u : (*r)["users"]) {
        std::string what = u["service_admin"].get<bool>() ? "service admin" : "";
        if (u.value("disabled", false)) what += what.empty() ? "disabled" : ", disabled";
        std::printf("%-24s %s\n", u["name"].get<std::string>().c_str(), what.c_str());
      }
    });
  }
  // disable/enable/promote/demote NAME: one field of the user.
  static const std::map<std::string, std::pair<const char*, bool>> kChanges = {
      {"disable", {"disabled", true}},
      {"enable", {"disabled", false}},
      {"promote", {"service_admin", true}},
      {"demote", {"service_admin", false}}};
  if (auto change = kChanges.find(o.args[1]); change != kChanges.end() && o.args.size() == 3) {
    auto r = client.call("PATCH", "/api/users/" + enc(o.args[2]), code,
                         Json{{change->second.first, change->second.second}}.dump());
    if (!r) return code;
    return print_or(o, *r, [&] {
      std::printf("user %s: %s\n", o.args[2].c_str(), (*r)["changed"].get<std::string>().c_str());
    });
  }
  if (o.args[1] == "create") {
    const bool admin = take_switch(o.args, "--service-admin");
    if (o.args.size() != 3) return fail(kUsage, kUserUsage);
    auto r = client.call("POST", "/api/users", code,
                         Json{{"name", o.args[2]}, {"service_admin", admin}}.dump());
    if (!r) return code;
    return print_or(o, *r, [&] {
      std::printf("created user %s; their token (shown once, id %s):\n%s\n", o.args[2].c_str(),
                  (*r)["token"]["id"].get<std::string>().c_str(),
                  (*r)["token"]["token"].get<std::string>().c_str());
    });
  }
  return fail(kUsage, kUserUsage);
}

int cmd_token(Client& client, const Options& options) {
  Options o = options;
  if (o.args.size() < 2) return fail(kUsage, kTokenUsage);
  const std::string sub = o.args[1];
  int code = 0;
  if (sub == "revoke" && o.args.size() == 3) return revoke(client, o, "/api/tokens/", "token");
  auto user = take_flag(o.args, "--user");
  auto label = take_flag(o.args, "--label");
  auto days = take_flag(o.args, "--expires-days");
  if (o.args.size() != 2 || (sub != "create" && sub != "list")) return fail(kUsage, kTokenUsage);
  Json request{{"label", label.value_or("")}};
  if (days) {
    char* end = nullptr;
    const double d = std::strtod(days->c_str(), &end);
    if (days->empty() || *end != '\0')
      return fail(kUsage, "--expires-days: '" + *days + "' is not a number of days");
    request["expires_in_days"] = d;  // the server checks the range
  }
  if (!user) {
    user = me(client, code);
    if (!user) return code;
  }
  const std::string path = "/api/users/" + enc(*user) + "/tokens";
  if (sub == "create") {
    auto r = client.call("POST", path, code, request.dump());
    if (!r) return code;
    return print_or(o, *r, [&] {
      std::printf("token %s of %s (shown once):\n%s\n", (*r)["id"].get<std::string>().c_str(),
                  user->c_str(), (*r)["token"].get<std::string>().c_str());
    });
  }
  auto r = client.call("GET", path, code);
  if (!r) return code;
  return print_or(o, *r, [&] {
    for (const auto& t : (*r)["tokens"])
      std::printf("%-14s %s  %s%s\n", t["id"].get<std::string>().c_str(),
                  when(t["created_ms"].get<std::int64_t>()).c_str(),
                  t["label"].get<std::string>().c_str(),
                  t.contains("expires_ms") && t["expires_ms"].is_number()
                      ? ("  (expires " + when(t["expires_ms"].get<std::int64_t>()) + ")").c_str()
                      : "");
  });
}

int cmd_worker_token(Client& client, const Options& options) {
  constexpr const char* kWorkerTokenUsage =
      "usage: hpo worker-token create NAME [--project P] | list | revoke ID";
  Options o = options;
  auto project = take_flag(o.args, "--project");
  if (o.args.size() < 2) return fail(kUsage, kWorkerTokenUsage);
  const std::string sub = o.args[1];
  int code = 0;
  if (sub == "revoke" && o.args.size() == 3)
    return revoke(client, o, "/api/worker-tokens/", "worker token");
  if (sub == "create" && o.args.size() == 3) {
    Json request{{"host", o.args[2]}};
    if (project) request["project"] = *project;
    auto r = client.call("POST", "/api/worker-tokens", code, request.dump());
    if (!r) return code;
    // A prefix ("slurm-*"): every worker named so, each with a name of its own.
    const std::string& name = o.args[2];
    const bool many = name.size() > 1 && name.back() == '*';
    const std::string as = many ? name.substr(0, name.size() - 1) + "<its own>" : name;
    return print_or(o, *r, [&] {
      std::printf(
          "worker token %s for %s %s%s (shown once):\n%s\n\nOn %s, with the token in "
          "a file of mode 0600:\n  hpo-worker --scheduler %s --worker-token-file FILE --name "
          "%s%s\n",
          (*r)["id"].get<std::string>().c_str(), many ? "the workers named" : "worker",
          name.c_str(), project ? (", project " + *project).c_str() : ", any project",
          (*r)["token"].get<std::string>().c_str(), many ? "each such host" : "that host",
          o.server.c_str(), as.c_str(), project ? (" --project " + *project).c_str() : "");
    });
  }
  if (sub != "list" || o.args.size() != 2) return fail(kUsage, kWorkerTokenUsage);
  auto r = client.call("GET", "/api/worker-tokens", code);
  if (!r) return code;
  return print_or(o, *r, [&] {
    for (const auto& t : (*r)["worker_tokens"])
      std::printf("%-16s %-24s %-16s %s  by %s\n", t["id"].get<std::string>().c_str(),
                  t["host"].get<std::string>().c_str(),
                  t["project"].is_string() ? t["project"].get<std::string>().c_str() : "(any)",
                  when(t["created_ms"].get<std::int64_t>()).c_str(),
                  t["created_by"].get<std::string>().c_str());
  });
}

int cmd_audit(Client& client, const Options& options) {
  Options o = options;
  auto project = take_flag(o.args, "--project");
  auto after = take_flag(o.args, "--after");
  auto limit = take_flag(o.args, "--limit");
  if (o.args.size() != 1)
    return fail(kUsage,
                "usage: hpo audit [--project P] [--after ID] [--limit N] (no project: "
                "the service's own log of users and tokens)");
  std::string path = project ? "/api/projects/" + enc(*project) + "/audit" : "/api/audit";
  std::string sep = "?";
  if (after) path += sep + "after=" + enc(*after), sep = "&";
  if (limit) path += sep + "limit=" + enc(*limit);
  int code = 0;
  auto r = client.call("GET", path, code);
  if (!r) return code;
  return print_or(o, *r, [&] {
    for (const auto& e : (*r)["entries"])
      std::printf("%s  %-12s %-16s %-12s %s\n", when(e["time_ms"].get<std::int64_t>()).c_str(),
                  e["user"].get<std::string>().c_str(), e["action"].get<std::string>().c_str(),
                  e["target"].get<std::string>().c_str(), e["detail"].get<std::string>().c_str());
  });
}

int cmd_annotate(Client& client, const Options& options) {
  Options o = options;
  std::vector<std::string> add, remove;
  std::optional<std::string> note;
  while (auto t = take_flag(o.args, "--tag")) add.push_back(*t);
  while (auto t = take_flag(o.args, "--untag")) remove.push_back(*t);
  note = take_flag(o.args, "--note");
  auto priority = take_flag(o.args, "--priority");
  if (o.args.size() != 2)
    return fail(kUsage,
                "usage: hpo annotate SWEEP_OR_TRIAL_ID [--tag T]... [--untag T]... "
                "[--note TEXT] [--priority N (a sweep; a project admin)]");
  // A trial id is its sweep's id, '-' and its number.
  const bool trial = o.args[1].find('-') != std::string::npos;
  const std::string path = (trial ? "/api/trials/" : "/api/sweeps/") + enc(o.args[1]);
  int code = 0;
  auto now = client.call("GET", path, code);
  if (!now) return code;
  std::vector<std::string> tags;
  for (const auto& t : (*now)["tags"]) tags.push_back(t.get<std::string>());
  for (const auto& t : add)
    if (std::find(tags.begin(), tags.end(), t) == tags.end()) tags.push_back(t);
  std::erase_if(tags, [&](const std::string& t) {
    return std::find(remove.begin(), remove.end(), t) != remove.end();
  });
  Json body = {{"tags", tags}};
  if (note) body["note"] = *note;
  if (priority) {
    char* end = nullptr;
    long long n = std::strtoll(priority->c_str(), &end, 10);
    if (end == priority->c_str() || *end)
      return fail(kUsage, "--priority: not an integer: " + *priority);
    body["priority"] = n;
  }
  auto r = client.call("PATCH", path, code, body.dump());
  if (!r) return code;
  return print_or(o, *r, [&] {
    std::printf("%s: tags [%s]%s\n", o.args[1].c_str(),
                fmt::format("{}", fmt::join(tags, ", ")).c_str(),
                (*r)["note"].get<std::string>().empty() ? "" : " (with a note)");
  });
}

}  // namespace hpo::cli
