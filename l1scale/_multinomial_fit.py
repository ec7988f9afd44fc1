"""The multinomial fit of :class:`~l1scale.SparseLogisticRegression` (``multi_class``): which
fits are multinomial, and the one softmax problem solved in their place of the one-vs-rest
binary problems.

``multi_class="auto"`` (the default) fits the multinomial model for more than two classes when
the solver fits it (``solver="auto"`` in memory then picks ``"multinomial_cd"``; a solver given
by name that fits binary problems only keeps one-vs-rest), as scikit-learn does;
``"multinomial"`` asks for it (an error where it cannot be had); ``"ovr"`` keeps one-vs-rest.
With two classes every choice fits the binary model: the two-class softmax with the L1
penalty has the same optimum (:mod:`l1scale.solvers.multinomial`) and the same probabilities.
"""

from __future__ import annotations

import numpy as np

from .penalties import DEFAULT_LAM_RATIO
from .problems.multinomial import MultinomialProblem
from .solvers import SOLVERS
from .solvers.base import Solver

__all__ = ["MULTI_CLASS", "check", "fit", "softmax", "wanted"]

#: The values of ``multi_class``.
MULTI_CLASS = ("auto", "ovr", "multinomial")
#: The solver ``solver="auto"`` picks for a multinomial fit in memory.
AUTO_SOLVER = "multinomial_cd"


def _fits_multinomial(solver) -> bool:
    if isinstance(solver, Solver):
        return bool(getattr(solver, "multinomial", False))
    return solver in SOLVERS and bool(getattr(SOLVERS[solver], "multinomial", False))


def check(est, streamed=False):
    """Validate ``multi_class`` (before any data are read); a ValueError names the parameter."""
    mc = est.multi_class
    if not isinstance(mc, str) or mc not in MULTI_CLASS:
        raise ValueError(f"multi_class must be one of {list(MULTI_CLASS)}, got multi_class={mc!r}")
    if mc != "multinomial":
        return
    why = None
    if est.loss != "logistic":
        why = f"it is the softmax of the logistic loss, not loss={est.loss!r}"
    elif streamed or getattr(est, "features", None) is not None:
        why = "it is fitted in memory (not over a stream, a DaskDataset or a generated feature space)"
    elif est.solver != "auto" and not _fits_multinomial(est.solver):
        name = est.solver.name if isinstance(est.solver, Solver) else est.solver
        why = f"solver={name!r} fits binary problems; give solver='auto' or {AUTO_SOLVER!r}"
    elif est.two_stage is not None or est.checkpoint is not None:
        why = "two_stage and checkpoint= apply to one-vs-rest fits"
    if why is not None:
        raise ValueError(f"multi_class='multinomial' does not apply: {why} (or give multi_class='ovr')")


def wanted(est, n_classes) -> bool:
    """Whether an in-memory fit of ``n_classes`` classes is multinomial; if so, ``est.solver_``
    becomes the solver that fits it."""
    if n_classes <= 2 or est.multi_class == "ovr":
        return False
    if est.solver == "auto":
        if est.loss != "logistic" or est.two_stage is not None or est.checkpoint is not None:
            return False  # "auto": what only one-vs-rest offers keeps it
        est.solver_ = AUTO_SOLVER
        return True
    return _fits_multinomial(est.solver)


def fit(est, X, y, classes, sample_weight):
    """Fit the multinomial model on in-memory X, y (``classes``: the sorted labels) and set the
    fitted attributes: ``coef_`` (n_classes, n_features), ``intercept_`` (n_classes,), ``lam_``
    and ``n_iter_`` and ``converged_`` (one value per row, the same), ``result_`` (one Result) and
    ``multi_class_ = "multinomial"``."""
    lam = {"lam": est.lam} if est.lam is not None else {"lam_ratio": est.lam_ratio or DEFAULT_LAM_RATIO}
    problem = MultinomialProblem(
        X, y, **lam, l1_ratio=est.l1_ratio, fit_intercept=est.fit_intercept, sample_weight=sample_weight
    )
    coef_init, intercept_init = est._warm(problem.n_classes, problem.n_features)
    result = est._own_solver().solve(problem, coef_init, intercept_init)
    K = problem.n_classes
    est.classes_ = classes
    est.coef_ = np.asarray(result.coef, dtype=np.float64)
    est.intercept_ = np.asarray(result.intercept, dtype=np.float64)
    est.lam_ = np.full(K, problem.lam)
    est.n_iter_ = np.full(K, result.n_iter, dtype=np.int64)
    est.converged_ = np.full(K, bool(result.converged))
    est.result_ = result
    est.multi_class_ = "multinomial"
    return est


def softmax(scores):
    """Row-wise softmax of margins (n, n_classes): the multinomial model's probabilities."""
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
