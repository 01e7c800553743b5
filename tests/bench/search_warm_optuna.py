#!/usr/bin/python3
"""The Optuna reference for `search_bench --warm-start`: the same task family
(the "task" rows that search_bench prints, read from standard input), the same
protocol, with Optuna's TPE: an earlier study of 100 trials on the earlier
task; then the task at hand cold (100 trials) and warm-started the way Optuna
users do it, `study.add_trials()` of the earlier study's trials before
optimising. Prints the same "warm" rows (sampler optuna-tpe).

Run with Debian's interpreter: /usr/bin/python3 (python3-optuna).
  search_bench --warm-start ... | search_warm_optuna.py
"""
import math
import statistics
import sys
import warnings

import optuna

sys.path.insert(0, __import__("os").path.dirname(__file__))
from search_optuna import branin, hartmann6  # noqa: E402  the same formulas

optuna.logging.set_verbosity(optuna.logging.WARNING)
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)

DOMAINS = {"branin": ([-5.0, 0.0], [10.0, 15.0], 0.397887357729739),
           "hartmann6": ([0.0] * 6, [1.0] * 6, -3.32236801141551)}


def value(fn, x):
    return branin(*x) if fn == "branin" else hartmann6(x)


def objective(fn, task):
    lows, highs, _ = DOMAINS[fn]

    def f(trial):
        x = [trial.suggest_float(f"x{i + 1}", lo, hi) for i, (lo, hi) in enumerate(zip(lows, highs))]
        shifted = [min(hi, max(lo, v + s)) for v, s, lo, hi in zip(x, task["shift"], lows, highs)]
        return task["scale"] * value(fn, shifted) + task["offset"]
    return f


def study(seed, fn, task, n, prior=None):
    s = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed))
    if prior:
        s.add_trials(prior)
    best, out = math.inf, []
    f = objective(fn, task)
    for _ in range(n):
        t = s.ask()
        v = f(t)
        s.tell(t, v)
        best = min(best, v)
        out.append(best)
    return s, out


def main():
    tasks = {}
    for line in sys.stdin:
        cols = line.rstrip("\n").split("\t")
        if cols[0] != "task":
            continue
        fn, seed, which = cols[1], int(cols[2]), cols[3]
        tasks.setdefault((fn, seed), {})[which] = {
            "scale": float(cols[4]), "offset": float(cols[5]),
            "shift": [float(v) for v in cols[6].split(",")],
            "opposite": len(cols) > 7 and cols[7] == "1"}
    for fn in dict.fromkeys(k[0] for k in tasks):
        seeds = sorted(s for f, s in tasks if f == fn)
        reach, warm30, cold30 = [], [], []
        for seed in seeds:
            t = tasks[(fn, seed)]
            earlier, _ = study(2000 + seed, fn, t["earlier"], 100)
            _, cold = study(1000 + seed, fn, t["now"], 100)
            prior = [tr for tr in earlier.trials if tr.state == optuna.trial.TrialState.COMPLETE]
            if t["earlier"]["opposite"]:  # search_bench --opposite: the earlier values negated
                prior = [optuna.trial.create_trial(params=tr.params, distributions=tr.distributions,
                                                   value=-tr.value) for tr in prior]
            _, warm = study(1000 + seed, fn, t["now"], 100, prior)
            n = next((i + 1 for i, b in enumerate(warm) if b <= cold[-1]), 101)
            reach.append(n)
            floor = t["now"]["scale"] * DOMAINS[fn][2] + t["now"]["offset"]
            warm30.append((warm[29] - floor) / t["now"]["scale"])
            cold30.append((cold[29] - floor) / t["now"]["scale"])
        print(f"warm\t{fn}\toptuna-tpe\t{statistics.median(reach):.1f}\t"
              f"{sum(n <= 30 for n in reach)}\t{len(seeds)}\t{statistics.median(warm30):.4g}\t"
              f"{statistics.median(cold30):.4g}", flush=True)


if __name__ == "__main__":
    main()
