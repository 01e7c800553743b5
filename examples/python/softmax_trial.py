#!/usr/bin/env python3
"""A complete hpo command trial in plain Python (standard library only).

It shows the whole protocol a user's own program follows:

  parameters   $HPO_PARAMS (JSON), e.g. {"lr": 0.1, "l2": 0.0001}
  metrics      `hpo-metric {json}` lines on stdout (one per epoch, then a final one)
  predictions  $HPO_OUTPUT_DIR/validation.csv, test.csv (and oob.csv for an
               ensemble member): `row_id,target,p0,...,p{K-1}`, one line per row
  bagging      an ensemble member reads $HPO_BAGGING_FILE: the bootstrap rows
               (repeats kept), its feature subset and its out-of-bag rows
  files        anything else written to $HPO_OUTPUT_DIR is kept (model.json here)

The model is multinomial logistic regression trained by SGD on standardised
features, the step lr / (1 + decay * (epoch - 1)) with decay from $SOFTMAX_DECAY
(0.5; 0 keeps the step constant, and the final weights noisy: a high-variance
learner, the kind bagging helps most). Usage:
  softmax_trial.py TRAIN.csv VALIDATION.csv TEST.csv CLASSES [EPOCHS]
Each CSV has a header and the target as its last column.
"""
import json
import math
import os
import random
import sys


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


def write_predictions(path, ids, probabilities, targets):
    with open(path, "w") as f:
        f.write("row_id,target," + ",".join(f"p{c}" for c in range(len(probabilities[0]))) + "\n")
        for i, p, y in zip(ids, probabilities, targets):
            f.write(f"{i},{y}," + ",".join(f"{v:.6f}" for v in p) + "\n")


def main():
    train_path, val_path, test_path, classes = sys.argv[1:5]
    epochs = int(sys.argv[5]) if len(sys.argv) > 5 else 8
    classes = int(classes)
    params = json.loads(os.environ.get("HPO_PARAMS", "{}"))
    lr, l2 = float(params.get("lr", 0.1)), float(params.get("l2", 1e-4))
    decay = float(os.environ.get("SOFTMAX_DECAY", "0.5"))
    x_train, y_train = read_csv(train_path)
    x_val, y_val = read_csv(val_path)
    x_test, y_test = read_csv(test_path)

    # A member trains on exactly the rows and columns the scheduler drew.
    rows = list(range(len(x_train)))
    features = list(range(len(x_train[0])))
    oob, seed = [], int(os.environ.get("HPO_SEED", "0"))  # the trial's own, every attempt alike
    plan_file = os.environ.get("HPO_BAGGING_FILE")
    if plan_file:
        with open(plan_file) as f:
            plan = json.load(f)
        rows, features, oob, seed = plan["rows"], plan["features"], plan["oob_rows"], plan["train_seed"]

    def view(x):
        return [[r[j] for j in features] for r in x]

    xs = view(x_train)
    mean = [sum(xs[i][j] for i in rows) / len(rows) for j in range(len(features))]
    std = [math.sqrt(sum((xs[i][j] - mean[j]) ** 2 for i in rows) / len(rows)) or 1.0
           for j in range(len(features))]

    def scale(x):
        return [[(v - m) / s for v, m, s in zip(r, mean, std)] for r in view(x)]

    xs, xv, xt = scale(x_train), scale(x_val), scale(x_test)
    w = [[0.0] * len(features) for _ in range(classes)]
    b = [0.0] * classes
    rng = random.Random(seed)
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
        print("hpo-metric " + json.dumps({"step": epoch, "val_loss": loss, "val_accuracy": acc}),
              flush=True)

    out = os.environ.get("HPO_OUTPUT_DIR")
    if out:
        write_predictions(os.path.join(out, "validation.csv"), range(len(xv)), val, y_val)
        write_predictions(os.path.join(out, "test.csv"), range(len(xt)),
                          [predict(w, b, r) for r in xt], y_test)
        if oob:
            write_predictions(os.path.join(out, "oob.csv"), oob,
                              [predict(w, b, xs[i]) for i in oob], [y_train[i] for i in oob])
        with open(os.path.join(out, "model.json"), "w") as f:
            json.dump({"features": features, "mean": mean, "std": std, "w": w, "b": b}, f)
    print("hpo-metric " + json.dumps({"final": True, "val_loss": loss, "val_accuracy": acc}))


if __name__ == "__main__":
    main()
