#!/usr/bin/python3
"""The multi-fidelity table from fidelity_bench / fidelity_optuna rows (stdin).

Per method: the incumbent's full-budget value (median and quartiles over
seeds) at a quarter, half and all of the total budget; and, per seed, the
budget the method needed to reach ASHA's final value in that seed, as a
fraction of ASHA's total budget (median over seeds; "-" when it never did).
"""
import collections
import statistics
import sys


def at(traj, budget):
    v = None
    for b, value in traj:
        if b <= budget + 1e-9:
            v = value
    return v


def quartiles(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return "-"
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return "%.4f [%.4f, %.4f]" % (statistics.median(xs), q[0], q[2])


ORDER = ["random", "asha", "hyperband", "bohb", "bohb-gp", "asha-tpe", "optuna-hb"]
traj = collections.defaultdict(list)
end = {}
for line in sys.stdin:
    f = line.rstrip("\n").split("\t")
    if f[0] == "traj":
        traj[(f[1], int(f[2]))].append((float(f[3]), float(f[4])))
    elif f[0] == "end":
        end[(f[1], int(f[2]))] = (float(f[3]), int(f[4]))
methods = sorted({m for m, _ in end}, key=lambda m: ORDER.index(m)
                 if m in ORDER else 99)
seeds = sorted({s for _, s in end})
total = max(b for b, _ in end.values())
print("| method | value at 1/4 budget | at 1/2 | at the full budget (%g) | trials | "
      "budget to ASHA's final value / ASHA's budget |" % total)
print("|---|---|---|---|---|---|")
for m in methods:
    cells = []
    for frac in (0.25, 0.5, 1.0):
        cells.append(quartiles([at(traj[(m, s)], frac * total) for s in seeds if (m, s) in end]))
    trials = statistics.median(end[(m, s)][1] for s in seeds if (m, s) in end)
    ratios = []
    for s in seeds:
        if ("asha", s) not in end or (m, s) not in end:
            continue
        target = at(traj[("asha", s)], end[("asha", s)][0])
        need = next((b for b, v in traj[(m, s)] if target is not None and v <= target + 1e-12), None)
        ratios.append(need / end[("asha", s)][0] if need is not None else float("inf"))
    ratio = "-"
    if ratios:
        med = statistics.median(ratios)
        reached = sum(r != float("inf") for r in ratios)
        ratio = ("%.2f" % med if med != float("inf") else "not reached") + \
            " (%d/%d seeds reach it)" % (reached, len(ratios))
    print("| %s | %s | %s | %s | %g | %s |" % (m, cells[0], cells[1], cells[2], trials, ratio))
