// The RedisStore's encoding of arguments and decoding of replies, shared by its
// files (redis_store*.cpp) and internal to them: not part of the store's
// interface, so it lives in namespace `detail`.
//
// Sweeps and trials are hashes whose layout is read here (the Functions write
// them; the key schema is at the head of functions/00_schema.lua). Numbers
// whose exact value matters (objective values, metrics) are formatted here
// (shortest round-trip text) and stored as text by the Lua side, which never
// re-encodes them through cjson's doubles.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "core/result.hpp"
#include "trials/redis/redis_client.hpp"
#include "trials/trial.hpp"

namespace hpo::trials::redis::detail {

using Hash = std::map<std::string, std::string>;

inline std::int64_t to_i64(const std::string& s) {
  std::int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

inline Hash to_hash(const Reply& r) {
  Hash h;
  for (size_t i = 0; i + 1 < r.elements.size(); i += 2)
    h[r.elements[i].str] = r.elements[i + 1].str;
  return h;
}

inline std::string get(const Hash& h, const char* field) {
  auto it = h.find(field);
  return it == h.end() ? std::string() : it->second;
}

std::string format_double(double v);

std::string metrics_to_json(const Metrics& m);

Result<Trial> trial_from_hash(const Hash& h);

Result<Sweep> sweep_from_hash(const Hash& h);

// An annotation's JSON ({"tags", "note"}) and a sweep hash's tags (a JSON
// array); what does not decode reads as none.
Annotation annotation_from_json(const std::string& text);
std::vector<std::string> tags_from_json(const std::string& text);

// An error reply's text as an Error: the Functions' refusals (NOT_FOUND,
// CONFLICT, LEASE_LOST, INVALID) as their codes, a server that cannot answer
// for now as kUnavailable (the caller retries), anything else as kInternal.
Error refusal(const std::string& text);

inline Status expect_ok(const Result<Reply>& r) {
  if (!r) return r.error();
  return {};
}

}  // namespace hpo::trials::redis::detail
