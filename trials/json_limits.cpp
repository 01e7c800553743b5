#include "trials/json_limits.hpp"

#include <fmt/format.h>

namespace hpo::trials {

Status check_json_depth(std::string_view text, const std::string& path, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character cannot end the string
      else if (c == '"')
        in_string = false;
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth)
          return Error::invalid(path, fmt::format("JSON nested deeper than {} levels (at byte {})",
                                                  max_depth, i));
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return {};
}

}  // namespace hpo::trials
