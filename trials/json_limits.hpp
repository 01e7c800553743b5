// Limits on JSON that comes from outside (request bodies, specs, metric lines).
//
// nlohmann's parser is iterative, but much of what follows a parse recurses
// on the value (error messages, copies, dumps, the spec reader): a body that
// nests a few hundred thousand arrays would exhaust the stack. So every JSON
// text from outside is first scanned for its nesting depth, in one pass with
// no recursion, and refused before it is parsed.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "trials/result.hpp"

namespace hpo::trials {

// Deeper than any spec needs (a spec is about 6 levels deep).
inline constexpr int kMaxJsonDepth = 64;

// kInvalidArgument at `path` naming the byte offset where `text` first nests
// objects/arrays deeper than `max_depth`; ok otherwise (also for text that is
// not JSON: the parser says why).
Status check_json_depth(std::string_view text, const std::string& path,
                        int max_depth = kMaxJsonDepth);

}  // namespace hpo::trials
