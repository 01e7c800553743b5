// The per-trial preparation of loaded tables (subset, validation split,
// standardisation, an ensemble member's rows and features) and the data
// roots a trial's files must lie under. Every trial works on copies, so the
// cached tables stay immutable and shared between slots. The readers are in
// dataset_readers.cpp, the cache in dataset_cache.cpp.
#include "workers/torch/dataset.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "ensemble/rng.hpp"
#include "trials/data_roots.hpp"
#include "workers/torch/dataset_error.hpp"

namespace hpo::workers::torch_trainer {
namespace {

// Rows of row-major features x (f per row) and targets y; row_ids[r] names
// row r in the source file (null: r itself). Appends, so no byte is written
// twice (a zero-filled resize first would double the time for image data).
Split gather_rows(const float* x, const float* y, const std::int64_t* row_ids, std::int64_t f,
                  const std::vector<std::int64_t>& rows) {
  Split out;
  out.rows = static_cast<std::int64_t>(rows.size());
  out.x.reserve(rows.size() * static_cast<std::size_t>(f));
  out.y.reserve(rows.size());
  out.row_ids.reserve(rows.size());
  for (std::int64_t r : rows) {
    out.x.insert(out.x.end(), x + r * f, x + (r + 1) * f);
    out.y.push_back(y[r]);
    out.row_ids.push_back(row_ids ? row_ids[r] : r);
  }
  return out;
}

}  // namespace

Split gather(const Split& s, const std::vector<std::int64_t>& rows) {
  const std::int64_t f = s.rows ? static_cast<std::int64_t>(s.x.size()) / s.rows : 0;
  return gather_rows(s.x.data(), s.y.data(), s.row_ids.data(), f, rows);
}

void select_features(PreparedData& data, const std::vector<std::int64_t>& columns) {
  const std::int64_t f = data.sample_shape.empty() ? 0 : data.sample_shape[0];
  const std::int64_t k = static_cast<std::int64_t>(columns.size());
  for (Split* s : {&data.train, &data.validation, &data.test, &data.oob}) {
    std::vector<float> x(static_cast<std::size_t>(s->rows * k));
    for (std::int64_t r = 0; r < s->rows; ++r)
      for (std::int64_t c = 0; c < k; ++c) x[r * k + c] = s->x[r * f + columns[c]];
    s->x = std::move(x);
  }
  if (data.mean.size() == static_cast<std::size_t>(f)) {
    std::vector<float> mean, inv_std;
    for (auto c : columns) {
      mean.push_back(data.mean[c]);
      inv_std.push_back(data.inv_std[c]);
    }
    data.mean = std::move(mean);
    data.inv_std = std::move(inv_std);
  }
  data.sample_shape = {k};
}

namespace {

Split whole(const Table& t, std::int64_t limit) {
  Split s;
  s.rows = limit > 0 ? std::min(limit, t.rows) : t.rows;
  const std::int64_t f = t.features();
  s.x.assign(t.x.begin(), t.x.begin() + s.rows * f);
  s.y.assign(t.y.begin(), t.y.begin() + s.rows);
  s.row_ids.resize(static_cast<std::size_t>(s.rows));
  std::iota(s.row_ids.begin(), s.row_ids.end(), 0);
  return s;
}

// Per-feature (csv) or one global (idx images) mean and std of the training part,
// applied to every part.
void standardize(PreparedData& d, bool per_feature) {
  const std::int64_t f =
      static_cast<std::int64_t>(d.train.x.size()) / std::max<std::int64_t>(1, d.train.rows);
  const std::int64_t groups = per_feature ? f : 1;
  std::vector<double> sum(groups), sq(groups);
  for (std::int64_t r = 0; r < d.train.rows; ++r)
    for (std::int64_t c = 0; c < f; ++c) {
      double v = d.train.x[r * f + c];
      sum[per_feature ? c : 0] += v;
      sq[per_feature ? c : 0] += v * v;
    }
  const double n = static_cast<double>(d.train.rows) * (per_feature ? 1 : f);
  std::vector<float> mean(groups), inv_std(groups);
  for (std::int64_t g = 0; g < groups; ++g) {
    double m = sum[g] / n;
    double var = std::max(0.0, sq[g] / n - m * m);
    mean[g] = static_cast<float>(m);
    inv_std[g] = var > 1e-12 ? static_cast<float>(1.0 / std::sqrt(var)) : 1.0f;
  }
  d.mean = mean;
  d.inv_std = inv_std;
  for (Split* s : {&d.train, &d.validation, &d.test})
    for (std::size_t i = 0; i < s->x.size(); ++i) {
      std::size_t g = per_feature ? i % static_cast<std::size_t>(f) : 0;
      s->x[i] = (s->x[i] - mean[g]) * inv_std[g];
    }
}

}  // namespace

Status confine_data_paths(trials::ResolvedData& data, const std::vector<std::string>& roots) {
  if (roots.empty()) return {};
  namespace fs = std::filesystem;
  std::vector<fs::path> real_roots;
  for (const auto& r : roots) {
    std::error_code ec;
    fs::path real = fs::canonical(r, ec);
    if (!ec) real_roots.push_back(real);  // a root that does not exist holds nothing
  }
  auto inside = [&](const fs::path& real) {
    return std::any_of(real_roots.begin(), real_roots.end(), [&](const fs::path& root) {
      return trials::lexically_under(real.string(), root.string());
    });
  };
  for (auto& [where, path] : trials::data_paths(data)) {
    std::string& target = *path;
    const std::string given = target;
    const fs::path p(target);
    std::vector<fs::path> candidates;
    if (p.is_absolute()) {
      candidates.push_back(p);
    } else {
      for (const auto& r : roots) candidates.push_back(fs::path(r) / p);
    }
    bool found = false, outside = false;
    for (const auto& c : candidates) {
      // Outside lexically: refused without touching the file, so that the
      // answer says nothing about whether it exists.
      const bool lexically_inside = std::any_of(roots.begin(), roots.end(), [&](const auto& r) {
        return trials::lexically_under(c.string(), r);
      });
      if (!lexically_inside) {
        outside = true;
        continue;
      }
      std::error_code ec;
      fs::path real = fs::canonical(c, ec);
      if (ec) continue;  // not there
      if (!inside(real)) {
        outside = true;
        continue;
      }
      target = real.string();
      found = true;
      break;
    }
    if (found) continue;
    if (outside)
      return Error::invalid(where, "'" + given + "' is outside the data roots (" +
                                       trials::describe_roots(roots) +
                                       "); the worker's --data-root adds one");
    return Error::invalid(where, "data file '" + given + "' does not exist" +
                                     (p.is_absolute() ? std::string()
                                                      : " under the data roots (" +
                                                            trials::describe_roots(roots) + ")"));
  }
  return {};
}

Result<PreparedData> prepare_data(const trials::ResolvedData& data, trials::TorchTask task,
                                  DatasetCache& cache) {
  const bool classification = task == trials::TorchTask::kClassification;
  const bool idx = data.format == "idx";
  auto load_idx = [&](const std::string& images, const std::string& labels) {
    return cache.get("idx|" + images + "|" + labels, {images, labels},
                     [&] { return read_idx(images, labels); });
  };
  std::vector<std::string> no_classes;
  auto load_csv = [&](const std::string& path, const std::vector<std::string>& classes) {
    std::string key = "csv|" + path + "|" + data.target + "|" + (classification ? "c" : "r");
    for (const auto& c : classes) key += "|" + c;
    return cache.get(key, {path},
                     [&] { return read_csv(path, data.target, classification, &classes); });
  };

  auto train =
      idx ? load_idx(data.train_images, data.train_labels) : load_csv(data.train, no_classes);
  if (!train) return train.error();
  const Table& tt = **train;
  PreparedData out;
  out.sample_shape = tt.sample_shape;
  // The rows a trial may use: the first `subset` of the file, or all.
  const std::int64_t usable = data.subset > 0 ? std::min(data.subset, tt.rows) : tt.rows;

  auto check_shape = [&](const Table& t, const std::string& what) -> Status {
    if (t.sample_shape != tt.sample_shape)
      return data_error(what + " has " + std::to_string(t.features()) +
                        " features per row, the training data " + std::to_string(tt.features()));
    return {};
  };
  const bool has_validation_file = idx ? !data.validation_images.empty() : !data.validation.empty();
  if (has_validation_file) {
    auto v = idx ? load_idx(data.validation_images, data.validation_labels)
                 : load_csv(data.validation, tt.classes);
    if (!v) return v.error();
    if (auto st = check_shape(**v, "the validation file"); !st) return st.error();
    out.train = whole(tt, data.subset);
    out.validation = whole(**v, 0);
  } else {
    if (usable < 2) return data_error("the training data has fewer than 2 rows: nothing to split");
    // Seeded by data.seed only: every trial and member gets the same validation rows.
    std::vector<std::int64_t> order(static_cast<std::size_t>(usable));
    std::iota(order.begin(), order.end(), 0);
    // Fisher-Yates with ensemble::Rng's spelled-out draws (std::shuffle's output is
    // implementation-defined): every worker, whatever its standard library, picks the same
    // rows, so members trained on different hosts predict the same validation rows.
    ensemble::Rng rng(ensemble::derive_seed(static_cast<std::uint64_t>(data.seed), 0x5EED));
    for (std::size_t i = order.size() - 1; i > 0; --i)
      std::swap(order[i], order[static_cast<std::size_t>(rng.below(i + 1))]);
    auto nval = static_cast<std::int64_t>(std::llround(data.validation_fraction * usable));
    nval = std::clamp<std::int64_t>(nval, 1, usable - 1);
    std::vector<std::int64_t> val(order.begin(), order.begin() + nval);
    std::vector<std::int64_t> tr(order.begin() + nval, order.end());
    std::sort(val.begin(), val.end());
    std::sort(tr.begin(), tr.end());
    // Straight from the table (no copy of the whole file's rows first).
    out.validation = gather_rows(tt.x.data(), tt.y.data(), nullptr, tt.features(), val);
    out.train = gather_rows(tt.x.data(), tt.y.data(), nullptr, tt.features(), tr);
  }
  const bool has_test = idx ? !data.test_images.empty() : !data.test.empty();
  if (has_test) {
    auto t = idx ? load_idx(data.test_images, data.test_labels) : load_csv(data.test, tt.classes);
    if (!t) return t.error();
    if (auto st = check_shape(**t, "the test file"); !st) return st.error();
    out.test = whole(**t, data.test_subset);
    out.has_test = true;
  }
  if (classification) {
    float max_label = 0;
    for (const Split* s : {&out.train, &out.validation, &out.test})
      for (float y : s->y) max_label = std::max(max_label, y);
    out.num_classes = std::max<std::int64_t>(2, static_cast<std::int64_t>(max_label) + 1);
    if (!tt.classes.empty())
      out.num_classes =
          std::max<std::int64_t>(out.num_classes, static_cast<std::int64_t>(tt.classes.size()));
  }
  if (data.standardize) standardize(out, !idx);
  return out;
}

}  // namespace hpo::workers::torch_trainer
