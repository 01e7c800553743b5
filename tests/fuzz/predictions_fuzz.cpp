// Fuzz target: the prediction files a user's command trial writes to
// HPO_OUTPUT_DIR (CSV and .npy), read against a fixed data description. What
// is accepted must be well-formed: the expected rows, ordered ids, finite
// values, probabilities that sum to 1, and a codec round trip.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "ensemble/prediction_reader.hpp"

namespace {

void check(const hpo::ensemble::PredictionFile& f, const hpo::ensemble::PredictionShape& s) {
  const std::int64_t want =
      s.row_ids.empty() ? s.rows : static_cast<std::int64_t>(s.row_ids.size());
  if (f.values.rows != want || static_cast<std::int64_t>(f.row_ids.size()) != want) std::abort();
  for (std::int64_t r = 0; r < f.values.rows; ++r) {
    if (r > 0 && f.row_ids[r] <= f.row_ids[r - 1]) std::abort();
    double sum = 0;
    for (std::int64_t c = 0; c < f.values.cols; ++c) {
      if (!std::isfinite(f.values(r, c))) std::abort();
      sum += f.values(r, c);
    }
    if (!s.regression && std::abs(sum - 1) > 1e-4) std::abort();
  }
  auto again = hpo::ensemble::decode_prediction_file(hpo::ensemble::encode_prediction_file(f));
  if (!again || again->row_ids != f.row_ids) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  hpo::ensemble::PredictionShape cls;
  cls.classes = 3;
  cls.rows = 4;
  if (auto f = hpo::ensemble::read_prediction_csv(bytes, "validation.csv", cls)) check(*f, cls);
  hpo::ensemble::PredictionShape oob = cls;
  oob.row_ids = {1, 5, 9};
  if (auto f = hpo::ensemble::read_prediction_csv(bytes, "oob.csv", oob)) check(*f, oob);
  hpo::ensemble::PredictionShape reg;
  reg.regression = true;
  reg.rows = 3;
  if (auto f = hpo::ensemble::read_prediction_csv(bytes, "test.csv", reg)) check(*f, reg);
  // .npy: the first half as the values, the second as the targets.
  const auto half = bytes.size() / 2;
  if (auto f = hpo::ensemble::read_prediction_npy(bytes.substr(0, half), "v.npy",
                                                  bytes.substr(half), "t.npy", reg))
    check(*f, reg);
  (void)hpo::ensemble::read_npy(bytes, "x.npy");
  return 0;
}
