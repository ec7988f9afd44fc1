"""Classification metrics, numerically the same as scikit-learn's.

Every function takes the true labels first; labels may be any two values (the
library's -1/+1, 0/1, strings).  ``pos_label=None`` means the larger of the two
labels (1 for -1/+1 and 0/1 data, also when only one of them occurs).  Ranking
metrics sort once, O(n log n), and treat tied scores as scikit-learn does.
Implemented with numpy only; ``tests/test_metrics.py`` holds them against
``sklearn.metrics`` to 1e-12.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "accuracy",
    "auprc",
    "classification_report",
    "confusion_matrix",
    "f1",
    "log_loss",
    "precision",
    "recall",
    "roc_auc",
]


def _check(y_true, other, sample_weight, other_name, score=False):
    """1-D arrays of one length; finite scores and weights."""
    y_true, other = np.asarray(y_true), np.asarray(other)
    if y_true.ndim != 1:
        raise ValueError(f"y_true must be 1-D, got shape {y_true.shape}")
    if other.shape[:1] != y_true.shape:
        raise ValueError(
            f"y_true has {y_true.shape[0]} samples but {other_name} has {other.shape[0] if other.ndim else 'a scalar'}"
        )
    if y_true.size == 0:
        raise ValueError("y_true is empty")
    for name, arr in (("y_true", y_true), (other_name, other)):
        if arr.dtype.kind == "f" and np.isnan(arr).any():
            raise ValueError(f"{name} contains NaN")
    if score:
        other = other.astype(np.float64, copy=False)
        if not np.isfinite(other).all():
            raise ValueError(f"{other_name} contains NaN or infinity")
    elif (y_true.dtype.kind in "USO") != (other.dtype.kind in "USO"):
        raise ValueError(f"y_true ({y_true.dtype}) and {other_name} ({other.dtype}) mix string and numeric labels")
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
        if sample_weight.shape != y_true.shape:
            raise ValueError(f"sample_weight has shape {sample_weight.shape}, expected {y_true.shape}")
        if not np.isfinite(sample_weight).all():
            raise ValueError("sample_weight contains NaN or infinity")
        if not sample_weight.any():
            raise ValueError("sample_weight must contain at least one non-zero number")
    return y_true, other, sample_weight


def _pos_label(labels, pos_label):
    """Resolve the positive class among at most two labels."""
    if labels.size > 2:
        raise ValueError(f"binary metric, but the labels hold {labels.size} classes: {labels.tolist()[:10]}")
    if pos_label is not None:
        if labels.size == 2 and pos_label not in labels:
            raise ValueError(f"pos_label={pos_label!r} is not one of the labels {labels.tolist()}")
        return pos_label
    if labels.size == 2 or labels.dtype.kind in "USO":
        return labels[-1]
    return labels.dtype.type(1)  # one numeric class present: 1 is the conventional positive


def accuracy(y_true, y_pred, *, sample_weight=None):
    """Fraction (weighted) of exact matches, as ``sklearn.metrics.accuracy_score``."""
    y_true, y_pred, w = _check(y_true, y_pred, sample_weight, "y_pred")
    return float(np.average(y_true == y_pred, weights=w))


def _threshold_counts(y_true, y_score, sample_weight, pos_label):
    """Weighted true / false positive counts at each distinct score, highest first.

    Mirrors scikit-learn's ``confusion_matrix_at_thresholds`` step by step
    (zero weights dropped, stable descending sort, cumulative sums) so that the
    floating-point results agree, not only the mathematics.
    """
    y_true, y_score, w = _check(y_true, y_score, sample_weight, "y_score", score=True)
    pos = _pos_label(np.unique(y_true), pos_label)
    y = (y_true == pos).astype(np.float64)
    if w is not None:
        keep = w != 0
        y, y_score, w = y[keep], y_score[keep], w[keep]
    order = np.argsort(-y_score, kind="stable")  # ties are grouped below
    y_score, y = y_score[order], y[order]
    thresholds = np.r_[np.flatnonzero(np.diff(y_score)), y.size - 1]
    if w is None:
        tps = np.cumsum(y)[thresholds]
        fps = 1 + thresholds - tps
    else:
        w = w[order]
        tps = np.cumsum(y * w)[thresholds]
        fps = np.cumsum((1 - y) * w)[thresholds]
    return tps, fps, pos


def roc_auc(y_true, y_score, *, pos_label=None, sample_weight=None):
    """Area under the ROC curve, as ``sklearn.metrics.roc_auc_score``.

    Tied scores count one half (trapezoid over the ROC points of distinct
    scores); O(n log n).

    Parameters
    ----------
    y_true : array of shape (n,), two labels
    y_score : array of shape (n,), higher means more likely ``pos_label``
    pos_label : label, default: the larger label
    sample_weight : array of shape (n,), optional

    Raises
    ------
    ValueError
        If y_true holds only one class (AUC is undefined), lengths differ, or
        y_score has NaN / inf.
    """
    tps, fps, pos = _threshold_counts(y_true, y_score, sample_weight, pos_label)
    if tps[-1] <= 0 or fps[-1] <= 0:
        raise ValueError(
            "roc_auc: y_true contains only one class "
            f"({'no' if tps[-1] <= 0 else 'only'} samples of pos_label={pos!r}); "
            "ROC AUC is undefined"
        )
    if fps.size > 2:  # drop collinear points, as roc_curve(drop_intermediate=True)
        keep = np.r_[True, np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), True]
        fps, tps = fps[keep], tps[keep]
    fpr, tpr = np.r_[0.0, fps] / fps[-1], np.r_[0.0, tps] / tps[-1]
    return float(np.trapezoid(tpr, fpr))


def auprc(y_true, y_score, *, pos_label=None, sample_weight=None):
    """Area under the precision-recall curve as average precision (step integral),
    as ``sklearn.metrics.average_precision_score``.

    Same parameters as :func:`roc_auc`.  Raises ValueError when y_true has no
    sample of ``pos_label`` (scikit-learn warns and returns 0 there).
    """
    tps, fps, pos = _threshold_counts(y_true, y_score, sample_weight, pos_label)
    if tps[-1] <= 0:
        raise ValueError(f"auprc: y_true has no samples of pos_label={pos!r}; average precision is undefined")
    ps = tps + fps
    prec = np.divide(tps, ps, out=np.zeros_like(tps), where=ps != 0)
    prec, rec = np.r_[prec[::-1], 1.0], np.r_[(tps / tps[-1])[::-1], 0.0]
    return float(max(0.0, -np.sum(np.diff(rec) * prec[:-1])))


def _binary_counts(y_true, y_pred, pos_label, sample_weight):
    y_true, y_pred, w = _check(y_true, y_pred, sample_weight, "y_pred")
    pos = _pos_label(np.unique(np.concatenate([y_true, y_pred])), pos_label)
    t, p = y_true == pos, y_pred == pos
    if w is None:
        return float(np.sum(t & p)), float(np.sum(p)), float(np.sum(t))
    return float(np.sum(w[t & p])), float(np.sum(w[p])), float(np.sum(w[t]))


def _divide(num, den, zero_division):
    return num / den if den != 0 else float(zero_division)


def precision(y_true, y_pred, *, pos_label=None, sample_weight=None, zero_division=0.0):
    """tp / (tp + fp) for ``pos_label``, as ``sklearn.metrics.precision_score``.

    ``zero_division`` is returned when nothing is predicted positive
    (scikit-learn's default also gives 0.0, with a warning).
    """
    tp, pred, _ = _binary_counts(y_true, y_pred, pos_label, sample_weight)
    return _divide(tp, pred, zero_division)


def recall(y_true, y_pred, *, pos_label=None, sample_weight=None, zero_division=0.0):
    """tp / (tp + fn) for ``pos_label``, as ``sklearn.metrics.recall_score``."""
    tp, _, true = _binary_counts(y_true, y_pred, pos_label, sample_weight)
    return _divide(tp, true, zero_division)


def f1(y_true, y_pred, *, pos_label=None, sample_weight=None, zero_division=0.0):
    """2 tp / (2 tp + fp + fn), as ``sklearn.metrics.f1_score``."""
    tp, pred, true = _binary_counts(y_true, y_pred, pos_label, sample_weight)
    return _divide(2.0 * tp, true + pred, zero_division)


def confusion_matrix(y_true, y_pred, *, labels=None, sample_weight=None):
    """C[i, j] = (weighted) count of samples of class labels[i] predicted labels[j].

    As ``sklearn.metrics.confusion_matrix``: ``labels`` defaults to the sorted
    union of both arrays; samples whose labels are not listed are ignored.  Any
    number of classes.  Integer counts without weights, float64 with them.
    """
    y_true, y_pred, w = _check(y_true, y_pred, sample_weight, "y_pred")
    if labels is None:
        labels = np.unique(np.concatenate([y_true, y_pred]))
    else:
        labels = np.asarray(labels)
        if labels.ndim != 1 or labels.size == 0:
            raise ValueError("labels must be a non-empty 1-D list")
        if not np.isin(y_true, labels).any():
            raise ValueError("none of the given labels occurs in y_true")
    k = labels.size
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]

    def index(y):  # position in `labels`, or k when not listed
        at = np.minimum(np.searchsorted(sorted_labels, y), k - 1)
        return np.where(sorted_labels[at] == y, order[at], k)

    i, j = index(y_true), index(y_pred)
    keep = (i < k) & (j < k)
    weights = None if w is None else w[keep]
    cm = np.bincount(i[keep] * k + j[keep], weights=weights, minlength=k * k).reshape(k, k)
    return cm.astype(np.int64) if w is None else cm


def log_loss(y_true, proba, *, labels=None, sample_weight=None):
    """Mean negative log-likelihood, as ``sklearn.metrics.log_loss``.

    Parameters
    ----------
    y_true : array of shape (n,)
    proba : array of shape (n,) (probability of the larger label) or (n, n_classes)
        (columns in sorted label order); clipped to [eps, 1 - eps].
    labels : array, optional
        All classes, needed when y_true holds only one of them.
    sample_weight : array of shape (n,), optional
    """
    y_true, proba, w = _check(y_true, proba, sample_weight, "proba", score=True)
    if proba.min() < 0 or proba.max() > 1:
        raise ValueError("proba must lie in [0, 1]")
    classes = np.unique(y_true if labels is None else np.asarray(labels))
    if classes.size < 2:
        raise ValueError(f"y_true contains only one label ({classes.tolist()}); pass all classes through labels")
    if proba.ndim == 1:
        proba = np.column_stack([1 - proba, proba])
    if proba.shape[1] != classes.size:
        raise ValueError(f"proba has {proba.shape[1]} columns for {classes.size} classes")
    at = np.minimum(np.searchsorted(classes, y_true), classes.size - 1)
    if not np.all(classes[at] == y_true):
        raise ValueError("y_true holds labels missing from labels")
    eps = np.finfo(proba.dtype).eps
    p = np.clip(proba[np.arange(y_true.size), at], eps, 1 - eps)
    return float(np.average(-np.log(p), weights=w))


def classification_report(y_true, y_pred, y_score=None, *, pos_label=None, sample_weight=None):
    """All of the above for the CLI's ``evaluate``, as a JSON-ready dict.

    Keys: ``n_samples``, ``labels``, ``pos_label``, ``accuracy``, ``precision``,
    ``recall``, ``f1``, ``confusion`` (rows: true labels, columns: predicted, in
    ``labels`` order), ``auc`` and ``auprc`` (from ``y_score``; None without it
    or when y_true holds one class).  With more than two classes, the binary
    metrics are None.
    """
    y_true, y_pred, w = _check(y_true, y_pred, sample_weight, "y_pred")
    labels = np.unique(np.concatenate([y_true, y_pred]))
    report = {
        "n_samples": int(y_true.size),
        "labels": labels.tolist(),
        "pos_label": None,
        "accuracy": accuracy(y_true, y_pred, sample_weight=w),
        "precision": None,
        "recall": None,
        "f1": None,
        "auc": None,
        "auprc": None,
        "confusion": confusion_matrix(y_true, y_pred, labels=labels, sample_weight=w).tolist(),
    }
    if labels.size > 2:
        return report
    pos = _pos_label(labels, pos_label)
    report["pos_label"] = pos.item() if hasattr(pos, "item") else pos
    for name, fn in (("precision", precision), ("recall", recall), ("f1", f1)):
        report[name] = fn(y_true, y_pred, pos_label=pos, sample_weight=w)
    if y_score is not None and np.unique(y_true).size == 2:
        report["auc"] = roc_auc(y_true, y_score, pos_label=pos, sample_weight=w)
        report["auprc"] = auprc(y_true, y_score, pos_label=pos, sample_weight=w)
    return report
