// FNV-1a, 64 bits: a stable hash of bytes (the same on every host and build),
// for names and seeds derived from text. Not for hash tables facing hostile
// keys, and not cryptographic.
#pragma once

#include <cstdint>
#include <string_view>

namespace hpo {

inline std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 0xcbf29ce484222325ULL) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

}  // namespace hpo
