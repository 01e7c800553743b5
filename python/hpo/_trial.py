"""The trial side: what a program run by hpo's worker reads and says.

Everything here speaks the command-trial protocol of the worker (README,
"Your own program"): parameters in $HPO_PARAMS, `hpo-metric {json}` lines on
stdout, the checkpoint folder $HPO_CHECKPOINT_DIR with its `hpo-checkpoint`
line, the bagging plan $HPO_BAGGING_FILE, prediction CSVs in $HPO_OUTPUT_DIR,
and the control folder $HPO_CONTROL_DIR where the worker writes why it stops
the program and when a checkpoint is stored.

Stopping. The worker stops a trial with a signal: SIGTERM for a prune, a
cancel, a timeout or a lost lease; SIGUSR1, "checkpoint, then stop", for a
drain or a preemption once the program has said it checkpoints (it has used
`checkpoint_dir`, `resume_step` or `save_checkpoint` and asked `should_stop()`). Before the signal the
worker writes the reason, which `stop_reason` returns. A program that asks
`should_stop()` decides itself when to stop, and has the worker's grace to do
it (--kill-grace-s, 5 s, after SIGTERM; --checkpoint-grace-s, 20 s, after
SIGUSR1), then SIGKILL. A program that never asks is ended at once by
`TrialStopped` raised where it runs (a SystemExit: `finally` blocks run,
`except Exception` does not catch it).
"""
import json
import math
import os
import signal
import sys
import threading
import time
from pathlib import Path

STATE_FILE = "hpo_state.json"  # what save_checkpoint() keeps beside the user's files
_REASONS = ("prune", "cancel", "timeout", "drain", "preempt", "lost_lease", "error")


class TrialStopped(SystemExit):
    """The worker stopped the trial (`reason`: prune, cancel, timeout, drain,
    preempt, lost_lease) and the program does not ask should_stop()."""

    def __init__(self, reason):
        super().__init__(0)
        self.reason = reason

    def __str__(self):
        return "trial stopped: " + str(self.reason)


class Params(dict):
    """The trial's parameters: `params.lr` or `params["lr"]`."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            known = ", ".join(sorted(self)) or "none"
            raise AttributeError(
                f"no parameter {name!r}: this trial has {known} (an inactive conditional "
                f"parameter is absent; give it a default with hpo.trial(defaults=...))") from None


def _coerce(name, value, like):
    """`value` as the type of the default `like` (None: as it is)."""
    if like is None or value is None:
        return value
    try:
        if isinstance(like, bool):
            if isinstance(value, str):
                low = value.strip().lower()
                if low in ("1", "true", "yes", "on"):
                    return True
                if low in ("0", "false", "no", "off"):
                    return False
                raise ValueError(value)
            return bool(value)
        if isinstance(like, int):
            f = float(value)
            if not f.is_integer():
                raise ValueError(value)
            return int(f)
        if isinstance(like, float):
            return float(value)
        if isinstance(like, str):
            return str(value)
    except (TypeError, ValueError):
        raise ValueError(f"parameter {name}: {value!r} is not a {type(like).__name__} "
                         f"like its default {like!r}") from None
    return value


def _from_text(text):
    """A command-line value: JSON when it parses (numbers, true/false), else text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _argv_params(argv, names):
    """`--name value` and `--name=value` (also --name-with-dashes) for known names."""
    out = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("--") and len(arg) > 2:
            key, eq, val = arg[2:].partition("=")
            key = key.replace("-", "_")
            if key in names:
                if not eq:
                    if i + 1 >= len(argv):
                        raise ValueError(f"--{arg[2:]} needs a value")
                    i += 1
                    val = argv[i]
                out[key] = _from_text(val)
        i += 1
    return out


def _as_list(x):
    """numpy arrays, tensors and sequences as plain lists."""
    if hasattr(x, "detach"):
        x = x.detach().cpu()
    if hasattr(x, "tolist"):
        return x.tolist()
    return list(x)


def _number(name, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        if hasattr(v, "item"):  # a numpy or torch scalar
            v = v.item()
        else:
            raise TypeError(f"metric {name}: {v!r} is not a number")
    return float(v)


class Data:
    """What an ensemble member trains on (from $HPO_BAGGING_FILE); for any
    other trial every row and every feature.

    rows      the bootstrap rows, repeats kept (None: every row)
    features  the member's feature subset, column indices (None: every column)
    oob_rows  the rows the bootstrap left out: the member predicts them
    seed      the member's training seed (else the trial's seed); take it
              modulo 2**32 for numpy
    """

    def __init__(self, plan, seed):
        self.is_member = plan is not None
        plan = plan or {}
        self.member_index = plan.get("member")
        self.rows = plan.get("rows")
        self.features = plan.get("features")
        self.oob_rows = plan.get("oob_rows", [])
        self.seed = plan.get("train_seed", seed)

    def view(self, x):
        """`x` with the member's feature columns only (numpy arrays or lists of rows)."""
        if self.features is None:
            return x
        if hasattr(x, "shape"):
            return x[:, self.features]
        return [[row[j] for j in self.features] for row in x]

    def bag(self, x, y=None):
        """The training rows (bootstrap, with repeats) and the member's columns:
        `x` alone, or `(x, y)` when `y` is given."""
        if self.rows is not None:
            if hasattr(x, "shape"):
                x = x[self.rows]
            else:
                x = [x[i] for i in self.rows]
            if y is not None:
                y = y[self.rows] if hasattr(y, "shape") else [y[i] for i in self.rows]
        x = self.view(x)
        return x if y is None else (x, y)

    def oob(self, x, y=None):
        """The out-of-bag rows (the member's columns), for write_predictions(oob=...)."""
        rows = self.oob_rows
        xs = x[rows] if hasattr(x, "shape") else [x[i] for i in rows]
        xs = self.view(xs)
        if y is None:
            return xs
        return xs, (y[rows] if hasattr(y, "shape") else [y[i] for i in rows])


class Trial:
    """One trial, as the running program sees it. Make it with hpo.trial()."""

    def __init__(self, defaults=None, argv=None, environ=None, install_signals=True):
        env = os.environ if environ is None else environ
        self._env = env
        self.in_hpo = "HPO_TRIAL_ID" in env
        defaults = dict(defaults or {})
        raw = {}
        if env.get("HPO_PARAMS"):
            raw = json.loads(env["HPO_PARAMS"])
            if not isinstance(raw, dict):
                raise ValueError("HPO_PARAMS: expected a JSON object")
        if not self.in_hpo:
            names = set(defaults) | set(raw)
            raw.update(_argv_params(sys.argv[1:] if argv is None else argv, names))
        params = {k: _coerce(k, v, defaults.get(k)) for k, v in raw.items()}
        for k, v in defaults.items():
            params.setdefault(k, v)
        self.params = Params(params)

        self.id = env.get("HPO_TRIAL_ID", "standalone")
        self.sweep_id = env.get("HPO_SWEEP_ID", "")
        self.number = int(env.get("HPO_TRIAL_NUMBER", "0"))
        self.attempt = int(env.get("HPO_ATTEMPT", "0"))
        self.seed = int(env.get("HPO_SEED", "0"))
        self.threads = int(env.get("HPO_THREADS", "0")) or (os.cpu_count() or 1)
        budget = env.get("HPO_BUDGET")
        self.budget = float(budget) if budget else None  # a multi-fidelity trial's rung budget
        self.budget_resource = env.get("HPO_BUDGET_RESOURCE")
        self.rung = int(env["HPO_RUNG"]) if env.get("HPO_RUNG") else None
        # Data-parallel programs (torchrun and the like): only rank 0 speaks.
        rank = env.get("RANK", env.get("LOCAL_RANK", "0"))
        self.rank = int(rank) if rank.strip().lstrip("-").isdigit() else 0
        self.is_rank0 = self.rank == 0

        self._control = env.get("HPO_CONTROL_DIR")
        self._next_step = 0
        self._stop = None  # the stop's reason once the worker asked
        self._cooperative = False  # the program asks should_stop()
        self._declared = False  # `hpo-checkpoint-on-stop` said
        self._checkpointing = False  # the program uses its checkpoint folder
        self._handlers = False  # SIGTERM and SIGUSR1 are the library's
        self._checkpoints = 0  # `hpo-checkpoint` lines said
        self._data = None
        self._lock = threading.Lock()
        if self.in_hpo and install_signals and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._on_signal)
            signal.signal(signal.SIGUSR1, self._on_signal)
            self._handlers = True

    # ---- stopping -------------------------------------------------------
    def _read_reason(self, default):
        if self._control:
            try:
                word = Path(self._control, "stop_reason").read_text().strip()
                if word in _REASONS:
                    return word
            except OSError:
                pass
        return default

    def _on_signal(self, signum, frame):
        self._stop = self._read_reason("drain" if signum == signal.SIGUSR1 else "stop")
        if not self._cooperative:
            raise TrialStopped(self._stop)

    def should_stop(self):
        """True once the worker asked the trial to stop; from the first call on
        the program stops itself (see the module's text for the grace)."""
        self._cooperative = True
        self._declare()
        return self._stop is not None

    @property
    def stop_reason(self):
        """None, or why the worker stops the trial: "prune", "cancel",
        "timeout", "drain", "preempt" or "lost_lease" ("stop" from a worker
        that does not say)."""
        self._cooperative = True
        self._declare()
        return self._stop

    @property
    def checkpoint_on_stop(self):
        """True when the stop is a drain or a preemption: the trial runs again
        elsewhere, so save a checkpoint before stopping."""
        return self._stop in ("drain", "preempt")

    # ---- reports --------------------------------------------------------
    def _say(self, line):
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def _metrics(self, metrics):
        out = {}
        for k, v in metrics.items():
            f = _number(k, v)
            if math.isfinite(f):
                out[k] = f
            else:
                print(f"[hpo] metric {k} is {f}: not reported", file=sys.stderr)
        return out

    def report(self, step=None, **metrics):
        """An intermediate report: `step` (an int; default one more than the
        last) and numeric metrics, e.g. report(epoch, val_loss=0.3). Returns
        False once the trial must stop (after a prune, a cancel or a timeout
        nothing more is reported; a drained trial's reports still count)."""
        if step is None:
            step = self._next_step
        step = int(step)
        self._next_step = step + 1
        values = self._metrics(metrics)
        # After a prune, a cancel or a timeout nothing more counts; a drained or
        # preempted trial goes on elsewhere, so what it finished is still reported.
        if not self.is_rank0 or (self._stop is not None and not self.checkpoint_on_stop):
            return self._stop is None
        if self.in_hpo:
            self._say("hpo-metric " + json.dumps({"step": step, **values}))
        else:
            shown = ", ".join(f"{k}={v:.6g}" for k, v in values.items())
            self._say(f"[hpo] step {step}: {shown}")
        return self._stop is None

    def final(self, **metrics):
        """The trial's result: the objective (and any other metric) at the end."""
        values = self._metrics(metrics)
        if not self.is_rank0:
            return
        if self.in_hpo:
            self._say("hpo-metric " + json.dumps({"final": True, **values}))
        else:
            shown = ", ".join(f"{k}={v:.6g}" for k, v in values.items())
            self._say(f"[hpo] final: {shown}")

    # ---- checkpoints ----------------------------------------------------
    def _declare(self):
        """`hpo-checkpoint-on-stop`, once the program both keeps checkpoints
        and asks should_stop() (it can save when a drain asks), and only
        where SIGUSR1 is the library's (else it would end the program)."""
        if (self.in_hpo and self.is_rank0 and not self._declared and self._handlers
                and self._cooperative and self._checkpointing):
            self._declared = True
            self._say("hpo-checkpoint-on-stop")

    @property
    def checkpoint_dir(self):
        """The folder whose files are the trial's checkpoint ($HPO_CHECKPOINT_DIR;
        ./hpo-checkpoint outside hpo). An earlier attempt's, or the rung
        below's for a promotion, is there when the program starts. Using it
        says, with should_stop(), that the program saves a checkpoint when a
        drain or preemption stops it."""
        self._checkpointing = True
        self._declare()
        path = Path(self._env.get("HPO_CHECKPOINT_DIR") or "hpo-checkpoint")
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def resume_step(self):
        """The step to go on from: what the last save_checkpoint() said (its
        `step`), 0 without a checkpoint."""
        state = self.checkpoint_state
        return int(state.get("step", 0)) if state else 0

    @property
    def checkpoint_state(self):
        """What the last save_checkpoint() kept besides the files ({} without one)."""
        try:
            return json.loads((self.checkpoint_dir / STATE_FILE).read_text())
        except (OSError, ValueError):
            return {}

    def save_checkpoint(self, step=None, **state):
        """The files in checkpoint_dir become the trial's checkpoint, stored
        whole or not at all (any size). `step`: where a resumed attempt goes
        on (default: one more than the last report); `state`: more JSON
        values, read back with checkpoint_state. Returns once the worker has
        stored it (the folder may change again then); rank 0 only."""
        folder = self.checkpoint_dir
        if not self.is_rank0:
            return
        step = self._next_step if step is None else int(step)
        tmp = folder / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps({**state, "step": step, "saved_at": time.time()}))
        os.replace(tmp, folder / STATE_FILE)
        if not self.in_hpo:
            return
        with self._lock:
            self._checkpoints += 1
            n = self._checkpoints
            self._say("hpo-checkpoint")
            self._wait_stored(n)

    def _wait_stored(self, n):
        if not self._control or not os.path.isdir(self._control):
            return  # a worker without a control folder: nothing to wait for
        path = Path(self._control, "checkpoint")
        deadline = time.monotonic() + float(self._env.get("HPO_CHECKPOINT_WAIT_S", "3600"))
        pause = 0.002
        while time.monotonic() < deadline:
            try:
                count, _, how = path.read_text().strip().partition(" ")
                if int(count) >= n:
                    if how != "stored":
                        raise RuntimeError("the worker could not store the checkpoint "
                                           "(the trial's log says why)")
                    return
            except (OSError, ValueError):
                pass
            time.sleep(pause)
            pause = min(pause * 2, 0.1)
        raise RuntimeError("the worker did not confirm the checkpoint in time")

    # ---- ensembles ------------------------------------------------------
    @property
    def data(self):
        """The rows and features this trial trains on (see Data)."""
        if self._data is None:
            plan = None
            if self._env.get("HPO_BAGGING_FILE"):
                with open(self._env["HPO_BAGGING_FILE"]) as f:
                    plan = json.load(f)
            self._data = Data(plan, self.seed)
        return self._data

    @property
    def output_dir(self):
        """Where files to keep go ($HPO_OUTPUT_DIR; ./hpo-output outside hpo)."""
        path = Path(self._env.get("HPO_OUTPUT_DIR") or "hpo-output")
        path.mkdir(parents=True, exist_ok=True)
        return path

    def write_predictions(self, validation=None, test=None, oob=None):
        """The trial's predictions for the ensemble stage, each a pair
        (predictions, targets) or a triple (predictions, targets, row_ids):
        predictions one row per example, a class-probability row for
        classification or a value for regression (numpy arrays, tensors or
        lists). Row ids default to 0, 1, ... and, for `oob`, to the member's
        out-of-bag rows."""
        if not self.is_rank0:
            return
        for name, part in (("validation", validation), ("test", test), ("oob", oob)):
            if part is None:
                continue
            if not isinstance(part, (tuple, list)) or len(part) not in (2, 3):
                raise TypeError(f"write_predictions({name}=...): expected (predictions, targets) "
                                "or (predictions, targets, row_ids)")
            preds, targets = _as_list(part[0]), _as_list(part[1])
            if len(part) == 3:
                ids = _as_list(part[2])
            elif name == "oob":
                ids = list(self.data.oob_rows)
            else:
                ids = list(range(len(preds)))
            if not (len(preds) == len(targets) == len(ids)):
                raise ValueError(f"write_predictions({name}=...): {len(preds)} predictions, "
                                 f"{len(targets)} targets and {len(ids)} row ids")
            if not preds:
                continue  # no rows (a member whose bootstrap drew every row has no oob)
            _write_csv(self.output_dir / f"{name}.csv", ids, preds, targets)


def _write_csv(path, ids, preds, targets):
    classification = bool(preds) and isinstance(preds[0], (list, tuple))
    tmp = path.with_suffix(".csv.tmp")
    with open(tmp, "w") as f:
        if classification:
            f.write("row_id,target," + ",".join(f"p{c}" for c in range(len(preds[0]))) + "\n")
            for i, p, y in zip(ids, preds, targets):
                f.write(f"{int(i)},{int(y)}," + ",".join(f"{float(v):.9g}" for v in p) + "\n")
        else:
            f.write("row_id,target,value\n")
            for i, p, y in zip(ids, preds, targets):
                f.write(f"{int(i)},{float(y):.9g},{float(p):.9g}\n")
    os.replace(tmp, path)


_current = None


def trial(defaults=None, argv=None):
    """The running trial (made once per process; later calls return it).

    defaults  values of parameters the sweep may not set (an inactive
              conditional one) and the types to read them as; outside hpo
              they are the parameters, each overridable with --name VALUE.
    """
    global _current
    if _current is None:
        _current = Trial(defaults=defaults, argv=argv)
    return _current
