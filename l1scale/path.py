"""Regularisation paths with warm starts, and the choice of lam by cross-validation.

A path solves the problem of :class:`~l1scale.problems.Problem` at a decreasing geometric
grid lam_max = lam_1 > lam_2 > ... > lam_K (``lam_min_ratio * lam_max`` at the end), each
solve starting from the previous solution (continuation): near lam_max the solutions are
sparse and cheap, and each warm start is close to the next solution, so the whole path
costs a few cold solves (measured in ``benchmarks/``, tested in ``tests/test_path.py``).

:class:`SparseLogisticRegressionCV` runs the path on each training fold (stratified
k-fold by default), scores every lam on the held-out fold (negative log-loss, accuracy,
AUC or AUPRC, or any callable; larger is better), keeps the mean and standard error of
the score per lam, picks the lam with the best mean score (``rule="min"``) or the largest
lam within one standard error of it (``rule="1se"``, glmnet's lambda.1se), and refits on
all the data along the path down to it: for more than two classes the multinomial (softmax)
model along one path (``multi_class``, as the estimator resolves it), or one-vs-rest with a lam
per class. A chosen lam at the edge of the grid warns (:class:`GridEdgeWarning`). With
``n_jobs`` the paths of every (fold, class) and the refits run in threads. With
``standardize=True`` each fold's path is solved on the columns scaled by that fold's training
rows only (no held-out row enters its scales), and the refit by all the data.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import numbers
import threading
import warnings
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from joblib import delayed
from sklearn.model_selection import StratifiedKFold, check_cv
from sklearn.utils.validation import check_is_fitted

from . import _multinomial_fit, _standardize, metrics
from ._clock import Timer
from ._path_result import PathResult, PathRows
from ._threads import check_n_jobs, in_this_process, run_in_threads, single_threaded_blas, thread_count
from .data.memory import column_matrix, column_matrix_rows
from .estimators import SparseLogisticRegression
from .problems.memory import Problem
from .problems.multinomial import MultinomialProblem
from .solvers import SOLVERS

__all__ = [
    "GridEdgeWarning",
    "PathResult",
    "SparseLogisticRegressionCV",
    "lam_grid",
    "path_segments",
    "regularization_path",
]


class GridEdgeWarning(UserWarning):
    """The lam chosen by cross-validation is the largest or the smallest of the grid.

    At the smallest, a better lam may lie below the grid (extend it: a smaller
    ``lam_min_ratio``, more lams, or ``lams=``); at the largest (lam_max for the default
    grid, where the model has no nonzero weight) no lam of the grid scores better than the
    sparsest model.
    """


def lam_grid(lam_max: float, n_lams: int = 50, lam_min_ratio: float = 1e-3) -> np.ndarray:
    """``n_lams`` values from lam_max down to lam_min_ratio * lam_max, evenly spaced in log."""
    if not (isinstance(n_lams, numbers.Integral) and n_lams >= 1):
        raise ValueError(f"n_lams must be an integer >= 1, got {n_lams!r}")
    if not 0 < lam_min_ratio <= 1:
        raise ValueError(f"lam_min_ratio must be in (0, 1], got {lam_min_ratio!r}")
    if not lam_max > 0:
        raise ValueError(f"lam_max must be > 0, got {lam_max!r} (w = 0 is optimal for every lam)")
    return lam_max * np.geomspace(1.0, lam_min_ratio, n_lams)


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
    callback=None,
    standardize=False,
    n_jobs=None,
) -> PathResult:
    """Solve at every lam of a decreasing grid, warm-starting each solve from the previous one.

    Parameters
    ----------
    X, y, loss, l1_ratio, fit_intercept, sample_weight
        As :class:`~l1scale.problems.Problem` (y in {-1, +1} for classification losses).
        ``loss="multinomial"``: the softmax model of
        :class:`~l1scale.problems.multinomial.MultinomialProblem` (y any labels, at least two
        classes), solved by ``"multinomial_cd"``; the coefficients of each lam are then
        (n_classes, n_features), rows in sorted label order.
    lams : array, optional
        The grid (sorted decreasing); default :func:`lam_grid` of the data's lam_max.
    n_lams, lam_min_ratio
        The default grid.
    solver : str
        A solver over columns (``"cd"``, ``"cgd"``, ``"fista"``, ...); for
        ``loss="multinomial"`` ``"cd"`` (the default) or ``"auto"`` mean ``"multinomial_cd"``.
    tol, max_iter
        Of each solve.
    warm_start : bool, default True
        False solves every lam from zero (for comparison).
    callback : callable, optional
        ``callback(k, result)`` after the solve at ``lams[k]`` (its
        :class:`~l1scale.solvers.base.Result`, on the standardised scale with
        ``standardize``): progress, or an early look at the path.
    standardize : bool, default False
        Solve with each column divided by its sample-weighted standard deviation (as
        :class:`~l1scale.SparseLogisticRegression` does with ``standardize=True``): the grid,
        lam_max and the objectives refer to the standardised problem, the returned
        coefficients are on the original scale.
    n_jobs : int, optional
        Threads for the path (joblib's conventions; ``solver="cd"`` with ``warm_start``, a
        binary or regression loss, at least 4 lams a thread): the grid is cut into contiguous
        segments of about equal expected cost (:func:`path_segments`), each solved in its own
        thread along its lams, warm-started within it; a segment after the first starts from
        zero at its first lam (what a single fit at that lam does). Every lam is certified to
        ``tol`` as always, so the path agrees with the one of ``n_jobs=1`` to ``tol``, not to
        the bit; for a given number of threads it repeats exactly. The callback is then called
        once every segment is done, in the order of the lams, with Results that have no
        ``loss_gradient`` (n_features floats each, not kept while the segments wait).

    Returns
    -------
    PathResult
        The coefficients stored sparse (``coef_path``, a CSR row per lam); ``coefs`` is the
        dense array, built on first use.
    """
    sigma = None
    if standardize:
        if standardize is not True:
            raise ValueError(f"standardize must be True or False, got standardize={standardize!r}")
        X = _float_matrix(X)
        weights = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        sigma = _standardize.column_scales(X, weights)
        X = _standardize.scaled(X, sigma)
    multinomial = loss == "multinomial"
    penalty = dict(l1_ratio=l1_ratio, fit_intercept=fit_intercept, sample_weight=sample_weight)
    if multinomial:
        if solver not in ("cd", "auto", _multinomial_fit.AUTO_SOLVER):
            raise ValueError(
                f"solver={solver!r}: loss='multinomial' is solved by {_multinomial_fit.AUTO_SOLVER!r} "
                "(give solver='cd', 'auto' or that name)"
            )
        base = MultinomialProblem(X, y, lam=1.0, **penalty)
    else:
        base = Problem(X, y, loss, lam=1.0, **penalty)
    if lams is None:
        lams = lam_grid(base.lam_max(), n_lams, lam_min_ratio)
    lams = np.sort(np.asarray(lams, dtype=np.float64))[::-1]
    if lams.size == 0 or not (lams > 0).all():
        raise ValueError("lams must be a non-empty array of numbers > 0")
    if not multinomial and SOLVERS[solver].data_access != "columns":
        raise ValueError(
            f"solver={solver!r} reads data in passes; a path needs a solver over columns "
            f"(one of {sorted(k for k, v in SOLVERS.items() if v.data_access == 'columns')})"
        )
    shape = (base.n_classes, base.n_features) if multinomial else (base.n_features,)
    rows, intercepts = PathRows(int(np.prod(shape))), np.zeros((lams.size, *shape[:-1]))
    out = {k: np.zeros(lams.size) for k in ("objectives", "certificates", "seconds")}
    n_iter = np.zeros(lams.size, dtype=np.int64)
    converged = np.zeros(lams.size, dtype=bool)
    if solver == "cd" and warm_start and not multinomial:
        # CD carries its iterate and its screening from one lam to the next.
        bounds = path_segments(lams.size, thread_count(check_n_jobs(n_jobs)))
        if len(bounds) > 2:
            results = _segmented_path(base, lams, bounds, tol, max_iter, n_jobs)
        else:
            results = SOLVERS["cd"](tol=tol, max_iter=max_iter).solve_path(base, lams)
        seconds = None
    else:
        results = _warm_started(base, lams, solver, tol, max_iter, warm_start, multinomial)
        seconds = out["seconds"]
    timer = Timer()  # the seconds of each solve, less its kernels' compilation (``_clock``)
    for k, result in enumerate(results):
        if seconds is None:
            out["seconds"][k] = result.timings["solve"]
        else:
            out["seconds"][k], timer = timer(), Timer()
        rows.add(result.coef)
        intercepts[k], n_iter[k], converged[k] = result.intercept, result.n_iter, result.converged
        out["objectives"][k], out["certificates"][k] = result.objective, result.relative_certificate
        if callback is not None:
            callback(k, result)
            timer = Timer()
    path = PathResult(
        lams,
        rows.matrix(),
        intercepts,
        out["objectives"],
        out["certificates"],
        n_iter,
        out["seconds"],
        converged,
        shape,
    )
    return path if sigma is None else path.rescaled(sigma)  # the intercepts are unchanged


# A warm-started path's cost grows as lam falls (the support grows with it). On 50-lam grids
# down to 1e-3 lam_max (tol 1e-4), the first half of the solve time ends at lam 34-35 (a9a),
# 39-40 (earn) and 42 (mnist10k): about a cumulative cost (k / K)^3, whose half is at 0.79 K.
_SEGMENT_COST_POWER = 3.0
# The fewest lams a thread's segment takes: a segment after the first starts from zero, a
# cold solve that only a few warm-started ones repay.
_MIN_SEGMENT_LAMS = 4


def path_segments(n_lams, n_threads):
    """Boundaries ``[0, b_1, ..., n_lams]`` that cut a decreasing grid of ``n_lams`` lams into
    at most ``n_threads`` contiguous segments of about equal expected cost, taking the
    cumulative cost of the first k lams as (k / n_lams)^3 (measured above); each segment has
    at least 4 lams. ``[0, n_lams]``: one segment.

    A deterministic model, not a measurement, so that a path's segments, and so its result,
    depend on the grid and the number of threads only. Cut at lam 40 of 50 (the model's
    two-thread cut), ``regularization_path`` at tol 1e-4 ran 1.41x faster on two threads on
    earn, 1.40x on a9a and 1.66x on mnist10k."""
    n_seg = max(1, min(int(n_threads), n_lams // _MIN_SEGMENT_LAMS))
    inner = [round(n_lams * (i / n_seg) ** (1.0 / _SEGMENT_COST_POWER)) for i in range(1, n_seg)]
    bounds = [0]
    for b in inner:
        if b - bounds[-1] >= _MIN_SEGMENT_LAMS and n_lams - b >= _MIN_SEGMENT_LAMS:
            bounds.append(b)
    return bounds + [n_lams]


def _segmented_path(base, lams, bounds, tol, max_iter, n_jobs):
    """The Results of a CD path whose segments ``lams[bounds[i]:bounds[i + 1]]`` are solved in
    threads, each along its lams from zero at its first (as the whole path starts), in the
    order of ``lams``. A segment's Results wait for the others' with their coefficients kept
    as nonzeros and without their loss gradients (n_features floats each): the path's memory
    stays in its nonzeros, and each Result gets its dense coefficients back as it is yielded."""
    # The shared per-data arrays (the column norms, the Lasso's covariances) computed before the threads,
    # with BLAS on one thread as in them (a product summed by more threads rounds otherwise).
    with single_threaded_blas(n_jobs):
        SOLVERS["cd"](tol=tol, max_iter=max_iter).prepare_path(base, lams.size)

    parts = [lams[a:b] for a, b in itertools.pairwise(bounds)]
    jobs = (delayed(_path_segment)(base, part, tol, max_iter) for part in parts)
    for part in run_in_threads(jobs, n_jobs):
        for nonzero, values, result in part:
            coef = np.zeros(base.n_features)
            coef[nonzero] = values
            yield dataclasses.replace(result, coef=coef)


def _path_segment(base, lams, tol, max_iter):
    """One segment's CD path (a module-level function: a process backend pickles it by name),
    each Result as (its nonzeros' indices, their values, the Result without coef and gradient)."""
    kept = []
    for result in SOLVERS["cd"](tol=tol, max_iter=max_iter).solve_path(base, lams):
        nonzero = np.flatnonzero(result.coef)
        kept.append((nonzero, result.coef[nonzero], dataclasses.replace(result, coef=None, loss_gradient=None)))
    return kept


def _warm_started(base, lams, solver, tol, max_iter, warm_start, multinomial):
    """The Results of each lam's solve in turn, each started from the last (with
    ``warm_start``), the problem validated once for the whole path."""
    make = SOLVERS[_multinomial_fit.AUTO_SOLVER if multinomial else solver]
    coef, intercept, gradient = None, None, None
    for lam in lams:
        problem = base.with_lam(lam)  # X validated and in the column layout once for the whole path
        # CD starts each lam from the last one's gradient (its first working set, glmnet's
        # strong rules' role) and certifies with one pass at the end.
        extra = {"gradient_init": gradient} if solver == "cd" and gradient is not None and not multinomial else {}
        result = make(tol=tol, max_iter=max_iter).solve(problem, coef, intercept, **extra)
        if warm_start:
            coef, intercept = result.coef, result.intercept
            gradient = None if multinomial else result.loss_gradient
        yield result


def _float_matrix(X):
    """X as a float matrix (sparse kept sparse, CSR or CSC) that can be scaled in place."""
    if sp.issparse(X):
        X = X if X.format in ("csr", "csc") else X.tocsr()
        return X if X.dtype.kind == "f" else X.astype(np.float64)
    X = np.asarray(X)
    return X if X.dtype.kind == "f" else X.astype(np.float64)


# The scorers are module-level functions, not lambdas: a process backend (joblib's
# "multiprocessing") pickles them by name.
def _neg_log_loss(y, p):
    return -metrics.log_loss(y, p, labels=[-1.0, 1.0])


def _accuracy(y, p):
    return metrics.accuracy(y, np.where(p >= 0.5, 1.0, -1.0))


def _multinomial_neg_log_loss(y, proba, classes):
    return -metrics.log_loss(y, proba, labels=classes)


def _multinomial_accuracy(y, proba, classes):
    return metrics.accuracy(y, classes[np.argmax(proba, axis=1)])


_SCORERS = {
    "neg_log_loss": _neg_log_loss,
    "accuracy": _accuracy,
    "roc_auc": metrics.roc_auc,
    "average_precision": metrics.auprc,
}
#: The scorers of a multinomial model: (labels, probabilities (n, n_classes) in the classes' order).
_MULTINOMIAL_SCORERS = {"neg_log_loss": _multinomial_neg_log_loss, "accuracy": _multinomial_accuracy}
#: Names the scorers had before, and what they are now (scikit-learn's names).
_RENAMED_SCORERS = {"log_loss": "neg_log_loss"}
_RULES = ("min", "1se")
#: Fitted attributes of the CV alone (not those of the refit model :meth:`save` writes).
_CV_ATTRIBUTES = ("lams_", "scores_", "path_", "cv_mean_", "cv_se_", "cv_results_", "lam_min_", "lam_1se_")


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
    scoring : {"neg_log_loss", "accuracy", "roc_auc", "average_precision"} or callable, default "neg_log_loss"
        Larger is better, as scikit-learn's scorers: ``"neg_log_loss"`` is minus the mean
        log-loss. A callable is ``scoring(y_true in {-1, +1}, p_positive)`` for a binary
        problem (and each one-vs-rest one), ``scoring(y_true, proba)`` for a multinomial model
        (``y_true`` the labels, ``proba`` (n, n_classes) in the order of ``classes_``); a
        multinomial model takes ``"neg_log_loss"``, ``"accuracy"`` or a callable.
        (``"log_loss"``, this estimator's former name of ``"neg_log_loss"``, still works with
        a FutureWarning.)
    rule : {"min", "1se"}, default "min"
        Which lam is refitted: ``"min"`` the one with the best mean score (``lam_min_``),
        ``"1se"`` the largest lam whose mean score is within one standard error of the best
        (``lam_1se_``, glmnet's ``lambda.1se``: a sparser model that cross-validation cannot
        tell apart from the best).
    loss, l1_ratio, fit_intercept, solver, tol, max_iter, class_weight, random_state, verbose
        As :class:`~l1scale.SparseLogisticRegression` (``solver`` must work over columns).
    multi_class : {"auto", "multinomial", "ovr"}, default "auto"
        As :class:`~l1scale.SparseLogisticRegression`: for more than two classes "auto" (with
        the logistic loss and ``solver="auto"``) and "multinomial" cross-validate one softmax
        model along one warm-started path ("multinomial_cd"), one lam for all classes; "ovr"
        one binary problem per class, a lam per class.
    standardize : bool, default False
        As :class:`~l1scale.SparseLogisticRegression`: solve with the columns divided by their
        sample-weighted standard deviations. Each fold's scales come from its training rows
        only (the held-out rows never enter them, as a ``StandardScaler`` inside each fold's
        pipeline); the grid's lam_max and the refit use those of all the data. ``coef_`` and
        ``path_`` are on the original scale; lams, lam_max and the objectives refer to the
        standardised problem.
    n_jobs : int, optional
        Threads (joblib's conventions: None is 1 unless inside a ``joblib.parallel_backend``
        context, -1 every core) for the path of every (fold, class) and the refit of every
        class; with more threads than classes, the refits run alongside the folds over the
        whole grid and are cut at the chosen lam. The results are the same for every n_jobs;
        a callable ``scoring`` is then called from the threads.
    progress : callable, optional
        ``progress(done, total)`` after each lam solved, on a fold or in the refit (``total``,
        every solve of the fit, is exact once the chosen lams are known); called from the
        worker threads, one call at a time. The command line's progress bar. Under a process
        backend (``joblib.parallel_config(backend="loky")``) it is called in this process as
        each fold's or refit's path arrives, ``done`` advancing by its lams.
    refit_path : {"chosen", "full"}, default "chosen"
        How far the refit on all the data goes down the grid: to the chosen lam (what
        ``coef_`` needs), or over the whole grid, as glmnet's ``cv.glmnet`` keeps the full fit
        (``path_`` then holds every lam; ``coef_`` is its chosen one). The command line's
        ``path`` uses "full" for its table and plot.

    Attributes
    ----------
    lam_ : ndarray (1,) or (n_classes,)
        The refitted lam: ``lam_min_`` or ``lam_1se_`` as ``rule`` says (per class for more
        than two classes: one-vs-rest, each lam chosen apart on the same folds; a multinomial
        model's one lam repeated per row, as the estimator's ``lam_``).
    lam_min_, lam_1se_ : ndarray (1,) or (n_classes,)
        The lam of the best mean score, and the largest lam whose mean score is at least the
        best minus its standard error (shaped as ``lam_``).
    lams_ : ndarray (K,) or (n_classes, K)
        The grid ((n_classes, K) for one-vs-rest only: a multinomial model has one grid).
    scores_ : ndarray (n_folds, K) or (n_classes, n_folds, K)
        Held-out score of every lam on every fold (a class axis first for one-vs-rest; so are
        ``cv_mean_``, ``cv_se_`` and ``cv_results_``).
    cv_mean_, cv_se_ : ndarray (K,) or (n_classes, K)
        Mean held-out score per lam over the folds, and its standard error
        (``std(ddof=1) / sqrt(n_folds)``, glmnet's ``cvsd``).
    cv_results_ : dict of ndarray
        The same as scikit-learn's ``GridSearchCV.cv_results_`` names them: ``param_lam``,
        ``mean_test_score``, ``std_test_score``, ``se_test_score``, ``rank_test_score`` (1 is
        the best) and ``split{i}_test_score``; each (K,), or (n_classes, K) for more than two
        classes.
    path_ : PathResult or list of PathResult
        The refit path on all the data, down to the chosen lam, or over the whole grid with
        ``refit_path="full"`` (a list for one-vs-rest; a multinomial path's coefficients are
        (K, n_classes, n_features)).
    converged_ : ndarray of bool (1,) or (n_classes,)
        Whether the refit's solve at the chosen lam met ``tol`` (shaped as ``lam_``).
    multi_class_ : {"multinomial", "ovr"}
        What ``multi_class`` resolved to.

    Warns
    -----
    GridEdgeWarning
        When a chosen lam is the largest or the smallest of the grid.
    """

    def __init__(
        self,
        loss="logistic",
        *,
        lams=None,
        n_lams=20,
        lam_min_ratio=1e-3,
        cv=5,
        scoring="neg_log_loss",
        rule="min",
        l1_ratio=1.0,
        fit_intercept=True,
        solver="auto",
        tol=1e-6,
        max_iter=200,
        class_weight=None,
        random_state=None,
        verbose=0,
        n_jobs=None,
        progress=None,
        multi_class="auto",
        standardize=False,
        refit_path="chosen",
    ):
        self.loss = loss
        self.lams = lams
        self.n_lams = n_lams
        self.lam_min_ratio = lam_min_ratio
        self.cv = cv
        self.scoring = scoring
        self.rule = rule
        self.l1_ratio = l1_ratio
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.class_weight = class_weight
        self.random_state = random_state
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.progress = progress
        self.multi_class = multi_class
        self.standardize = standardize
        self.refit_path = refit_path

    # parameters of the parent that the CV estimator fixes
    lam = None
    lam_ratio = None
    warm_start = False
    callback = None
    max_active = None
    checkpoint = None
    two_stage = None

    def fit(self, X, y, sample_weight=None):
        """Choose lam by cross-validation, then fit on all the data at it.

        Parameters
        ----------
        X : array or sparse matrix (n_samples, n_features)
        y : array (n_samples,)
            Two classes or more (multinomial or one-vs-rest, as ``multi_class`` resolves).
        sample_weight : array (n_samples,), optional

        Returns
        -------
        self
        """
        solver = self._check_params()
        _standardize.check(self)
        _multinomial_fit.check(self)
        if self.loss not in ("logistic", "probit"):
            raise ValueError(f"loss={self.loss!r}: cross-validation scores probabilities (logistic or probit)")
        if self.refit_path not in ("chosen", "full"):
            raise ValueError(f"refit_path={self.refit_path!r}; choose 'chosen' or 'full'")
        if self.rule not in _RULES:
            raise ValueError(f"rule={self.rule!r}; choose 'min' (the best mean score) or '1se' (glmnet's lambda.1se)")
        scoring = self.scoring
        if isinstance(scoring, str) and scoring in _RENAMED_SCORERS:
            scoring = _RENAMED_SCORERS[scoring]
            warnings.warn(
                f"scoring={self.scoring!r} is named {scoring!r}, as in scikit-learn (minus the log-loss: larger "
                f"is better); {self.scoring!r} will stop working in a later version",
                FutureWarning,
                stacklevel=2,
            )
        X, y, classes, sample_weight = self._classification_data(X, y, sample_weight)
        multinomial = _multinomial_fit.wanted(self, classes.shape[0])  # sets solver_ if so
        scorer = scoring if callable(scoring) else (_MULTINOMIAL_SCORERS if multinomial else _SCORERS).get(scoring)
        if multinomial and scorer is not None and not callable(scoring):
            scorer = functools.partial(scorer, classes=classes)
        if scorer is None:
            if multinomial and scoring in _SCORERS:
                raise ValueError(
                    f"scoring={self.scoring!r} scores a binary problem; a multinomial model takes "
                    f"{sorted(_MULTINOMIAL_SCORERS)} or a callable scoring(y_true, proba) (or give multi_class='ovr')"
                )
            raise ValueError(f"scoring={self.scoring!r}; choose one of {sorted(_SCORERS)} or a callable")
        splitter = (
            check_cv(self.cv, y, classifier=True)
            if not isinstance(self.cv, numbers.Integral)
            else StratifiedKFold(n_splits=self.cv)
        )
        folds = list(splitter.split(X, y))  # the same folds for every one-vs-rest problem
        if multinomial:
            solver = _multinomial_fit.AUTO_SOLVER if self.solver == "auto" else solver
            targets, loss = [y], "multinomial"
            evaluate = _MultinomialScores(classes, scorer)
        else:
            positives = [classes[1]] if classes.shape[0] == 2 else list(classes)
            targets, loss = [np.where(y == positive, 1.0, -1.0) for positive in positives], self.loss
            evaluate = _BinaryScores(get_link(self.loss), scorer)
        fits = self._cross_validate(X, targets, loss, sample_weight, folds, solver, evaluate)
        self.solver_ = solver
        self.classes_ = classes
        self.multi_class_ = "multinomial" if multinomial else "ovr"
        rows = classes.shape[0] if multinomial else 1  # a multinomial model's one lam, once per row
        self.coef_ = np.vstack([fit.path.coef_at(fit.chosen) for fit in fits])
        self.intercept_ = np.hstack([fit.path.intercepts[fit.chosen] for fit in fits])
        self.lam_ = np.repeat([fit.lams[fit.chosen] for fit in fits], rows)
        self.lam_min_ = np.repeat([fit.lams[fit.best] for fit in fits], rows)
        self.lam_1se_ = np.repeat([fit.lams[fit.one_se] for fit in fits], rows)
        self.n_iter_ = np.repeat([fit.path.n_iter[fit.chosen] for fit in fits], rows)
        self.converged_ = np.repeat([fit.path.converged[fit.chosen] for fit in fits], rows)
        stack = (lambda arrays: arrays[0]) if len(fits) == 1 else np.stack  # one-vs-rest: a class axis first
        self.lams_ = stack([fit.lams for fit in fits])
        self.scores_ = stack([fit.scores for fit in fits])
        self.cv_mean_ = stack([fit.scores.mean(axis=0) for fit in fits])
        self.cv_se_ = stack([_standard_error(fit.scores) for fit in fits])
        self.path_ = fits[0].path if len(fits) == 1 else [fit.path for fit in fits]
        self.cv_results_ = _cv_results(self.lams_, self.scores_, self.cv_se_)
        self.result_ = None
        for fit, positive in zip(fits, classes if len(fits) > 1 else [None]):
            self._warn_at_edge(fit, positive)
        return self

    def _warn_at_edge(self, fit, positive):
        """A GridEdgeWarning when the chosen lam is the first or the last of its grid."""
        k, n = fit.chosen, fit.lams.shape[0]
        if n < 2 or 0 < k < n - 1:
            return
        if isinstance(positive, np.generic):
            positive = positive.item()
        who = "" if positive is None else f"class {positive}: "
        lam = f"the chosen lam {fit.lams[k]:.4g} (rule={self.rule!r})"
        if k == n - 1:
            grid = "lams" if self.lams is not None else f"lam_min_ratio={self.lam_min_ratio!r}"
            message = (
                f"{who}{lam} is the smallest of the grid: a smaller lam may score better. Extend the grid "
                f"downwards ({'a smaller lam_min_ratio' if self.lams is None else 'smaller lams'}; now {grid}, "
                f"`l1scale path --lam-min-ratio`) and fit again."
            )
        elif self.lams is None:
            message = (
                f"{who}{lam} is the largest of the grid, lam_max, where the model has no nonzero weight: no "
                "lam of the grid scores better than the intercept alone"
                + (" by more than one standard error" if self.rule == "1se" else "")
                + ". The features may carry little signal for this model: try scaling them, another scoring"
                + (", or rule='min'." if self.rule == "1se" else ".")
            )
        else:
            message = (
                f"{who}{lam} is the largest of the grid: a larger lam (a sparser model) may score as well. "
                "Extend the grid upwards (lams=) and fit again."
            )
        warnings.warn(message, GridEdgeWarning, stacklevel=3)

    def save(self, path, metadata=None):
        """Write the refitted model as :meth:`SparseLogisticRegression.save` would: a
        :class:`~l1scale.SparseLogisticRegression` at ``lam_`` (what :func:`l1scale.load` reads
        back; the cross-validation's own attributes, ``scores_``, ``cv_results_``, ... are not kept).

        Parameters
        ----------
        path : str or path-like
        metadata : dict, optional
            More JSON facts stored with the model.
        """
        check_is_fitted(self)
        params = {k: v for k, v in self.get_params().items() if k in SparseLogisticRegression().get_params()}
        if np.size(self.lam_) == 1 or self.multi_class_ == "multinomial":  # one lam
            params["lam"] = float(self.lam_[0])
        model = SparseLogisticRegression(**params)
        for name, value in vars(self).items():
            if name.endswith("_") and not name.startswith("_") and name not in _CV_ATTRIBUTES:
                setattr(model, name, value)
        model.save(path, metadata=metadata)

    def _cross_validate(self, X, targets, loss, sample_weight, folds, solver, evaluate):
        """The problems (y in ``targets``: one per class for one-vs-rest, y_pm in {-1, +1}; one
        of labels for ``loss="multinomial"``) on the same folds: a :class:`_CVFit` per problem
        (its grid, scores (n_folds, K), the best, 1se and chosen lams' indices, and the refit
        path down to the chosen lam). ``evaluate(path, X_test, y_test)``: the held-out scores.

        The paths of every (fold, class) run in threads over n_jobs. X is converted to the
        column layout once, and each fold's training rows are taken from it once for all
        classes (``column_matrix_rows``: no conversion per fold; as the folds are reached, so
        that only a few are held at a time; for a single problem by the job that solves the
        fold, :class:`_Fold`). The refits then follow, each down to its
        chosen lam, in threads. With fewer classes than threads (a binary problem on 2 cores),
        threads would idle while the last folds and then the refits run: the refits start
        first instead, alongside the folds, over the whole grid, and are cut at the chosen lam
        (the path of a grid's first lams is the first rows of its path: the same numbers), at
        the cost of the lams past the chosen one (5 folds and a refit on 2 cores: 3 rounds,
        not 4).

        With ``standardize`` each fold's path scales its training rows by their own standard
        deviations (``regularization_path(standardize=True)``); the grid and the refits use the
        scales of all the data."""
        X_columns = column_matrix(X, checked=True)  # fit's validate_data has just checked X
        sigma = None
        if self.standardize:  # all the data's scales: the grid's lam_max and the refits
            sigma = _standardize.column_scales(X_columns, sample_weight)
            X_all = column_matrix(_standardize.scaled(X_columns, sigma))
        else:
            X_all = X_columns
        penalty = dict(l1_ratio=self.l1_ratio, fit_intercept=self.fit_intercept, sample_weight=sample_weight)
        if self.lams is None:
            grids = [
                lam_grid(
                    (
                        MultinomialProblem(X_all, y, lam=1.0, **penalty)
                        if loss == "multinomial"
                        else Problem(X_all, y, loss, lam=1.0, **penalty)  # any lam: lam_max does not depend on it
                    ).lam_max(),
                    self.n_lams,
                    self.lam_min_ratio,
                )
                for y in targets
            ]
        else:
            grids = [np.sort(np.asarray(self.lams, dtype=np.float64))[::-1]] * len(targets)
        n = len(targets)
        ahead = n < thread_count(self.n_jobs)  # refits alongside the folds, the longest first
        counter = _Counter(self.progress, sum(g.size for g in grids) * (len(folds) + 1))
        # A lam at a time from the threads, or a job at a time from worker processes.
        here = in_this_process(self.n_jobs)
        on_result = None if here or self.progress is None else counter.job_done
        kw = dict(
            l1_ratio=self.l1_ratio,
            fit_intercept=self.fit_intercept,
            solver=solver,
            tol=self.tol,
            max_iter=self.max_iter,
            callback=counter.step if here and self.progress is not None else None,
        )

        def refit(k, n_lams=None):
            return delayed(_refit_path)(
                X_all, targets[k], loss, sigma, lams=grids[k][:n_lams], sample_weight=sample_weight, **kw
            )

        def fold_jobs():  # fold by fold, so that a fold's matrices are dropped once its paths are done
            for i, (train, test) in enumerate(folds):
                fold = _Fold(X_columns, X, train, test, shared=n > 1)
                for y, lams in zip(targets, grids):
                    if loss == "multinomial" and np.unique(y[train]).shape[0] != evaluate.classes.shape[0]:
                        missing = np.setdiff1d(evaluate.classes, y[train])
                        raise ValueError(
                            f"cv: fold {i}'s training rows lack class {missing[0]!r}: a multinomial model needs "
                            "every class in every training fold (fewer folds, or stratified ones)"
                        )
                    yield delayed(_fold_scores)(
                        fold,
                        y[train],
                        sample_weight[train],
                        y[test],
                        lams,
                        loss,
                        evaluate,
                        dict(kw, standardize=bool(self.standardize)),
                    )

        jobs = itertools.chain((refit(k) for k in range(n) if ahead), fold_jobs())
        done = run_in_threads(jobs, self.n_jobs, on_result)
        paths, fold_scores = (done[:n], done[n:]) if ahead else (None, done)
        # fold-major: [fold 0 class 0, fold 0 class 1, ..., fold 1 class 0, ...]
        scores = [np.asarray(fold_scores[k::n]) for k in range(n)]
        best = [_best(s) for s in scores]
        one_se = [_one_standard_error(s, b) for s, b in zip(scores, best)]
        chosen = best if self.rule == "min" else one_se
        full = self.refit_path == "full"
        if ahead:
            paths = paths if full else [path.first(c + 1) for path, c in zip(paths, chosen)]
        else:
            stops = [None if full else c + 1 for c in chosen]  # None: the whole grid
            counter.total = sum(g.size for g in grids) * len(folds) + sum(
                g.size if stop is None else stop for g, stop in zip(grids, stops)
            )
            paths = run_in_threads((refit(k, stop) for k, stop in enumerate(stops)), self.n_jobs, on_result)
        return [_CVFit(*fit) for fit in zip(grids, scores, best, one_se, chosen, paths)]


class _CVFit(NamedTuple):
    """One binary problem's cross-validation: its grid, the held-out scores (n_folds, K), the
    indices of the best, the 1se and the chosen lams, and the refit path down to the chosen."""

    lams: np.ndarray
    scores: np.ndarray
    best: int
    one_se: int
    chosen: int
    path: PathResult


class _Counter:
    """``regularization_path``'s callback counting solves for a ``progress(done, total)``
    hook, from any thread (one call at a time, ``done`` increasing)."""

    def __init__(self, progress, total):
        self.progress, self.total, self.done = progress, total, 0
        self._lock = threading.Lock()

    def step(self, k, result):
        self.advance(1)

    def advance(self, solves):
        if self.progress is None:
            return
        with self._lock:
            self.done += solves
            self.progress(self.done, max(self.total, self.done))

    def job_done(self, result):
        """A whole job's solves at once, counted here as its result arrives from a worker
        process (which cannot call back): a fold's scores, one per lam, or a refit's path."""
        self.advance(result.lams.size if isinstance(result, PathResult) else len(result))


def _best(scores):
    """Index of the best mean score (the first, the largest lam, among equals)."""
    return int(np.argmax(scores.mean(axis=0)))


def _standard_error(scores):
    """Standard error of the mean score per lam over the folds (rows): std(ddof=1) / sqrt(n_folds)."""
    n_folds = scores.shape[0]
    if n_folds < 2:
        return np.zeros(scores.shape[1])
    return scores.std(axis=0, ddof=1) / np.sqrt(n_folds)


def _one_standard_error(scores, best):
    """glmnet's lambda.1se: the first lam (the largest, grids decreasing) whose mean score is at
    least the best mean minus its standard error."""
    mean = scores.mean(axis=0)
    threshold = mean[best] - _standard_error(scores)[best]
    return int(np.flatnonzero(mean >= threshold)[0])


def _cv_results(lams, scores, se):
    """scikit-learn's ``cv_results_`` names for the per-lam scores (a class axis first for one-vs-rest)."""
    mean = scores.mean(axis=-2)
    order = np.argsort(np.argsort(-mean, axis=-1, kind="stable"), axis=-1, kind="stable")
    results = {
        "param_lam": lams,
        "mean_test_score": mean,
        "std_test_score": scores.std(axis=-2),
        "se_test_score": se,
        "rank_test_score": order + 1,
    }
    for i in range(scores.shape[-2]):
        results[f"split{i}_test_score"] = scores[..., i, :]
    return results


def _refit_path(X, y, loss, sigma, **kw):
    """The path on all the data (X already scaled by ``sigma`` with standardize), its
    coefficients put back on the original scale."""
    path = regularization_path(X, y, loss, **kw)
    return path if sigma is None else path.rescaled(sigma)


class _Fold:
    """A cross-validation fold's rows: the column matrix of its training rows, taken from X's
    (:func:`~l1scale.data.memory.column_matrix_rows`), and X's held-out rows.

    ``shared`` (one-vs-rest: every class's job reads the same rows): made at once, by the thread
    that builds the jobs, and kept for them all. Otherwise made by the job that uses them and
    dropped with it: with n_jobs threads a CV holds the running folds' copies only, not also the
    copies of the jobs queued behind them (up to twice as many), and the main thread does not
    copy while the other folds solve."""

    def __init__(self, X_columns, X, train, test, shared):
        self.X_columns, self.X, self.train, self.test = X_columns, X, train, test
        self._made = self._make() if shared else None

    def _make(self):
        return column_matrix_rows(self.X_columns, self.train), self.X[self.test]

    def matrices(self):
        """(X_train, X_test)."""
        return self._made if self._made is not None else self._make()


def _fold_scores(fold, y_train, sample_weight, y_test, lams, loss, evaluate, kw):
    """The path on one training fold of one problem (standardised, with ``kw["standardize"]``,
    by the fold's training rows alone), and the held-out score of every lam."""
    X_train, X_test = fold.matrices()
    path = regularization_path(X_train, y_train, loss, lams=lams, sample_weight=sample_weight, **kw)
    return evaluate(path, X_test, y_test)


class _BinaryScores(NamedTuple):
    """Held-out scores of a binary path: ``scorer(y_pm, P(y = +1))`` per lam."""

    link: object
    scorer: object

    def __call__(self, path, X_test, y_test):
        margins = path.margins(X_test)
        return [self.scorer(y_test, self.link(margins[:, k])) for k in range(path.lams.size)]


class _MultinomialScores(NamedTuple):
    """Held-out scores of a multinomial path: ``scorer(labels, softmax probabilities)`` per lam."""

    classes: np.ndarray
    scorer: object

    def __call__(self, path, X_test, y_test):
        margins = path.margins(X_test)  # (n_test, K, n_classes)
        return [self.scorer(y_test, _multinomial_fit.softmax(margins[:, k])) for k in range(path.lams.size)]


def get_link(loss):
    """P(y = +1 | margin) for a probabilistic loss."""
    from scipy.special import expit, ndtr

    return {"logistic": expit, "probit": ndtr}[loss]
