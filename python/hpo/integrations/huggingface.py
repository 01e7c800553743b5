"""Hugging Face transformers with hpo (transformers is not packaged by
Debian: this follows its public TrainerCallback API, and is tested against a
stand-in of it).

    trainer = Trainer(..., callbacks=[HpoTrainerCallback(trial)])

Each evaluation is reported at the global step (eval_loss, ...); a pruned,
cancelled or drained trial sets control.should_training_stop.
"""
from . import _base, scalar_metrics

_Callback = _base("transformers:TrainerCallback")


class HpoTrainerCallback(_Callback):
    def __init__(self, trial):
        super().__init__()
        self.trial = trial

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        self.trial.report(state.global_step, **scalar_metrics(metrics))
        return self._stop(control)

    def on_step_end(self, args, state, control, **kwargs):
        return self._stop(control)

    def _stop(self, control):
        if self.trial.should_stop():
            control.should_training_stop = True
        return control
