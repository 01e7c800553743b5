#include "search/sobol.hpp"

#include <algorithm>

#include "search/encoding.hpp"
#include "search/rng.hpp"

namespace hpo::search {
namespace {

constexpr int kBits = 32;

std::uint32_t reverse_bits(std::uint32_t x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
  x = ((x >> 8) & 0x00FF00FFu) | ((x & 0x00FF00FFu) << 8);
  return (x >> 16) | (x << 16);
}

// Burley 2020: each output bit depends only on the same and lower input bits.
std::uint32_t laine_karras_permutation(std::uint32_t x, std::uint32_t seed) {
  x += seed;
  x ^= x * 0x6c50b47cu;
  x ^= x * 0xb82f1e52u;
  x ^= x * 0xc7afe638u;
  x ^= x * 0x8d22f6e6u;
  return x;
}

std::uint32_t owen_scramble(std::uint32_t x, std::uint32_t seed) {
  return reverse_bits(laine_karras_permutation(reverse_bits(x), seed));
}

}  // namespace

SobolSequence::SobolSequence(int dims, std::uint64_t seed, bool scramble)
    : dims_(dims), seed_(seed), scramble_(scramble) {
  int table = std::min(dims, detail::kSobolTableDims);
  directions_.assign(static_cast<std::size_t>(table) * kBits, 0);
  for (int k = 0; k < kBits; ++k) directions_[static_cast<std::size_t>(k)] = 1u << (31 - k);
  for (int d = 1; d < table; ++d) {
    const detail::SobolDirection& dir = detail::kSobolDirections[d - 1];
    std::uint32_t* v = &directions_[static_cast<std::size_t>(d) * kBits];
    const int s = dir.degree;
    for (int k = 0; k < kBits; ++k) {
      if (k < s) {
        v[k] = dir.m[k] << (31 - k);
        continue;
      }
      v[k] = v[k - s] ^ (v[k - s] >> s);
      for (int l = 1; l < s; ++l)
        if ((dir.coefficients >> (s - 1 - l)) & 1u) v[k] ^= v[k - l];
    }
  }
  for (int d = 0; d < dims; ++d)
    scramble_seeds_.push_back(static_cast<std::uint32_t>(hash_key(seed, 0x50B0, d)));
}

std::vector<double> SobolSequence::point(std::uint64_t index) const {
  std::vector<double> out(static_cast<std::size_t>(dims_));
  const int table = std::min(dims_, detail::kSobolTableDims);
  const auto i = static_cast<std::uint32_t>(index);
  for (int d = 0; d < table; ++d) {
    const std::uint32_t* v = &directions_[static_cast<std::size_t>(d) * kBits];
    std::uint32_t x = 0;
    for (std::uint32_t bits = i, k = 0; bits != 0; bits >>= 1, ++k)
      if (bits & 1u) x ^= v[k];
    if (scramble_) x = owen_scramble(x, scramble_seeds_[static_cast<std::size_t>(d)]);
    // Centre of the 2^-32 cell, so no coordinate is exactly 0 or 1.
    out[static_cast<std::size_t>(d)] = (static_cast<double>(x) + 0.5) * 0x1.0p-32;
  }
  if (dims_ > table) {
    Rng rng(seed_, static_cast<std::int64_t>(index), 0x50B1);
    for (int d = table; d < dims_; ++d) out[static_cast<std::size_t>(d)] = rng.uniform();
  }
  return out;
}

SobolSampler::SobolSampler(SearchSpace space, std::uint64_t seed)
    : space_(std::move(space)), sequence_(static_cast<int>(space_.params.size()), seed) {}

std::optional<Params> SobolSampler::ask(std::span<const Observation>, std::span<const Params>,
                                        std::int64_t number) {
  return params_from_unit(space_, sequence_.point(static_cast<std::uint64_t>(number)));
}

}  // namespace hpo::search
