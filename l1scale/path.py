"""Regularisation paths with warm starts, and the choice of lam by cross-validation.

A path solves the problem of :class:`~l1scale.problems.Problem` at a decreasing geometric
grid lam_max = lam_1 > lam_2 > ... > lam_K (``lam_min_ratio * lam_max`` at the end), each
solve starting from the previous solution (continuation): near lam_max the solutions are
sparse and cheap, and each warm start is close to the next solution, so the whole path
costs a few cold solves (measured in ``benchmarks/``, tested in ``tests/test_path.py``).

:class:`SparseLogisticRegressionCV` runs the path on each training fold (stratified
k-fold by default), scores every lam on the held-out fold (log-loss, accuracy, AUC or
AUPRC, or any callable), picks the lam with the best mean score, and refits on all the
data along the path down to it (one-vs-rest for more than two classes, a lam per class).
With ``n_jobs`` the paths of every (fold, class) and the refits run in threads.
"""

from __future__ import annotations

import itertools
import numbers
import time
from typing import NamedTuple

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from sklearn.model_selection import StratifiedKFold, check_cv

from . import metrics
from .data.memory import column_matrix
from .estimators import SparseLogisticRegression
from .problems.memory import Problem
from .solvers import SOLVERS

__all__ = ["PathResult", "SparseLogisticRegressionCV", "lam_grid", "regularization_path"]


def lam_grid(lam_max: float, n_lams: int = 50, lam_min_ratio: float = 1e-3) -> np.ndarray:
    """``n_lams`` values from lam_max down to lam_min_ratio * lam_max, evenly spaced in log."""
    if not (isinstance(n_lams, numbers.Integral) and n_lams >= 1):
        raise ValueError(f"n_lams must be an integer >= 1, got {n_lams!r}")
    if not 0 < lam_min_ratio <= 1:
        raise ValueError(f"lam_min_ratio must be in (0, 1], got {lam_min_ratio!r}")
    if not lam_max > 0:
        raise ValueError(f"lam_max must be > 0, got {lam_max!r} (w = 0 is optimal for every lam)")
    return lam_max * np.geomspace(1.0, lam_min_ratio, n_lams)


class PathResult(NamedTuple):
    """A regularisation path: row k is the solution at ``lams[k]``.

    Attributes
    ----------
    lams : ndarray (K,)
    coefs : ndarray (K, n_features)
    intercepts : ndarray (K,)
    objectives, certificates : ndarray (K,)
    n_iter : ndarray of int (K,)
    seconds : ndarray (K,)
        Solve time of each lam.
    """

    lams: np.ndarray
    coefs: np.ndarray
    intercepts: np.ndarray
    objectives: np.ndarray
    certificates: np.ndarray
    n_iter: np.ndarray
    seconds: np.ndarray

    @property
    def nnz(self) -> np.ndarray:
        return np.count_nonzero(self.coefs, axis=1)


def regularization_path(
    X,
    y,
    loss="logistic",
    *,
    lams=None,
    n_lams=50,
    lam_min_ratio=1e-3,
    l1_ratio=1.0,
    fit_intercept=True,
    sample_weight=None,
    solver="cd",
    tol=1e-6,
    max_iter=200,
    warm_start=True,
) -> PathResult:
    """Solve at every lam of a decreasing grid, warm-starting each solve from the previous one.

    Parameters
    ----------
    X, y, loss, l1_ratio, fit_intercept, sample_weight
        As :class:`~l1scale.problems.Problem` (y in {-1, +1} for classification losses).
    lams : array, optional
        The grid (sorted decreasing); default :func:`lam_grid` of the data's lam_max.
    n_lams, lam_min_ratio
        The default grid.
    solver : str
        A solver over columns (``"cd"``, ``"cgd"``, ``"fista"``, ...).
    tol, max_iter
        Of each solve.
    warm_start : bool, default True
        False solves every lam from zero (for comparison).
    """
    base = Problem(X, y, loss, lam=1.0, l1_ratio=l1_ratio, fit_intercept=fit_intercept, sample_weight=sample_weight)
    if lams is None:
        lams = lam_grid(base.lam_max(), n_lams, lam_min_ratio)
    lams = np.sort(np.asarray(lams, dtype=np.float64))[::-1]
    if lams.size == 0 or not (lams > 0).all():
        raise ValueError("lams must be a non-empty array of numbers > 0")
    if SOLVERS[solver].data_access != "columns":
        raise ValueError(
            f"solver={solver!r} reads data in passes; a path needs a solver over columns "
            f"(one of {sorted(k for k, v in SOLVERS.items() if v.data_access == 'columns')})"
        )
    coefs, intercepts = np.zeros((lams.size, base.n_features)), np.zeros(lams.size)
    out = {k: np.zeros(lams.size) for k in ("objectives", "certificates", "seconds")}
    n_iter = np.zeros(lams.size, dtype=np.int64)
    if solver == "cd" and warm_start:
        # CD carries its iterate and its screening from one lam to the next.
        results = SOLVERS["cd"](tol=tol, max_iter=max_iter).solve_path(base, lams)
        for k, result in enumerate(results):
            out["seconds"][k] = result.timings["solve"]
            coefs[k], intercepts[k], n_iter[k] = result.coef, result.intercept, result.n_iter
            out["objectives"][k], out["certificates"][k] = result.objective, result.relative_certificate
        return PathResult(lams, coefs, intercepts, out["objectives"], out["certificates"], n_iter, out["seconds"])
    coef, intercept, gradient = None, None, None
    for k, lam in enumerate(lams):
        problem = base.with_lam(lam)  # X validated and in the column layout once for the whole path
        t0 = time.perf_counter()
        # CD starts each lam from the last one's gradient (its first working set, glmnet's
        # strong rules' role) and certifies with one pass at the end.
        extra = {"gradient_init": gradient} if solver == "cd" and gradient is not None else {}
        result = SOLVERS[solver](tol=tol, max_iter=max_iter).solve(problem, coef, intercept, **extra)
        out["seconds"][k] = time.perf_counter() - t0
        coefs[k], intercepts[k], n_iter[k] = result.coef, result.intercept, result.n_iter
        out["objectives"][k], out["certificates"][k] = result.objective, result.relative_certificate
        if warm_start:
            coef, intercept, gradient = result.coef, result.intercept, result.loss_gradient
    return PathResult(lams, coefs, intercepts, out["objectives"], out["certificates"], n_iter, out["seconds"])


_SCORERS = {
    "log_loss": lambda y, p: -metrics.log_loss(y, p, labels=[-1.0, 1.0]),
    "accuracy": lambda y, p: metrics.accuracy(y, np.where(p >= 0.5, 1.0, -1.0)),
    "roc_auc": metrics.roc_auc,
    "average_precision": metrics.auprc,
}


class SparseLogisticRegressionCV(SparseLogisticRegression):
    """:class:`~l1scale.SparseLogisticRegression` with lam chosen by cross-validation over a path.

    Parameters
    ----------
    lams : array, optional
        The grid; default ``n_lams`` values from lam_max down to ``lam_min_ratio * lam_max``
        (lam_max of all the data).
    n_lams : int, default 20
    lam_min_ratio : float, default 1e-3
    cv : int or cross-validation splitter, default 5
        An int is stratified k-fold (no shuffling).
    scoring : {"log_loss", "accuracy", "roc_auc", "average_precision"} or callable, default "log_loss"
        Larger is better; a callable is ``scoring(y_true in {-1, +1}, p_positive)``.
    loss, l1_ratio, fit_intercept, solver, tol, max_iter, class_weight, random_state, verbose
        As :class:`~l1scale.SparseLogisticRegression` (``solver`` must work over columns).
    n_jobs : int, optional
        Threads (joblib's conventions: None is 1 unless inside a ``joblib.parallel_backend``
        context, -1 every core) for the path of every (fold, class) and the refit of every
        class; with more threads than classes, the refits run alongside the folds over the
        whole grid and are cut at the chosen lam. The results are the same for every n_jobs;
        a callable ``scoring`` is then called from the threads.

    Attributes
    ----------
    lam_ : ndarray (1,) or (n_classes,)
        The chosen lam (per class for more than two classes: one-vs-rest, each lam chosen apart
        on the same folds).
    lams_ : ndarray (K,) or (n_classes, K)
    scores_ : ndarray (n_folds, K) or (n_classes, n_folds, K)
        Held-out score of every lam on every fold.
    path_ : PathResult or list of PathResult
        The refit path on all the data, down to the chosen lam.
    """

    def __init__(
        self,
        loss="logistic",
        *,
        lams=None,
        n_lams=20,
        lam_min_ratio=1e-3,
        cv=5,
        scoring="log_loss",
        l1_ratio=1.0,
        fit_intercept=True,
        solver="auto",
        tol=1e-6,
        max_iter=200,
        class_weight=None,
        random_state=None,
        verbose=0,
        n_jobs=None,
    ):
        self.loss = loss
        self.lams = lams
        self.n_lams = n_lams
        self.lam_min_ratio = lam_min_ratio
        self.cv = cv
        self.scoring = scoring
        self.l1_ratio = l1_ratio
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.class_weight = class_weight
        self.random_state = random_state
        self.verbose = verbose
        self.n_jobs = n_jobs

    # parameters of the parent that the CV estimator fixes
    lam = None
    lam_ratio = None
    warm_start = False
    callback = None
    max_active = None
    checkpoint = None
    two_stage = None

    def fit(self, X, y, sample_weight=None):
        """Choose lam by cross-validation, then fit on all the data at it."""
        solver = self._check_params()
        if self.loss not in ("logistic", "probit"):
            raise ValueError(f"loss={self.loss!r}: cross-validation scores probabilities (logistic or probit)")
        scorer = self.scoring if callable(self.scoring) else _SCORERS.get(self.scoring)
        if scorer is None:
            raise ValueError(f"scoring={self.scoring!r}; choose one of {sorted(_SCORERS)} or a callable")
        X, y, classes, sample_weight = self._classification_data(X, y, sample_weight)
        splitter = (
            check_cv(self.cv, y, classifier=True)
            if not isinstance(self.cv, numbers.Integral)
            else StratifiedKFold(n_splits=self.cv)
        )
        folds = list(splitter.split(X, y))  # the same folds for every one-vs-rest problem
        positives = [classes[1]] if classes.shape[0] == 2 else list(classes)
        fits = self._cross_validate(
            X, [np.where(y == positive, 1.0, -1.0) for positive in positives], sample_weight, folds, solver, scorer
        )
        self.solver_ = solver
        self.classes_ = classes
        self.coef_ = np.vstack([path.coefs[-1] for _, _, _, path in fits])
        self.intercept_ = np.array([path.intercepts[-1] for _, _, _, path in fits])
        self.lam_ = np.array([lam for lam, _, _, _ in fits])
        self.n_iter_ = np.array([path.n_iter[-1] for _, _, _, path in fits])
        if len(fits) == 1:
            _, self.lams_, self.scores_, self.path_ = fits[0]
        else:  # one grid and one path per class (one-vs-rest), each lam chosen apart
            self.lams_ = np.vstack([lams for _, lams, _, _ in fits])
            self.scores_ = np.stack([scores for _, _, scores, _ in fits])
            self.path_ = [path for _, _, _, path in fits]
        self.result_ = None
        return self

    def _cross_validate(self, X, targets, sample_weight, folds, solver, scorer):
        """The binary problems (y_pm in ``targets``, one per class) on the same folds:
        [(chosen lam, grid, scores (n_folds, K), refit path down to the lam)] per problem.

        The paths of every (fold, class) run in threads over n_jobs. X is converted to the
        column layout once, each fold's training rows once for all classes (as the folds are
        reached: only a few are held at a time). The refits then follow, each down to its
        chosen lam, in threads. With fewer classes than threads (a binary problem on 2 cores),
        threads would idle while the last folds and then the refits run: the refits start
        first instead, alongside the folds, over the whole grid, and are cut at the chosen lam
        (the path of a grid's first lams is the first rows of its path: the same numbers), at
        the cost of the lams past the chosen one (5 folds and a refit on 2 cores: 3 rounds,
        not 4)."""
        X_columns = column_matrix(X)
        if self.lams is None:
            grids = [
                lam_grid(
                    Problem(
                        X_columns,
                        y_pm,
                        self.loss,
                        lam_ratio=1.0,
                        l1_ratio=self.l1_ratio,
                        fit_intercept=self.fit_intercept,
                        sample_weight=sample_weight,
                    ).lam_max(),
                    self.n_lams,
                    self.lam_min_ratio,
                )
                for y_pm in targets
            ]
        else:
            grids = [np.sort(np.asarray(self.lams, dtype=np.float64))[::-1]] * len(targets)
        link = get_link(self.loss)
        kw = dict(
            l1_ratio=self.l1_ratio,
            fit_intercept=self.fit_intercept,
            solver=solver,
            tol=self.tol,
            max_iter=self.max_iter,
        )

        def refit(k, n_lams=None):
            return delayed(regularization_path)(
                X_columns, targets[k], self.loss, lams=grids[k][:n_lams], sample_weight=sample_weight, **kw
            )

        def fold_jobs():  # fold by fold, so that a fold's matrices are dropped once its paths are done
            for train, test in folds:
                X_train, X_test = column_matrix(X[train]), X[test]
                for y_pm, lams in zip(targets, grids):
                    yield delayed(_fold_scores)(
                        X_train,
                        y_pm[train],
                        sample_weight[train],
                        X_test,
                        y_pm[test],
                        lams,
                        self.loss,
                        link,
                        scorer,
                        kw,
                    )

        n = len(targets)
        with Parallel(n_jobs=self.n_jobs, prefer="threads") as parallel:
            ahead = n < effective_n_jobs(self.n_jobs)  # refits alongside the folds, the longest first
            done = parallel(itertools.chain((refit(k) for k in range(n) if ahead), fold_jobs()))
            paths, fold_scores = (done[:n], done[n:]) if ahead else (None, done)
            # fold-major: [fold 0 class 0, fold 0 class 1, ..., fold 1 class 0, ...]
            scores = [np.asarray(fold_scores[k::n]) for k in range(n)]
            best = [int(np.argmax(s.mean(axis=0))) for s in scores]
            if ahead:
                paths = [_first_lams(path, b + 1) for path, b in zip(paths, best)]
            else:
                paths = parallel(refit(k, b + 1) for k, b in enumerate(best))
        return [(float(lams[b]), lams, s, path) for lams, b, s, path in zip(grids, best, scores, paths)]


def _fold_scores(X_train, y_train, sample_weight, X_test, y_test, lams, loss, link, scorer, kw):
    """The path on one training fold of one binary problem, and the held-out score of every lam."""
    path = regularization_path(X_train, y_train, loss, lams=lams, sample_weight=sample_weight, **kw)
    margins = np.asarray(X_test @ path.coefs.T) + path.intercepts
    return [scorer(y_test, link(margins[:, k])) for k in range(lams.size)]


def _first_lams(path, n):
    """The PathResult of the first n lams of ``path`` (its per-lam arrays cut)."""
    size = path.lams.shape[0]
    return path._replace(
        **{
            name: value[:n]
            for name, value in path._asdict().items()
            if isinstance(value, np.ndarray) and value.ndim and value.shape[0] == size
        }
    )


def get_link(loss):
    """P(y = +1 | margin) for a probabilistic loss."""
    from scipy.special import expit, ndtr

    return {"logistic": expit, "probit": ndtr}[loss]
