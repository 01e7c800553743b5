#include "web/trial_columns.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "trials/trial_plan.hpp"

namespace hpo::web {
namespace {

using trials::record::Json;
using trials::record::number_or_null;

// Index of `s` in the dictionary `words`, adding it when new.
class Dictionary {
 public:
  std::int64_t index(const std::string& s) {
    auto [it, added] = at_.try_emplace(s, static_cast<std::int64_t>(words_.size()));
    if (added) words_.push_back(s);
    return it->second;
  }
  Json words() const { return words_; }

 private:
  std::unordered_map<std::string, std::int64_t> at_;
  std::vector<std::string> words_;
};

}  // namespace

trials::record::Json trials_columns(const std::vector<std::shared_ptr<const trials::Trial>>& rows,
                                    std::int64_t total, std::int64_t offset, std::int64_t limit) {
  std::set<std::string> param_names, metric_names;
  for (const auto& t : rows) {
    for (const auto& [k, v] : t->params) param_names.insert(k);
    for (const auto& [k, v] : t->metrics) metric_names.insert(k);
  }
  const std::size_t n = rows.size();
  auto column = [n] {
    Json a = Json::array();
    a.get_ref<Json::array_t&>().reserve(n);
    return a;
  };
  Json id = column(), number = column(), state = column(), value = column(), attempt = column(),
       worker = column(), error = column(), created = column(), started = column(),
       finished = column();
  std::map<std::string, Json> params, metrics;
  for (const auto& p : param_names) params.emplace(p, column());
  for (const auto& m : metric_names) metrics.emplace(m, column());
  Dictionary states, workers, errors;
  // A multi-fidelity or PBT trial's place in its schedule (trials/trial_plan.hpp),
  // for the dashboard's lineage; the column only exists when one has it.
  Json extra = column();
  bool any_extra = false;
  for (const auto& row : rows) {
    const trials::Trial& t = *row;
    if (t.plan.lineage) {
      extra.emplace_back(trials::plan_json(t.plan, t.sweep_id));
      any_extra = true;
    } else {
      extra.push_back(nullptr);
    }
    id.push_back(t.id);
    number.push_back(t.number);
    state.push_back(states.index(trials::to_string(t.state)));
    value.push_back(t.value ? number_or_null(*t.value) : Json(nullptr));
    attempt.push_back(t.attempt);
    worker.push_back(workers.index(t.worker));
    error.push_back(errors.index(t.error));
    created.push_back(t.created_ms);
    started.push_back(t.started_ms);
    finished.push_back(t.finished_ms);
    for (auto& [name, col] : params) {
      auto it = t.params.find(name);
      col.push_back(it == t.params.end() ? Json(nullptr)
                                         : trials::record::value_to_json(it->second));
    }
    for (auto& [name, col] : metrics) {
      auto it = t.metrics.find(name);
      col.push_back(it == t.metrics.end() ? Json(nullptr) : number_or_null(it->second));
    }
  }
  Json p = Json::object(), m = Json::object();
  for (auto& [name, col] : params) p[name] = std::move(col);
  for (auto& [name, col] : metrics) m[name] = std::move(col);
  Json out = {{"total", total},
              {"offset", offset},
              {"limit", limit == INT64_MAX ? Json(nullptr) : Json(limit)},  // null: no limit
              {"count", static_cast<std::int64_t>(n)},
              {"columns",
               {{"id", std::move(id)},
                {"number", std::move(number)},
                {"state", std::move(state)},
                {"value", std::move(value)},
                {"attempt", std::move(attempt)},
                {"worker", std::move(worker)},
                {"error", std::move(error)},
                {"created_ms", std::move(created)},
                {"started_ms", std::move(started)},
                {"finished_ms", std::move(finished)}}},
              {"dictionaries",
               {{"state", states.words()}, {"worker", workers.words()}, {"error", errors.words()}}},
              {"params", std::move(p)},
              {"metrics", std::move(m)}};
  if (any_extra) out["columns"]["extra"] = std::move(extra);
  return out;
}

}  // namespace hpo::web
