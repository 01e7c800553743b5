// Fuzz target: the built-in trainer's IDX and CSV readers, on bytes that stand
// for a user's data file, and the dataset cache's table files. The first byte
// picks the reader; for IDX the rest is split into an image file and a label
// file at a point the second byte picks. A table that loads must be
// consistent: rows × features values, one target per row, finite values; and
// it must come back the same through the cache's encoding. A table file that
// decodes must be consistent too and encode back to the same bytes.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "workers/torch/dataset.hpp"

namespace {
using hpo::workers::torch_trainer::Table;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

void same_shape(const Table& t) {
  if (t.x.size() != static_cast<std::size_t>(t.rows * t.features())) std::abort();
  if (t.y.size() != static_cast<std::size_t>(t.rows)) std::abort();
}

void check(const Table& t) {
  namespace ds = hpo::workers::torch_trainer;
  if (t.rows <= 0) std::abort();
  same_shape(t);
  for (float v : t.x)
    if (!std::isfinite(v)) std::abort();
  auto back = ds::decode_table(ds::encode_table(t));
  if (!back || !same_bits(back->x, t.x) || !same_bits(back->y, t.y) ||
      back->sample_shape != t.sample_shape || back->columns != t.columns ||
      back->classes != t.classes)
    std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  namespace ds = hpo::workers::torch_trainer;
  const std::string rest(reinterpret_cast<const char*>(data) + 2, size - 2);
  switch (data[0] % 4) {
    case 0: {  // IDX pair
      std::size_t cut = rest.empty() ? 0 : (data[1] * rest.size()) / 255;
      auto t = ds::parse_idx(rest.substr(0, cut), rest.substr(cut), "images", "labels");
      if (t) check(*t);
      break;
    }
    case 1: {  // CSV, classification (labels: integers or text)
      auto t = ds::parse_csv(rest, "train.csv", "label", true);
      if (t) check(*t);
      if (t && !t->classes.empty()) {  // the same file read with its own classes
        auto again = ds::parse_csv(rest, "train.csv", "label", true, &t->classes);
        if (!again || again->y != t->y) std::abort();
      }
      break;
    }
    case 3: {  // a dataset cache file
      auto t = ds::decode_table(rest);
      if (t) {
        same_shape(*t);
        // Encoded again (bytes or floats, whichever fits), it decodes bit for bit the same.
        auto again = ds::decode_table(ds::encode_table(*t));
        if (!again || !same_bits(again->x, t->x) || !same_bits(again->y, t->y) ||
            again->sample_shape != t->sample_shape || again->columns != t->columns ||
            again->classes != t->classes)
          std::abort();
      }
      break;
    }
    default: {  // CSV, regression
      auto t = ds::parse_csv(rest, "train.csv", data[1] % 2 ? "y" : "label", false);
      if (t) check(*t);
      break;
    }
  }
  return 0;
}
