// decide: the paired comparisons against the incumbent (see decision.hpp).
#include "ensemble/decision.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "core/text.hpp"

namespace hpo::ensemble {

namespace {

bool has(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// "0.0123 ± 0.0045" (one standard error).
std::string by(const Advantage& a) {
  return fmt::format("{:.3g} ± {:.3g}", a.mean, a.se);
}

// "the noise (2 standard errors)" or "3 standard errors".
std::string noise(double bar) {
  return bar > kNoise ? fmt::format("{:g} standard errors", bar)
                      : fmt::format("the noise ({:g} standard errors)", bar);
}

// The bar a candidate must clear.
double bar_of(const CandidateEvidence& e) {
  return e.untrusted.empty() ? e.bar : std::max(kDoubtfulNoise, e.bar);
}

// Out-of-bag rows that overrule: the candidate is no better there than the
// members trained with the incumbent's parameters.
bool overruled(const CandidateEvidence& e, bool objective_is_loss) {
  if (e.oob_loss.rows() == 0) return false;
  return e.oob_loss.advantage().mean <= 0 ||
         (!objective_is_loss && e.oob_objective.advantage().mean <= 0);
}

// Does candidate `e` beat the incumbent by enough?
bool clears(const CandidateEvidence& e, const DecisionInput& in) {
  if (!e.eligible || overruled(e, in.objective_is_loss())) return false;
  const double bar = bar_of(e);
  if (!e.untrusted.empty()) {
    // Its loss says little: the error rate (classification) or the loss
    // (a perfect regression fit) must clear the bar; the objective is one of
    // the two unless it is the absolute error, which must clear it too.
    const auto& judge = in.classification ? e.error : e.loss;
    return judge.advantage().clears(bar) &&
           (in.classification || in.objective_is_loss() || e.objective.advantage().clears(bar));
  }
  return e.loss.advantage().clears(bar) &&
         (in.objective_is_loss() || e.objective.advantage().clears(bar));
}

// The candidate (not the incumbent) with the largest loss advantage, if any is positive.
int strongest_other(const std::vector<CandidateEvidence>& cs) {
  int best = 0;
  double best_mean = 0;
  for (std::size_t c = 1; c < cs.size(); ++c) {
    const double m = cs[c].loss.advantage().mean;
    if (m > best_mean) best = static_cast<int>(c), best_mean = m;
  }
  return best;
}

// The rows the evidence came from: "300 validation rows" or "30 validation
// rows and 412 out-of-bag rows".
std::string rows_text(const DecisionInput& in, const CandidateEvidence& e) {
  std::string s = fmt::format("{} validation rows", in.validation_rows);
  if (e.oob_rows > 0) s += fmt::format(" and {} out-of-bag rows", e.oob_rows);
  return s;
}

// Why the incumbent was kept against challenger `e`; sets whether the rows could tell.
std::string kept_because(const DecisionInput& in, const CandidateEvidence& e,
                         const CandidateEvidence& incumbent, bool& decided) {
  const Advantage l = e.loss.advantage(), o = e.objective.advantage();
  const char* objective = loss_name(in.objective.loss);
  decided = false;
  if (!in.cross_validated && !e.eligible)
    return fmt::format(
        "kept the best single model: {} scored a lower loss ({:.4g} against {:.4g}) on the {} "
        "validation rows it was fitted on, which is no evidence; too few rows to cross-validate",
        e.name, e.cv_loss, incumbent.cv_loss, in.validation_rows);
  if (overruled(e, in.objective_is_loss()))
    return fmt::format(
        "kept the best single model: {} has a lower cv loss ({:.4g} against {:.4g}) on the {} "
        "validation rows, but on {} out-of-bag training rows it is no better than the members "
        "trained with the best single model's parameters (loss by {}, {} by {}); the rows "
        "could not tell",
        e.name, e.cv_loss, incumbent.cv_loss, in.validation_rows, e.oob_loss.rows(),
        by(e.oob_loss.advantage()), objective, by(e.oob_objective.advantage()));
  const double bar = bar_of(e);
  const PairedSum& judge = in.classification ? e.error : e.loss;
  if (!e.untrusted.empty() && !judge.advantage().clears(bar))
    return fmt::format(
        "kept the best single model: {} has a lower cv loss ({:.4g} against {:.4g}) but {}, so "
        "its loss is not taken at face value, and its {} is not lower by {} ({}) over the {}",
        e.name, e.cv_loss, incumbent.cv_loss, e.untrusted,
        in.classification ? "error rate" : "loss", noise(bar), by(judge.advantage()),
        rows_text(in, e));
  // Untrusted from here on only in regression with the absolute error as the
  // objective: its loss cleared the bar, the objective did not.
  if (!in.objective_is_loss() && o.mean <= 0) {
    decided = true;  // no better at what the user asked for: nothing to doubt
    return fmt::format(
        "kept the best single model: {} has a lower cv loss ({:.4g} against {:.4g}) but {} {} "
        "({}) over the {}",
        e.name, e.cv_loss, incumbent.cv_loss, o.mean < 0 ? "a worse" : "no better", objective,
        by(o), rows_text(in, e));
  }
  const std::string fitted =
      !e.untrusted.empty()
          ? fmt::format(" ({}, so its loss is not taken at face value)", e.untrusted)
      : e.bar > kNoise
          ? " (it fits weights on a small validation set, where a lucky model looks good)"
          : "";
  if (!l.clears(bar))
    return fmt::format(
        "kept the best single model: {} has a lower cv loss ({:.4g} against {:.4g}) but its "
        "advantage {} is within {} over the {}{}; a larger validation set would tell",
        e.name, e.cv_loss, incumbent.cv_loss, by(l), noise(bar), rows_text(in, e), fitted);
  return fmt::format(
      "kept the best single model: {} has a lower cv loss ({:.4g} against {:.4g}, by {}) but "
      "its {} advantage {} is within {} over the {}{}; a larger validation set would tell",
      e.name, e.cv_loss, incumbent.cv_loss, by(l), objective, by(o), noise(bar), rows_text(in, e),
      fitted);
}

}  // namespace

ObjectiveLoss objective_loss(std::string_view metric, bool classification) {
  const std::string name = ascii_lower(std::string(metric));
  if (!classification) {
    if (has(name, "mae") || has(name, "absolute")) return {Loss::kMae, false};
    const bool named = has(name, "mse") || has(name, "loss") || has(name, "err") ||
                       has(name, "l2") || has(name, "squared");
    return {Loss::kMse, !named};
  }
  if (has(name, "acc") || has(name, "err")) return {Loss::kError, false};
  if (has(name, "loss") || has(name, "nll") || has(name, "entropy")) return {Loss::kLogLoss, false};
  return {Loss::kError, true};
}

const char* loss_name(Loss loss) {
  switch (loss) {
    case Loss::kLogLoss:
      return "log_loss";
    case Loss::kError:
      return "error_rate";
    case Loss::kMse:
      return "squared_error";
    case Loss::kMae:
      return "absolute_error";
    case Loss::kAuto:
      break;
  }
  return "loss";
}

void PairedSum::add(double difference) {
  ++n_;
  sum_ += difference;
  sum_sq_ += difference * difference;
}

void PairedSum::add(const PairedSum& other) {
  n_ += other.n_;
  sum_ += other.sum_;
  sum_sq_ += other.sum_sq_;
}

Advantage PairedSum::advantage() const {
  Advantage a;
  a.rows = n_;
  if (n_ == 0) return a;
  const auto n = static_cast<double>(n_);
  a.mean = sum_ / n;
  if (n_ > 1) {
    const double var = std::max(0.0, (sum_sq_ - n * a.mean * a.mean) / (n - 1));
    a.se = std::sqrt(var / n);
  }
  return a;
}

Result<Decision> decide(const DecisionInput& in) {
  using Choose = trials::EnsembleRecipe::Choose;
  const auto& cs = in.candidates;
  if (cs.empty()) return Error::internal("decide: no candidates");
  Decision d;
  if (in.choose != Choose::kAuto) {
    const char* want = trials::to_string(in.choose);
    auto it = std::find_if(cs.begin(), cs.end(),
                           [&](const CandidateEvidence& e) { return e.name == want; });
    if (it == cs.end())
      return Error::invalid("ensemble.choose",
                            fmt::format("{} needs at least {} validation rows, got {}", want,
                                        kMinCrossValidationRows, in.validation_rows));
    d.chosen = static_cast<int>(it - cs.begin());
    d.reason = fmt::format("named by the recipe (choose: {})", want);
  } else {
    for (std::size_t c = 1; c < cs.size(); ++c)
      if (clears(cs[c], in) && (d.chosen == 0 || cs[c].cv_loss < cs[d.chosen].cv_loss))
        d.chosen = static_cast<int>(c);
  }
  d.challenger = d.chosen != 0 ? d.chosen : strongest_other(cs);
  const auto& e = cs[static_cast<std::size_t>(d.challenger)];
  d.loss = e.loss.advantage();
  d.objective = e.objective.advantage();
  d.oob_rows = std::max(e.oob_rows, e.oob_loss.rows());
  d.bar = bar_of(e);
  if (in.choose != Choose::kAuto) return d;
  if (d.chosen != 0) {
    d.reason = fmt::format(
        "{} is better than the best single model beyond {}: cv loss by {}{} over the {}", e.name,
        noise(d.bar), by(d.loss),
        in.objective_is_loss()
            ? std::string()
            : fmt::format(", {} by {}", loss_name(in.objective.loss), by(d.objective)),
        rows_text(in, e));
  } else if (d.challenger == 0) {
    d.reason = "no combination scored better than the best single model";
  } else {
    d.reason = kept_because(in, e, cs[0], d.decided);
  }
  return d;
}

}  // namespace hpo::ensemble
