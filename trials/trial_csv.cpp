#include "trials/trial_csv.hpp"

#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace hpo::trials {

namespace {

// Cells a spreadsheet would run as a formula get a leading '.
bool formula_start(char c) {
  return std::string_view("=+-@\t\r").find(c) != std::string_view::npos;
}

std::string csv_cell(const std::string& s) {
  const bool formula = !s.empty() && formula_start(s[0]);
  const std::string text = formula ? "'" + s : s;
  if (!formula && text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string number_text(double v) {
  if (!std::isfinite(v)) return "";
  return nlohmann::json(v).dump();
}

// A text cell as written: without the ' that guards a formula.
std::string unguarded(const std::string& cell) {
  if (cell.size() >= 2 && cell[0] == '\'' && formula_start(cell[1])) return cell.substr(1);
  return cell;
}

std::optional<double> parse_number(std::string_view s) {
  if (s.empty()) return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::int64_t> parse_int(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

struct Record {
  std::size_t line = 0;  // 1-based line where it starts
  std::vector<std::string> cells;
};

// RFC 4180 records (quoted cells may hold commas, quotes as "", newlines);
// lines ending in CRLF or LF; blank lines skipped; a UTF-8 BOM ignored.
Result<std::vector<Record>> split_records(std::string_view text, const std::string& path,
                                          std::size_t max_records) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  std::vector<Record> out;
  std::size_t line = 1, i = 0;
  while (i < text.size()) {
    Record rec;
    rec.line = line;
    std::string cell;
    bool end_of_record = false;
    while (!end_of_record) {
      cell.clear();
      if (i < text.size() && text[i] == '"') {
        const std::size_t open_line = line;
        ++i;
        for (;;) {
          if (i >= text.size())
            return Error::invalid(
                path, fmt::format("line {}: a quoted cell is never closed (expected a closing \")",
                                  open_line));
          if (text[i] == '"') {
            if (i + 1 < text.size() && text[i + 1] == '"') {
              cell += '"';
              i += 2;
              continue;
            }
            ++i;
            break;
          }
          if (text[i] == '\n') ++line;
          cell += text[i++];
        }
        if (i < text.size() && text[i] != ',' && text[i] != '\n' && text[i] != '\r')
          return Error::invalid(path, fmt::format("line {}, column {}: text after a closing quote "
                                                  "(expected , or the end of the line)",
                                                  line, rec.cells.size() + 1));
      } else {
        while (i < text.size() && text[i] != ',' && text[i] != '\n' && text[i] != '\r')
          cell += text[i++];
      }
      rec.cells.push_back(cell);
      if (i < text.size() && text[i] == ',') {
        ++i;
        continue;
      }
      if (i < text.size() && text[i] == '\r') ++i;
      if (i < text.size() && text[i] == '\n') ++i;
      ++line;
      end_of_record = true;
    }
    if (rec.cells.size() == 1 && rec.cells[0].empty()) continue;  // a blank line
    if (out.size() == max_records)
      return Error::invalid(path, fmt::format("line {}: more than {} trials (split the file)",
                                              rec.line, max_records - 1));
    out.push_back(std::move(rec));
  }
  return out;
}

enum class Column {
  kId,
  kNumber,
  kState,
  kValue,
  kAttempt,
  kWorker,
  kStarted,
  kFinished,
  kError,
  kParam,
  kMetric
};

const std::map<std::string, Column, std::less<>>& fixed_columns() {
  static const std::map<std::string, Column, std::less<>> m{{"id", Column::kId},
                                                            {"number", Column::kNumber},
                                                            {"state", Column::kState},
                                                            {"value", Column::kValue},
                                                            {"attempt", Column::kAttempt},
                                                            {"worker", Column::kWorker},
                                                            {"started_ms", Column::kStarted},
                                                            {"finished_ms", Column::kFinished},
                                                            {"error", Column::kError}};
  return m;
}

std::string space_names(const search::SearchSpace& space) {
  std::string out;
  for (const auto& p : space.params) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

// A cell as the value of parameter `p`, or why not.
Result<search::Value> param_value(const search::ParamSpec& p, const std::string& cell,
                                  const std::string& where) {
  auto refuse = [&](const std::string& why) {
    return Error::invalid(where, fmt::format("{}; expected {}", why, search::describe(p)));
  };
  if (p.type == search::ParamType::kCategorical) {
    // Choices are matched by their text; a guarded text (') by the text it guards.
    for (const std::string& text : {cell, unguarded(cell)})
      for (const auto& c : p.choices)
        if (search::to_string(c) == text) return c;
    return refuse(fmt::format("\"{}\" is not among the choices", cell));
  }
  auto x = parse_number(cell);
  if (!x) return refuse(fmt::format("\"{}\" is not a number", cell));
  std::string why;
  auto v = search::fit_value(p, search::Value{*x}, &why);
  if (!v) return refuse(why);
  return *v;
}

// A column of the header line: what it holds.
struct Col {
  Column kind;
  std::string name;  // param or metric name
};

// The header line as read: each column, and the column of each parameter.
struct Header {
  std::vector<Col> cols;
  std::map<std::string, std::size_t> param_col;
};

// The header line: every column known and named once, every param: column a
// parameter of the spec's space, and a state column among them.
Result<Header> read_header(const Record& header, const SweepSpec& spec, const std::string& path) {
  std::vector<Col> cols;
  std::set<std::string> seen;
  std::map<std::string, std::size_t> param_col;
  bool has_state = false;
  for (std::size_t c = 0; c < header.cells.size(); ++c) {
    const std::string name = unguarded(header.cells[c]);
    const std::string where = fmt::format("line {}, column {}", header.line, c + 1);
    if (!seen.insert(name).second)
      return Error::invalid(path, fmt::format("{}: column \"{}\" appears twice", where, name));
    if (auto it = fixed_columns().find(name); it != fixed_columns().end()) {
      cols.push_back({it->second, {}});
      has_state |= it->second == Column::kState;
    } else if (name.rfind("param:", 0) == 0 && name.size() > 6) {
      const std::string p = name.substr(6);
      if (!spec.space.find(p))
        return Error::invalid(
            path, fmt::format("{}: column \"{}\": the spec's space has no parameter \"{}\" "
                              "(it has {}); add it to the spec or drop the column",
                              where, name, p, space_names(spec.space)));
      param_col[p] = c;
      cols.push_back({Column::kParam, p});
    } else if (name.rfind("metric:", 0) == 0 && name.size() > 7) {
      cols.push_back({Column::kMetric, name.substr(7)});
    } else {
      return Error::invalid(
          path, fmt::format("{}: unknown column \"{}\"; expected id, number, state, value, "
                            "attempt, worker, started_ms, finished_ms, error, param:<name> or "
                            "metric:<name>",
                            where, name));
    }
  }
  if (!has_state)
    return Error::invalid(path, fmt::format("line {}: no \"state\" column; expected the header "
                                            "`hpo trials --csv` writes",
                                            header.line));
  return Header{std::move(cols), std::move(param_col)};
}

// Where cell `c` of `rec` is, for errors: "line N, column C (its header)".
std::string cell_at(const Record& header, const Record& rec, std::size_t c) {
  return fmt::format("line {}, column {} ({})", rec.line, c + 1, unguarded(header.cells[c]));
}

// The row's cells other than its parameters into `t`; the value column into `value`.
Status read_cells(const Record& header, const std::vector<Col>& cols, const Record& rec,
                  const std::string& path, ImportedTrial& t, std::optional<double>& value) {
  for (std::size_t c = 0; c < cols.size(); ++c) {
    const std::string& cell = rec.cells[c];
    switch (cols[c].kind) {
      case Column::kState: {
        auto s = parse_trial_state(cell);
        if (!s || !is_finished(*s))
          return Error::invalid(path, fmt::format("{}: \"{}\"; expected an ended trial's state "
                                                  "(completed, failed, pruned or cancelled)",
                                                  cell_at(header, rec, c), cell));
        t.state = *s;
        break;
      }
      case Column::kValue:
      case Column::kMetric: {
        if (cell.empty() || cell == "null") break;  // absent or not finite when written
        auto v = parse_number(cell);
        if (!v || !std::isfinite(*v))
          return Error::invalid(path, fmt::format("{}: \"{}\"; expected a finite number or an "
                                                  "empty cell",
                                                  cell_at(header, rec, c), cell));
        if (cols[c].kind == Column::kValue)
          value = *v;
        else
          t.metrics[cols[c].name] = *v;
        break;
      }
      case Column::kStarted:
      case Column::kFinished: {
        auto v = cell.empty() ? std::optional<std::int64_t>(0) : parse_int(cell);
        if (!v || *v < 0)
          return Error::invalid(path, fmt::format("{}: \"{}\"; expected milliseconds since the "
                                                  "epoch (an integer >= 0)",
                                                  cell_at(header, rec, c), cell));
        (cols[c].kind == Column::kStarted ? t.started_ms : t.finished_ms) = *v;
        break;
      }
      case Column::kWorker:
        t.worker = unguarded(cell);
        break;
      case Column::kError:
        t.error = unguarded(cell);
        break;
      case Column::kId:
      case Column::kNumber:
      case Column::kAttempt:
      case Column::kParam:
        break;  // ids are new; parameters below, in the space's order
    }
  }
  return {};
}

// The space's parameters, parents first: active ones must be present and fit.
Status read_params(const Record& header, const std::map<std::string, std::size_t>& param_col,
                   const Record& rec, const SweepSpec& spec, const std::string& path,
                   ImportedTrial& t) {
  for (const auto& p : spec.space.params) {
    auto col = param_col.find(p.name);
    const std::string* cell = col == param_col.end() ? nullptr : &rec.cells[col->second];
    const bool active = search::is_active(p, t.params);
    if (!active) continue;  // a cell of an inactive parameter is ignored
    if (!cell || cell->empty()) {
      const std::string at = col == param_col.end()
                                 ? fmt::format("line {} (no column param:{})", rec.line, p.name)
                                 : cell_at(header, rec, col->second);
      return Error::invalid(path, fmt::format("{}: parameter \"{}\" is active but has no "
                                              "value; expected {}",
                                              at, p.name, search::describe(p)));
    }
    auto v = param_value(p, *cell, cell_at(header, rec, col->second));
    if (!v) {
      Error e = v.error();
      return Error::invalid(path, e.message);
    }
    t.params[p.name] = *v;
  }
  return {};
}

// One line of the file as an ended trial of a sweep with `spec`.
Result<ImportedTrial> read_row(const Record& header, const Header& head, const Record& rec,
                               const SweepSpec& spec, const std::string& path) {
  const std::vector<Col>& cols = head.cols;
  if (rec.cells.size() != cols.size())
    return Error::invalid(path, fmt::format("line {}: {} cells, expected {} as in the header",
                                            rec.line, rec.cells.size(), cols.size()));
  ImportedTrial t;
  std::optional<double> value;
  if (auto st = read_cells(header, cols, rec, path, t, value); !st) return st.error();
  if (auto st = read_params(header, head.param_col, rec, spec, path, t); !st) return st.error();
  // The objective: its metric, or the value column.
  const std::string& objective = spec.objective.metric;
  if (auto m = t.metrics.find(objective); m != t.metrics.end()) value = m->second;
  if (t.state == TrialState::kCompleted && !value)
    return Error::invalid(path, fmt::format("line {}: a completed trial without the objective "
                                            "\"{}\"; expected a number in metric:{} or value",
                                            rec.line, objective, objective));
  if (value && !t.metrics.count(objective)) t.metrics[objective] = *value;
  t.value = value;
  return t;
}

}  // namespace

std::string write_trials_csv(const std::vector<const Trial*>& rows) {
  std::set<std::string> params, metrics;
  for (const Trial* t : rows) {
    for (const auto& [k, v] : t->params) params.insert(k);
    for (const auto& [k, v] : t->metrics) metrics.insert(k);
  }
  std::string out = "id,number,state,value,attempt,worker,started_ms,finished_ms,error";
  for (const auto& p : params) out += "," + csv_cell("param:" + p);
  for (const auto& m : metrics) out += "," + csv_cell("metric:" + m);
  out += "\n";
  for (const Trial* row : rows) {
    const Trial& t = *row;
    out += csv_cell(t.id) + "," + std::to_string(t.number) + "," + to_string(t.state) + "," +
           (t.value ? number_text(*t.value) : "") + "," + std::to_string(t.attempt) + "," +
           csv_cell(t.worker) + "," + std::to_string(t.started_ms) + "," +
           std::to_string(t.finished_ms) + "," + csv_cell(t.error);
    for (const auto& p : params) {
      auto it = t.params.find(p);
      out += ",";
      if (it != t.params.end()) {
        if (auto d = std::get_if<double>(&it->second))
          out += number_text(*d);
        else if (auto n = std::get_if<std::int64_t>(&it->second))
          out += std::to_string(*n);
        else
          out += csv_cell(search::to_string(it->second));
      }
    }
    for (const auto& m : metrics) {
      auto it = t.metrics.find(m);
      out += "," + (it != t.metrics.end() ? number_text(it->second) : std::string());
    }
    out += "\n";
  }
  return out;
}

Result<std::vector<ImportedTrial>> read_trials_csv(std::string_view text, const SweepSpec& spec,
                                                   const std::string& path) {
  auto records = split_records(text, path, kMaxImportedTrials + 1);
  if (!records) return records.error();
  if (records->empty())
    return Error::invalid(path,
                          "empty: expected a header line (id,number,state,value,...) and a "
                          "line per trial, as `hpo trials --csv` writes");
  const Record& header = records->front();
  auto head = read_header(header, spec, path);
  if (!head) return head.error();
  std::vector<ImportedTrial> out;
  out.reserve(records->size() - 1);
  for (std::size_t r = 1; r < records->size(); ++r) {
    auto t = read_row(header, *head, (*records)[r], spec, path);
    if (!t) return t.error();
    out.push_back(std::move(*t));
  }
  return out;
}

}  // namespace hpo::trials
