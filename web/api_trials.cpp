// The trial handlers: a sweep's trials (paged, filtered, sorted; JSON, CSV or
// columns) and one trial with its attempts, reports and log tail. Split from
// api.cpp by resource.
//
// Sorting and filtering of trials is done here by loading the sweep's trials
// in pages (the store pages by number only); for 10,000 trials that is 10
// store calls, acceptable until the store grows an index.
#include "web/api.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "search/space.hpp"
#include "trials/artifacts.hpp"
#include "trials/store.hpp"
#include "trials/trial.hpp"
#include "trials/trial_csv.hpp"
#include "web/api_errors.hpp"
#include "web/api_helpers.hpp"
#include "web/json_codec.hpp"
#include "web/store_lease.hpp"
#include "web/trial_cache.hpp"
#include "web/trial_columns.hpp"

namespace hpo::web {

namespace {

// Sort key of a trial for ?sort=: a number, a string, or nothing (sorts last).
struct SortKey {
  int rank = 2;  // 0 number, 1 string, 2 missing
  double number = 0;
  std::string text;
};

SortKey key_of(const trials::Trial& t, const std::string& field) {
  SortKey k;
  auto from_value = [&](const search::Value& v) {
    if (auto d = search::as_double(v)) {
      k.rank = 0;
      k.number = *d;
    } else {
      k.rank = 1;
      k.text = search::to_string(v);
    }
  };
  if (field == "number") {
    k.rank = 0;
    k.number = static_cast<double>(t.number);
  } else if (field == "value") {
    if (t.value && !std::isnan(*t.value)) k = {0, *t.value, {}};
  } else if (field.rfind("metric:", 0) == 0) {
    auto it = t.metrics.find(field.substr(7));
    if (it != t.metrics.end() && !std::isnan(it->second)) k = {0, it->second, {}};
  } else if (field.rfind("param:", 0) == 0) {
    auto it = t.params.find(field.substr(6));
    if (it != t.params.end()) from_value(it->second);
  } else if (field == "started") {
    k = {0, static_cast<double>(t.started_ms), {}};
  } else if (field == "finished") {
    k = {0, static_cast<double>(t.finished_ms), {}};
  }
  return k;
}

bool valid_sort_field(const std::string& f) {
  return f == "number" || f == "value" || f == "started" || f == "finished" ||
         (f.rfind("metric:", 0) == 0 && f.size() > 7) ||
         (f.rfind("param:", 0) == 0 && f.size() > 6);
}

}  // namespace

Response Api::list_trials(const Request& request, const std::string& sweep_id) {
  auto offset = int_param(request, "offset", 0, 0, INT64_MAX);
  if (!offset) return error_response(offset.error());
  const std::string format = request.query_or("format", "json");
  if (format != "json" && format != "csv" && format != "columns")
    return error_response(
        Error::invalid("format", "unknown format '" + format + "': expected json, csv or columns"));
  const bool csv = format == "csv";
  // CSV and columns are whole exports by default (the dashboard reads every
  // trial of a sweep in one request); a JSON page is capped.
  const bool whole = format != "json";
  auto limit = int_param(request, "limit", whole ? INT64_MAX : options_.default_page, 0,
                         whole ? INT64_MAX : options_.max_page);
  if (!limit) return error_response(limit.error());
  auto role = trials::parse_trial_role(request.query_or("kind", "trial"));
  if (!role) return error_response(Error::invalid("kind", "must be 'trial' or 'member'"));
  const trials::TrialRole kind = *role;
  std::optional<trials::TrialState> state;
  if (auto s = request.query_or("state"); !s.empty()) {
    state = trials::parse_trial_state(s);
    if (!state) return error_response(Error::invalid("state", "unknown trial state '" + s + "'"));
  }
  const std::string tag = request.query_or("tag");
  std::string sort = request.query_or("sort", "number");
  bool descending = !sort.empty() && sort[0] == '-';
  std::string field = descending ? sort.substr(1) : sort;
  if (!valid_sort_field(field))
    return error_response(Error::invalid(
        "sort", "expected [-]number, value, started, finished, metric:NAME or param:NAME"));

  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  if (auto sweep = readable_sweep(store, request, sweep_id); !sweep)
    return error_response(sweep.error());
  // The users' tags and notes, kept beside the (immutable) trial records.
  auto notes = store.track(store->sweeps().trial_annotations(sweep_id));
  if (!notes) return error_response(notes.error());
  auto tagged = [&](const trials::Trial& t) {
    if (tag.empty()) return true;
    auto it = notes->find(t.id);
    return it != notes->end() &&
           std::find(it->second.tags.begin(), it->second.tags.end(), tag) != it->second.tags.end();
  };
  std::vector<TrialPtr> rows;
  std::int64_t total = 0;
  if (!state && tag.empty() && field == "number" && !descending && !csv) {
    // Only the page's range; its finished trials from the cache.
    auto page = store.track(trial_cache_.load(store->sweeps(), store->trials(), sweep_id, kind,
                                              *offset, *limit, &total));
    if (!page) return error_response(page.error());
    rows = std::move(*page);
  } else {
    // Every trial of the sweep (finished ones cached), then filter, sort and slice.
    auto all = store.track(trial_cache_.load(store->sweeps(), store->trials(), sweep_id, kind));
    if (!all) return error_response(all.error());
    std::vector<std::pair<SortKey, TrialPtr>> keyed;
    keyed.reserve(all->size());
    for (auto& t : *all)
      if ((!state || t->state == *state) && tagged(*t))
        keyed.emplace_back(key_of(*t, field), std::move(t));
    // A total order (ties go by number, which is unique), so only the rows up
    // to the page's end need sorting: O(n log page) for a sweep of n trials.
    auto before = [&](const auto& a, const auto& b) {
      const SortKey &x = a.first, &y = b.first;
      if (x.rank != y.rank) return x.rank < y.rank;  // missing values last either way
      if (x.rank == 0 && x.number != y.number)
        return descending ? x.number > y.number : x.number < y.number;
      if (x.rank == 1 && x.text != y.text) return descending ? x.text > y.text : x.text < y.text;
      return a.second->number < b.second->number;
    };
    total = static_cast<std::int64_t>(keyed.size());
    auto begin = std::min<std::int64_t>(*offset, total);
    auto end = begin + std::min<std::int64_t>(*limit, total - begin);
    std::partial_sort(keyed.begin(), keyed.begin() + end, keyed.end(), before);
    for (auto i = begin; i < end; ++i) rows.push_back(std::move(keyed[i].second));
  }
  if (csv) {
    std::vector<const trials::Trial*> view;
    view.reserve(rows.size());
    for (const auto& row : rows) view.push_back(row.get());
    Response r = Response::text(200, trials::write_trials_csv(view), "text/csv; charset=utf-8");
    r.headers.emplace_back("Content-Disposition",
                           "attachment; filename=\"" + percent_encode(sweep_id) + "-trials.csv\"");
    return r;
  }
  auto with_note = [&](const trials::Trial& t) {
    Json doc = to_json(t);
    auto it = notes->find(t.id);
    doc["tags"] = it == notes->end() ? Json::array() : Json(it->second.tags);
    doc["note"] = it == notes->end() ? "" : it->second.note;
    return doc;
  };
  if (format == "columns") {
    Json doc = trials_columns(rows, total, *offset, *limit);
    Json annotations = Json::object();  // of the page's annotated trials
    for (const auto& t : rows)
      if (auto it = notes->find(t->id); it != notes->end())
        annotations[t->id] = to_json(it->second);
    doc["annotations"] = std::move(annotations);
    return json_ok(200, doc);
  }
  Json list = Json::array();
  for (const auto& t : rows) list.push_back(with_note(*t));
  return json_ok(200, {{"trials", list}, {"total", total}, {"offset", *offset}, {"limit", *limit}});
}

Response Api::get_trial(const Request& request, const std::string& id) {
  // Reports are paged: a trial may hold trials::kMaxReportsPerTrial of them.
  auto offset = int_param(request, "reports_offset", 0, 0, INT64_MAX);
  if (!offset) return error_response(offset.error());
  auto limit = int_param(request, "reports_limit", trials::kMaxReportsPerTrial, 0,
                         trials::kMaxReportsPerTrial);
  if (!limit) return error_response(limit.error());
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto trial = readable_trial(store, request, id);
  if (!trial) return error_response(trial.error());
  auto attempts = store.track(store->trials().get_attempts(id));
  if (!attempts) return error_response(attempts.error());
  auto reports = store.track(store->trials().get_reports(id, *offset, *limit));
  if (!reports) return error_response(reports.error());
  auto notes = store.track(store->sweeps().trial_annotations(trial->sweep_id));
  if (!notes) return error_response(notes.error());
  Json doc = to_json(*trial);
  auto note = notes->find(id);
  doc["tags"] = note == notes->end() ? Json::array() : Json(note->second.tags);
  doc["note"] = note == notes->end() ? "" : note->second.note;
  doc["attempts"] = Json::array();
  for (const auto& a : *attempts) doc["attempts"].push_back(to_json(a));
  doc["reports"] = Json::array();
  for (const auto& r : reports->reports) doc["reports"].push_back(to_json(r));
  doc["reports_total"] = reports->total;
  doc["reports_offset"] = *offset;
  doc["reports_limit"] = *limit;
  // The worker stores the tail of each attempt's log when the attempt ends.
  auto log = store.track(store->artifacts().get_artifact(id, trials::artifact::kLog));
  if (!log) return error_response(log.error());
  doc["log_tail"] = *log ? Json(**log) : Json(nullptr);
  return json_ok(200, doc);
}

}  // namespace hpo::web
