"""scikit-learn with hpo: fit an ensemble member on its bag, predict every
class, write the predictions the ensemble stage reads.

    trial = hpo.trial()
    model = fit(trial, make_model(trial.params), x_train, y_train)
    write_predictions(trial, model, validation=(x_val, y_val), test=(x_test, y_test),
                      train=(x_train, y_train), classes=5)
"""
import numpy as np


def fit(trial, estimator, x, y, **fit_args):
    """Fits on the trial's rows and features (a member's bootstrap bag and
    feature subset; every row and column otherwise)."""
    xb, yb = trial.data.bag(np.asarray(x), np.asarray(y))
    return estimator.fit(xb, yb, **fit_args)


def predict(trial, estimator, x, classes=None):
    """Predictions on `x` (the member's columns taken here): class
    probabilities for all `classes` (those a bootstrap missed get 0), or
    values for a regressor (classes None)."""
    xv = trial.data.view(np.asarray(x))
    if classes is None:
        return np.asarray(estimator.predict(xv), dtype=float)
    p = estimator.predict_proba(xv)
    out = np.zeros((len(xv), classes))
    out[:, np.asarray(estimator.classes_).astype(int)] = p
    return out


def write_predictions(trial, estimator, validation, test=None, train=None, classes=None):
    """Writes validation (and test) predictions, and a member's out-of-bag
    predictions from `train` (x, y); returns the validation predictions."""
    xv, yv = validation
    pv = predict(trial, estimator, xv, classes)
    parts = {"validation": (pv, np.asarray(yv))}
    if test is not None:
        parts["test"] = (predict(trial, estimator, test[0], classes), np.asarray(test[1]))
    if train is not None and trial.data.is_member and trial.data.oob_rows:
        rows = trial.data.oob_rows
        xo, yo = np.asarray(train[0])[rows], np.asarray(train[1])[rows]
        parts["oob"] = (predict(trial, estimator, xo, classes), yo)
    trial.write_predictions(**parts)
    return pv
