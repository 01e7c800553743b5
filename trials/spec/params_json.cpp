// The text form of a trial's parameters: the record codec's (trials/record_json.hpp)
// dumped compactly. Ints stay ints, floats stay floats (a float that happens
// to be integral, 1.0, is written as 1.0 so it reads back as a float), so
// `{layers}` renders "3" and `{lr}` renders "0.001"; a NaN float is null.
#include "trials/record_json.hpp"
#include "trials/spec/spec.hpp"

namespace hpo::trials {

std::string params_to_json(const search::Params& params) {
  return record::dump(record::to_json(params));
}

Result<search::Params> params_from_json(std::string_view json_text) {
  search::Params out;
  if (auto st = record::from_text(json_text, "params", out); !st) return st.error();
  return out;
}

}  // namespace hpo::trials
