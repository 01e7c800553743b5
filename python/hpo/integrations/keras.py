"""Keras with hpo (Keras is not packaged by Debian: this follows its public
Callback API, and is tested against a stand-in of it).

    model.fit(x, y, validation_data=..., callbacks=[HpoKerasCallback(trial)])

At each epoch's end its logs are reported; a pruned, cancelled or drained
trial sets model.stop_training.
"""
from . import _base, scalar_metrics

_Callback = _base("keras.callbacks:Callback", "tensorflow.keras.callbacks:Callback")


class HpoKerasCallback(_Callback):
    def __init__(self, trial):
        super().__init__()
        self.trial = trial

    def on_epoch_end(self, epoch, logs=None):
        self.trial.report(epoch, **scalar_metrics(logs))
        if self.trial.should_stop():
            self.model.stop_training = True
