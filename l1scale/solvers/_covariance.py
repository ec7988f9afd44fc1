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
certificate). CD on S converges linearly, and slowly where the support's columns are correlated;
the solve then steps, rent or buy, to the minimiser over the support's orthant by one factorisation
of S's block (:func:`_support_step`). The form is taken where S costs at most ``PAIRS_PER_VALUE``
times a pass over X to build (a9a: 123 columns, 14 values a row), or, along a path, at most
``PASSES_PER_SOLVE`` passes per lam (mnist10k: 784 pixel columns, S 82 passes, the 50-lam path
2.2 s -> 0.30 s), where a move on S costs no more than one on X (``MOVE_VALUES``), and holds at most
``MAX_FEATURES`` columns; it is kept on the problem, so a path builds it once. The returned point is certified by the problem's own
duality gap (a pass over X); where that does not meet tol (the covariance form's sums cancel when
the residual is tiny against y), the caller goes on with CD from there.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..problems.base import Certificate
from ._cd_kernels import support_margins
from ._cg_kernels import support_gradient
from ._cholesky import cholesky_factor, cholesky_solve
from ._gram_kernels import GRAM_BAND_BYTES, GRAM_BLOCK_ENTRIES, gram_cost, model_gram, symmetric_gram

__all__ = ["Covariances", "applies", "certified_point", "columns_dot", "covariances", "gram_limit", "solve"]

#: S is built when its multiply-adds (sum over rows of k_i (k_i + 1) / 2) are at most this many
#: times X's stored values: the Newton steps of one fit read 20-50 passes over a9a.
PAIRS_PER_VALUE = 10.0
#: Along a path, or any sequence of solves on the same data, S is built when it costs at most this
#: many passes over X per solve: each of CD's solves reads at least about that much (its working
#: sets' steps and its certifying pass; mnist10k's 50-lam Lasso path: S costs 75 passes, the path
#: read thousands).
PASSES_PER_SOLVE = 2.0
#: ... where a move on S (d multiply-adds to keep g) costs at most what one on X does, on average
#: (its column's values twice: the gradient's dot and the residual's update): d^2 <= 2 nnz(X). A
#: sparse 20,000 x 2,000 X of 40 values a row, its 50-lam path to a support of 1,916: 0.50 s by CD,
#: 0.72 s on S (d^2 = 2.5 times 2 nnz); 50,000 x 2,000 of 100 a row: 1.5 s by CD, 1.0-1.2 s on S.
MOVE_VALUES = 2.0
#: ... and S has at most this many columns ((d + 1)^2 floats: 32 MB).
MAX_FEATURES = 2000
#: Sweeps over every feature before the form gives up (the caller's CD goes on).
MAX_SWEEPS = 10000
#: After each sweep over every feature, at most this many over the nonzero weights.
ACTIVE_SWEEPS = 10


class Covariances:
    """S, q, s_yy and the weighted means of a squared-loss problem (the module's docstring).

    From the rows when the problem holds them and has not made its columns (a CSR X: each row's
    outer product is read where it lies, :func:`rows_gram`, and a solve that never reads the
    columns makes no conversion to them), else from the columns (``_gram_kernels.model_gram``)."""

    def __init__(self, problem):
        d = problem.n_features
        c, y = problem.c, problem.y
        nnz, pairs = _costs(problem)
        self.work = int(nnz + pairs)  # what building S read and multiplied, in nonzeros-read units
        if problem.rows_only:
            data, indices, indptr = problem.rows.arrays[:3]
            Q = rows_gram(data, indices, indptr, c, d)
        else:
            counts = np.empty(problem.n_samples, dtype=np.int64)
            active = np.arange(d, dtype=np.int64)
            gram_cost(*problem.columns.arrays, active, d, counts)
            Q = model_gram(*problem.columns.arrays, active, d, c, counts, True)
        # Q is bordered by X^T c, its corner sum c.
        sc = Q[d, d]
        xc = Q[:d, d]  # X^T c
        Xty = columns_dot(problem, c * y)
        cy = _dot(c, y)
        if problem.fit_intercept:
            self.xbar, self.ybar = xc / sc, cy / sc
            self.S = Q[:d, :d] - np.outer(xc, self.xbar)
            self.q = Xty - xc * self.ybar
            self.syy = _dot(c, y * y) - cy * self.ybar
        else:
            self.xbar, self.ybar = np.zeros(d), 0.0
            self.S = np.ascontiguousarray(Q[:d, :d])
            self.q = Xty
            self.syy = _dot(c, y * y)
        self.diag = np.ascontiguousarray(np.diag(self.S))


@njit(cache=True, nogil=True)
def rows_gram(data, indices, indptr, c, d):
    """Q = X^T diag(c) X bordered by X^T c and the corner sum c, (d + 1, d + 1), summed row by row
    from a canonical row layout (each row's columns increasing: its products land in the upper
    triangle, in the row of Q of their first factor), as ``_gram_kernels.model_gram`` sums them
    from columns: a block of rows (``GRAM_BLOCK_ENTRIES`` values) at a time, and within it Q's rows
    a band at a time (``GRAM_BAND_BYTES``), each row of X resuming where the last band left it, so
    that the block and the band stay in cache while the block's products land. Indices are
    unsigned (Numba checks a signed one for wrapping around: a9a 3.7 -> 2.2 ms, mnist10k 103 ->
    66 ms; model_gram over the columns 3.8 and 74 ms, after a conversion to them)."""
    n = indptr.shape[0] - 1
    size = d + 1
    Q = np.zeros(size * size)
    usize, ud, one = np.uint64(size), np.uint64(d), np.uint64(1)
    cursor = np.empty(n, dtype=np.uint64)
    for i in range(n):
        cursor[i] = indptr[i]
    band = np.uint64(max(1, min(d, GRAM_BAND_BYTES // (8 * size))))
    i0 = 0
    while i0 < n:
        i1, total = i0, 0  # rows i0..i1-1: as many as fit the block (at least one)
        while i1 < n and (i1 == i0 or total + indptr[i1 + 1] - indptr[i1] <= GRAM_BLOCK_ENTRIES):
            total += indptr[i1 + 1] - indptr[i1]
            i1 += 1
        a0 = np.uint64(0)
        while a0 < ud:
            a1 = min(a0 + band, ud)
            for i in range(i0, i1):
                ci = c[i]
                if ci == 0.0:
                    continue
                p, end = cursor[i], np.uint64(indptr[i + 1])
                while p < end and np.uint64(indices[p]) < a1:
                    row = np.uint64(indices[p]) * usize
                    vp = ci * data[p]
                    q = p
                    while q < end:
                        Q[row + np.uint64(indices[q])] += vp * data[q]
                        q += one
                    Q[row + ud] += vp
                    p += one
                cursor[i] = p
            a0 = a1
        i0 = i1
    return symmetric_gram(Q, size, c, True)


def columns_dot(problem, v):
    """X^T v, from the rows while the problem has not made its columns."""
    if problem.rows_only:
        return problem.row_correlations(v)
    out = np.empty(problem.n_features)
    every = np.arange(problem.n_features, dtype=np.int64)
    support_gradient(*problem.columns.arrays, every, v, False, out)
    return out


def applies(problem, solver, n_solves=1):
    """Whether ``solver`` (a CoordinateDescent) solves ``problem`` on its covariances: the squared
    loss without an L2 term (its dual is the rescaled residual's), no checkpoint, a move on S no
    dearer than one on X, and an S cheap enough to build for ``n_solves`` solves on the same data (a
    path's lams; the module's docstring; S's cost is measured once per data set)."""
    if not _suits(problem, solver):
        return False
    if problem.has_derived("covariances"):
        return True  # built for an earlier solve (a path's, cut in segments): free to use
    nnz, pairs = _costs(problem)
    return pairs <= max(PAIRS_PER_VALUE, PASSES_PER_SOLVE * n_solves) * nnz


#: A single solve whose S is too dear a priori goes on on S once one of CD's quadratic models would
#: buy a Gram matrix costing at least this share of S's price (such a model's columns hold much of
#: S's products, and the models after it would want theirs too).
GRAM_SHARE = 0.25


def gram_limit(problem, solver):
    """The price of a CD model's Gram matrix above which a single solve of ``problem`` goes on on its
    covariances instead (``GRAM_SHARE`` of S's price), or inf where the form does not suit the
    problem. mnist10k (784 pixel columns: S costs 82 passes over X, 66 ms) at 0.5 / 0.1 / 0.01 /
    0.001 lam_max, to tol 1e-6: CD alone 19 / 75 / 154 / 341 ms, on S from the start 71 / 72 / 75 /
    89 ms; at 0.01 and below the models cover hundreds of the pixels and buy their Gram matrices
    (a 245-column one, 75 ms of a 147 ms fit)."""
    if not _suits(problem, solver):
        return np.inf
    nnz, pairs = _costs(problem)
    return GRAM_SHARE * (nnz + pairs)


def _suits(problem, solver):
    """The squared loss without an L2 term, no checkpoint, at most ``MAX_FEATURES`` columns, and a
    move on S no dearer than one on X (``MOVE_VALUES``): what :func:`applies` asks but S's price."""
    if not (problem.loss.constant_curvature and problem.loss.has_conjugate and problem.penalty.l2 == 0.0):
        return False
    if solver.checkpoint is not None or problem.n_features > MAX_FEATURES:
        return False
    if problem.has_derived("covariances"):
        return True
    nnz, _ = _costs(problem)
    return problem.n_features**2 <= MOVE_VALUES * nnz


def pairs_per_value(problem):
    """S's multiply-adds over X's stored values (measured once per data set)."""
    nnz, pairs = _costs(problem)
    return pairs / nnz


def _costs(problem):
    """(X's stored values (at least 1), S's multiply-adds), measured once per data set."""

    def measure():
        if problem.rows_only:  # sum_i k_i (k_i + 1) / 2 from the rows' lengths, as gram_cost's
            k = np.diff(problem.rows.arrays[2]).astype(np.float64)
            return max(int(k.sum()), 1), float(k @ (k + 1.0)) / 2.0
        counts = np.empty(problem.n_samples, dtype=np.int64)
        every = np.arange(problem.n_features, dtype=np.int64)
        nnz, pairs = gram_cost(*problem.columns.arrays, every, problem.n_features, counts)
        return max(int(nnz), 1), float(pairs)

    return problem.derived("covariance_costs", measure)


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
            row = S[j]  # S is symmetric: its row, contiguous, is its column
            for k in range(d):
                g[k] += delta * row[k]
            moved += 1
    return moved


# The covariance form's sums are loops in a fixed order, not BLAS's products: BLAS sums in an order that
# depends on its arrays' alignment, and a path's lams, in threads or not, give the same bits.


@njit(cache=True, nogil=True)
def _dot(a, b):
    total = 0.0
    for i in range(a.shape[0]):
        total += a[i] * b[i]
    return total


def gradient(cov, w):
    """S w - q, from the rows of S at w's nonzero weights."""
    g = -cov.q
    support = np.flatnonzero(w).astype(np.int64)
    _add_rows(cov.S, support, w[support], g)
    return g


def _gap(cov, w, g, lam1):
    """(P, duality gap) of the covariance form at w (the module's docstring)."""
    qw = _dot(cov.q, w)
    wSw = _dot(w, g + cov.q)
    rho2 = max(cov.syy - 2.0 * qw + wSw, 0.0)
    primal = 0.5 * rho2 + lam1 * float(np.abs(w).sum())
    s = max(1.0, float(np.abs(g).max(initial=0.0)) / lam1)
    dual = (cov.syy - qw) / s - rho2 / (2.0 * s * s)
    return primal, primal - dual


def solve(problem, w, tol, max_sweeps=MAX_SWEEPS, record=None):
    """Minimise the problem's P on its covariances from ``w`` (changed in place) until the
    covariance form's relative duality gap is at most ``tol``. ``record(sweep, P, gap)`` after
    each sweep. Returns (the intercept for w, sweeps).

    Each sweep over every feature is followed by sweeps over the nonzero weights (glmnet's active
    set), and, once the sweeps since the last one have cost as much, by an exact solve on the
    support (:func:`_support_step`, rent or buy): CD converges linearly, slowly where the
    support's columns are correlated (mnist10k's pixels at 0.001 lam_max: hundreds of sweeps a
    lam), where one factorisation of S over the support finds its minimiser."""
    cov = covariances(problem)
    lam1 = problem.penalty.l1
    d = w.shape[0]
    g = gradient(cov, w)
    every = np.arange(d, dtype=np.int64)
    sweeps, work = 0, 0.0  # work: CD's multiply-adds since the last support step
    while sweeps < max_sweeps:
        moved = _sweep(cov.S, cov.diag, g, w, lam1, every)
        work += d * (moved + 1)
        # Sweeps over the nonzero weights alone until they settle (glmnet's active set): a full
        # sweep checks every coordinate, and the zeros rarely move between two of them.
        support = np.flatnonzero(w).astype(np.int64)
        for _ in range(ACTIVE_SWEEPS):
            moves = _sweep(cov.S, cov.diag, g, w, lam1, support)
            work += d * moves + support.shape[0]
            if moves == 0:
                break
        sweeps += 1
        primal, gap = _gap(cov, w, g, lam1)
        if record is not None:
            record(sweeps, primal, gap)
        if gap <= tol * abs(primal) or moved == 0:
            break
        k = support.shape[0]
        if k > 0 and work >= _support_step_work(k, d):
            _support_step(cov, w, g, lam1, support)
            work = 0.0
    return cov.ybar - _dot(cov.xbar, w), sweeps


def _support_step_work(k, d):
    """:func:`_support_step`'s multiply-adds on a support of k of d features (the factorisation's
    k^3 / 6, its two triangular solves, the gradient's update), in CD's units (a move: d)."""
    return k**3 / 6.0 + k * k + d * k


def _support_step(cov, w, g, lam1, support):
    """The step towards the minimiser of P over the support's orthant, w_A -> x,
    S_AA x = q_A - lam1 sign(w_A) (P is a quadratic there), cut where the first weight reaches zero
    (along the segment P falls: it is convex and its minimum on the line is at x); g = S w - q
    kept. Nothing moves when S_AA is not numerically positive definite, or when the step, as
    rounded, would not lower P (a nearly singular block: collinear columns in the support, a
    one-hot block beside the eliminated intercept): CD goes on."""
    signs = np.sign(w[support])
    block = cov.S[np.ix_(support, support)]
    L = cholesky_factor(block)
    if L.shape[0] == 0:
        return
    x = np.empty(support.shape[0])
    cholesky_solve(L, cov.q[support] - lam1 * signs, x)
    current = w[support]
    direction = x - current
    # Where x leaves the orthant, the first weight to reach zero ends the step (t_i in (0, 1]).
    crossing = np.sign(x) != signs
    reach = np.ones(support.shape[0])
    reach[crossing] = -current[crossing] / direction[crossing]
    step = float(reach.min())
    new = current + step * direction
    new[(crossing & (reach <= step)) | (np.sign(new) != signs)] = 0.0  # at zero, not rounded past it
    # P's change on the orthant's face, where its L1 term is linear: g_A + lam1 sign is its gradient.
    delta = new - current
    if (g[support] + lam1 * signs) @ delta + 0.5 * delta @ (block @ delta) >= 0.0:
        return
    w[support] = new
    _add_rows(cov.S, support, delta, g)


@njit(cache=True, nogil=True)
def _add_rows(S, rows, delta, g):
    """g += S[rows]^T delta (S symmetric: its rows, contiguous, are its columns), summed in a fixed
    order: a path's lams give the same bits whatever the arrays' alignment (BLAS's products do not)."""
    for a in range(rows.shape[0]):
        row, step = S[rows[a]], delta[a]
        for k in range(g.shape[0]):
            g[k] += step * row[k]


def certified_point(problem, w, b):
    """The problem's own certificate at (w, b) (b made optimal for w), from one product with X:
    (Certificate, b, loss gradient, dual point u). The loss gradient X^T (c u) at the optimal
    intercept is S w - q (the module's docstring), computed afresh from S rather than read from X
    (a second pass, which cost as much as the rest of a lam of a9a's path)."""
    if problem.rows_only:
        z = problem.margins(w, 0.0)  # one pass over the rows
    else:
        z = np.empty(problem.n_samples)
        support_margins(*problem.columns.arrays, w, 0.0, z)  # from the nonzero weights' columns only
    if problem.fit_intercept:
        b = problem.optimal_intercept(z, b)
    z = z + b
    u = problem.loss.derivative(problem.y, z)
    cov = covariances(problem)
    v = gradient(cov, w)
    cert = problem.certificate_from(w, b, z, u, v)
    # A gap below zero by rounding only is 0, as CD reports it (Certificate.duality_gap).
    return Certificate.duality_gap(cert.objective, cert.objective - cert.value), b, v, u
