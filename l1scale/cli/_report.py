"""The metrics ``train --test`` and ``evaluate`` report, from a model's outputs (gathered
chunk by chunk by ``evaluate``, whole by ``train``)."""

from __future__ import annotations

import numpy as np

from ._format import label
from ._params import CLASSIFICATION_LOSSES


def is_classifier(est):
    return hasattr(est, "classes_") or getattr(est, "loss", None) in CLASSIFICATION_LOSSES


def report(est, X, y):
    """classification_report (plus log loss) for a classifier; R^2 / MSE / MAE for a regressor."""
    return report_from(est, y, *model_outputs(est, X))


def model_outputs(est, X):
    """What the metrics need of the model on X: (predictions, scores or None, probabilities or None)."""
    pred = est.predict(X)
    if not is_classifier(est):
        return pred, None, None
    scores = est.decision_function(X) if est.classes_.shape[0] == 2 else None
    proba = est.predict_proba(X) if hasattr(est, "predict_proba") else None
    return pred, scores, proba


def report_from(est, y, pred, scores, proba):
    """:func:`report` from the model's outputs on the rows of y (gathered chunk by chunk)."""
    from ..metrics import classification_report, log_loss

    if not is_classifier(est):
        resid = np.asarray(y, dtype=np.float64) - pred
        ss_tot = float(np.sum((y - np.mean(y)) ** 2))
        return {
            "n_samples": int(y.shape[0]),
            "r2": (1.0 - float(resid @ resid) / ss_tot) if ss_tot > 0 else None,
            "mse": float(np.mean(resid**2)),
            "mae": float(np.mean(np.abs(resid))),
        }
    classes = est.classes_
    labels = np.unique(np.concatenate([np.unique(y), classes]))
    pos = classes[1] if classes.shape[0] == 2 and labels.shape[0] == 2 else None
    result = classification_report(y, pred, scores, pos_label=pos)
    result["log_loss"] = None
    if proba is not None and np.isin(y, classes).all():
        result["log_loss"] = log_loss(y, proba, labels=classes)
    result["labels"] = [label(v) for v in result["labels"]]
    result["pos_label"] = label(result["pos_label"])
    return result


def unknown_labels(est, y):
    if not is_classifier(est):
        return []
    return [label(v) for v in np.setdiff1d(np.unique(y), est.classes_)]
