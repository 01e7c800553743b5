// Metrics accumulate in double over float predictions. The out-of-bag estimate
// inverts the members' OOB lists into per-row lists with one counting pass
// (no per-row allocation), then hands each row's members to the combiner, so
// the OOB prediction is made by exactly the rule the ensemble uses.
#include "ensemble/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "ensemble/combiners.hpp"

namespace hpo::ensemble {

namespace {

void require(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string("ensemble metrics: ") + what);
}

void require_labels(const Matrix& p, const std::vector<int>& labels) {
  require(static_cast<std::int64_t>(labels.size()) == p.rows, "one label per row expected");
  for (int y : labels) require(y >= 0 && y < p.cols, "label out of range");
}

}  // namespace

double accuracy(const Matrix& probabilities, const std::vector<int>& labels) {
  require_labels(probabilities, labels);
  if (probabilities.rows == 0) return 0;
  std::int64_t right = 0;
  for (std::int64_t r = 0; r < probabilities.rows; ++r)
    right += argmax(probabilities.row(r), probabilities.cols) == labels[r];
  return static_cast<double>(right) / static_cast<double>(probabilities.rows);
}

double log_loss(const Matrix& probabilities, const std::vector<int>& labels) {
  require_labels(probabilities, labels);
  if (probabilities.rows == 0) return 0;
  double sum = 0;
  for (std::int64_t r = 0; r < probabilities.rows; ++r) {
    double p = probabilities(r, labels[r]);
    sum -= std::log(std::clamp(std::isnan(p) ? 0.0 : p, kLogLossEps, 1.0));
  }
  return sum / static_cast<double>(probabilities.rows);
}

double mse(const Matrix& predictions, const Matrix& targets) {
  require(predictions.rows == targets.rows && predictions.cols == targets.cols,
          "predictions and targets differ in shape");
  if (predictions.data.empty()) return 0;
  double sum = 0;
  for (std::size_t i = 0; i < predictions.data.size(); ++i) {
    double d = static_cast<double>(predictions.data[i]) - targets.data[i];
    sum += d * d;
  }
  return sum / static_cast<double>(predictions.data.size());
}

double rmse(const Matrix& predictions, const Matrix& targets) {
  return std::sqrt(mse(predictions, targets));
}

double mae(const Matrix& predictions, const Matrix& targets) {
  require(predictions.rows == targets.rows && predictions.cols == targets.cols,
          "predictions and targets differ in shape");
  if (predictions.data.empty()) return 0;
  double sum = 0;
  for (std::size_t i = 0; i < predictions.data.size(); ++i)
    sum += std::abs(static_cast<double>(predictions.data[i]) - targets.data[i]);
  return sum / static_cast<double>(predictions.data.size());
}

double loss(const Matrix& predictions, const Targets& targets, Loss kind) {
  if (kind == Loss::kAuto) kind = targets.classification() ? Loss::kLogLoss : Loss::kMse;
  switch (kind) {
    case Loss::kLogLoss:
      require(targets.classification(), "log-loss needs class labels");
      return log_loss(predictions, targets.labels);
    case Loss::kError:
      require(targets.classification(), "error rate needs class labels");
      return 1.0 - accuracy(predictions, targets.labels);
    case Loss::kMse:
    case Loss::kAuto:
      require(!targets.classification(), "MSE needs regression targets");
      return mse(predictions, targets.values);
    case Loss::kMae:
      require(!targets.classification(), "MAE needs regression targets");
      return mae(predictions, targets.values);
  }
  return 0;
}

double row_loss(const float* row, std::int64_t cols, const Targets& targets, std::int64_t r,
                Loss kind) {
  if (kind == Loss::kAuto) kind = targets.classification() ? Loss::kLogLoss : Loss::kMse;
  if (kind == Loss::kMse || kind == Loss::kMae) {
    require(!targets.classification(), "MSE and MAE need regression targets");
    double s = 0;
    for (std::int64_t c = 0; c < cols; ++c) {
      const double d = static_cast<double>(row[c]) - targets.values(r, c);
      s += kind == Loss::kMse ? d * d : std::abs(d);
    }
    return cols > 0 ? s / static_cast<double>(cols) : 0;
  }
  require(targets.classification(), "log-loss and error rate need class labels");
  const int label = targets.labels[static_cast<std::size_t>(r)];
  if (kind == Loss::kError) return argmax(row, cols) == label ? 0.0 : 1.0;
  const double p = row[label];
  return -std::log(std::clamp(std::isnan(p) ? 0.0 : p, kLogLossEps, 1.0));
}

std::vector<double> row_losses(const Matrix& predictions, const Targets& targets, Loss kind) {
  require(predictions.rows == targets.rows(), "one target per row expected");
  std::vector<double> out(static_cast<std::size_t>(predictions.rows));
  for (std::int64_t r = 0; r < predictions.rows; ++r)
    out[static_cast<std::size_t>(r)] =
        row_loss(predictions.row(r), predictions.cols, targets, r, kind);
  return out;
}

Scores score(const Matrix& predictions, const Targets& targets) {
  Scores s;
  if (targets.classification()) {
    s.accuracy = accuracy(predictions, targets.labels);
    s.log_loss = log_loss(predictions, targets.labels);
  } else {
    s.mse = mse(predictions, targets.values);
    s.rmse = std::sqrt(*s.mse);
  }
  return s;
}

void ScoreSum::add(const Scores& block, std::int64_t rows) {
  if (rows <= 0) return;
  const auto w = static_cast<double>(rows);
  classification_ = block.accuracy.has_value();
  accuracy_ += w * block.accuracy.value_or(0);
  log_loss_ += w * block.log_loss.value_or(0);
  mse_ += w * block.mse.value_or(0);
  rows_ += rows;
}

Scores ScoreSum::mean() const {
  Scores s;
  if (rows_ == 0) return s;
  const auto n = static_cast<double>(rows_);
  if (classification_) {
    s.accuracy = accuracy_ / n;
    s.log_loss = log_loss_ / n;
  } else {
    s.mse = mse_ / n;
    s.rmse = std::sqrt(*s.mse);
  }
  return s;
}

Result<OobEstimate> oob_estimate(const Combiner& combiner, const std::vector<MemberOob>& members,
                                 const Targets& train_targets) {
  const std::int64_t n = train_targets.rows();
  std::int64_t cols = -1;
  const auto member_count = static_cast<int>(combiner.weights().size());
  std::vector<std::int64_t> start(static_cast<std::size_t>(n) + 1, 0);  // per-row list offsets
  for (std::size_t i = 0; i < members.size(); ++i) {
    const auto& m = members[i];
    const std::string where = "members[" + std::to_string(i) + "]";
    if (m.predictions.rows != static_cast<std::int64_t>(m.rows.size()))
      return Error::invalid(where, "expected one prediction row per out-of-bag row");
    if (cols >= 0 && m.predictions.cols != cols)
      return Error::invalid(where, "prediction width differs from the other members'");
    cols = m.predictions.cols;
    if (m.member < 0 || (member_count > 0 && m.member >= member_count))
      return Error::invalid(where, "member index out of the combiner's range");
    for (auto r : m.rows) {
      if (r < 0 || r >= n) return Error::invalid(where, "out-of-bag row outside the training rows");
      ++start[r + 1];
    }
  }
  for (std::int64_t r = 0; r < n; ++r) start[r + 1] += start[r];

  std::vector<const float*> row_ptr(static_cast<std::size_t>(start[n]));
  std::vector<int> row_member(row_ptr.size());
  std::vector<std::int64_t> fill(start.begin(), start.end() - 1);
  for (const auto& m : members)
    for (std::size_t i = 0; i < m.rows.size(); ++i) {
      auto slot = fill[m.rows[i]]++;
      row_ptr[slot] = m.predictions.row(static_cast<std::int64_t>(i));
      row_member[slot] = m.member;
    }

  OobEstimate est;
  est.rows_total = n;
  est.predictions = Matrix(0, std::max<std::int64_t>(cols, 0));
  std::vector<float> out(static_cast<std::size_t>(std::max<std::int64_t>(cols, 0)));
  for (std::int64_t r = 0; r < n; ++r) {
    const auto b = static_cast<std::size_t>(start[r]), e = static_cast<std::size_t>(start[r + 1]);
    if (b == e) continue;
    if (!combiner.combine_row(std::span(row_ptr).subspan(b, e - b),
                              std::span(row_member).subspan(b, e - b), cols, out.data()))
      continue;
    est.rows.push_back(r);
    est.predictions.data.insert(est.predictions.data.end(), out.begin(), out.end());
  }
  est.rows_covered = static_cast<std::int64_t>(est.rows.size());
  est.predictions.rows = est.rows_covered;
  if (est.rows_covered > 0) {
    Targets covered = train_targets.subset(est.rows);
    if (auto st = check_predictions({est.predictions}, &covered); !st.ok()) return st.error();
    est.scores = score(est.predictions, covered);
  }
  return est;
}

}  // namespace hpo::ensemble
