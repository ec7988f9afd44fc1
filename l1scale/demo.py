"""The ``l1scale demo``: the library's main job on embedded data, no files needed.

Three fits, each on a fixed-seed 80/20 train/test split:

1. Balakrishnan & Madigan's simulated data (sec. 7 of their paper, ALGORITHMS.md
   section 2): d = 11 (column 0 is the constant, penalised like the paper's
   beta_0), probit link fitted with probit loss at gamma = 10, and logistic link
   fitted with logistic loss at gamma = 100.  The paper fits t = 10,000
   examples; we draw 12,500 so that the 80% training part is exactly t = 10,000,
   and convert its sum-form gamma to our mean form as lam = gamma / t
   (ALGORITHMS.md section 1).  No separate intercept, as in the paper.
2. A larger text-like sparse set (:func:`~l1scale.data.synthetic.make_sparse_text`:
   100,000 x 50,000 with about 40 nonzeros per row; ``quick``: 20,000 x 10,000),
   logistic loss at lam = 0.02 lam_max, with an intercept.

:func:`run_demo` returns one dict per fit (the rows of the CLI's table), so the
demo is testable without the command line.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

__all__ = ["DEMO_SETS", "run_demo"]

#: (name, kind, loss, settings) of every fit, in order.  ``gamma`` is the
#: paper's sum-form penalty; ``lam_ratio`` a fraction of lam_max.
DEMO_SETS = (
    ("bm-simulated-probit", "bm", "probit", {"link": "probit", "gamma": 10.0}),
    ("bm-simulated-logistic", "bm", "logistic", {"link": "logistic", "gamma": 100.0}),
    ("sparse-text", "text", "logistic", {"lam_ratio": 0.02}),
)
_BM_TRAIN = 10_000  # the paper's t
_TEXT_FULL = (100_000, 50_000)
_TEXT_QUICK = (20_000, 10_000)
_TEXT_NNZ_PER_ROW = 40
_TEST_FRACTION = 0.2


def _split(n, rng):
    """Indices of a shuffled 80/20 split (train, test)."""
    order = rng.permutation(n)
    n_test = round(_TEST_FRACTION * n)
    return np.sort(order[n_test:]), np.sort(order[:n_test])


def _make(kind, settings, quick, seed):
    from .data.synthetic import make_bm_simulated, make_sparse_text

    if kind == "bm":
        n = round(_BM_TRAIN / (1 - _TEST_FRACTION))
        return make_bm_simulated(n, link=settings["link"], random_state=seed)
    n, d = _TEXT_QUICK if quick else _TEXT_FULL
    return make_sparse_text(n, d, nnz_per_row=_TEXT_NNZ_PER_ROW, random_state=seed)


def run_demo(quick=False, *, random_state=0, tol=1e-6, log=None):
    """Make the demo data sets, fit each one and report.

    Parameters
    ----------
    quick : bool, default False
        Use the smaller text-like set (20,000 x 10,000); the simulated sets are
        small and always full size.
    random_state : int, default 0
        Seed of the data and of the splits: the same seed gives the same rows.
    tol : float, default 1e-6
        The solver's relative certificate tolerance.
    log : callable, optional
        ``log(message)`` is called before each step (the CLI prints to stderr).

    Returns
    -------
    list of dict
        One row per fit with keys ``dataset``, ``n_samples``, ``n_train``,
        ``n_test``, ``n_features``, ``nnz`` (of X), ``loss``, ``gamma`` (None
        unless the paper's), ``lam``, ``fit_intercept``, ``objective``,
        ``certificate_name``, ``certificate``, ``relative_certificate``, ``tol``,
        ``converged``, ``stop_reason``, ``n_iter``, ``nnz_coef``,
        ``train_accuracy``, ``test_accuracy``, ``seconds`` (fit, wall clock),
        ``solve_seconds`` and ``compile_seconds`` (the solver's), ``data_seconds``
        (making the data) and ``warnings`` (messages of warnings raised by the fit).
    """
    from .estimators import SparseLogisticRegression

    rows = []
    for k, (name, kind, loss, settings) in enumerate(DEMO_SETS):
        if log is not None:
            log(f"{name}: making data")
        t0 = time.perf_counter()
        X, y = _make(kind, settings, quick, random_state)
        train, test = _split(X.shape[0], np.random.default_rng([random_state, k]))
        X_train, y_train, X_test, y_test = X[train], y[train], X[test], y[test]
        data_seconds = time.perf_counter() - t0
        if kind == "bm":
            lam_args = {"lam": settings["gamma"] / X_train.shape[0]}
            fit_intercept = False
        else:
            lam_args = {"lam_ratio": settings["lam_ratio"]}
            fit_intercept = True
        est = SparseLogisticRegression(
            loss, fit_intercept=fit_intercept, tol=tol, random_state=random_state, **lam_args
        )
        if log is not None:
            log(f"{name}: fitting {loss} on {X_train.shape[0]} x {X_train.shape[1]}")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            est.fit(X_train, y_train)
            seconds = time.perf_counter() - t0
        result = est.result_
        rows.append(
            {
                "dataset": name,
                "n_samples": int(X.shape[0]),
                "n_train": int(X_train.shape[0]),
                "n_test": int(X_test.shape[0]),
                "n_features": int(X.shape[1]),
                "nnz": int(X.nnz if hasattr(X, "nnz") else np.count_nonzero(X)),
                "loss": loss,
                "gamma": settings.get("gamma"),
                "lam": float(est.lam_[0]),
                "fit_intercept": fit_intercept,
                "objective": float(result.objective),
                "certificate_name": result.certificate_name,
                "certificate": float(result.certificate),
                "relative_certificate": float(result.relative_certificate),
                "tol": tol,
                "converged": bool(result.converged),
                "stop_reason": result.stop_reason,
                "n_iter": int(result.n_iter),
                "nnz_coef": int(result.nnz),
                "train_accuracy": float(est.score(X_train, y_train)),
                "test_accuracy": float(est.score(X_test, y_test)),
                "seconds": seconds,
                "solve_seconds": float(result.timings.get("solve", np.nan)),
                "compile_seconds": float(result.timings.get("compile", 0.0)),
                "data_seconds": data_seconds,
                "warnings": [str(w.message) for w in caught],
            }
        )
    return rows
