// Greedy selection keeps the running sum of the picked models' predictions, so a
// candidate's ensemble is (sum + candidate) / (k + 1), formed in one reused
// buffer and scored with the same loss() the reports use. Cost per round:
// models × rows × cols; 50 rounds over 100 models on 10k × 10 is ~5·10^8 flops.
#include "ensemble/selection.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "ensemble/combiners.hpp"

namespace hpo::ensemble {

namespace {

// Loss of (sum + add) / divisor, written into `buffer` first.
double averaged_loss(const std::vector<double>& sum, const Matrix& add, double divisor,
                     const Targets& targets, Loss kind, Matrix& buffer) {
  for (std::size_t i = 0; i < sum.size(); ++i)
    buffer.data[i] = static_cast<float>((sum[i] + add.data[i]) / divisor);
  return loss(buffer, targets, kind);
}

}  // namespace

Result<SelectionResult> ensemble_selection(const std::vector<Matrix>& validation,
                                           const Targets& targets,
                                           const SelectionOptions& options) {
  if (auto st = check_predictions(validation, &targets); !st.ok()) return st.error();
  if (options.rounds < 1) return Error::invalid("selection_rounds", "expected at least 1 round");
  Loss kind = options.loss;
  if (kind == Loss::kAuto) kind = targets.classification() ? Loss::kLogLoss : Loss::kMse;
  if ((kind == Loss::kMse || kind == Loss::kMae) == targets.classification())
    return Error::invalid("selection.loss", "the loss does not fit the targets' task");

  const std::size_t models = validation.size();
  const Matrix& shape = validation.front();
  Matrix buffer(shape.rows, shape.cols);
  std::vector<double> sum(shape.data.size(), 0.0);
  SelectionResult result;
  std::vector<int> all_picks;

  auto pick = [&](int m, double loss_after) {
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += validation[m].data[i];
    all_picks.push_back(m);
    result.loss_by_round.push_back(loss_after);
  };

  // Sorted initialisation: the `init` individually best models, once each.
  std::vector<double> alone(models);
  for (std::size_t m = 0; m < models; ++m)
    alone[m] = averaged_loss(sum, validation[m], 1.0, targets, kind, buffer);
  std::vector<int> order(models);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return alone[a] < alone[b]; });
  const int init = std::min({options.init, options.rounds, static_cast<int>(models)});
  for (int i = 0; i < init; ++i) {
    const int m = order[i];
    pick(m, averaged_loss(sum, validation[m], static_cast<double>(i + 1), targets, kind, buffer));
  }

  // Forward selection with replacement; ties go to the lowest model index.
  for (int round = init; round < options.rounds; ++round) {
    int best = 0;
    double best_loss = std::numeric_limits<double>::infinity();
    for (std::size_t m = 0; m < models; ++m) {
      double l =
          averaged_loss(sum, validation[m], static_cast<double>(round + 1), targets, kind, buffer);
      if (l < best_loss) best_loss = l, best = static_cast<int>(m);
    }
    pick(best, best_loss);
  }

  std::size_t keep = all_picks.size();
  if (options.best_prefix)
    keep = static_cast<std::size_t>(
               std::min_element(result.loss_by_round.begin(), result.loss_by_round.end()) -
               result.loss_by_round.begin()) +
           1;
  result.picks.assign(all_picks.begin(), all_picks.begin() + static_cast<std::ptrdiff_t>(keep));
  result.loss = result.loss_by_round[keep - 1];
  result.counts.assign(models, 0);
  for (int m : result.picks) ++result.counts[m];
  for (int c : result.counts)
    result.weights.push_back(static_cast<double>(c) / static_cast<double>(keep));
  return result;
}

}  // namespace hpo::ensemble
