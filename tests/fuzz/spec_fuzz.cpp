// Fuzz target: the spec parser and encoder. Any text either parses into a spec
// or gives an error that says why, without crashing or recursing without
// bound; an accepted spec round-trips: its dump parses again, to a spec whose
// dump is the same text (spec_json.hpp).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "trials/spec/spec.hpp"
#include "trials/spec/spec_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto spec = hpo::trials::parse_spec(text);
  if (!spec) {
    if (spec.error().message.empty()) std::abort();
    return 0;
  }
  const std::string dumped = hpo::trials::dump_spec(*spec);
  auto again = hpo::trials::parse_spec(dumped);
  if (!again) {
    std::fprintf(stderr, "dump does not parse: %s\n%s\n", again.error().message.c_str(),
                 dumped.c_str());
    std::abort();
  }
  if (hpo::trials::dump_spec(*again) != dumped) {
    std::fprintf(stderr, "dump changes on a second round:\n%s\n", dumped.c_str());
    std::abort();
  }
  return 0;
}
