// Counter-based randomness for samplers.
//
// Samplers must give trial i the same parameters whatever happened before it
// (restarts, timing, how many trials finished), so no RNG state is carried
// between asks: every ask builds a fresh generator from (seed, number, salt)
// by hashing them with splitmix64. splitmix64 passes BigCrush and is a bijection
// of its counter, so distinct (seed, number) pairs give independent streams.
#pragma once

#include <cmath>
#include <cstdint>

namespace hpo::search {

constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Hashes a list of integers into one 64-bit key (order matters).
constexpr std::uint64_t hash_key(std::uint64_t a, std::uint64_t b, std::uint64_t c = 0) {
  return splitmix64(splitmix64(splitmix64(a) ^ b) ^ c);
}

class Rng {
 public:
  explicit Rng(std::uint64_t key) : state_(key) {}
  Rng(std::uint64_t seed, std::int64_t number, std::uint64_t salt = 0)
      : state_(hash_key(seed, static_cast<std::uint64_t>(number), salt)) {}

  // The SplitMix64 generator: splitmix64() is its output function of the counter.
  std::uint64_t next_u64() {
    std::uint64_t z = splitmix64(state_);
    state_ += 0x9E3779B97F4A7C15ULL;
    return z;
  }
  // Uniform in [0, 1), 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n).
  std::uint64_t below(std::uint64_t n) {
    return static_cast<std::uint64_t>(uniform() * static_cast<double>(n)) % n;
  }
  // Standard normal (Box-Muller; one draw per call keeps streams simple).
  double normal() {
    double u1 = uniform();
    double u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  std::uint64_t state_;
};

}  // namespace hpo::search
