#!/usr/bin/python3
"""The ensemble stage's incumbent on small tabular data (issue 41), driven by
incumbent_bench.sh.

For every small data set of examples/sklearn/make_data.py (a few hundred rows:
27 to 160 validation rows) and several splits of each: one hpo sweep through the
running service (tabular_bench.py's: TPE over the scikit-learn command trial,
then 6 bagged members and the ensemble stage). Per split it compares the model
the stage chose with the sweep's best trial by its objective (the record's
best_single, the incumbent) on the test rows, in the objective's own per-row
loss (log-loss for val_loss, the error rate for val_accuracy; the record's
decision.test_advantage, positive: the chosen model is better), against the
noise the record reports (decision.noise: the bar, two or three standard
errors, times the standard error of the objective's paired difference on the
rows it decided on). Where the best trial is kept this holds by construction.

  incumbent_bench.py API TOKEN [--splits K] [--objective val_loss|val_accuracy] [DATASET ...]

Target: on every split, the chosen model's test loss is not above the
incumbent's by more than the reported noise. "best other" is, in hindsight, the
best test score among the combinations the stage did not keep.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tabular_bench import MAKE_DATA, call, spec_for, wait_ended  # noqa: E402

SMALL = ["c135-small", "c150-easy", "c250-overlap", "c400-3class", "c800-noisy", "r300-linear"]


def run(api, token, name, split, objective, work):
    data_dir = os.path.join(work, f"{name}-{split}")
    data = json.loads(subprocess.check_output(["/usr/bin/python3", MAKE_DATA, name, data_dir, str(split)]))
    spec = spec_for(name, data_dir, data)
    spec["name"] = f"incumbent {name} split {split}"
    if objective == "val_accuracy" and data["task"] == "classification":
        spec["objective"] = {"metric": "val_accuracy", "mode": "max"}
    sweep = call(api, token, "POST", "/api/sweeps", spec)["id"]
    doc = wait_ended(api, sweep)
    if doc["state"] != "finished":
        trials = call(api, None, "GET", f"/api/sweeps/{sweep}/trials?limit=3")["trials"]
        raise SystemExit(f"{name} split {split}: the sweep ended {doc['state']}: {doc.get('error')}; "
                         f"first trials' errors: {[t.get('error') for t in trials]}")
    rec = call(api, None, "GET", f"/api/sweeps/{sweep}/ensemble")
    d = rec["decision"]
    metric = "accuracy" if data["task"] == "classification" else "rmse"
    # The incumbent is the sweep's best trial, and only it.
    assert rec["best_single"]["trial_id"] == doc["best"]["trial_id"] == d["best_single"], (rec["best_single"], doc["best"])
    test = d.get("test_advantage", {"mean": 0.0, "se": 0.0})
    noise = d.get("noise", 0.0)
    # What the other candidates would have scored on the test rows (hindsight,
    # not a choice the stage could make): the best of them.
    others = [c["test"][metric] for c in rec["candidates"] if c["name"] != "best_single" and metric in c["test"]]
    best_other = (max(others) if metric == "accuracy" else min(others)) if others else float("nan")
    return {
        "name": name, "split": split, "val_rows": data["validation_rows"], "chosen": rec["chosen"],
        "decided": d["decided"], "oob_rows": d["oob_rows"], "scored_as": d["objective"]["scored_as"],
        "chosen_test": rec["ensemble"]["test"][metric], "best_test": rec["best_single"]["test"][metric],
        "best_other": best_other, "metric": metric, "test_adv": test["mean"], "test_se": test["se"], "noise": noise,
        "ok": test["mean"] >= -noise - 1e-12, "reason": d["reason"],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("api")
    ap.add_argument("token")
    ap.add_argument("--splits", type=int, default=3)
    ap.add_argument("--objective", default="val_loss", choices=["val_loss", "val_accuracy"])
    ap.add_argument("datasets", nargs="*")
    a = ap.parse_intermixed_args()
    api = a.api.rstrip("/")
    names = a.datasets or SMALL
    print(f"objective {a.objective}; {a.splits} splits per data set; test advantage: the best "
          f"trial's test loss minus the chosen model's, in the objective's per-row loss (positive: "
          f"the chosen one is better); noise: the record's")
    print(f"{'data set':<13} {'split':>5} {'val':>4} {'chosen':<12} {'decided':<7} {'oob':>5} "
          f"{'test acc/rmse':>13} {'best trial':>10} {'best other':>10} {'test adv':>9} {'± se':>7} "
          f"{'noise':>7} {'ok':<3}")
    results = []
    with tempfile.TemporaryDirectory() as work:
        os.chmod(work, 0o755)  # a worker running as root runs trials under a uid of their own
        for name in names:
            for split in range(a.splits):
                r = run(api, a.token, name, split, a.objective, work)
                results.append(r)
                print(f"{r['name']:<13} {r['split']:>5} {r['val_rows']:>4} {r['chosen']:<12} "
                      f"{'yes' if r['decided'] else 'no':<7} {r['oob_rows']:>5} {r['chosen_test']:>13.4f} "
                      f"{r['best_test']:>10.4f} {r['best_other']:>10.4f} {r['test_adv']:>9.4f} {r['test_se']:>7.4f} {r['noise']:>7.4f} "
                      f"{'yes' if r['ok'] else 'NO':<3}", flush=True)
    n = len(results)
    replaced = [r for r in results if r["chosen"] != "best_single"]
    print(f"chosen model within the reported noise of the sweep's best trial on the test rows: "
          f"{sum(r['ok'] for r in results)}/{n} splits (target: all)")
    print(f"a combination replaced the best trial on {len(replaced)}/{n} splits; of those, better on the "
          f"test rows: {sum(r['test_adv'] > 0 for r in replaced)}; undecided (could not tell): "
          f"{sum(not r['decided'] for r in results)}")
    with open(os.environ.get("INCUMBENT_JSON", os.devnull), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
