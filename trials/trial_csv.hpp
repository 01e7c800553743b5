// The trials CSV: what `hpo trials --csv` (GET /api/sweeps/{id}/trials?format=csv)
// writes and `hpo import` (POST /api/sweeps/import) reads back.
//
// Columns: id, number, state, value, attempt, worker, started_ms, finished_ms,
// error, then `param:<name>` per parameter and `metric:<name>` per metric
// (sorted). RFC 4180 quoting; a text cell a spreadsheet would run as a formula
// (leading =, +, -, @, tab, CR) is written with a leading ' (and read without
// it); numbers are written in their shortest exact form, an absent or
// non-finite one as an empty cell.
//
// Reading is strict, against the spec the rows are imported with: every row
// must have been ended (completed, failed, pruned, cancelled), every parameter
// of the space active in the row must be present and fit it (bounds, grid,
// choices), no column may name a parameter the space lacks, and a completed row
// must have the objective (metric:<objective> or value). The first offence is
// the error, with its line, column and what was expected. id, number and
// attempt are not kept (an import numbers its trials 0..n-1 in file order).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "trials/spec/spec.hpp"
#include "trials/store.hpp"
#include "trials/trial.hpp"

namespace hpo::trials {

// The header and one line per trial, in the given order.
std::string write_trials_csv(const std::vector<const Trial*>& rows);

// At most this many rows per import.
inline constexpr std::size_t kMaxImportedTrials = 100'000;

// The rows of `text` as trials of a sweep with `spec`; errors are
// kInvalidArgument at `path` ("csv" by default), message "line N, column C: ...".
Result<std::vector<ImportedTrial>> read_trials_csv(std::string_view text, const SweepSpec& spec,
                                                   const std::string& path = "csv");

}  // namespace hpo::trials
