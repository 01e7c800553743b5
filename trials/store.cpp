#include "trials/store.hpp"

#include <cmath>

#include "trials/artifact_dir.hpp"
#include "trials/record_json.hpp"
#include "trials/spec.hpp"

namespace hpo::trials {

std::string import_digest(const std::vector<ImportedTrial>& trials) {
  // Each field length-prefixed, so no two row lists share a text.
  std::string text;
  auto add = [&text](std::string_view field) {
    text += std::to_string(field.size());
    text += ':';
    text += field;
  };
  for (const auto& t : trials) {
    add(params_to_json(t.params));
    add(to_string(t.state));
    add(t.value && std::isfinite(*t.value) ? record::dump(record::Json(*t.value)) : "");
    add(record::dump(record::to_json(t.metrics)));
    add(t.error);
    add(t.worker);
    add(std::to_string(t.started_ms));
    add(std::to_string(t.finished_ms));
  }
  return sha256_hex(text);
}

}  // namespace hpo::trials
