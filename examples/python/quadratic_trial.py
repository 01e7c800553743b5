#!/usr/bin/env python3
"""A complete hpo trial with the hpo Python library (python/hpo, standard
library only; the worker puts it on the trial's PYTHONPATH). A stand-in for a
training loop whose loss falls towards (lr - 0.3)^2 + layers / 10.
It runs without hpo too:   python3 examples/python/quadratic_trial.py --lr 0.2
"""
import hpo
trial = hpo.trial(defaults={"lr": 0.01, "layers": 2, "steps": 20})
for step in range(trial.resume_step, trial.params.steps):
    loss = (trial.params.lr - 0.3) ** 2 + trial.params.layers / 10 + 2.0 ** -step
    trial.report(step, loss=loss)                      # the pruner sees it at once
    if trial.should_stop():                            # pruned, cancelled, drained, preempted
        if trial.checkpoint_on_stop:                   # a drain or preemption: resume later
            trial.save_checkpoint(step + 1)
        raise SystemExit(0)
trial.final(loss=loss)
