#!/usr/bin/python3
"""Reference figures for tests/bench/search_bench.cpp: Optuna's TPE (default,
univariate), multivariate TPE and random samplers on the same functions, budgets and seeds, printed as the same
tab-separated rows (sampler names optuna-tpe / optuna-mtpe / optuna-random).

Run with Debian's interpreter: /usr/bin/python3 (python3-optuna).
  search_optuna.py [--seeds N] [--budgets 30,60,100] [--functions a,b]
                   [--samplers random,tpe,mtpe] [--timing-n 100,500,1000]
                   [--no-quality] [--no-timing]
"""
import argparse
import math
import statistics
import sys
import time

import warnings

import optuna

optuna.logging.set_verbosity(optuna.logging.WARNING)
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def branin(x1, x2):
    b = 5.1 / (4 * math.pi ** 2)
    c = 5 / math.pi
    t = 1 / (8 * math.pi)
    return (x2 - b * x1 ** 2 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10


A = [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14],
     [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]]
P = [[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
     [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]]
ALPHA = [1.0, 1.2, 3.0, 3.2]


def hartmann6(x):
    return -sum(ALPHA[i] * math.exp(-sum(A[i][j] * (x[j] - P[i][j] * 1e-4) ** 2 for j in range(6)))
                for i in range(4))


def rosenbrock(x):
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(len(x) - 1))


def ackley(x):
    n = len(x)
    s1 = sum(v * v for v in x) / n
    s2 = sum(math.cos(2 * math.pi * v) for v in x) / n
    return -20 * math.exp(-0.2 * math.sqrt(s1)) - math.exp(s2) + 20 + math.e


def box(trial, lows, highs):
    return [trial.suggest_float(f"x{i + 1}", lo, hi) for i, (lo, hi) in enumerate(zip(lows, highs))]


def mixed(trial):
    # Same as mixed() in search_bench.cpp; minimum 0.397887.
    x1, x2 = box(trial, [-5, 0], [10, 15])
    v = branin(x1, x2)
    kind = trial.suggest_categorical("kind", ["a", "b", "c"])
    if kind == "a":
        v += 1
    elif kind == "b":
        v += 10 * (trial.suggest_float("s", 0, 1) - 0.3) ** 2
    else:
        v += 5
    k = trial.suggest_int("k", 1, 5)
    return v + 0.1 * (k - 3) ** 2


OBJECTIVES = {
    "branin": lambda t: branin(*box(t, [-5, 0], [10, 15])),
    "hartmann6": lambda t: hartmann6(box(t, [0] * 6, [1] * 6)),
    "rosenbrock": lambda t: rosenbrock(box(t, [-5] * 4, [10] * 4)),
    "ackley": lambda t: ackley(box(t, [-32.768] * 5, [32.768] * 5)),
    "mixed": mixed,
}


def make_sampler(name, seed):
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if name == "mtpe":  # multivariate TPE, the variant search/tpe_sampler.cpp follows
        return optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True)
    return optuna.samplers.RandomSampler(seed=seed)


def quantile(v, q):
    v = sorted(v)
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (pos - lo) * (v[hi] - v[lo])


def quality(fname, sampler, seeds, budgets):
    best_at = {b: [] for b in budgets}
    t0 = time.time()
    for seed in range(seeds):
        study = optuna.create_study(sampler=make_sampler(sampler, seed))
        study.optimize(OBJECTIVES[fname], n_trials=max(budgets))
        values = [t.value for t in study.trials]
        for b in budgets:
            best_at[b].append(min(values[:b]))
    for b in budgets:
        v = best_at[b]
        print(f"best\t{fname}\toptuna-{sampler}\t{b}\t{quantile(v, .5):.6g}\t"
              f"{quantile(v, .25):.6g}\t{quantile(v, .75):.6g}", flush=True)
    print(f"# {fname} optuna-{sampler}: {time.time() - t0:.1f} s", file=sys.stderr)


def timing(sampler, sizes):
    dists = {f"x{i + 1}": optuna.distributions.FloatDistribution(0, 1) for i in range(6)}
    for n in sizes:
        # History: n quasi-random points (as the C++ side), added without sampling.
        qmc = optuna.samplers.QMCSampler(seed=11, scramble=True)
        src = optuna.create_study(sampler=qmc)
        src.optimize(lambda t: hartmann6(box(t, [0] * 6, [1] * 6)), n_trials=n)
        study = optuna.create_study(sampler=make_sampler(sampler, 5))
        study.add_trials(src.trials)
        wall, cpu = [], []
        for _ in range(3 if n >= 1000 else 5):
            w0, c0 = time.perf_counter(), time.thread_time()
            trial = study.ask(dists)
            cpu.append((time.thread_time() - c0) * 1e3)
            wall.append((time.perf_counter() - w0) * 1e3)
            study.tell(trial, state=optuna.trial.TrialState.FAIL)  # keep n observations
        print(f"ask_ms\toptuna-{sampler}\t6\t{n}\t{statistics.median(wall):.3f}\t"
              f"{statistics.median(cpu):.3f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=15)
    ap.add_argument("--budgets", default="30,60,100")
    ap.add_argument("--functions", default="branin,hartmann6,rosenbrock,ackley,mixed")
    ap.add_argument("--samplers", default="random,tpe,mtpe")
    ap.add_argument("--timing-n", default="100,500,1000")
    ap.add_argument("--no-quality", action="store_true")
    ap.add_argument("--no-timing", action="store_true")
    a = ap.parse_args()
    budgets = [int(b) for b in a.budgets.split(",")]
    samplers = a.samplers.split(",")
    if not a.no_quality:
        for f in a.functions.split(","):
            for s in samplers:
                quality(f, s, a.seeds, budgets)
    if not a.no_timing and "tpe" in samplers:
        timing("tpe", [int(n) for n in a.timing_n.split(",")])


if __name__ == "__main__":
    main()
