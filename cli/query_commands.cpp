// `hpo status`, `trials`, `pareto` and `workers`: the commands that only
// read. Each prints the server's document as it came with --json, else a
// table decoded with the records' codec.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "trials/record_json.hpp"
#include "trials/trial.hpp"
#include "web/http_message.hpp"

namespace hpo::cli {

int cmd_status(Client& client, const Options& options) {
  int code = 0;
  Options o = options;
  // `--project P` and `--tag T`: the list of one project's, or one tag's, sweeps.
  std::string filter;
  for (std::size_t i = 1; i + 1 < o.args.size();) {
    if (o.args[i] == "--project" || o.args[i] == "--tag") {
      filter += "&" + o.args[i].substr(2) + "=" + hpo::web::percent_encode(o.args[i + 1]);
      o.args.erase(o.args.begin() + static_cast<std::ptrdiff_t>(i),
                   o.args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
    } else {
      ++i;
    }
  }
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
  auto list = client.call("GET", "/api/sweeps?limit=100" + filter, code);
  if (!list) return code;
  if (o.json) {
    std::printf("%s\n", list->dump(2).c_str());
    return kOk;
  }
  auto sweeps = decode_list<record::SweepDocument>(*list, "sweeps", code);
  if (!sweeps) return code;
  std::printf("%-10s %-24s %-14s %-10s %-12s %-12s %s\n", "ID", "NAME", "PROJECT", "STATE", "DONE",
              "BEST", "TAGS");
  for (const auto& d : *sweeps) {
    const auto& s = d.sweep;
    std::string best = s.best ? fmt_number(s.best->value) : "-";
    std::printf("%-10s %-24s %-14s %-10s %-12s %-12s %s\n", s.id.c_str(),
                s.name.substr(0, 24).c_str(), s.project.substr(0, 14).c_str(),
                hpo::trials::to_string(s.state),
                fmt::format("{}/{}", s.counts.finished(), d.max_trials).c_str(), best.c_str(),
                fmt::format("{}", fmt::join(s.annotation.tags, ",")).c_str());
  }
  return kOk;
}

int cmd_trials(Client& client, const Options& o) {
  if (o.args.size() < 2) return fail(kUsage, "usage: hpo trials ID [--csv] [--state S] [--tag T]");
  std::string query = "?limit=1000";
  bool csv = false;
  for (std::size_t i = 2; i < o.args.size(); ++i) {
    const auto& a = o.args[i];
    if (a == "--csv")
      csv = true;
    else if ((a == "--state" || a == "--kind" || a == "--limit" || a == "--offset" ||
              a == "--tag") &&
             i + 1 < o.args.size())
      query += "&" + a.substr(2) + "=" + hpo::web::percent_encode(o.args[++i]);
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

}  // namespace hpo::cli
