#!/usr/bin/env python3
"""A scikit-learn command trial for hpo: one model per trial, chosen by the
categorical parameter `model`, trained on DATA_DIR/train.csv and evaluated on
validation.csv; it writes its predictions to $HPO_OUTPUT_DIR so that the
sweep's ensemble stage can combine the trials and the bagged members.

  tabular_trial.py DATA_DIR        (train/validation/test.csv, target `y` last)

Parameters ($HPO_PARAMS): model (hgb | svm | knn | linear) and each model's own
(learning_rate, max_leaf_nodes, l2 / C, gamma / k / alpha); absent ones get
scikit-learn's defaults. Task: classification when `y` holds integers and
trial.data says so ($HPO_TASK, set in the spec's trial.env).

An ensemble member ($HPO_BAGGING_FILE) fits on exactly the rows (bootstrap, with
repeats) and the columns the scheduler drew, and predicts its out-of-bag rows.
"""
import json
import os
import sys
import warnings

import numpy as np

warnings.filterwarnings("ignore")


def load(path):
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return data[:, :-1], data[:, -1]


def make_model(params, classification, seed):
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC, SVR

    kind = params.get("model", "hgb")
    if kind == "hgb":
        kw = dict(learning_rate=float(params.get("learning_rate", 0.1)),
                  max_leaf_nodes=int(params.get("max_leaf_nodes", 31)),
                  l2_regularization=float(params.get("l2", 0.0)), random_state=seed)
        return (HistGradientBoostingClassifier if classification else HistGradientBoostingRegressor)(**kw)
    if kind == "svm":
        c, gamma = float(params.get("C", 1.0)), params.get("gamma", "scale")
        est = SVC(C=c, gamma=gamma, probability=True, random_state=seed) if classification else SVR(C=c, gamma=gamma)
        return make_pipeline(StandardScaler(), est)
    if kind == "knn":
        k = int(params.get("k", 5))
        est = (KNeighborsClassifier if classification else KNeighborsRegressor)(n_neighbors=k, weights="distance")
        return make_pipeline(StandardScaler(), est)
    if kind == "linear":
        alpha = float(params.get("alpha", 1.0))
        est = LogisticRegression(C=1.0 / alpha, max_iter=2000) if classification else Ridge(alpha=alpha)
        return make_pipeline(StandardScaler(), est)
    raise SystemExit(f"unknown model {kind!r}: expected hgb, svm, knn or linear")


def probabilities(model, x, classes):
    """Class probabilities for every class 0..classes-1, also those a bootstrap missed."""
    p = model.predict_proba(x)
    out = np.zeros((len(x), classes))
    out[:, model.classes_.astype(int)] = p
    return out


def write(path, ids, values, targets, classification):
    with open(path, "w") as f:
        cols = [f"p{c}" for c in range(values.shape[1])] if classification else ["value"]
        f.write("row_id,target," + ",".join(cols) + "\n")
        for i, v, y in zip(ids, values, targets):
            tgt = str(int(y)) if classification else f"{y:.9g}"
            f.write(f"{i},{tgt}," + ",".join(f"{x:.7g}" for x in np.atleast_1d(v)) + "\n")


def main():
    data_dir = sys.argv[1]
    params = json.loads(os.environ.get("HPO_PARAMS", "{}"))
    classification = os.environ.get("HPO_TASK", "classification") == "classification"
    x_tr, y_tr = load(os.path.join(data_dir, "train.csv"))
    x_va, y_va = load(os.path.join(data_dir, "validation.csv"))
    x_te, y_te = load(os.path.join(data_dir, "test.csv"))
    classes = int(max(y_tr.max(), y_va.max(), y_te.max())) + 1 if classification else 1

    rows, features, oob, seed = np.arange(len(y_tr)), np.arange(x_tr.shape[1]), [], 0
    plan_file = os.environ.get("HPO_BAGGING_FILE")
    if plan_file:
        with open(plan_file) as f:
            plan = json.load(f)
        rows, features = np.array(plan["rows"]), np.array(plan["features"])
        oob, seed = plan["oob_rows"], plan["train_seed"] % (2**32)

    model = make_model(params, classification, seed)
    model.fit(x_tr[rows][:, features], y_tr[rows])

    def predict(x):
        x = x[:, features]
        return probabilities(model, x, classes) if classification else model.predict(x)

    val = predict(x_va)
    if classification:
        loss = float(-np.mean(np.log(np.clip(val[np.arange(len(y_va)), y_va.astype(int)], 1e-15, 1))))
        metrics = {"val_loss": loss, "val_accuracy": float(np.mean(val.argmax(1) == y_va))}
    else:
        mse = float(np.mean((val - y_va) ** 2))
        metrics = {"val_loss": mse, "val_rmse": mse ** 0.5}
    out = os.environ.get("HPO_OUTPUT_DIR")
    if out:
        write(os.path.join(out, "validation.csv"), range(len(y_va)), val, y_va, classification)
        write(os.path.join(out, "test.csv"), range(len(y_te)), predict(x_te), y_te, classification)
        if len(oob):
            write(os.path.join(out, "oob.csv"), oob, predict(x_tr[oob]), y_tr[oob], classification)
    print("hpo-metric " + json.dumps({"final": True, **metrics}), flush=True)


if __name__ == "__main__":
    main()
