"""Jitted kernels of the batch coordinate-descent solver (``cd.py`` drives them).

Every kernel works in place on arrays the driver owns, over a list of columns (the
working set, or every feature not yet screened out), and releases the GIL so that
one-vs-rest problems, folds and path segments can run in threads.

Notation: ``r = c * loss'(y, z)`` and ``D = c * loss''(y, z)`` at the margins ``z``;
``lam1``, ``lam2`` the L1 and L2 weights of the penalty; ``_NU`` liblinear's
curvature floor.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..data.memory import column, column_axpy, column_dot, column_moments, column_weighted_dot
from ..losses import conjugate_domain_clip

# Curvature floor of the quadratic model (liblinear's nu): keeps H_jj > 0 on
# columns whose rows all have zero curvature.
NU = 1e-12
# A dense Gram matrix by BLAS against the scalar loops, per multiply-add, and the copy of each of
# its columns' values into the scaled block (``_dense_gram``), in reads: the rent-or-buy choices
# weigh its work in the scalar loops' units. Measured against a model sweep over the same dense
# columns (0.68-0.81 ns a value read): 0.09-0.13 ns a multiply-add at 80-400 columns (0.29 at 20,
# where the copy dominates), and the copy about 1.5 ns a value.
DENSE_GRAM_SPEEDUP = 8.0
DENSE_GRAM_COPY = 2.0
# Entries of a sparse Gram matrix's block of rows (``model_gram``): 32768 x 16 bytes, within
# a core's L2 cache (8192 and 131072 measured the same).
GRAM_BLOCK_ENTRIES = 32768
# Bytes of a sparse Gram matrix's rows updated together (``model_gram``): a matrix larger than
# this is built a band of its rows at a time, so that the band stays in cache while a block of
# rows' outer products land in it.
GRAM_BAND_BYTES = 524288
# Bytes of a dense Gram matrix's block of scaled rows (``_dense_gram``): BLAS multiplies it while
# it is in cache, and the one scratch block is reused for the next.
DENSE_GRAM_BLOCK_BYTES = 1048576
# ... and of at least this many rows: a product over fewer is BLAS at a fraction of its speed
# (2,000 x 500, blocks of 261 rows: the fit at 0.01 lam_max 5-10% slower than unblocked).
DENSE_GRAM_BLOCK_ROWS = 1024


@njit(cache=True, nogil=True)
def seed(value):
    np.random.seed(value)


@njit(cache=True)
def changed_count(a, b):
    """|a xor b| for two sorted arrays of distinct indices (two supports): one merge. Not nogil:
    it takes microseconds, and a release of the GIL in a solve running in threads lets another
    thread take it first (np.setxor1d, which it replaces, made temporaries and a sort)."""
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
    for k in range(cols.shape[0]):
        j = cols[k]
        wj = w[j]
        gj = column_dot(data, indices, indptr, dense, j, r) + lam2 * wj
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
    reads = 0
    for j in range(w.shape[0]):
        wj = w[j]
        if wj != 0.0:
            reads += column_axpy(data, indices, indptr, dense, j, wj, z)
    return reads


@njit(cache=True, nogil=True, inline="always")
def _coordinate_step(x, G, lam1, h, shrink_at):
    """One coordinate of the quadratic model at w_j + d_j = x, with model gradient G (without the
    L1 term) and curvature h: (shrink it away, its KKT violation, the step z).

    A zero coordinate whose gradient stays inside (-lam1 + shrink_at, lam1 - shrink_at) is
    shrunk (liblinear's inner shrinking). Otherwise the step is the one-variable Newton step,
    soft-thresholded (a step to zero makes w + d exactly 0), and 0 when it would not change
    x or would move a zero by less than 1e-12 (so that lam = lam_max gives w = 0 exactly;
    its violation, at rounding level, is then not counted by the caller). liblinear skips
    every step below 1e-12, which leaves the gap stuck near 1e-12 H_jj relative."""
    Gp, Gn = G + lam1, G - lam1
    if x == 0.0:
        if Gp < 0.0:
            viol = -Gp
        elif Gn > 0.0:
            viol = Gn
        elif Gp > shrink_at and Gn < -shrink_at:
            return True, 0.0, 0.0
        else:
            viol = 0.0
    else:
        viol = abs(Gp) if x > 0.0 else abs(Gn)
    if Gp < h * x:
        z = min(max(-Gp / h, -10.0), 10.0)
    elif Gn > h * x:
        z = min(max(-Gn / h, -10.0), 10.0)
    else:
        z = -x
    if x + z == x or (x == 0.0 and abs(z) < 1e-12):
        z = 0.0
    return False, viol, z


@njit(cache=True, nogil=True)
def model_sweep(data, indices, indptr, dense, active, m, g, H, w, wpd, xTd, D, lam1, lam2, shrink_at):
    """One CD sweep, in random order, over active[:m] of the quadratic model

        g.d + d^T H d / 2 + lam1 ||w + d||_1,  d = wpd - w,  H = X^T diag(D) X + (lam2 + nu) I,

    updating wpd (= w + d) and xTd (= X d). A zero coordinate whose model gradient stays
    inside (-lam1 + shrink_at, lam1 - shrink_at) is swapped behind active[:m].
    Shapes: active (k,), g, H, w, wpd (d,), xTd, D (n,).
    Returns (new m, largest violation, sum of violations, nonzeros read, coordinates moved).
    """
    for s in range(m - 1):
        t = s + np.random.randint(m - s)
        active[s], active[t] = active[t], active[s]
    vmax, vsum, reads, s, moves = 0.0, 0.0, 0, 0, 0
    while s < m:
        j = active[s]
        x = wpd[j]
        G = column_weighted_dot(data, indices, indptr, dense, j, D, xTd, g[j] + (lam2 + NU) * (x - w[j]))
        nnz = indptr[j + 1] - indptr[j]
        reads += nnz
        shrink, viol, z = _coordinate_step(x, G, lam1, H[j], shrink_at)
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
    return m, vmax, vsum, reads, moves


@njit(cache=True, nogil=True)
def intercept_step(g_b, d_b, xTd, D):
    """Exact step on the intercept coordinate of the quadratic model; updates xTd.

    Returns (step, |model gradient| before it). Shapes: xTd, D (n,).
    """
    G, Hb = g_b + NU * d_b, NU
    for i in range(xTd.shape[0]):
        G += D[i] * xTd[i]
        Hb += D[i]
    step = -G / Hb
    for i in range(xTd.shape[0]):
        xTd[i] += step
    return step, abs(G)


@njit(cache=True, nogil=True)
def gram_cost(data, indices, indptr, dense, active, m, counts):
    """Work of :func:`model_gram` over the columns active[:m]: (nonzeros read, multiply-adds).

    The Gram matrix sums, over the rows, the outer product of each row's entries in those
    columns: sum_i k_i (k_i + 1) / 2 for k_i entries in row i. counts (n,) is scratch, left
    holding k_i. Dense columns are multiplied by BLAS (:func:`model_gram`): their work is the
    multiply-adds over ``DENSE_GRAM_SPEEDUP`` and the copy of their values, ``DENSE_GRAM_COPY``
    reads each, in the units of the scalar loops it is weighed against."""
    if dense:
        n = counts.shape[0]
        counts[:] = m
        return n * m, DENSE_GRAM_COPY * n * m + 0.5 * n * m * (m + 1) / DENSE_GRAM_SPEEDUP
    counts[:] = 0
    nnz, pairs = 0, 0
    for s in range(m):
        rows, _ = column(data, indices, indptr, dense, active[s])
        for p in range(rows.shape[0]):
            # A row's k-th entry adds k products to its sum k (k + 1) / 2: no pass over all n rows.
            k = counts[rows[p]] + 1
            counts[rows[p]] = k
            pairs += k
        nnz += rows.shape[0]
    return nnz, float(pairs)


@njit(cache=True, nogil=True)
def _dense_gram(data, indptr, active, m, D, fit_intercept):
    """:func:`model_gram` of dense columns by BLAS, a block of rows at a time: the block's
    columns scaled by sqrt(D) (D >= 0: the loss is convex), and sqrt(D) itself for the
    intercept's column of ones, as the rows of a (size, b) array C, and Q += C C^T; then made
    exactly symmetric, the intercept's corner sum_i D_i. One scratch block of about
    ``DENSE_GRAM_BLOCK_BYTES``, reused: a copy of all n rows of the columns was a fresh
    allocation of m n floats per model, whose first touch (page faults) cost more than BLAS's
    product (100,000 x 84 with intercept: 89 -> 47 ms). (BLAS's syrk, half the product, is not
    reachable from cached compiled code.)"""
    n = D.shape[0]
    size = m + 1 if fit_intercept else m
    Q = np.zeros((size, size))
    if size == 0:
        return Q
    rows = min(n, max(DENSE_GRAM_BLOCK_ROWS, DENSE_GRAM_BLOCK_BYTES // (8 * size)))
    scratch = np.empty(size * rows)
    for first in range(0, n, rows):
        b = min(rows, n - first)
        C = scratch[: size * b].reshape((size, b))
        root = C[size - 1] if fit_intercept else np.empty(b)
        for i in range(b):
            root[i] = np.sqrt(max(D[first + i], 0.0))  # a rounding below zero must not become a NaN
        for s in range(m):
            start = indptr[active[s]] + first
            for i in range(b):
                C[s, i] = data[start + i] * root[i]
        Q += np.dot(C, C.T)
    for a in range(size):
        for c in range(a + 1, size):
            Q[c, a] = Q[a, c]
    if fit_intercept:
        Q[m, m] = D.sum()
    return Q


@njit(cache=True, nogil=True)
def model_gram(data, indices, indptr, dense, active, m, D, counts, fit_intercept):
    """Q = X_A^T diag(D) X_A over the columns A = active[:m] (local order), bordered by the
    intercept's row sum_i D_i x_iA and corner sum_i D_i when it is fitted: the curvature of
    the quadratic model without its ridge (lam2 + nu). counts: the row counts of
    :func:`gram_cost`. Each row adds its outer product (glmnet's covariance updates,
    weighted), so the columns are transposed into rows, a block of rows at a time
    (:data:`GRAM_BLOCK_ENTRIES` entries): a whole transpose's writes land a cache line apart
    (one miss each), a block's stay in cache and its outer products follow while they are
    there (a9a, all 123 columns: 21 -> 6.5 ms; mnist10k, 300 columns: 62 -> 26 ms; the same
    sums in the same order). A column's rows are read in increasing order, as every layout
    of ``data.memory`` stores them (canonical). Dense columns are copied out and multiplied
    by BLAS instead. Shape (m [+ 1], m [+ 1])."""
    if dense:
        return _dense_gram(data, indptr, active, m, D, fit_intercept)
    n = counts.shape[0]
    size = m + 1 if fit_intercept else m
    # Q is flat and every position unsigned: Numba checks a signed index for wrapping around.
    Q = np.zeros(size * size)
    usize, um = np.uint64(size), np.uint64(m)
    # Each column's next entry (its rows are increasing) and its end.
    cursor, stop = np.empty(m, dtype=np.uint64), np.empty(m, dtype=np.uint64)
    for s in range(m):
        cursor[s], stop[s] = indptr[active[s]], indptr[active[s] + 1]
    band = np.uint64(max(1, min(m, GRAM_BAND_BYTES // (8 * size))))
    local = np.empty(GRAM_BLOCK_ENTRIES, dtype=np.uint64)
    value = np.empty(GRAM_BLOCK_ENTRIES)
    # Only the rows with an entry in these columns, in increasing order: the loops below then cost
    # nothing per empty row, where looping over all n rows cost 8 ns a row whatever the columns
    # (80 us a Gram matrix on earn, 250 us on a9a, for a model of a few sparse columns; one pass
    # over the counts now, 1.4 ns a row). A row's block entries start at begin[i] (indexed by the
    # row itself, as the columns' entries name it: no lookup per entry).
    rows = np.empty(n, dtype=np.int64)
    n_rows = 0
    for i in range(n):
        if counts[i] > 0:
            rows[n_rows] = i
            n_rows += 1
    begin, fill = np.empty(n, dtype=np.uint64), np.empty(n, dtype=np.uint64)
    t0 = 0
    while t0 < n_rows:
        t1, total = t0, 0  # rows[t0..t1-1]: as many as fit the block (at least one)
        while t1 < n_rows and (t1 == t0 or total + counts[rows[t1]] <= GRAM_BLOCK_ENTRIES):
            total += counts[rows[t1]]
            t1 += 1
        limit = rows[t1] if t1 < n_rows else n  # the first row past the block
        if total > local.shape[0]:
            local, value = np.empty(total, dtype=np.uint64), np.empty(total)
        offset = np.uint64(0)
        for t in range(t0, t1):
            i = rows[t]
            begin[i] = offset
            fill[i] = offset
            offset += np.uint64(counts[i])
        for s in range(m):
            p, end = cursor[s], stop[s]
            while p < end and indices[p] < limit:
                i = indices[p]
                f = fill[i]
                local[f], value[f] = s, data[p]
                fill[i] = f + np.uint64(1)
                p += np.uint64(1)
            cursor[s] = p
        # Entries of a row are in increasing local order: each product lands in the upper triangle,
        # in the row of Q of its first factor. Q's rows are updated a band at a time (all of Q when it
        # fits in GRAM_BAND_BYTES), each row of X resuming where the last band left it: every entry
        # still sums its products over the rows of X in increasing order.
        for t in range(t0, t1):
            fill[rows[t]] = begin[rows[t]]  # now each row's next entry
        a0 = np.uint64(0)
        while True:
            a1 = min(a0 + band, um)
            for t in range(t0, t1):
                i = rows[t]
                Di = D[i]
                if Di == 0.0:
                    continue
                p, end = fill[i], begin[i] + np.uint64(counts[i])
                while p < end and local[p] < a1:
                    vp = Di * value[p]
                    row = local[p] * usize
                    q = p
                    while q < end:
                        Q[row + local[q]] += vp * value[q]
                        q += np.uint64(1)
                    if fit_intercept:
                        Q[row + um] += vp
                    p += np.uint64(1)
                fill[i] = p
            if a1 >= um:
                break
            a0 = a1
        t0 = t1
    if fit_intercept:
        corner = 0.0  # sum_i D_i over every row, in order (an empty row's D counts here)
        for i in range(n):
            corner += D[i]
        Q[um * usize + um] = corner
    Q2 = Q.reshape((size, size))
    for a in range(size):
        for b in range(a + 1, size):
            Q2[b, a] = Q2[a, b]
    return Q2


@njit(cache=True, nogil=True)
def gram_sweep(active, local, m, g, H, w, wpd, Q, Qd, lam1, lam2, shrink_at):
    """:func:`model_sweep` with the model's curvature products read from its Gram matrix
    (:func:`model_gram`): Qd = Q (d, d_b) is kept instead of X d, so a coordinate costs
    O(1) to check and O(size of Q) to move, whatever its column's nonzeros. local[s] is
    the row of Q of active[s]; both are permuted together.
    Returns (new m, largest violation, sum of violations, multiply-adds done)."""
    for s in range(m - 1):
        t = s + np.random.randint(m - s)
        active[s], active[t] = active[t], active[s]
        local[s], local[t] = local[t], local[s]
    vmax, vsum, s, work = 0.0, 0.0, 0, 0
    size = Q.shape[0]
    while s < m:
        j, loc = active[s], local[s]
        x = wpd[j]
        G = g[j] + (lam2 + NU) * (x - w[j]) + Qd[loc]
        shrink, viol, z = _coordinate_step(x, G, lam1, H[j], shrink_at)
        if shrink:
            m -= 1
            active[s], active[m] = active[m], active[s]
            local[s], local[m] = local[m], local[s]
            continue
        s += 1
        if z == 0.0:
            continue
        vmax = max(vmax, viol)
        vsum += viol
        wpd[j] = x + z
        for t in range(size):
            Qd[t] += z * Q[loc, t]
        work += size
    return m, vmax, vsum, work + m


@njit(cache=True, nogil=True)
def gram_support_solve(active, local, m, g, w, wpd, Q, Qd, d_b, g_b, lam1, lam2):
    """One step of an active-set method on the quadratic model (Newton on the model's face):
    with the signs of w + d held, the model is a quadratic on the nonzero coordinates of
    w + d (and the intercept when Q has its row), whose minimiser is one linear solve. Along
    the segment to it the model is exactly quadratic until a sign changes, so the step is the
    exact minimum along it, or ends at the first zero crossing, that coordinate landing on
    exactly zero (the next solve is on a smaller face). On a singular face (one-hot blocks
    beside the intercept) the solve's direction runs along the flat direction, down which the
    L1 term falls linearly until a weight reaches zero: the crossing ends it, where CD crawls
    along it for hundreds of sweeps. A step that moves a coordinate by more than 10 (as CD's
    steps are bounded) or is not a descent (rounding) is refused: nothing moves.
    Updates wpd and Qd; returns (the intercept's step, multiply-adds done, whether the step
    ended at a crossing)."""
    size = Q.shape[0]
    fit_b = size > m
    k = 0
    for s in range(m):
        if wpd[active[s]] != 0.0:
            k += 1
    n_sys = k + (1 if fit_b else 0)
    if k == 0 or n_sys > 1500:
        return 0.0, 0, False
    pos = np.empty(n_sys, dtype=np.int64)  # rows of Q
    feat = np.empty(k, dtype=np.int64)
    rhs = np.empty(n_sys)  # minus the model's gradient on the face
    ridge = np.full(n_sys, NU)
    ridge[:k] += lam2
    t = 0
    for s in range(m):
        j = active[s]
        if wpd[j] != 0.0:
            pos[t], feat[t] = local[s], j
            rhs[t] = -(g[j] + (lam2 + NU) * (wpd[j] - w[j]) + Qd[local[s]] + lam1 * np.sign(wpd[j]))
            t += 1
    if fit_b:
        pos[k] = size - 1
        rhs[k] = -(g_b + NU * d_b + Qd[size - 1])
    A = np.empty((n_sys, n_sys))
    for a in range(n_sys):
        for b in range(n_sys):
            A[a, b] = Q[pos[a], pos[b]]
    # The model's slope and curvature along the solve's direction x, from the face's matrix.
    x = np.linalg.solve(_with_ridge(A, ridge), rhs)
    slope, curv = 0.0, 0.0
    for a in range(n_sys):
        slope -= rhs[a] * x[a]
        qa = ridge[a] * x[a]
        for b in range(n_sys):
            qa += A[a, b] * x[b]
        curv += x[a] * qa
    work = n_sys**3 // 3 + 2 * n_sys * n_sys
    if not (slope < 0.0 and curv > 0.0):
        return 0.0, work, False
    step, cross = min(1.0, -slope / curv), -1
    for t in range(k):
        wj = wpd[feat[t]]
        if x[t] != 0.0 and np.sign(wj + step * x[t]) != np.sign(wj):
            at = -wj / x[t]
            if at < step:
                step, cross = at, t
    for t in range(n_sys):
        x[t] *= step
        if not abs(x[t]) <= 10.0:
            return 0.0, work, False
    if cross >= 0:
        x[cross] = -wpd[feat[cross]]  # exactly zero, not a rounding away from it
    for t in range(k):
        wpd[feat[t]] += x[t]
    for t in range(n_sys):
        xt = x[t]
        for a in range(size):
            Qd[a] += xt * Q[pos[t], a]
    return (x[k] if fit_b else 0.0), work + n_sys * size, cross >= 0


@njit(cache=True, nogil=True)
def _with_ridge(A, ridge):
    """A copy of A with ``ridge`` and a relative 1e-10 on its diagonal: keeps LU off exact zero
    pivots (one-hot blocks beside the intercept make the face's matrix singular)."""
    B = A.copy()
    for a in range(A.shape[0]):
        B[a, a] = A[a, a] * (1.0 + 1e-10) + ridge[a]
    return B


@njit(cache=True, nogil=True)
def gram_face_descent(active, local, m, g, w, wpd, Q, Qd, d_b, g_b, lam1, lam2):
    """:func:`gram_support_solve` repeated while its step ends at a zero crossing (each lands a
    coordinate on zero and leaves a smaller face), at most ``FACE_SOLVES`` times: a descent costs
    at most that many times the sweeps' work that preceded it (rent or buy is checked before its
    first solve). Capping the chain at that work instead (one solve's worth) was measured: a9a
    at 0.01 lam_max read 20% more to 1e-2 .. 1e-6, the dense problems 5% more to 1e-6, since each
    crossing removes one flat direction that the sweeps would crawl along.
    Returns (the intercept's step, multiply-adds done)."""
    total_b, total_work = 0.0, 0
    for _ in range(FACE_SOLVES):
        step_b, work, crossed = gram_support_solve(active, local, m, g, w, wpd, Q, Qd, d_b + total_b, g_b, lam1, lam2)
        total_b += step_b
        total_work += work
        if not crossed:
            break
    return total_b, total_work


@njit(cache=True, nogil=True)
def gram_intercept_step(g_b, d_b, Q, Qd):
    """:func:`intercept_step` on the Gram matrix's border; updates Qd."""
    b = Q.shape[0] - 1
    G = g_b + NU * d_b + Qd[b]
    step = -G / (NU + Q[b, b])
    for t in range(Q.shape[0]):
        Qd[t] += step * Q[b, t]
    return step, abs(G)


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
    at most ``dual_tol``."""

    lam1: float
    lam2: float
    fit_intercept: bool
    inner_tol: float
    max_inner: int
    gram_first: float
    gram_max: int
    dual_decrease: float = 0.0
    dual_tol: float = 0.0


# A model solved on for its dual point gets at most 20 + 2 times the sweeps it took: the tries
# that fail are the ones that crawl (ill-conditioned, signs still moving), and a capped try
# keeps its better solution (dense correlated problems, tol 1e-4: 14% fewer reads summed, as
# without the cap; mnist10k at 0.001 lam_max to 1e-4: 874M -> 694M).
TIGHT_CAP_MIN, TIGHT_CAP_FACTOR = 20, 2

# On its Gram matrix, a model CD has not solved in this many sweeps gets active-set descents on
# its faces (:func:`gram_face_descent`, a linear solve each), at most FACE_SOLVES solves in a
# row. Measured, nonzeros read (multiply-adds of the solves included) at tol 1e-1 / 1e-2 /
# 1e-4 / 1e-6: 16 dense correlated problems (3,000 x 80) summed 812M / 850M / 932M / 1176M ->
# 788M / 805M / 809M / 716M; a9a at 0.001 lam_max, where one-hot blocks beside the intercept
# make the models singular and CD took 1,000 sweeps on one of them (57 now), 52M / 52M / 52M /
# 50M -> 54M / 42M / 42M / 45M, at 0.01 lam_max 28M / 35M / 41M / 41M -> 25M / 25M / 31M / 31M;
# mnist10k, earn and news20 unchanged.
FACE_AFTER, FACE_SOLVES = 10, 8

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
    within ``TIGHT_CAP_MIN + TIGHT_CAP_FACTOR`` times its sweeps gives no dual point, but its
    better solution is kept (a more exact Newton step: on dense correlated data that alone
    saves outer iterations).
    ``gram_in``: the model's Gram matrix at these curvatures D over active[:m_outer] in their order
    (bordered by the intercept's row, as :func:`model_gram` makes it), when the caller has it
    (:func:`border_gram`: a model grown by a few coordinates), else an empty (0, 0) array; given, the
    model is solved on it from the first sweep, at the price ``gram_first``.
    Returns (d_b, sweeps, work: nonzeros read plus the Gram matrix's multiply-adds, the
    price of the Gram matrix when it was used (0: not used), whether the model was solved on
    to dual_tol, the Gram matrix over active[:m_outer] in their order on return when it was used,
    else an empty (0, 0) array).
    """
    g, H, w, wpd, xTd, D, g_b, d_b = model
    lam1, lam2, fit_intercept, inner_tol, max_inner, gram_first, gram_max, dual_decrease, dual_tol = settings
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
    while sweeps < max_inner:
        if gram_allowed and not use_gram and gram_in.shape[0] == size:
            Q, price = gram_in, gram_first
            Qd = _gram_times_step(Q, active, m_outer, w, wpd, d_b, fit_intercept)
            local = np.arange(m_outer)
            use_gram = True
        if gram_allowed and not use_gram and (gram_first > 0.0 or sweeps >= 2):
            if nnz_cols < 0:
                counts = np.empty(n, dtype=np.int64)
                nnz_cols, gram_work = gram_cost(data, indices, indptr, dense, active, m_outer, counts)
                reads += nnz_cols
                price = nnz_cols + gram_work + (m_outer + 1) ** 2
                # Bought at once when it costs at most a few times the last model's, which
                # needed it: the next model is likely as ill-conditioned. Not a Gram matrix many
                # times dearer (earn at 0.1 lam_max: after an 8-column model's, a 100-column one
                # of frequent words costing 15 sweeps, for a model CD solves in 5).
                buy_now = price <= GRAM_REUSE * gram_first
            if buy_now or (reads >= price and m_outer + moves * (m_outer + 1) < 0.5 * sweep_reads):
                Q = model_gram(data, indices, indptr, dense, active, m_outer, D, counts, fit_intercept)
                reads += nnz_cols + int(gram_work)
                Qd = _gram_times_step(Q, active, m_outer, w, wpd, d_b, fit_intercept)
                local = np.arange(m_outer)
                use_gram = True
        if use_gram:
            m, vmax, vsum, work = gram_sweep(active, local, m, g, H, w, wpd, Q, Qd, lam1, lam2, shrink_at)
            reads += work
            if fit_intercept:
                step, viol = gram_intercept_step(g_b, d_b, Q, Qd)
                d_b += step
                vmax, vsum = max(vmax, viol), vsum + viol
        else:
            m, vmax, vsum, sweep_reads, moves = model_sweep(
                data, indices, indptr, dense, active, m, g, H, w, wpd, xTd, D, lam1, lam2, shrink_at
            )
            reads += sweep_reads
            if fit_intercept:
                step, viol = intercept_step(g_b, d_b, xTd, D)
                d_b += step
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
            if sweeps - tight_from > TIGHT_CAP_MIN + TIGHT_CAP_FACTOR * tight_from:
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
                if tight or dual_decrease <= 0.0:
                    break
                # Close to the optimum (the model predicts a small decrease): solve on, so that
                # the residual it predicts at its minimiser meets the KKT conditions to dual_tol.
                if use_gram:
                    quad = _curvature_term_gram(active, local, m_outer, w, wpd, Qd, d_b)
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
        for s in range(m_outer):
            j = active[s]
            dj = wpd[j] - w[j]
            if dj != 0.0:
                reads += column_axpy(data, indices, indptr, dense, j, dj, xTd)
        # The Gram matrix in the order active[:m_outer] has now (the sweeps permuted it with local).
        gram_out = np.empty((size, size))
        for a in range(size):
            qa = local[a] if a < m_outer else m_outer
            for b in range(size):
                gram_out[a, b] = Q[qa, local[b] if b < m_outer else m_outer]
    return d_b, sweeps, reads, price if use_gram else 0.0, tight, gram_out


@njit(cache=True, nogil=True)
def _gram_times_step(Q, active, m, w, wpd, d_b, fit_intercept):
    """Q (d, d_b): a model's Gram matrix over active[:m] (and the intercept) times its iterate
    d = wpd - w on those coordinates."""
    dvec = np.zeros(Q.shape[0])
    for s in range(m):
        dvec[s] = wpd[active[s]] - w[active[s]]
    if fit_intercept:
        dvec[m] = d_b
    Qd = np.zeros(Q.shape[0])
    for a in range(Q.shape[0]):
        for b in range(Q.shape[0]):
            Qd[a] += Q[a, b] * dvec[b]
    return Qd


@njit(cache=True, nogil=True)
def border_gram(data, indices, indptr, dense, active, m_old, m_new, D, Q_old, fit_intercept, t):
    """The Gram matrix of a model over active[:m_new] (bordered by the intercept's row, as
    :func:`model_gram` makes it) from ``Q_old``, the one over active[:m_old] at the same curvatures
    D: the old block copied, and for each coordinate that entered its row x_j^T diag(D) X_A, one
    read of the model's columns, where :func:`model_gram` sums every row's outer product anew
    (mnist10k at 0.001 lam_max, 322 coordinates: 50 ms). ``t`` (n,): scratch, zero on entry and
    on return. Returns (the Gram matrix, nonzeros read)."""
    size = m_new + 1 if fit_intercept else m_new
    Q = np.zeros((size, size))
    for a in range(m_old):
        for b in range(m_old):
            Q[a, b] = Q_old[a, b]
    if fit_intercept:
        for a in range(m_old):
            Q[a, m_new] = Q_old[a, m_old]
            Q[m_new, a] = Q_old[m_old, a]
        Q[m_new, m_new] = Q_old[m_old, m_old]
    reads = 0
    for p in range(m_old, m_new):
        j = active[p]
        reads += column_axpy(data, indices, indptr, dense, j, 1.0, t)  # t = x_j
        for s in range(p + 1):
            q = active[s]
            value = column_weighted_dot(data, indices, indptr, dense, q, D, t, 0.0)
            Q[s, p] = value
            Q[p, s] = value
            reads += indptr[q + 1] - indptr[q]
        if fit_intercept:
            value = column_dot(data, indices, indptr, dense, j, D)
            Q[p, m_new] = value
            Q[m_new, p] = value
        column_axpy(data, indices, indptr, dense, j, -1.0, t)  # back to zero, exactly
    return Q, reads


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


@njit(cache=True, nogil=True)
def _curvature_term_gram(active, local, m, w, wpd, Qd, d_b):
    """:func:`_curvature_term` from Qd = Q (d, d_b) of the Gram matrix (its last row: the
    intercept's, when d_b moves)."""
    quad = d_b * Qd[Qd.shape[0] - 1] if d_b != 0.0 else 0.0
    for k in range(m):
        quad += (wpd[active[k]] - w[active[k]]) * Qd[local[k]]
    return quad


@njit(cache=True, nogil=True)
def _shifted_point(kind, y, c, v, D, delta, u_c):
    """u_c = c * (the conjugate's domain point nearest to (v - delta D) / c), row by row (rows of
    zero weight: 0). Returns (sum u_c, sum |u_c|)."""
    total, size = 0.0, 0.0
    for i in range(v.shape[0]):
        u_c[i] = c[i] * conjugate_domain_clip(kind, y[i], (v[i] - delta * D[i]) / c[i]) if c[i] > 0.0 else 0.0
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


@njit(cache=True, nogil=True, inline="always")
def _support_times(data, indices, indptr, dense, support, x, fit_intercept, t):
    """t = X_S x[:k] (+ x[k], the intercept). Shapes: support (k,), x (k [+ 1],), t (n,)."""
    k = support.shape[0]
    t[:] = x[k] if fit_intercept else 0.0
    for q in range(k):
        column_axpy(data, indices, indptr, dense, support[q], x[q], t)


@njit(cache=True, nogil=True, inline="always")
def _support_transpose_times(data, indices, indptr, dense, support, t, fit_intercept, out):
    """out[:k] = X_S^T t (and out[k] = sum(t)). Shapes: t (n,), out (k [+ 1],)."""
    k = support.shape[0]
    for q in range(k):
        out[q] = column_dot(data, indices, indptr, dense, support[q], t)
    if fit_intercept:
        out[k] = t.sum()


@njit(cache=True, nogil=True)
def support_gradient(data, indices, indptr, dense, support, r, fit_intercept, out):
    """out = X_S^T r (and sum(r)): the loss gradient on the support and the intercept."""
    _support_transpose_times(data, indices, indptr, dense, support, r, fit_intercept, out)


@njit(cache=True, nogil=True)
def support_margins_change(data, indices, indptr, dense, support, x, fit_intercept, t):
    """t = X_S x[:k] (+ x[k]): the change of the margins along a step on the support."""
    _support_times(data, indices, indptr, dense, support, x, fit_intercept, t)


@njit(cache=True, nogil=True)
def support_cg(
    data,
    indices,
    indptr,
    dense,
    support,
    D,
    ridge,
    nu,
    fit_intercept,
    rhs,
    diag,
    rtol,
    max_iter,
    x,
    t,
    gram_max,
    w_s,
    max_crossings,
):
    """Jacobi-preconditioned conjugate gradients for the Newton system on the support,

        (X_S^T diag(D) X_S + ridge I) x[:k] (+ the intercept row, curvature floor nu) = rhs,

    from x = 0. Each product reads the support's columns twice, until those reads reach the
    cost of the system's Gram matrix (:func:`model_gram`, when k <= gram_max and a product
    with it, (k + 1)^2, costs less); the products are then taken on it (rent-or-buy, as in
    :func:`newton_direction`).
    Off the Gram matrix, when ``max_crossings`` >= 0, it also stops once its iterate would carry
    more than ``max_crossings`` of the weights ``w_s`` (the support's, (k,)) across zero: a step
    the line search's projection will cut short whatever products follow (CG's iterates grow in
    norm from x = 0).
    Shapes: support (k,); D, t (n,) (t: workspace); rhs, diag, x (k [+ 1],).
    Returns (products with the matrix, work: nonzeros of X read plus the Gram matrix's
    multiply-adds, the Gram matrix when it was built, else an empty (0, 0) array: the system at
    this point without its ridge, for a re-solve on some of its rows, :func:`gram_cg`).
    """
    m = rhs.shape[0]
    k = support.shape[0]
    res, direction, rz, stop = _cg_start(rhs, diag, rtol, x)
    product = np.empty(m)
    products, reads = 0, 0
    nnz_support = 0
    for q in range(k):
        nnz_support += t.shape[0] if dense else indptr[support[q] + 1] - indptr[support[q]]
    counts = np.empty(0, dtype=np.int64)
    nnz_cols, build_at, gram_work = -1, np.inf, 0.0
    Q = np.empty((0, 0))
    use_gram = False
    while products < max_iter and np.sqrt(dot(res, res)) > stop:
        if not use_gram and products >= 2 and 0 < k <= gram_max and m * m < 2 * nnz_support:
            if nnz_cols < 0:
                counts = np.empty(t.shape[0], dtype=np.int64)
                nnz_cols, gram_work = gram_cost(data, indices, indptr, dense, support, k, counts)
                reads += nnz_cols
                build_at = nnz_cols + gram_work + m * m
            if reads >= build_at:
                Q = model_gram(data, indices, indptr, dense, support, k, D, counts, fit_intercept)
                reads += nnz_cols + int(gram_work)
                use_gram = True
        if use_gram:
            gram_product(Q, k, ridge, nu, direction, product)
            reads += m * m
        else:
            _support_times(data, indices, indptr, dense, support, direction, fit_intercept, t)
            t *= D
            _support_transpose_times(data, indices, indptr, dense, support, t, fit_intercept, product)
            reads += 2 * nnz_support
            for q in range(k):
                product[q] += ridge * direction[q]
            if fit_intercept:
                product[k] += nu * direction[k]
        products += 1
        if not cg_advance(x, res, direction, product, rz):
            break
        if max_crossings >= 0 and not use_gram:
            crossings = 0
            for q in range(k):
                if (w_s[q] + x[q]) * w_s[q] <= 0.0:
                    crossings += 1
            if crossings > max_crossings:
                break
        direction, rz = _cg_next(res, diag, direction, rz)
    return products, reads, Q


@njit(cache=True, nogil=True)
def gram_cg(Q, rows, k, ridge, nu, rhs, diag, rtol, max_iter, x):
    """Jacobi-preconditioned conjugate gradients on the principal sub-matrix of a support system's
    Gram matrix Q (:func:`support_cg`'s, without its ridge) over ``rows`` (positions in Q,
    increasing; k: the support's size, a row k being the intercept's, with curvature floor nu):

        (Q[rows, rows] + diag(ridge, ..., nu)) x = rhs,   from x = 0.

    The same system :func:`support_cg` solves over those coordinates' columns, at (|rows|)^2 a
    product instead of two reads of the columns. Shapes: rows, rhs, diag, x (m,). Returns (products,
    work: the products' multiply-adds)."""
    m = rows.shape[0]
    # The sub-matrix, contiguous; its coordinates' rows come first, the intercept's (k) last.
    sub = np.empty((m, m))
    k_sub = 0
    for a in range(m):
        k_sub += rows[a] < k
        for b in range(m):
            sub[a, b] = Q[rows[a], rows[b]]
    res, direction, rz, stop = _cg_start(rhs, diag, rtol, x)
    product = np.empty(m)
    products = 0
    while products < max_iter and np.sqrt(dot(res, res)) > stop:
        gram_product(sub, k_sub, ridge, nu, direction, product)
        products += 1
        if not cg_advance(x, res, direction, product, rz):
            break
        direction, rz = _cg_next(res, diag, direction, rz)
    return products, products * m * m


@njit(cache=True, nogil=True)
def _cg_start(rhs, diag, rtol, x):
    """Jacobi-preconditioned CG from x = 0 (x set to it): (residual, first direction, res . z, the
    residual norm at which it stops)."""
    x[:] = 0.0
    res = rhs.copy()
    z = res / diag
    return res, z.copy(), dot(res, z), rtol * np.sqrt(dot(rhs, rhs))


@njit(cache=True, nogil=True)
def _cg_next(res, diag, direction, rz):
    """The next direction of Jacobi-preconditioned CG after a move, and its res . z."""
    z = res / diag
    rz_new = dot(res, z)
    return z + (rz_new / rz) * direction, rz_new


@njit(cache=True, nogil=True)
def gram_product(Q, k, ridge, nu, v, out):
    """out = (Q + diag(ridge, ..., nu)) v for a support system's Gram matrix Q (row k, when there, the
    intercept's): the system's product at (k [+ 1])^2 multiply-adds."""
    m = v.shape[0]
    for a in range(m):
        acc = 0.0
        for b in range(m):
            acc += Q[a, b] * v[b]
        out[a] = acc + (ridge if a < k else nu) * v[a]


@njit(cache=True, nogil=True)
def dot(a, b):
    """a . b of two vectors, by a loop with four partial sums. Numba's ``a @ b`` (and NumPy's) calls
    BLAS's ddot, which OpenBLAS runs on all its threads from 10,001 entries: on a busy machine (or
    beside a fit's other threads) the CG of a 13,500-weight support took 25 ms a product instead of
    about 1 ms, most of it in those threads' hand-offs. Four partial sums, not one: news20's
    endgame at 0.001 lam_max is sensitive to the CG's rounding (a single running sum read 3.2G
    nonzeros to tol 1e-6 where BLAS's sum read 1.8G; four, 1.86G)."""
    n = a.shape[0]
    s0 = s1 = s2 = s3 = 0.0
    blocked = n - n % 4
    for i in range(0, blocked, 4):
        s0 += a[i] * b[i]
        s1 += a[i + 1] * b[i + 1]
        s2 += a[i + 2] * b[i + 2]
        s3 += a[i + 3] * b[i + 3]
    for i in range(blocked, n):
        s0 += a[i] * b[i]
    return (s0 + s1) + (s2 + s3)


@njit(cache=True, nogil=True)
def cg_advance(x, res, direction, product, rz):
    """One conjugate-gradient move along ``direction`` (``product``: the matrix times it; ``rz``:
    res . z of the preconditioned residual): x and res updated in place. Returns False, moving
    nothing, where the direction has no positive curvature."""
    curvature = dot(direction, product)
    if not curvature > 0.0:
        return False
    alpha = rz / curvature
    x += alpha * direction
    res -= alpha * product
    return True


def warm_up():
    """Compile (or load from Numba's cache) every kernel on tiny inputs."""
    data, idx, ptr = np.ones(2), np.arange(2, dtype=np.int64), np.array([0, 2], dtype=np.int64)
    ws, v2, v1 = np.zeros(1, dtype=np.int64), np.ones(2), np.zeros(1)
    outer_pass(data, idx, ptr, False, ws, v2, v2, v1, 0.1, 0.0, 0.0, v1.copy(), v1.copy(), ws.copy())
    check_pass(data, idx, ptr, False, ws, v2, v1, 0.1, 0.0, v1.copy())
    support_margins(data, idx, ptr, False, v1, 0.0, v2.copy())
    column_curvatures(data, idx, ptr, False, ws, v2, v1.copy())
    for gram_first in (0.0, np.inf):
        model = QuadraticModel(v1, np.ones(1), v1, v1.copy(), np.zeros(2), v2, 0.0)
        newton_direction(
            data,
            idx,
            ptr,
            False,
            ws.copy(),
            1,
            model,
            InnerSettings(0.1, 0.0, True, 1.0, 3, gram_first, 10),
            np.empty((0, 0)),
        )
        model_change(ws, 1, model, 0.0, 0.1, 0.0)
    border_gram(data, idx, ptr, False, np.zeros(2, dtype=np.int64), 1, 2, v2, np.eye(2), True, np.zeros(2))
    model_decrease(ws, 1, v1, v1, v1, 0.1)
    dot(v2, v2)
    model_dual_point(0, v2, v2, v2, v2, v2, True, v2.copy())
    penalty_change(ws, 1, v1, v1, 1.0, 0.1, 0.0)
    take_step(ws, 1, v1.copy(), v1.copy(), 0.5)
    one = np.ones(1)
    for gram_max in (0, 10):
        support_cg(
            data,
            idx,
            ptr,
            False,
            ws,
            v2,
            0.0,
            1e-12,
            True,
            np.ones(2),
            np.ones(2),
            1e-8,
            5,
            np.zeros(2),
            np.zeros(2),
            gram_max,
            np.ones(1),
            0,
        )
    Q = np.eye(2)
    gram_cg(Q, np.arange(2, dtype=np.int64), 1, 0.0, 1e-12, np.ones(2), np.ones(2), 1e-8, 5, np.zeros(2))
    gram_product(Q, 1, 0.0, 1e-12, np.ones(2), np.zeros(2))
    support_gradient(data, idx, ptr, False, ws, v2, True, np.zeros(2))
    support_margins_change(data, idx, ptr, False, ws, one, False, np.zeros(2))
    seed(0)
