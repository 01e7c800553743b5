#include "trials/store.hpp"

#include <cmath>

#include <fmt/format.h>

#include "trials/artifact_dir.hpp"
#include "trials/record_json.hpp"
#include "trials/spec/spec.hpp"

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

Result<bool> ArtifactStore::read_artifact(const std::string& trial_id, const std::string& name,
                                          ByteSink& out) {
  auto got = get_artifact(trial_id, name);
  if (!got) return got.error();
  if (!*got) return false;
  if (auto st = out.write(**got); !st) return st.error();
  return true;
}

Result<std::optional<ArtifactLocation>> ArtifactStore::locate_artifact(const std::string& trial_id,
                                                                       const std::string& name) {
  auto got = get_artifact(trial_id, name);
  if (!got) return got.error();
  if (!*got) return std::optional<ArtifactLocation>{};
  ArtifactLocation at;
  at.size = static_cast<std::int64_t>((*got)->size());
  at.bytes = std::move(**got);
  return std::optional<ArtifactLocation>{std::move(at)};
}

Result<bool> ArtifactStore::read_artifact_range(const std::string& trial_id,
                                                const std::string& name, std::int64_t offset,
                                                std::int64_t size, char* out) {
  auto at = locate_artifact(trial_id, name);
  if (!at) return at.error();
  if (!*at) return false;
  if ((*at)->is_file)
    return Error::internal("artifact " + name + " of trial " + trial_id +
                           " is a file this store cannot read a range of");
  if (auto st =
          copy_range((*at)->bytes, offset, size, "artifact " + name + " of trial " + trial_id, out);
      !st)
    return st.error();
  return true;
}

Result<std::optional<std::int64_t>> ArtifactStore::artifact_size(const std::string& trial_id,
                                                                 const std::string& name) {
  auto at = locate_artifact(trial_id, name);
  if (!at) return at.error();
  if (!*at) return std::optional<std::int64_t>{};
  return std::optional<std::int64_t>{(*at)->size};
}

Status TrialQueue::put_artifact_stream(const std::string& trial_id, int attempt,
                                       const std::string& worker, const std::string& name,
                                       const ByteProducer& produce) {
  StringSink bytes(inline_artifact_limit(), fmt::format("artifact {} of {}", name, trial_id));
  if (auto st = produce(bytes); !st) return st;
  return put_artifact(trial_id, attempt, worker, name, bytes.bytes());
}

}  // namespace hpo::trials
