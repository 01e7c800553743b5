// Fuzz target: the built-in trainer's IDX and CSV readers, on bytes that stand
// for a user's data file. The first byte picks the reader; for IDX the rest is
// split into an image file and a label file at a point the second byte picks.
// A table that loads must be consistent: rows × features values, one target
// per row, finite values.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "workers/torch/dataset.hpp"

namespace {
using hpo::workers::torch_trainer::Table;

void check(const Table& t) {
  if (t.rows <= 0) std::abort();
  if (t.x.size() != static_cast<std::size_t>(t.rows * t.features())) std::abort();
  if (t.y.size() != static_cast<std::size_t>(t.rows)) std::abort();
  for (float v : t.x)
    if (!std::isfinite(v)) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  namespace ds = hpo::workers::torch_trainer;
  const std::string rest(reinterpret_cast<const char*>(data) + 2, size - 2);
  switch (data[0] % 3) {
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
    default: {  // CSV, regression
      auto t = ds::parse_csv(rest, "train.csv", data[1] % 2 ? "y" : "label", false);
      if (t) check(*t);
      break;
    }
  }
  return 0;
}
