// A small deterministic random generator for bagging plans.
//
// Why not <random>'s distributions: std::uniform_int_distribution's output is
// implementation-defined, so a seed recorded on one host (libstdc++) could draw
// different rows on another (libc++, MSVC). A member must be retrainable
// identically anywhere from its recorded seed, so every draw here is spelled out:
// SplitMix64 (Steele, Lea, Flood 2014) as the generator and Lemire's
// multiply-shift with rejection for unbiased bounded integers.
#pragma once

#include <cstdint>

#include "search/rng.hpp"

namespace hpo::ensemble {

// A seed derived from `seed` for stream `stream` (member index, "rows", "features").
constexpr std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  return search::hash_key(seed, stream, 0x632BE59BD9B4E019ULL);
}

// SplitMix64 as a generator (search::splitmix64 is its output function), plus an unbiased
// bounded draw; search::Rng's below() goes through a double and is meant for sampling only.
class Rng {
 public:
  explicit constexpr Rng(std::uint64_t seed) : state_(seed) {}

  constexpr std::uint64_t next() {
    const std::uint64_t z = search::splitmix64(state_);
    state_ += 0x9E3779B97F4A7C15ULL;
    return z;
  }

  // Uniform in [0, bound), bound > 0, without modulo bias (Lemire 2019).
  constexpr std::uint64_t below(std::uint64_t bound) {
    std::uint64_t low = 0;
    std::uint64_t high = mul128(next(), bound, low);
    if (low < bound) {
      const std::uint64_t threshold = (0 - bound) % bound;
      while (low < threshold) high = mul128(next(), bound, low);
    }
    return high;
  }

 private:
  // Full 64x64 -> 128-bit product in portable C++: returns the high half, `low` gets the low half.
  static constexpr std::uint64_t mul128(std::uint64_t a, std::uint64_t b, std::uint64_t& low) {
    const std::uint64_t a_lo = a & 0xFFFFFFFFULL, a_hi = a >> 32;
    const std::uint64_t b_lo = b & 0xFFFFFFFFULL, b_hi = b >> 32;
    const std::uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi;
    const std::uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xFFFFFFFFULL) + lo_hi;
    low = (cross << 32) | (lo_lo & 0xFFFFFFFFULL);
    return a_hi * b_hi + (hi_lo >> 32) + (cross >> 32);
  }

  std::uint64_t state_;
};

}  // namespace hpo::ensemble
