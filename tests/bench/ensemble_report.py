#!/usr/bin/python3
"""Prints the figures of an ensemble sweep: the search trials, the members and
the ensemble (validation and test), from `hpo --json trials` (search trials, then members) and the ensemble
record (GET /api/sweeps/{id}/ensemble). Used by ensemble_bench.sh."""
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def trials_of(doc):
    return doc["trials"] if isinstance(doc, dict) else doc


def fmt(v):
    return "-" if v is None else f"{v:.4f}"


def main():
    trials = trials_of(load(sys.argv[1])) + trials_of(load(sys.argv[2]))
    record = load(sys.argv[3])
    search = [t for t in trials if t["kind"] != "member"]
    members = [t for t in trials if t["kind"] == "member"]
    done = [t for t in search if t["state"] == "completed"]
    states = {}
    for t in search:
        states[t["state"]] = states.get(t["state"], 0) + 1
    print(f"search trials: {len(search)} ({', '.join(f'{n} {s}' for s, n in sorted(states.items()))})")
    if done:
        best = max(done, key=lambda t: t["metrics"].get("val_accuracy", 0))
        m = best["metrics"]
        print(f"  best search trial {best['id']}: val {fmt(m.get('val_accuracy'))} "
              f"test {fmt(m.get('test_accuracy'))} params {json.dumps(best['params'])}")
    secs = [t["metrics"].get("train_time_s", 0) for t in trials if t["state"] == "completed"]
    sps = [t["metrics"]["train_samples_per_s"] for t in trials
           if t["state"] == "completed" and "train_samples_per_s" in t["metrics"]]
    if sps:
        print(f"  training: {sum(secs):.0f} s over all completed trials and members, "
              f"{sum(sps) / len(sps):.0f} samples/s per slot on average")
    mm = [t for t in members if t["state"] == "completed"]
    print(f"members: {len(mm)} of {record.get('members_requested')} completed")
    rows = []
    for t in mm:
        m = t["metrics"]
        rows.append((m.get("val_accuracy"), m.get("test_accuracy"), t["id"]))
    for v, te, tid in sorted(rows, key=lambda r: r[2]):
        print(f"  {tid}: val {fmt(v)} test {fmt(te)}")
    if rows:
        by_val = max(rows, key=lambda r: r[0] or 0)
        best_test = max(r[1] or 0 for r in rows)
        mean_test = sum(r[1] or 0 for r in rows) / len(rows)
    ens = record.get("ensemble", {})
    ens_test = ens.get("test", {}).get("accuracy")
    ens_val = ens.get("validation", {}).get("accuracy")
    print(f"ensemble ({record.get('combine')}, {sum(1 for m in record.get('members', []) if m.get('weight', 0) > 0)} models): "
          f"val {fmt(ens_val)} test {fmt(ens_test)}")
    oob = record.get("oob")
    if oob:
        print(f"  out-of-bag accuracy {fmt(oob.get('scores', {}).get('accuracy'))} "
              f"({oob.get('rows_covered')} of {oob.get('rows_total')} training rows covered)")
    if rows and ens_test is not None:
        print(f"  vs mean member test {fmt(mean_test)}: {100 * (ens_test - mean_test):+.2f} points")
        print(f"  vs best member by validation ({by_val[2]}, test {fmt(by_val[1])}): "
              f"{100 * (ens_test - (by_val[1] or 0)):+.2f} points")
        print(f"  vs best member by test {fmt(best_test)}: {100 * (ens_test - best_test):+.2f} points")
    print(f"RESULT ensemble_test_accuracy {fmt(ens_test)}")


if __name__ == "__main__":
    main()
