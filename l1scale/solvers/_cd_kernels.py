"""Jitted kernels of the batch coordinate-descent solver (``cd.py`` drives them): the passes over
the features in play, CD's sweeps over a quadratic model and the Newton direction they solve for,
the model's dual point, and the line search's sums.

Every kernel works in place on arrays the driver owns, over a list of columns (the
working set, or every feature not yet screened out), and releases the GIL so that
one-vs-rest problems, folds and path segments can run in threads. A model's Gram matrix and
its sweeps are in ``_gram_kernels``, the support's conjugate gradients in ``_cg_kernels``, the
coordinate step both kinds of sweep take and the curvature floor ``NU`` in ``_quadratic_step``.

Notation: ``r = c * loss'(y, z)`` and ``D = c * loss''(y, z)`` at the margins ``z``;
``lam1``, ``lam2`` the L1 and L2 weights of the penalty; ``NU`` liblinear's
curvature floor.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..data.memory import (
    column_axpy,
    column_dots,
    column_moments,
    column_weighted_dot,
    column_weighted_dot_and_sum,
    columns_axpy,
)
from ..losses import conjugate_domain_clip
from ._gram_kernels import (
    FACE_AFTER,
    curvature_term_gram,
    gram_cost,
    gram_face_descent,
    gram_support_solve,
    gram_sweep,
    gram_times_step,
    model_gram,
)
from ._quadratic_step import NU, coordinate_step, intercept_eliminated


@njit(cache=True, nogil=True)
def seed(value):
    np.random.seed(value)


@njit(cache=True, nogil=True)
def changed_count(a, b):
    """|a xor b| for two sorted arrays of distinct indices (two supports): one merge
    (np.setxor1d, which it replaces, made temporaries and a sort)."""
    i, j, common = 0, 0, 0
    while i < a.shape[0] and j < b.shape[0]:
        if a[i] == b[j]:
            common += 1
            i += 1
            j += 1
        elif a[i] < b[j]:
            i += 1
        else:
            j += 1
    return a.shape[0] + b.shape[0] - 2 * common


@njit(cache=True, nogil=True)
def outer_pass(data, indices, indptr, dense, cols, r, D, w, lam1, lam2, shrink_at, g, H, active):
    """Gradient, curvature and violations over the columns ``cols``; liblinear's outer shrinking.

    For j in cols: g[j] = sum_i r_i x_ij + lam2 w_j and H[j] = sum_i D_i x_ij^2 + lam2 + nu;
    a zero weight with |g_j| < lam1 - shrink_at is left out, the others are written to
    active[:m] (shrink_at = inf keeps every column). Shapes: r, D (n,); w, g, H (d,);
    cols, active (k,).
    Returns (m, largest violation, sum of violations, nnz(w) over cols, largest violation of a
    zero weight).
    """
    m, vmax, vsum, nnz, vzero = 0, 0.0, 0.0, 0, 0.0
    for k in range(cols.shape[0]):
        j = cols[k]
        acc_g, acc_h = column_moments(data, indices, indptr, dense, j, r, D)
        wj = w[j]
        gj = acc_g + lam2 * wj
        g[j], H[j] = gj, acc_h + lam2 + NU
        if wj == 0.0:
            viol = max(abs(gj) - lam1, 0.0)
            vzero = max(vzero, viol)
            if abs(gj) < lam1 - shrink_at:
                continue
        else:
            nnz += 1
            viol = abs(gj + lam1) if wj > 0.0 else abs(gj - lam1)
        vmax = max(vmax, viol)
        vsum += viol
        active[m] = j
        m += 1
    return m, vmax, vsum, nnz, vzero


@njit(cache=True, nogil=True)
def check_pass(data, indices, indptr, dense, cols, r, w, lam1, lam2, g):
    """The certifying pass: g[j] = sum_i r_i x_ij + lam2 w_j for j in cols, without the
    curvature (it reads half what :func:`outer_pass` reads). Shapes: r (n,); w, g (d,); cols (k,).
    Returns (largest violation, sum of violations, nnz(w) over cols, largest violation of a zero weight).
    """
    vmax, vsum, nnz, vzero = 0.0, 0.0, 0, 0.0
    dots = np.empty(cols.shape[0])
    column_dots(data, indices, indptr, dense, cols, r, dots)
    for k in range(cols.shape[0]):
        j = cols[k]
        wj = w[j]
        gj = dots[k] + lam2 * wj
        g[j] = gj
        if wj == 0.0:
            viol = max(abs(gj) - lam1, 0.0)
            vzero = max(vzero, viol)
        else:
            nnz += 1
            viol = abs(gj + lam1) if wj > 0.0 else abs(gj - lam1)
        vmax = max(vmax, viol)
        vsum += viol
    return vmax, vsum, nnz, vzero


@njit(cache=True, nogil=True)
def column_curvatures(data, indices, indptr, dense, cols, D, out):
    """out[q] = sum_i D_i x_{i, cols[q]}^2: a Newton system's diagonal on ``cols``."""
    for q in range(cols.shape[0]):
        _, out[q] = column_moments(data, indices, indptr, dense, cols[q], D, D)


@njit(cache=True, nogil=True)
def support_margins(data, indices, indptr, dense, w, b, z):
    """z = X w + b from the nonzero weights only (cost: the nonzeros of their columns).

    Shapes: w (d,), z (n,). Returns the number of nonzeros read."""
    z[:] = b
    support = np.flatnonzero(w)
    return columns_axpy(data, indices, indptr, dense, support, w[support], z)


@njit(cache=True, nogil=True)
def model_sweep(
    data, indices, indptr, dense, active, m, g, H, w, wpd, xTd, D, lam1, lam2, shrink_at, fit_intercept, g_b, d_b, sum_D
):
    """One CD sweep, in random order, over active[:m] of the quadratic model

        g.d + g_b d_b + (X d + d_b)^T diag(D) (X d + d_b) / 2 + (lam2 + nu) ||d||^2 / 2 + lam1 ||w + d||_1,

    updating wpd (= w + d) and xTd (= X d + d_b). A zero coordinate whose model gradient stays
    inside (-lam1 + shrink_at, lam1 - shrink_at) is swapped behind active[:m].

    With the intercept, each coordinate steps jointly with it: the model's minimum over (d_j, d_b)
    together, which is d_j's step on the model with d_b eliminated (gradient G_j - v_j G_b / s,
    curvature H_jj - v_j^2 / s, v_j = sum_i D_i x_ij, s = sum_i D_i + nu: the column centred by
    its D-weighted mean, as glmnet's weighted least squares centre theirs), then d_b's best answer;
    the sweep ends on the intercept's exact step. Stepped apart (the coordinates, then the
    intercept once a sweep), CD crawls along w_j - b where a column is present in most rows
    (nearly the intercept): each sweep gains a factor of about 1 - (1 - rho^2) on that direction,
    rho the column's D-weighted correlation with the constant (text at 0.001 lam_max, its most
    frequent token in 99.97% of the rows: models of hundreds of sweeps). The intercept's moves are
    summed and written into xTd once, after the sweep (the sweep reads them through v_j), so a
    coordinate costs what it did. ``sum_D``: sum_i D_i (read with the intercept only).
    Shapes: active (k,), g, H, w, wpd (d,), xTd, D (n,).
    Returns (new m, largest violation, sum of violations, nonzeros read, coordinates moved, d_b,
    |the intercept's model gradient| before its last step, 0 without it).
    """
    for s in range(m - 1):
        t = s + np.random.randint(m - s)
        active[s], active[t] = active[t], active[s]
    s_b = sum_D + NU
    sum_dx = 0.0  # sum_i D_i xTd_i, xTd holding the intercept's moves up to the sweep's start
    if fit_intercept:
        for i in range(xTd.shape[0]):
            sum_dx += D[i] * xTd[i]
    moved_b = 0.0  # the intercept's moves in this sweep, not yet in xTd
    vmax, vsum, reads, s, moves = 0.0, 0.0, 0, 0, 0
    while s < m:
        j = active[s]
        x = wpd[j]
        G, h = g[j] + (lam2 + NU) * (x - w[j]), H[j]
        v, G_b = 0.0, 0.0
        if fit_intercept:
            dot, v = column_weighted_dot_and_sum(data, indices, indptr, dense, j, D, xTd)
            G_b = g_b + NU * (d_b + moved_b) + sum_dx + moved_b * sum_D
            G, h = intercept_eliminated(G + dot + moved_b * v, h, v, G_b, s_b)
        else:
            G = column_weighted_dot(data, indices, indptr, dense, j, D, xTd, G)
        reads += indptr[j + 1] - indptr[j]
        shrink, viol, z = coordinate_step(x, G, lam1, h, shrink_at)
        if shrink:
            m -= 1
            active[s], active[m] = active[m], active[s]
            continue
        s += 1
        if z == 0.0:
            continue
        vmax = max(vmax, viol)
        vsum += viol
        wpd[j] = x + z
        reads += column_axpy(data, indices, indptr, dense, j, z, xTd)
        moves += 1
        if fit_intercept:
            sum_dx += z * v
            moved_b -= (G_b + v * z) / s_b
    if not fit_intercept:
        return m, vmax, vsum, reads, moves, d_b, 0.0
    G_b = g_b + NU * (d_b + moved_b) + sum_dx + moved_b * sum_D
    moved_b -= G_b / s_b
    for i in range(xTd.shape[0]):
        xTd[i] += moved_b
    return m, vmax, vsum, reads, moves, d_b + moved_b, abs(G_b)


class QuadraticModel(NamedTuple):
    """The quadratic model of P at w that :func:`newton_direction` minimises (arrays changed in place).

    g, H (d,): the gradient and the diagonal curvature (with the ridge) of the smooth part;
    w (d,): the point; wpd (d,): w + d, the model's iterate; xTd (n,): X d + d_b; D (n,): the
    curvature weights c * loss''. g_b: the intercept's gradient; d_b: the model iterate's
    intercept step. A solve starts from the iterate it is given (wpd = w, d_b = 0, xTd = 0 for
    a fresh one; a model grown by coordinates resumes from its last minimiser)."""

    g: np.ndarray
    H: np.ndarray
    w: np.ndarray
    wpd: np.ndarray
    xTd: np.ndarray
    D: np.ndarray
    g_b: float
    d_b: float = 0.0


class InnerSettings(NamedTuple):
    """How :func:`newton_direction` solves the model: the penalty (lam1, lam2), whether the
    intercept moves, the stopping sum of violations and sweep cap, the Gram-matrix choice
    (``gram_first``: the price of the last model's, when it needed one, else 0; ``gram_max``:
    the largest model solved on it), and when
    to solve the model on to ``dual_tol`` for its dual point: once the model predicts a
    decrease of P of at most ``dual_decrease`` (0: never), until its largest violation is
    at most ``dual_tol`` (with ``dual_on_gram``, only a model solved on its Gram matrix, whose
    further sweeps cost O(m^2), not the columns' nonzeros). ``gram_limit``: a Gram matrix of a
    higher price is not bought; the solve stops instead and says so (its caller buys something
    better: the Lasso's covariances, ``_covariance``). ``pass_reads``: the nonzeros of one pass
    over the features in play; a tight solve on the Gram matrix sweeps on past its cap while
    its sweeps' multiply-adds are at most that pass plus the Gram matrix's price, about what the
    next outer iteration would read (its model likely buys as dear a Gram matrix); -inf: the cap
    alone."""

    lam1: float
    lam2: float
    fit_intercept: bool
    inner_tol: float
    max_inner: int
    gram_first: float
    gram_max: int
    dual_decrease: float = 0.0
    dual_tol: float = 0.0
    gram_limit: float = np.inf
    dual_on_gram: bool = False
    pass_reads: float = -np.inf


# A model solved on for its dual point gets at most 20 + 2 times the sweeps it took: the tries
# that fail are the ones that crawl (ill-conditioned, signs still moving), and a capped try
# keeps its better solution (dense correlated problems, tol 1e-4: 14% fewer reads summed, as
# without the cap; mnist10k at 0.001 lam_max to 1e-4: 874M -> 694M). On the Gram matrix, sweeps
# whose multiply-adds since the tight solve began are at most a pass over the features in play
# plus the Gram matrix's price (``InnerSettings.pass_reads``) go on past the cap: about what the
# outer iteration that a certifying point saves would read (rent or buy; its at most 4 linear
# solves and the face descents, each at most the sweeps' work since the last, come with them).
# Measured, whole fits in process (median of 5, interleaved with the cap alone): a9a at 0.001
# lam_max to 1e-1 / 1e-2 60 / 62 -> 52 / 55 ms (the third step's model, 90 coordinates, needed 52
# sweeps where the cap stopped it at 48; solved, its point certified 4.7e-5, a Newton step
# sooner), mnist10k at 0.001 to 1e-1 / 1e-2 / 1e-4 465 / 467 / 509 -> 369 / 385 / 438 ms (579M /
# 574M / 592M -> 467M / 487M / 501M nonzeros read, a step fewer each); the other 136 fits of the
# twelve batch points at tol 1e-1, 1e-2, 1e-4 and 1e-6 read the same nonzeros.
TIGHT_CAP_MIN, TIGHT_CAP_FACTOR = 20, 2


# After a model solved on its Gram matrix, the next one's is built at once when it costs at most
# this many times as much (else rent-or-buy decides). Measured, earn at 0.1 lam_max: 5.7M -> 4.0M
# nonzeros read per solve (a 100-column Gram matrix no longer bought for a 5-sweep model).
GRAM_REUSE = 8.0


@njit(cache=True, nogil=True)
def newton_direction(data, indices, indptr, dense, active, m_outer, model, settings, gram_in):
    """Minimise the quadratic model over active[:m_outer] (and the intercept) by CD sweeps.

    liblinear's inner loop: shrinking at the last sweep's largest violation / n; when the
    sum of violations is <= inner_tol on the shrunk set, one more sweep over the whole
    working set decides. The model's iterate (wpd, d_b, xTd = X (wpd - w) + d_b) enters as given
    (a fresh solve: wpd = w, d_b = 0, xTd = 0) and leaves at its minimiser.

    A model that takes many sweeps (an ill-conditioned one: correlated or one-hot columns)
    goes on from where it is on its Gram matrix (:func:`model_gram`) when a sweep costs less
    there (O(1) to check a coordinate and O(m_outer) to move it, against the column's
    nonzeros twice) and the sweeps so far have read as many nonzeros as building it costs
    (rent-or-buy: never much more than the better of the two). After a model that needed
    it, it is built at once when it costs at most ``GRAM_REUSE`` times that model's
    (``gram_first``). ``gram_max`` bounds m_outer for it (memory (m_outer + 1)^2 floats).
    There, a model still unsolved after ``FACE_AFTER`` sweeps gets active-set descents on its
    faces (:func:`gram_face_descent`) whenever the sweeps since the last one cost as much as its
    linear solve.
    With ``dual_decrease`` > 0, a model whose minimiser (at inner_tol) lowers P by at most
    that much is solved on until its largest violation is at most ``dual_tol``: the residual it
    predicts there is then a dual point whose gap is about the suboptimality
    (:func:`model_dual_point`). On the Gram matrix, linear solves on the nonzero coordinates
    (:func:`gram_support_solve`) alternate with the full sweeps. A model not solved that far
    within ``TIGHT_CAP_MIN + TIGHT_CAP_FACTOR`` times its sweeps (on the Gram matrix: nor
    within the work ``pass_reads`` and its price allow) gives no dual point, but its
    better solution is kept (a more exact Newton step: on dense correlated data that alone
    saves outer iterations).
    ``gram_in``: the model's Gram matrix at these curvatures D over active[:m_outer] in their order
    (bordered by the intercept's row, as :func:`model_gram` makes it), when the caller has it
    (:func:`border_gram`: a model grown by a few coordinates), else an empty (0, 0) array; given, the
    model is solved on it from the first sweep, at the price ``gram_first``.
    Returns (d_b, sweeps, work: nonzeros read plus the Gram matrix's multiply-adds, the
    price of the Gram matrix when it was used (0: not used; -1: stopped before buying one dearer
    than ``gram_limit``, the model unsolved), whether the model was solved on to dual_tol, the
    Gram matrix over active[:m_outer] in their order on return when it was used, else an empty
    (0, 0) array).
    """
    g, H, w, wpd, xTd, D, g_b, d_b = model
    (
        lam1,
        lam2,
        fit_intercept,
        inner_tol,
        max_inner,
        gram_first,
        gram_max,
        dual_decrease,
        dual_tol,
        gram_limit,
        dual_on_gram,
        pass_reads,
    ) = settings
    tight_work = 0  # the Gram sweeps' multiply-adds since the model was first solved to inner_tol
    tight = False  # solved on to dual_tol: the model's minimiser gives a dual point
    solves, tight_from = 0, 0  # linear solves on the model's support (tight, on the Gram matrix)
    n = xTd.shape[0]
    m, shrink_at, reads, sweeps = m_outer, np.inf, 0, 0
    gram_allowed = 0 < m_outer <= gram_max
    counts = np.empty(0, dtype=np.int64)
    nnz_cols = -1  # nonzeros in the model's columns, once counted
    Q, Qd, local = np.empty((0, 0)), np.empty(0), np.empty(0, dtype=np.int64)
    use_gram, sweep_reads, moves, gram_work = False, 0, 0, 0.0
    gram_sweeps, work_since, buy_now, price = 0, 0.0, False, 0.0  # price: sweep reads at which it pays
    size = m_outer + 1 if fit_intercept else m_outer
    sum_D = -1.0  # sum_i D_i, once a sweep over the columns needs it
    while sweeps < max_inner:
        if gram_allowed and not use_gram and gram_in.shape[0] == size:
            Q, price = gram_in, gram_first
            Qd = gram_times_step(Q, active, m_outer, w, wpd, d_b, fit_intercept)
            local = np.arange(m_outer)
            use_gram = True
        if gram_allowed and not use_gram and (gram_first > 0.0 or sweeps >= 2):
            if nnz_cols < 0:
                counts = np.empty(n, dtype=np.int64)
                nnz_cols, gram_work = gram_cost(data, indices, indptr, dense, active, m_outer, counts)
                reads += nnz_cols
                price = nnz_cols + gram_work + (m_outer + 1) ** 2
                if price > gram_limit:  # a model that sweeps on, and whose Gram matrix would cost more
                    # than the caller's better purchase: stopped before renting (the price -1)
                    return d_b, sweeps, reads, -1.0, False, np.empty((0, 0))
                # Bought at once when it costs at most a few times the last model's, which
                # needed it: the next model is likely as ill-conditioned. Not a Gram matrix many
                # times dearer (earn at 0.1 lam_max: after an 8-column model's, a 100-column one
                # of frequent words costing 15 sweeps, for a model CD solves in 5).
                buy_now = price <= GRAM_REUSE * gram_first
            if buy_now or (reads >= price and m_outer + moves * (m_outer + 1) < 0.5 * sweep_reads):
                Q = model_gram(data, indices, indptr, dense, active, m_outer, D, counts, fit_intercept)
                reads += nnz_cols + int(gram_work)
                Qd = gram_times_step(Q, active, m_outer, w, wpd, d_b, fit_intercept)
                local = np.arange(m_outer)
                use_gram = True
        if use_gram:
            m, vmax, vsum, work, d_b, viol = gram_sweep(
                active, local, m, g, H, w, wpd, Q, Qd, lam1, lam2, shrink_at, fit_intercept, g_b, d_b
            )
            reads += work
        else:
            if fit_intercept and sum_D < 0.0:
                sum_D = D.sum()
            m, vmax, vsum, sweep_reads, moves, d_b, viol = model_sweep(
                data,
                indices,
                indptr,
                dense,
                active,
                m,
                g,
                H,
                w,
                wpd,
                xTd,
                D,
                lam1,
                lam2,
                shrink_at,
                fit_intercept,
                g_b,
                d_b,
                sum_D,
            )
            reads += sweep_reads
        if fit_intercept:
            vmax, vsum = max(vmax, viol), vsum + viol
        sweeps += 1
        if use_gram and vsum > inner_tol:
            # A model that CD has not solved in FACE_AFTER sweeps on its Gram matrix: an
            # active-set descent on its faces, each time the sweeps since the last one have cost
            # as much as one linear solve (rent or buy: at most twice the better of the two).
            # Solved on for its dual point too: there CD alone crawled along a one-hot block's
            # flat direction for its whole sweep cap (a9a at 0.001 lam_max, tol 1e-1: 54M -> 38M
            # nonzeros read, 171 -> 98 ms).
            gram_sweeps += 1
            work_since += work
            if gram_sweeps >= FACE_AFTER:
                k = 0
                for s in range(m_outer):
                    k += wpd[active[s]] != 0.0
                if work_since >= (k + 1) ** 3 / 3:
                    step_b, face_work = gram_face_descent(
                        active, local, m_outer, g, w, wpd, Q, Qd, d_b, g_b, lam1, lam2
                    )
                    d_b += step_b
                    reads += face_work
                    work_since = 0.0
        if tight:
            if vmax <= dual_tol:
                if m == m_outer:
                    break
                m, shrink_at = m_outer, np.inf  # one sweep over the whole model decides
                continue
            if use_gram:
                tight_work += work
            if sweeps - tight_from > TIGHT_CAP_MIN + TIGHT_CAP_FACTOR * tight_from and not (
                use_gram and tight_work <= pass_reads + price
            ):
                break
            if use_gram and solves < 4:
                # CD converges linearly, and slowly on an ill-conditioned model; with the signs
                # found, the model's minimiser is one linear solve on its nonzero coordinates
                # (over the whole model: also while the sweeps skip shrunk coordinates, which a
                # tight solve's sweeps almost always do).
                solves += 1
                step_b, work, _ = gram_support_solve(active, local, m_outer, g, w, wpd, Q, Qd, d_b, g_b, lam1, lam2)
                d_b += step_b
                reads += work
        if vsum <= inner_tol:
            if m == m_outer:
                if tight or dual_decrease <= 0.0 or (dual_on_gram and not use_gram):
                    break
                # Close to the optimum (the model predicts a small decrease): solve on, so that
                # the residual it predicts at its minimiser meets the KKT conditions to dual_tol.
                if use_gram:
                    quad = curvature_term_gram(active, local, m_outer, w, wpd, Qd, d_b)
                else:
                    quad = _curvature_term(xTd, D)
                value = _model_value(active, m_outer, g, w, wpd, d_b, g_b, lam1, lam2, quad)
                if -value > dual_decrease:
                    break
                tight, inner_tol, tight_from = True, 0.0, sweeps  # on until the largest violation is <= dual_tol
                if vmax <= dual_tol:
                    break
            m, shrink_at = m_outer, np.inf
        else:
            shrink_at = vmax / n
    # Not solved on to dual_tol (max_inner): no dual point, but the better-solved model is kept.
    tight = tight and vmax <= dual_tol and m == m_outer
    gram_out = np.empty((0, 0))
    if use_gram:  # X d + d_b for the line search, from the moved coordinates
        xTd[:] = d_b
        moved = np.empty(m_outer, dtype=active.dtype)
        step = np.empty(m_outer)
        k = 0
        for s in range(m_outer):
            j = active[s]
            if wpd[j] != w[j]:
                moved[k], step[k] = j, wpd[j] - w[j]
                k += 1
        reads += columns_axpy(data, indices, indptr, dense, moved[:k], step[:k], xTd)
        # The Gram matrix in the order active[:m_outer] has now (the sweeps permuted it with local).
        gram_out = np.empty((size, size))
        for a in range(size):
            qa = local[a] if a < m_outer else m_outer
            for b in range(size):
                gram_out[a, b] = Q[qa, local[b] if b < m_outer else m_outer]
    return d_b, sweeps, reads, price if use_gram else 0.0, tight, gram_out


@njit(cache=True, nogil=True)
def _model_value(active, m, g, w, wpd, d_b, g_b, lam1, lam2, quad):
    """The model's value at d = wpd - w (and d_b) minus its value at 0, given its curvature term
    ``quad`` = (X d + d_b)^T diag(D) (X d + d_b) (from X d + d_b, or from the Gram matrix)."""
    sq = 0.0
    for k in range(m):
        dj = wpd[active[k]] - w[active[k]]
        sq += dj * dj
    linear = model_decrease(active, m, g, w, wpd, lam1) + g_b * d_b
    return linear + 0.5 * ((lam2 + NU) * sq + NU * d_b * d_b + quad)


@njit(cache=True, nogil=True)
def model_change(active, m, model, d_b, lam1, lam2):
    """The change of P that the model predicts at its iterate (wpd, d_b), from X d + d_b."""
    g, _, w, wpd, xTd, D, g_b, _ = model
    return _model_value(active, m, g, w, wpd, d_b, g_b, lam1, lam2, _curvature_term(xTd, D))


@njit(cache=True, nogil=True)
def _curvature_term(xTd, D):
    """(X d + d_b)^T diag(D) (X d + d_b) from X d + d_b."""
    quad = 0.0
    for i in range(xTd.shape[0]):
        quad += D[i] * xTd[i] * xTd[i]
    return quad


@njit(cache=True, nogil=True, error_model="numpy")
def _shifted_point(kind, y, c, v, D, delta, u_c):
    """u_c = c * (the conjugate's domain point nearest to (v - delta D) / c), row by row (rows of
    zero weight: 0). Returns (sum u_c, sum |u_c|). Two loops: the first vectorised (under NumPy's
    error model a division does not check for zero; the select drops those rows), the sums in
    order after it (summing in the first would keep it scalar)."""
    for i in range(v.shape[0]):
        ci = c[i]
        u_c[i] = ci * conjugate_domain_clip(kind, y[i], (v[i] - delta * D[i]) / ci) if ci > 0.0 else 0.0
    total, size = 0.0, 0.0
    for i in range(v.shape[0]):
        total += u_c[i]
        size += abs(u_c[i])
    return total, size


@njit(cache=True, nogil=True)
def model_dual_point(kind, y, c, r, D, xTd, fit_intercept, u_c):
    """u_c = r + D (X d + d_b): the residual (c-weighted) that the quadratic model predicts at
    its minimiser, made a dual point: each row moved into the conjugate's domain (a long step
    takes the linearised residual out of it) and, with an intercept, shifted along D first,
    by the delta that makes sum_i u_c_i = 0 (the dual's constraint; the sum is monotone in
    delta: a bracket, then regula falsi). Returns whether the sum reached zero (to 1e-12 of
    sum |u_c|). Shapes (n,)."""
    v = r + D * xTd
    fa, size = _shifted_point(kind, y, c, v, D, 0.0, u_c)
    if not fit_intercept or abs(fa) <= 1e-12 * size:
        return True
    weight = 0.0
    for i in range(v.shape[0]):
        if c[i] > 0.0:
            weight += D[i]
    if weight <= 0.0:
        return False
    a, step = 0.0, fa / weight
    b = step
    fb, size = _shifted_point(kind, y, c, v, D, b, u_c)
    for _ in range(60):  # the sum falls as delta grows: widen until it changes sign
        if fa * fb <= 0.0:
            break
        a, fa, step = b, fb, 2.0 * step
        b = a + step
        fb, size = _shifted_point(kind, y, c, v, D, b, u_c)
    if fa * fb > 0.0:
        return False
    for _ in range(200):  # Illinois regula falsi
        if abs(fb) <= 1e-12 * size:
            return True
        x = b - fb * (b - a) / (fb - fa) if fb != fa else 0.5 * (a + b)
        fx, size = _shifted_point(kind, y, c, v, D, x, u_c)
        if fx * fb < 0.0:
            a, fa = b, fb
        else:
            fa *= 0.5
        b, fb = x, fx
    return abs(fb) <= 1e-12 * size


@njit(cache=True, nogil=True)
def model_decrease(active, m, g, w, wpd, lam1):
    """sum_j g_j d_j + lam1 (||w + d||_1 - ||w||_1) over active[:m], d = wpd - w."""
    acc = 0.0
    for k in range(m):
        j = active[k]
        acc += g[j] * (wpd[j] - w[j]) + lam1 * (abs(wpd[j]) - abs(w[j]))
    return acc


@njit(cache=True, nogil=True)
def penalty_change(active, m, w, wpd, step, lam1, lam2):
    """penalty(w + step d) - penalty(w) over active[:m], d = wpd - w."""
    acc = 0.0
    for k in range(m):
        j = active[k]
        x = w[j]
        v = wpd[j] if step == 1.0 else x + step * (wpd[j] - x)
        acc += lam1 * (abs(v) - abs(x)) + 0.5 * lam2 * (v - x) * (v + x)
    return acc


@njit(cache=True, nogil=True)
def take_step(active, m, w, wpd, step):
    """w <- w + step (wpd - w) on active[:m] (exactly wpd for step 1), and wpd <- w."""
    for k in range(m):
        j = active[k]
        if step != 1.0:
            wpd[j] = w[j] + step * (wpd[j] - w[j])
        w[j] = wpd[j]


@njit(cache=True, nogil=True)
def largest_magnitude(v):
    """max_i |v_i| (0 for an empty v), without the temporary that np.abs(v).max() allocates."""
    peak = 0.0
    for i in range(v.shape[0]):
        peak = max(peak, abs(v[i]))
    return peak
