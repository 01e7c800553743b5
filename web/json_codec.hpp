// JSON of the REST API. The documents are the records' own codec
// (trials/record_json.hpp: one per record, shared with the stores and the
// `hpo` client), re-exported here so handlers write to_json(trial); what this
// header adds is the edge: parsing a request body.
//
// nlohmann::json appears here, in web/api.cpp and in the record codec only.
#pragma once

#include <string>
#include <string_view>

#include "trials/record_json.hpp"

namespace hpo::web {

using trials::record::dump;
using trials::record::from_json;
using trials::record::from_json_list;
using trials::record::Json;
using trials::record::number_or_null;
using trials::record::to_json;

// A request body: depth-checked, parsed without exceptions; a body that is not
// JSON is kInvalidArgument "body is not valid JSON".
Result<Json> parse_json(std::string_view text);

}  // namespace hpo::web
