// Limits on JSON that comes from outside (request bodies, specs, metric lines).
//
// nlohmann's parser is iterative, but much of what follows a parse recurses
// on the value (error messages, copies, dumps, the spec reader): a body that
// nests a few hundred thousand arrays would exhaust the stack. So every JSON
// text from outside is first scanned for its nesting depth, in one pass with
// no recursion, and refused before it is parsed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "core/result.hpp"

namespace hpo::trials {

// Deeper than any spec needs (a spec is about 6 levels deep).
inline constexpr int kMaxJsonDepth = 64;

// kInvalidArgument at `path` naming the byte offset where `text` first nests
// objects/arrays deeper than `max_depth`; ok otherwise (also for text that is
// not JSON: the parser says why).
Status check_json_depth(std::string_view text, const std::string& path,
                        int max_depth = kMaxJsonDepth);

// The value of a JSON integer (or an integral float) when it fits in int64;
// nullopt for anything else. nlohmann keeps integers above 2^63 - 1 as
// unsigned and would wrap them into negative numbers when read as signed, and
// casting a float outside the int64 range is undefined behaviour.
std::optional<std::int64_t> json_int64(const nlohmann::json& v);
std::optional<std::int64_t> json_int64(const nlohmann::ordered_json& v);

}  // namespace hpo::trials
