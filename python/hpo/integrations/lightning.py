"""PyTorch Lightning with hpo (Lightning is not packaged by Debian: this
follows its public Callback API, and is tested against a stand-in of it).

    trainer = L.Trainer(callbacks=[HpoLightningCallback(trial)], ...)

After each validation, the logged metrics (trainer.callback_metrics) are
reported at the current epoch; a pruned, cancelled or drained trial sets
trainer.should_stop.
"""
from . import _base, scalar_metrics

_Callback = _base("lightning.pytorch:Callback", "pytorch_lightning:Callback")


class HpoLightningCallback(_Callback):
    def __init__(self, trial):
        super().__init__()
        self.trial = trial

    def on_validation_end(self, trainer, pl_module):
        if getattr(trainer, "sanity_checking", False):
            return
        self.trial.report(trainer.current_epoch, **scalar_metrics(trainer.callback_metrics))
        if self.trial.should_stop():
            trainer.should_stop = True
