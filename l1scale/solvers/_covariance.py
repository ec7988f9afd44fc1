"""The Lasso solved on its covariances, for data of many more rows than features.

For the squared loss, with the intercept eliminated (b = ybar - xbar . w, weighted means),

    P(w) = 1/2 w^T S w - q^T w + 1/2 s_yy + lam1 ||w||_1,

S = X_c^T C X_c (the c-weighted Gram matrix of the centred columns), q = X_c^T C y_c and s_yy =
y_c^T C y_c. Once S and q are known (one pass over X's rows' outer products, ``_gram_kernels.model_gram``),
CD never reads X again: its gradient g = S w - q is kept in O(d) a move, and so is the duality gap,

    rho = y_c - X_c w,  ||rho||_C^2 = s_yy - 2 q^T w + w^T S w,  X_c^T C rho = -g,
    theta = rho / s,  s = max(1, ||g||_inf / lam1),  D(theta) = (s_yy - q^T w) / s - ||rho||_C^2 / (2 s^2),

glmnet's covariance updates (its Gaussian solver for few features). CD's Newton steps read X at every
step instead (the passes over the features, the margins and the line search over n rows, each
certificate). The form is taken where S costs at most ``PAIRS_PER_VALUE`` times a pass over X to
build (a9a: 123 columns, 14 values a row) and holds at most ``MAX_FEATURES`` columns; it is kept on
the problem, so a path builds it once. The returned point is certified by the problem's own
duality gap (a pass over X); where that does not meet tol (the covariance form's sums cancel when
the residual is tiny against y), the caller goes on with CD from there.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..problems.base import Certificate
from ._cg_kernels import support_gradient
from ._gram_kernels import gram_cost, model_gram

__all__ = ["Covariances", "applies", "certified_point", "columns_dot", "covariances", "solve"]

#: S is built when its multiply-adds (sum over rows of k_i (k_i + 1) / 2) are at most this many
#: times X's stored values: the Newton steps of one fit read 20-50 passes over a9a.
PAIRS_PER_VALUE = 10.0
#: ... and S has at most this many columns ((d + 1)^2 floats: 8 MB).
MAX_FEATURES = 1000
#: Sweeps over every feature before the form gives up (the caller's CD goes on).
MAX_SWEEPS = 10000
#: After each sweep over every feature, at most this many over the nonzero weights.
ACTIVE_SWEEPS = 10


class Covariances:
    """S, q, s_yy and the weighted means of a squared-loss problem (the module's docstring)."""

    def __init__(self, problem):
        d = problem.n_features
        arrays = problem.columns.arrays
        c, y = problem.c, problem.y
        counts = np.empty(problem.n_samples, dtype=np.int64)
        active = np.arange(d, dtype=np.int64)
        nnz, pairs = gram_cost(*arrays, active, d, counts)
        self.work = int(nnz + pairs)  # what building S read and multiplied, in nonzeros-read units
        Q = model_gram(*arrays, active, d, c, counts, True)  # bordered by X^T c, corner sum c
        sc = Q[d, d]
        xc = Q[:d, d]  # X^T c
        Xty = columns_dot(problem, c * y)
        cy = float(c @ y)
        if problem.fit_intercept:
            self.xbar, self.ybar = xc / sc, cy / sc
            self.S = Q[:d, :d] - np.outer(xc, self.xbar)
            self.q = Xty - xc * self.ybar
            self.syy = float(c @ (y * y)) - cy * self.ybar
        else:
            self.xbar, self.ybar = np.zeros(d), 0.0
            self.S = np.ascontiguousarray(Q[:d, :d])
            self.q = Xty
            self.syy = float(c @ (y * y))
        self.diag = np.ascontiguousarray(np.diag(self.S))


def columns_dot(problem, v):
    """X^T v over the problem's columns."""
    out = np.empty(problem.n_features)
    every = np.arange(problem.n_features, dtype=np.int64)
    support_gradient(*problem.columns.arrays, every, v, False, out)
    return out


def applies(problem, solver):
    """Whether ``solver`` (a CoordinateDescent) solves ``problem`` on its covariances: the squared
    loss without an L2 term (its dual is the rescaled residual's), no checkpoint, and an S cheap
    enough to build (the module's docstring; decided once per data set)."""
    if not (problem.loss.constant_curvature and problem.loss.has_conjugate and problem.penalty.l2 == 0.0):
        return False
    if solver.checkpoint is not None or problem.n_features > MAX_FEATURES:
        return False
    return problem.derived("covariances_pay", lambda: _pays(problem))


def _pays(problem):
    """S's multiply-adds are at most ``PAIRS_PER_VALUE`` passes over X."""
    counts = np.empty(problem.n_samples, dtype=np.int64)
    every = np.arange(problem.n_features, dtype=np.int64)
    nnz, pairs = gram_cost(*problem.columns.arrays, every, problem.n_features, counts)
    return pairs <= PAIRS_PER_VALUE * max(nnz, 1)


def covariances(problem):
    """The problem's :class:`Covariances`, built once per data set (``Problem.derived``)."""
    return problem.derived("covariances", lambda: Covariances(problem))


@njit(cache=True, nogil=True)
def _sweep(S, diag, g, w, lam1, coords):
    """One cyclic CD sweep over ``coords`` of 1/2 w^T S w - q^T w + lam1 ||w||_1, g = S w - q kept
    over every coordinate. Returns the coordinates moved."""
    d = w.shape[0]
    moved = 0
    for j in coords:
        a = diag[j]
        if a <= 0.0:
            continue
        wj = w[j]
        u = a * wj - g[j]
        t = (u - lam1) / a if u > lam1 else ((u + lam1) / a if u < -lam1 else 0.0)
        if wj == 0.0 and abs(t) < 1e-12:
            t = 0.0  # as CD's steps: lam = lam_max gives w = 0 exactly, not a rounding off it
        delta = t - wj
        if delta != 0.0:
            w[j] = t
            for k in range(d):
                g[k] += delta * S[k, j]
            moved += 1
    return moved


def _gap(cov, w, g, lam1):
    """(P, duality gap) of the covariance form at w (the module's docstring)."""
    qw = float(cov.q @ w)
    wSw = float(w @ (g + cov.q))
    rho2 = max(cov.syy - 2.0 * qw + wSw, 0.0)
    primal = 0.5 * rho2 + lam1 * float(np.abs(w).sum())
    s = max(1.0, float(np.abs(g).max(initial=0.0)) / lam1)
    dual = (cov.syy - qw) / s - rho2 / (2.0 * s * s)
    return primal, primal - dual


def solve(problem, w, tol, max_sweeps=MAX_SWEEPS, record=None):
    """Minimise the problem's P on its covariances from ``w`` (changed in place) until the
    covariance form's relative duality gap is at most ``tol``. ``record(sweep, P, gap)`` after
    each sweep. Returns (the intercept for w, sweeps)."""
    cov = covariances(problem)
    lam1 = problem.penalty.l1
    g = cov.S @ w - cov.q
    every = np.arange(w.shape[0], dtype=np.int64)
    sweeps = 0
    while sweeps < max_sweeps:
        moved = _sweep(cov.S, cov.diag, g, w, lam1, every)
        # Sweeps over the nonzero weights alone until they settle (glmnet's active set): a full
        # sweep checks every coordinate, and the zeros rarely move between two of them.
        support = np.flatnonzero(w).astype(np.int64)
        for _ in range(ACTIVE_SWEEPS):
            if _sweep(cov.S, cov.diag, g, w, lam1, support) == 0:
                break
        sweeps += 1
        primal, gap = _gap(cov, w, g, lam1)
        if record is not None:
            record(sweeps, primal, gap)
        if gap <= tol * abs(primal) or moved == 0:
            break
    return cov.ybar - float(cov.xbar @ w), sweeps


def certified_point(problem, w, b):
    """The problem's own certificate at (w, b) (b made optimal for w), from one product with X:
    (Certificate, b, loss gradient, dual point u). The loss gradient X^T (c u) at the optimal
    intercept is S w - q (the module's docstring), computed afresh from S rather than read from X
    (a second pass, which cost as much as the rest of a lam of a9a's path)."""
    z = problem.margins(w, 0.0)
    if problem.fit_intercept:
        b = problem.optimal_intercept(z, b)
    z = z + b
    u = problem.loss.derivative(problem.y, z)
    cov = covariances(problem)
    v = cov.S @ w - cov.q
    cert = problem.certificate_from(w, b, z, u, v)
    # A gap below zero by rounding only is 0, as CD reports it (Certificate.duality_gap).
    return Certificate.duality_gap(cert.objective, cert.objective - cert.value), b, v, u


def warm_up():
    """Compile (or load from Numba's cache) the kernels on tiny inputs."""
    S, v = np.eye(2), np.ones(2)
    _sweep(S, v, v.copy(), v.copy(), 0.1, np.arange(2, dtype=np.int64))
