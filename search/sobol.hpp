// Scrambled Sobol sequence: low-discrepancy points in [0, 1)^d.
//
// Point i is computed directly from i (x = XOR of the direction numbers of
// i's set bits), so it is a pure function of (seed, i) like the random
// sampler and needs no state between asks. Any block of 2^m consecutive points
// starting at a multiple of 2^m is a (t, m, d)-net.
//
// Scrambling: nested uniform (Owen) scrambling per dimension, implemented with
// Burley's hash-based Laine-Karras permutation (JCGT 2020): reverse the bits,
// apply a seeded hash in which every bit depends only on the bits below it
// (i.e. above it in the original order), reverse back. That keeps the net
// property, removes the deterministic sequence's structure (point 0 is no
// longer the corner) and decorrelates sweeps with different seeds.
//
// Direction numbers (Joe & Kuo 2008) for 256 dimensions are in
// sobol_directions.cpp; further dimensions fall back to counter-based random
// coordinates (documented in README.md).
#pragma once

#include <cstdint>
#include <vector>

#include "search/sampler.hpp"

namespace hpo::search {

namespace detail {
struct SobolDirection {
  int degree;                  // s: degree of the primitive polynomial
  std::uint32_t coefficients;  // a: its inner coefficients, highest first
  std::uint32_t m[12];         // initial direction numbers m_1..m_s
};
inline constexpr int kSobolTableDims = 256;
extern const SobolDirection kSobolDirections[kSobolTableDims - 1];
}  // namespace detail

class SobolSequence {
 public:
  // scramble = false gives the plain Joe-Kuo sequence (for tests).
  SobolSequence(int dims, std::uint64_t seed, bool scramble = true);

  int dims() const { return dims_; }
  std::vector<double> point(std::uint64_t index) const;

 private:
  int dims_;
  std::uint64_t seed_;
  bool scramble_;
  std::vector<std::uint32_t> directions_;  // dims x 32, row-major
  std::vector<std::uint32_t> scramble_seeds_;
};

// Trial i gets Sobol point i (one dimension per parameter, inactive ones too).
class SobolSampler final : public Sampler {
 public:
  SobolSampler(SearchSpace space, std::uint64_t seed);

  std::optional<Params> ask(std::span<const Observation> history, std::span<const Params> pending,
                            std::int64_t number) override;

 private:
  SearchSpace space_;
  SobolSequence sequence_;
};

}  // namespace hpo::search
