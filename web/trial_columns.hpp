// The trials of a page in columns (GET /api/sweeps/{id}/trials?format=columns):
// one array per field instead of one object per trial, for the dashboard's
// sweep page, which reads every trial of a sweep. States, workers and errors
// are written once each in `dictionaries` and the columns hold their index;
// a parameter or metric column holds null where a trial has none. 100,000
// trials are ~5 MB this way against ~40 MB as objects, and the browser parses
// a few million numbers instead of building a million small objects.
//
// Fields a table or chart never shows (kind, sweep_id, max_attempts, slots,
// control, released, extra) are left out: GET /api/trials/{id} has them.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "trials/record_json.hpp"
#include "trials/store.hpp"

namespace hpo::web {

// `rows` in order; `total` is how many trials matched before the page was cut;
// a `limit` of INT64_MAX (none asked) is written as null.
trials::record::Json trials_columns(const std::vector<std::shared_ptr<const trials::Trial>>& rows,
                                    std::int64_t total, std::int64_t offset, std::int64_t limit);

}  // namespace hpo::web
