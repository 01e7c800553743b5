#!/usr/bin/python3
"""The Optuna reference for `search_bench --pareto`: the same problems (ZDT1,
ZDT2, ZDT3 over x1..x6, DTLZ2 over x1..x7, inputs in [0, 1]), the same protocol
(trials one at a time, the hypervolume of the trials so far at each budget,
seeds 1..N), with Optuna's NSGAIISampler (its defaults: population 50), its
TPESampler, which with several objectives is MOTPE (Ozaki et al. 2020; its
defaults: 10 random startup trials), and RandomSampler. Prints the same "hv"
rows (samplers optuna-nsga2, optuna-motpe, optuna-random).

ZDT3's f2 goes below 0 (to about -0.773 on its front). The hypervolume here,
as search::hypervolume's, keeps the points strictly inside the reference and
counts each one's volume up to it with no floor at 0, so a negative f2 adds
its full height and both sides give the same figure.

Run with Debian's interpreter: /usr/bin/python3 (python3-optuna).
  search_pareto_optuna.py [--seeds 10] [--budgets 100,300] [--functions zdt1,zdt2,zdt3,dtlz2]
                          [--samplers nsga2,motpe,random]
"""
import argparse
import math
import os
import sys
import warnings

import numpy as np
import optuna
from optuna._hypervolume import WFG

sys.path.insert(0, os.path.dirname(__file__))
from search_optuna import quantile  # noqa: E402  the same interpolation as search_bench

optuna.logging.set_verbosity(optuna.logging.WARNING)
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def zdt_g(x):
    return 1 + 9 * sum(x[1:]) / (len(x) - 1)


def zdt1(x):
    g = zdt_g(x)
    return [x[0], g * (1 - math.sqrt(x[0] / g))]


def zdt2(x):
    g = zdt_g(x)
    return [x[0], g * (1 - (x[0] / g) ** 2)]


def zdt3(x):
    g = zdt_g(x)
    r = x[0] / g
    return [x[0], g * (1 - math.sqrt(r) - r * math.sin(10 * math.pi * x[0]))]


def dtlz2(x):
    g = sum((v - 0.5) ** 2 for v in x[2:])
    a, b = x[0] * math.pi / 2, x[1] * math.pi / 2
    return [(1 + g) * math.cos(a) * math.cos(b), (1 + g) * math.cos(a) * math.sin(b),
            (1 + g) * math.sin(a)]


PROBLEMS = {"zdt1": (zdt1, 6, [1.1, 1.1]), "zdt2": (zdt2, 6, [1.1, 1.1]),
            "zdt3": (zdt3, 6, [1.1, 1.1]), "dtlz2": (dtlz2, 7, [1.1, 1.1, 1.1])}


def hypervolume(points, ref):
    inside = [p for p in points if all(v < r for v, r in zip(p, ref))]
    if not inside:
        return 0.0
    return float(WFG().compute(np.asarray(inside, dtype=float), np.asarray(ref, dtype=float)))


SAMPLERS = {"nsga2": lambda seed: optuna.samplers.NSGAIISampler(seed=seed),
            "motpe": lambda seed: optuna.samplers.TPESampler(seed=seed),
            "random": lambda seed: optuna.samplers.RandomSampler(seed=seed)}


def run(fn, sampler_name, seeds, budgets):
    f, dims, ref = PROBLEMS[fn]
    hv = {b: [] for b in budgets}
    for seed in range(1, seeds + 1):
        sampler = SAMPLERS[sampler_name](seed)
        study = optuna.create_study(directions=["minimize"] * len(ref), sampler=sampler)
        points = []

        def objective(trial):
            x = [trial.suggest_float(f"x{i}", 0.0, 1.0) for i in range(1, dims + 1)]
            y = f(x)
            points.append(y)
            if len(points) in hv:
                hv[len(points)].append(hypervolume(points, ref))
            return y

        study.optimize(objective, n_trials=max(budgets))
    for b in budgets:
        print(f"hv\t{fn}\toptuna-{sampler_name}\t{b}\t{quantile(hv[b], 0.5):.4f}"
              f"\t{quantile(hv[b], 0.25):.4f}\t{quantile(hv[b], 0.75):.4f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--budgets", default="100,300")
    ap.add_argument("--functions", default="zdt1,zdt2,zdt3,dtlz2")
    ap.add_argument("--samplers", default="nsga2,motpe,random")
    a = ap.parse_args()
    budgets = [int(b) for b in a.budgets.split(",")]
    unknown = [fn for fn in a.functions.split(",") if fn not in PROBLEMS]
    if unknown:
        ap.error(f"unknown function(s) {','.join(unknown)}; known: {','.join(PROBLEMS)}")
    for fn in a.functions.split(","):
        for s in a.samplers.split(","):
            run(fn, s, a.seeds, budgets)


if __name__ == "__main__":
    main()
