#include "web/json_codec.hpp"

#include "trials/json_limits.hpp"

namespace hpo::web {

Result<Json> parse_json(std::string_view text) {
  if (auto st = trials::check_json_depth(text, ""); !st) return st.error();
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error::invalid("", "body is not valid JSON");
  return j;
}

}  // namespace hpo::web
