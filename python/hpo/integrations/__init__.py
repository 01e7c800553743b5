"""Integrations of hpo.Trial with training frameworks. Each module imports its
framework only when it is imported itself:

  hpo.integrations.torch        a plain PyTorch loop: seeds, device, checkpoints
  hpo.integrations.xgboost      a TrainingCallback: a report per boosting round, stop on a prune
  hpo.integrations.sklearn      fit a member's bag, predict every class, write predictions
  hpo.integrations.lightning    a PyTorch Lightning Callback
  hpo.integrations.keras        a Keras Callback
  hpo.integrations.huggingface  a Hugging Face transformers TrainerCallback

Debian packages PyTorch, XGBoost and scikit-learn (their integrations are
tested against them); Lightning, Keras and transformers are not packaged, and
their callbacks are tested against stand-ins of those public callback APIs.
"""


def _base(*candidates):
    """The first importable class of `module:Class` candidates, else object
    (the callback is then still usable by a framework that only duck-types)."""
    import importlib

    for spec in candidates:
        module, _, name = spec.partition(":")
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
    return object


def scalar_metrics(metrics):
    """Numeric entries of a framework's metric dict as floats (tensors and
    numpy scalars too); anything else is left out."""
    out = {}
    for k, v in (metrics or {}).items():
        if hasattr(v, "item") and getattr(v, "ndim", 0) == 0:
            v = v.item()
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        out[str(k).replace("/", "_")] = float(v)
    return out
