"""What a fitted model says, readable: its nonzero weights by name and size, as data, text or JSON.

Used by ``l1scale info MODEL``, ``l1scale inspect`` and ``l1scale export --format text|json``
and by the training summary; works on any fitted estimator (``load(path)`` gives one).
"""

from __future__ import annotations

import json

import numpy as np

__all__ = ["model_json", "model_summary", "model_text", "nonzero_weights"]


def _plain(value):
    """A label as text and JSON show it: numpy scalars as Python values, integral floats as ints."""
    value = value.item() if isinstance(value, np.generic) else value
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _coef_rows(est):
    coef = est.coef_
    coef = coef.toarray() if hasattr(coef, "toarray") else np.asarray(coef)
    return np.atleast_2d(coef), np.atleast_1d(np.asarray(est.intercept_, dtype=np.float64))


def _row_names(est, n_rows):
    """The class each row of coef_ scores (None for a regression); two classes: the positive one."""
    classes = getattr(est, "classes_", None)
    if classes is None:
        return [None]
    if n_rows == 1:
        return [_plain(classes[1])]
    return [_plain(c) for c in classes]


def nonzero_weights(est, top=None):
    """The nonzero weights of each row of ``coef_``, largest in absolute value first.

    Parameters
    ----------
    est : fitted SparseLogisticRegression or SparseLinearRegression
    top : int, optional
        Keep the ``top`` largest of each row (all when None).

    Returns
    -------
    list of dict
        One per row of ``coef_`` (one for a regression or two classes, else one per class):
        ``{"class": label or None, "intercept": b, "nnz": count, "weights": [{"index": j,
        "name": name or None, "weight": w}, ...]}``: ``index`` is the column of ``coef_``
        (0-based: svmlight index j + 1 in a one-based file); ``name`` from ``feature_names_`` (None
        when unknown or empty, e.g. a hashed slot no known feature falls into). Ties keep the
        column order.
    """
    if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 1):
        raise ValueError(f"top must be None or an integer >= 1, got top={top!r}")
    coef, intercept = _coef_rows(est)
    names = getattr(est, "feature_names_", None)
    rows = []
    for k, (label, row) in enumerate(zip(_row_names(est, coef.shape[0]), coef)):
        nonzero = np.flatnonzero(row)
        order = nonzero[np.argsort(-np.abs(row[nonzero]), kind="stable")]
        shown = order if top is None else order[:top]
        rows.append(
            {
                "class": label,
                "intercept": float(intercept[k] if intercept.shape[0] > k else intercept[0]),
                "nnz": int(nonzero.size),
                "weights": [
                    {
                        "index": int(j),
                        "name": (str(names[j]) or None) if names is not None else None,
                        "weight": float(row[j]),
                    }
                    for j in shown
                ],
            }
        )
    return rows


def model_summary(est, metadata=None):
    """A JSON-ready description: estimator, loss, lam, classes, width, nonzeros, iterations,
    the saved solver summary (``result``) and the file's format fields (``metadata`` as
    :func:`~l1scale.model_io.load_model` returns it)."""
    meta = dict(metadata or {})
    coef, _ = _coef_rows(est)
    lam = np.atleast_1d(est.lam_).tolist()
    out = {
        "estimator": type(est).__name__,
        "loss": est.loss,
        "lam": lam[0] if len(lam) == 1 else lam,
        "l1_ratio": est.l1_ratio,
        "fit_intercept": est.fit_intercept,
        "classes": [_plain(c) for c in est.classes_] if hasattr(est, "classes_") else None,
        "n_features": int(coef.shape[1]),
        "nnz": int(np.count_nonzero(coef)),
        "feature_names": getattr(est, "feature_names_", None) is not None,
        "n_iter": np.atleast_1d(est.n_iter_).astype(int).tolist() if hasattr(est, "n_iter_") else None,
        "result": meta.get("result"),
    }
    for key in ("format_version", "library_version", "created", "data"):
        if key in meta:
            out[key] = meta[key]
    return out


def model_json(est, metadata=None, top=None):
    """The model as JSON text: :func:`model_summary` plus ``"weights"`` (:func:`nonzero_weights`)."""
    return json.dumps({**model_summary(est, metadata), "weights": nonzero_weights(est, top)}, indent=1) + "\n"


def model_text(est, metadata=None, top=None):
    """The model as plain text, in the spirit of Vowpal Wabbit's ``--readable_model``: a header
    of ``key: value`` lines, then per class its intercept and one ``name<TAB>index<TAB>weight``
    line per nonzero weight, largest first (``name`` is ``-`` when unknown; ``index`` the 0-based column)."""
    s = model_summary(est, metadata)
    lines = [
        f"estimator: {s['estimator']}",
        f"loss: {s['loss']}",
        f"lam: {s['lam']}",
        f"l1_ratio: {s['l1_ratio']}",
        f"classes: {' '.join(str(c) for c in s['classes'])}" if s["classes"] is not None else "classes: (regression)",
        f"n_features: {s['n_features']}",
        f"nnz: {s['nnz']}",
    ]
    for row in nonzero_weights(est, top):
        lines.append("")
        head = "weights" if row["class"] is None else f"class {row['class']}"
        lines.append(f"[{head}] intercept {row['intercept']!r}, {row['nnz']} nonzero")
        lines.extend(f"{w['name'] or '-'}\t{w['index']}\t{w['weight']!r}" for w in row["weights"])
    return "\n".join(lines) + "\n"
