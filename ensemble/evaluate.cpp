#include "ensemble/evaluate.hpp"

namespace hpo::ensemble {

namespace {

// Higher is better: accuracy for classification, -MSE for regression.
double rank_score(const Scores& s) {
  return s.accuracy ? *s.accuracy : -s.mse.value_or(0);
}

}  // namespace

Result<Evaluation> evaluate_ensemble(const trials::EnsembleRecipe& recipe,
                                     const EvaluationInput& input) {
  Evaluation ev;
  ev.combiner = make_combiner(recipe);
  if (auto st = ev.combiner->fit(input.validation, input.validation_targets); !st.ok())
    return st.error();
  ev.weights = ev.combiner->weights();
  const bool with_test = !input.test.empty();
  if (with_test) {
    if (input.test.size() != input.validation.size())
      return Error::invalid("test", "expected test predictions of every model");
    if (auto st = check_predictions(input.test, &input.test_targets); !st.ok()) return st.error();
  }

  ev.models.resize(input.validation.size());
  for (std::size_t m = 0; m < input.validation.size(); ++m) {
    ev.models[m].validation = score(input.validation[m], input.validation_targets);
    if (with_test) ev.models[m].test = score(input.test[m], input.test_targets);
    if (rank_score(ev.models[m].validation) > rank_score(ev.models[ev.best_model].validation))
      ev.best_model = static_cast<int>(m);
  }

  auto val = combine(*ev.combiner, input.validation);
  if (!val.ok()) return val.error();
  ev.ensemble.validation = score(*val, input.validation_targets);
  if (with_test) {
    auto test = combine(*ev.combiner, input.test);
    if (!test.ok()) return test.error();
    ev.ensemble.test = score(*test, input.test_targets);
  }

  if (!input.oob.empty()) {
    auto est = oob_estimate(*ev.combiner, input.oob, input.train_targets);
    if (!est.ok()) return est.error();
    ev.oob = OobSummary{est->rows_total, est->rows_covered, est->scores};
  }
  return ev;
}

}  // namespace hpo::ensemble
