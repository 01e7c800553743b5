#!/usr/bin/python3
"""Formats the rows of search_bench and search_optuna.py (stdin) as one table.

Quality: median [q25, q75] of the best value per function/budget per sampler,
then regret ratios (best - optimum) of ours over Optuna TPE (default and
multivariate; < 1: ours better).
Timing: one ask, median wall and thread-CPU ms, and the ratio to Optuna TPE.
"""
import sys

OPTIMUM = {"branin": 0.397887, "hartmann6": -3.32237, "rosenbrock": 0.0, "ackley": 0.0,
           "mixed": 0.397887}
ORDER = ["random", "sobol", "tpe", "bayesian", "optuna-random", "optuna-tpe", "optuna-mtpe"]

best, ask = {}, {}
for line in sys.stdin:
    f = line.rstrip("\n").split("\t")
    if f[0] == "best":
        best[(f[1], int(f[3]), f[2])] = tuple(float(v) for v in f[4:7])
    elif f[0] == "ask_ms":
        ask[(f[1], int(f[3]))] = (float(f[4]), float(f[5]))

samplers = [s for s in ORDER if any(k[2] == s for k in best)]
if best:
    head = ["function", "n"] + samplers + ["tpe/opt-tpe", "tpe/opt-mtpe", "bo/opt-tpe"]
    rows = []
    for fn in dict.fromkeys(k[0] for k in best):
        for n in sorted({k[1] for k in best if k[0] == fn}):
            row = [fn, str(n)]
            for s in samplers:
                v = best.get((fn, n, s))
                row.append(f"{v[0]:.4g} [{v[1]:.4g}, {v[2]:.4g}]" if v else "-")
            for s, r in (("tpe", "optuna-tpe"), ("tpe", "optuna-mtpe"), ("bayesian", "optuna-tpe")):
                v, ref = best.get((fn, n, s)), best.get((fn, n, r))
                if v and ref and fn in OPTIMUM and ref[0] - OPTIMUM[fn] > 0:
                    row.append(f"{(v[0] - OPTIMUM[fn]) / (ref[0] - OPTIMUM[fn]):.3g}")
                else:
                    row.append("-")
            rows.append(row)
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
if ask:
    print()
    print("one ask, 6-d (hartmann6 history): median ms wall / thread-CPU")
    ref = {n: v for (s, n), v in ask.items() if s == "optuna-tpe"}
    for (s, n), (w, c) in sorted(ask.items()):
        ratio = f"  (x{c / ref[n][1]:.3g} of optuna-tpe CPU)" if n in ref and s != "optuna-tpe" else ""
        print(f"  {s:<12} n={n:<5} {w:9.2f} ms wall {c:9.2f} ms CPU{ratio}")
