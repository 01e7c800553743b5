#!/usr/bin/env python3
"""examples/python/softmax_trial.py written with the hpo Python library: the
same model (multinomial logistic regression by SGD on standardised features,
the step lr / (1 + decay * (epoch - 1)), decay from $SOFTMAX_DECAY), the same
results, and none of the protocol by hand: parameters, reports, a member's
bootstrap rows and feature subset, its out-of-bag rows, the prediction files.
  softmax_library_trial.py TRAIN.csv VALIDATION.csv TEST.csv CLASSES [EPOCHS]
"""
import json
import math
import os
import random
import sys

import hpo


def read_csv(path):
    with open(path) as f:
        f.readline()
        rows = [line.rstrip("\n").split(",") for line in f if line.strip()]
    return [[float(v) for v in r[:-1]] for r in rows], [int(float(r[-1])) for r in rows]


def predict(w, b, x):
    z = [b[c] + sum(wc * xv for wc, xv in zip(w[c], x)) for c in range(len(b))]
    m = max(z)
    e = [math.exp(v - m) for v in z]
    s = sum(e)
    return [v / s for v in e]


def main():
    train_path, val_path, test_path, classes = sys.argv[1:5]
    epochs = int(sys.argv[5]) if len(sys.argv) > 5 else 8
    classes = int(classes)
    trial = hpo.trial(defaults={"lr": 0.1, "l2": 1e-4})
    lr, l2 = trial.params.lr, trial.params.l2
    decay = float(os.environ.get("SOFTMAX_DECAY", "0.5"))
    x_train, y_train = read_csv(train_path)
    x_val, y_val = read_csv(val_path)
    x_test, y_test = read_csv(test_path)

    data = trial.data  # a member's bootstrap rows and feature subset; else every row and column
    rows = data.rows if data.rows is not None else list(range(len(x_train)))
    xs = data.view(x_train)
    n = len(xs[0])
    mean = [sum(xs[i][j] for i in rows) / len(rows) for j in range(n)]
    std = [math.sqrt(sum((xs[i][j] - mean[j]) ** 2 for i in rows) / len(rows)) or 1.0
           for j in range(n)]

    def scale(x):
        return [[(v - m) / s for v, m, s in zip(r, mean, std)] for r in data.view(x)]

    xs, xv, xt = scale(x_train), scale(x_val), scale(x_test)
    w = [[0.0] * n for _ in range(classes)]
    b = [0.0] * classes
    rng = random.Random(data.seed)
    order = list(rows)
    for epoch in range(1, epochs + 1):
        rng.shuffle(order)
        step = lr / (1 + decay * (epoch - 1))
        for i in order:
            p = predict(w, b, xs[i])
            for c in range(classes):
                g = p[c] - (1.0 if y_train[i] == c else 0.0)
                wc = w[c]
                for j, v in enumerate(xs[i]):
                    wc[j] -= step * (g * v + l2 * wc[j])
                b[c] -= step * g
        val = [predict(w, b, r) for r in xv]
        loss = -sum(math.log(max(p[y], 1e-15)) for p, y in zip(val, y_val)) / len(y_val)
        acc = sum(max(range(classes), key=p.__getitem__) == y for p, y in zip(val, y_val)) / len(y_val)
        trial.report(epoch, val_loss=loss, val_accuracy=acc)
        if trial.should_stop():
            return

    oob = data.oob_rows  # a member predicts the rows its bootstrap left out
    trial.write_predictions(validation=(val, y_val),
                            test=([predict(w, b, r) for r in xt], y_test),
                            oob=([predict(w, b, xs[i]) for i in oob], [y_train[i] for i in oob])
                            if data.is_member else None)
    with open(trial.output_dir / "model.json", "w") as f:
        json.dump({"features": data.features, "mean": mean, "std": std, "w": w, "b": b}, f)
    trial.final(val_loss=loss, val_accuracy=acc)


if __name__ == "__main__":
    main()
