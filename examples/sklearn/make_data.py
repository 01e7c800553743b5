#!/usr/bin/env python3
"""Writes one synthetic tabular data set as train/validation/test CSV files for
the scikit-learn command trial (tabular_trial.py) and prints its shape as the
spec's trial.data JSON.

  make_data.py NAME OUT_DIR [SPLIT]   NAME from the table below, or 'list'

The data sets come from scikit-learn's generators with fixed seeds (nothing here
is tuned to any model): sizes from 150 to 20,000 rows, informative, redundant and
noise features, label noise, several classes. Split: 60 % train, 20 % validation,
20 % test, stratified for classification; SPLIT (default 0) draws another split
of the same rows.
"""
import json
import os
import sys

import numpy as np
from sklearn.datasets import make_classification, make_friedman1, make_regression
from sklearn.model_selection import train_test_split

# name: (task, rows, generator kwargs)
DATASETS = {
    "c135-small": ("classification", 135, dict(n_features=8, n_informative=4, n_redundant=1, n_classes=3, class_sep=1.3, flip_y=0.03)),
    "c150-easy": ("classification", 150, dict(n_features=6, n_informative=3, n_redundant=1, n_classes=2, class_sep=1.2, flip_y=0.02)),
    "c250-overlap": ("classification", 250, dict(n_features=10, n_informative=3, n_redundant=2, n_classes=2, class_sep=0.6, flip_y=0.1)),
    "c400-3class": ("classification", 400, dict(n_features=10, n_informative=4, n_redundant=2, n_classes=3, class_sep=1.0, flip_y=0.05)),
    "c800-noisy": ("classification", 800, dict(n_features=20, n_informative=5, n_redundant=5, n_classes=2, class_sep=0.7, flip_y=0.15)),
    "c1500-5class": ("classification", 1500, dict(n_features=16, n_informative=8, n_redundant=2, n_classes=5, n_clusters_per_class=2, class_sep=1.0, flip_y=0.03)),
    "c3000-wide": ("classification", 3000, dict(n_features=60, n_informative=10, n_redundant=10, n_classes=2, class_sep=0.8, flip_y=0.05)),
    "c5000-clusters": ("classification", 5000, dict(n_features=12, n_informative=6, n_redundant=0, n_classes=3, n_clusters_per_class=4, class_sep=1.5, flip_y=0.02)),
    "c10000-hard": ("classification", 10000, dict(n_features=30, n_informative=8, n_redundant=6, n_classes=4, n_clusters_per_class=3, class_sep=0.6, flip_y=0.08)),
    "c20000-big": ("classification", 20000, dict(n_features=20, n_informative=10, n_redundant=4, n_classes=2, n_clusters_per_class=3, class_sep=0.9, flip_y=0.05)),
    "r300-linear": ("regression", 300, dict(kind="linear", n_features=8, n_informative=5, noise=10.0)),
    "r1000-friedman": ("regression", 1000, dict(kind="friedman", n_features=10, noise=1.0)),
    "r4000-noisy": ("regression", 4000, dict(kind="linear", n_features=30, n_informative=10, noise=40.0, effective_rank=8)),
    "r12000-friedman": ("regression", 12000, dict(kind="friedman", n_features=15, noise=2.0)),
}


def generate(name, split=0):
    task, rows, kw = DATASETS[name]
    seed = sum(ord(c) for c in name)
    kw = dict(kw)
    if task == "classification":
        x, y = make_classification(n_samples=rows, random_state=seed, **kw)
    elif kw.pop("kind") == "friedman":
        x, y = make_friedman1(n_samples=rows, random_state=seed, **kw)
    else:
        x, y = make_regression(n_samples=rows, random_state=seed, **kw)
    strat = y if task == "classification" else None
    at = seed + 7919 * split
    x_tr, x_rest, y_tr, y_rest = train_test_split(x, y, test_size=0.4, random_state=at, stratify=strat)
    strat = y_rest if task == "classification" else None
    x_va, x_te, y_va, y_te = train_test_split(x_rest, y_rest, test_size=0.5, random_state=at, stratify=strat)
    return task, (x_tr, y_tr), (x_va, y_va), (x_te, y_te)


def write(path, x, y, integer):
    header = ",".join(f"f{i}" for i in range(x.shape[1])) + ",y"
    fmt = ["%.6g"] * x.shape[1] + (["%d"] if integer else ["%.6g"])
    np.savetxt(path, np.column_stack([x, y]), delimiter=",", header=header, comments="", fmt=fmt)


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "list":
        print("\n".join(DATASETS))
        return
    name, out = sys.argv[1], sys.argv[2]
    split = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    task, train, val, test = generate(name, split)
    os.makedirs(out, exist_ok=True)
    for part, (x, y) in (("train", train), ("validation", val), ("test", test)):
        write(os.path.join(out, f"{part}.csv"), x, y, task == "classification")
    data = {"task": task, "train_rows": len(train[1]), "validation_rows": len(val[1]),
            "test_rows": len(test[1]), "features": train[0].shape[1]}
    if task == "classification":
        data["classes"] = int(max(train[1].max(), val[1].max(), test[1].max())) + 1
    print(json.dumps(data))


if __name__ == "__main__":
    main()
