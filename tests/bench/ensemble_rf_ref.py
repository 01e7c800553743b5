#!/usr/bin/python3
"""The reference for the ensemble target: scikit-learn's
RandomForestClassifier(n_estimators=100) on the training images the sweep's
ensemble members draw from (all 60,000 for the example: more than the members'
54,000 after the validation split) and the official test set, on every core. Debian python3-sklearn. Prints accuracy and
time."""
import gzip
import json
import os
import struct
import sys
import time

import numpy as np
from sklearn.ensemble import RandomForestClassifier


def idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    _zero, dtype, ndim = struct.unpack(">HBB", data[:4])
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    return arr.reshape(dims[0], -1) if ndim > 1 else arr


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    d = spec["trial"]["data"]
    x, y = idx(d["train_images"]), idx(d["train_labels"])
    # The rows the ensemble members draw from: ensemble.subset when the spec sets one
    # (0 = all), else the trial's subset.
    subset = spec.get("ensemble", {}).get("subset", d.get("subset", 0))
    if subset:
        x, y = x[:subset], y[:subset]
    xt, yt = idx(d["test_images"]), idx(d["test_labels"])
    jobs = os.cpu_count()
    t0 = time.time()
    rf = RandomForestClassifier(n_estimators=100, n_jobs=jobs, random_state=0)
    rf.fit(x.astype(np.float32), y)
    fit_s = time.time() - t0
    acc = float((rf.predict(xt.astype(np.float32)) == yt).mean())
    print(f"scikit-learn RandomForestClassifier(n_estimators=100), n_jobs={jobs}: "
          f"{len(y)} training images, test accuracy {acc:.4f}, fit {fit_s:.0f} s")
    print(f"RESULT rf_test_accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
