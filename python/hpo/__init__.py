"""hpo for Python: the trial side and a notebook client, standard library only.

In a trial program (the worker puts this package on every trial's PYTHONPATH)::

    import hpo

    trial = hpo.trial(defaults={"lr": 0.01, "epochs": 10})
    for epoch in range(trial.resume_step, trial.params.epochs):
        loss = train_one_epoch(trial.params.lr)
        trial.report(epoch, loss=loss)
        if trial.should_stop():          # pruned, cancelled, drained, preempted
            break
    trial.final(loss=loss)

Outside hpo the same script runs on its own: parameters come from
``--name value`` arguments or the defaults, and reports are printed.

In a notebook::

    client = hpo.Client()                # the URL and token as the CLI finds them
    sweep = client.submit("examples/command_sweep.json")
    client.wait(sweep)
    client.trials(sweep)
"""
from ._trial import Data, Params, Trial, TrialStopped, trial
from .client import Client, HpoError

__version__ = "0.1.0"
__all__ = ["Client", "Data", "HpoError", "Params", "Trial", "TrialStopped", "trial"]
