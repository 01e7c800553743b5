"""XGBoost with hpo: a report per boosting round, and training stops when
the trial is pruned, cancelled or drained.

    booster = xgb.train(params, dtrain, num_boost_round=500, evals=[(dvalid, "validation")],
                        callbacks=[HpoCallback(trial)])

Each round reports every evaluation as "<data>-<metric>" (validation-logloss).
"""
import xgboost

from . import scalar_metrics


class HpoCallback(xgboost.callback.TrainingCallback):
    def __init__(self, trial):
        super().__init__()
        self.trial = trial

    def after_iteration(self, model, epoch, evals_log):
        metrics = {}
        for data, by_metric in evals_log.items():
            for metric, values in by_metric.items():
                last = values[-1]
                metrics[f"{data}-{metric}"] = last[0] if isinstance(last, tuple) else last
        self.trial.report(epoch, **scalar_metrics(metrics))
        return self.trial.should_stop()  # True ends the training
