"""Jitted kernels of CD's Gram matrices: the curvature X_A^T diag(D) X_A of a quadratic model over a
few columns (bordered by the intercept's row), built once and then swept, solved on its faces, grown
by a few coordinates, and priced against the sweeps over the columns it replaces (rent or buy).

``_cd_kernels.newton_direction`` decides when a model is solved on its Gram matrix; the support's
Newton system takes its CG products on one too (``_cg_kernels.support_cg``). Notation as in
``_cd_kernels``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..data.memory import column, column_axpy, column_dot, column_weighted_dot
from ._cholesky import cholesky_factor, cholesky_solve
from ._quadratic_step import NU, coordinate_step, intercept_eliminated

# A dense Gram matrix against the scalar loops, per multiply-add, and the copy of each of its
# columns' values into the scaled block (``_dense_gram``), in reads: the rent-or-buy choices
# weigh its work in the scalar loops' units (the factorisations and CG products on a Gram
# matrix are priced with the same speed-up, ``_support_factor`` and ``_support_newton``).
# Measured with BLAS's product against a model sweep over the same dense columns (0.68-0.81 ns
# a value read): 0.09-0.13 ns a multiply-add at 80-400 columns (0.29 at 20, where the copy
# dominates), and the copy about 1.5 ns a value.
DENSE_GRAM_SPEEDUP = 8.0
DENSE_GRAM_COPY = 2.0
# Entries of a sparse Gram matrix's block of rows (``model_gram``): 32768 x 16 bytes, within
# a core's L2 cache (8192 and 131072 measured the same).
GRAM_BLOCK_ENTRIES = 32768
# Bytes of a sparse Gram matrix's rows updated together (``model_gram``): a matrix larger than
# this is built a band of its rows at a time, so that the band stays in cache while a block of
# rows' outer products land in it.
GRAM_BAND_BYTES = 524288
# A sparse Gram matrix's scattered multiply-add (one pair of a row's entries, ``model_gram``) costs
# about this many multiply-adds of the dense tiles (``_upper_products``): where the model's columns
# are dense enough that sum_i k_i (k_i + 1) / 2 pairs cost more than n p^2 / 2 tile products (p the
# size padded to a multiple of 4), a block of rows is scattered into a dense block and multiplied
# in tiles (``_densified_gram``). Measured (one thread): 0.63-1.2 ns a pair, 0.05-0.07 ns a tile
# product with the block's scatter; mnist10k's 330 densest columns (43% nonzero) 68.8 -> 29.5 ms,
# its 120 densest 17.6 -> 5.3 ms; its 600 densest (25%, 0.07 pairs a tile product) 79 ms sparse
# against 92 dense, a9a's 50 densest (26%, 0.07) 3.2 ms either way, its 120 (12%) 3.9 against 12.3.
SPARSE_PAIR_TILES = 10.0
# Bytes of a dense Gram matrix's block of scaled rows (``_dense_gram``): multiplied while it is in
# the second-level cache, and the one scratch block is reused for the next (with BLAS's product,
# 200,000 x 22 with intercept: blocks of 1 MB 14.4 ms, of 256 kB 7.3 ms; with the tiles, 64 kB to
# 1 MB and at least 256 or 1,024 rows measured level on 200,000 x 10-40 and 5,000 x 50-500).
DENSE_GRAM_BLOCK_BYTES = 262144
# ... and of at least this many rows (with BLAS's product, blocks of 261 rows of 2,000 x 500 made
# the fit at 0.01 lam_max 5-10% slower than unblocked).
DENSE_GRAM_BLOCK_ROWS = 1024

# On its Gram matrix, a model CD has not solved in this many sweeps gets active-set descents on
# its faces (:func:`gram_face_descent`, a linear solve each), at most FACE_SOLVES solves in a
# row. Measured, nonzeros read (multiply-adds of the solves included) at tol 1e-1 / 1e-2 /
# 1e-4 / 1e-6: 16 dense correlated problems (3,000 x 80) summed 812M / 850M / 932M / 1176M ->
# 788M / 805M / 809M / 716M; a9a at 0.001 lam_max, where one-hot blocks beside the intercept
# make the models singular and CD took 1,000 sweeps on one of them (57 now), 52M / 52M / 52M /
# 50M -> 54M / 42M / 42M / 45M, at 0.01 lam_max 28M / 35M / 41M / 41M -> 25M / 25M / 31M / 31M;
# mnist10k, earn and news20 unchanged.
FACE_AFTER, FACE_SOLVES = 10, 8


@njit(cache=True, nogil=True)
def gram_cost(data, indices, indptr, dense, active, m, counts):
    """Work of :func:`model_gram` over the columns active[:m]: (nonzeros read, multiply-adds).

    The Gram matrix sums, over the rows, the outer product of each row's entries in those
    columns: sum_i k_i (k_i + 1) / 2 for k_i entries in row i. counts (n,) is scratch, left
    holding k_i. Dense columns are multiplied in tiles (:func:`_dense_gram`): their work is the
    multiply-adds over ``DENSE_GRAM_SPEEDUP`` and the copy of their values, ``DENSE_GRAM_COPY``
    reads each, in the units of the scalar loops it is weighed against. Sparse columns dense
    enough are multiplied in tiles too (:func:`_densify_pays`), but are still priced at their
    rows' pairs: the lesser price bought Gram matrices sooner and moved the fits' decisions,
    which a sparse fit and its dense twin must share (their minimisers agree to 1e-7 at tol
    1e-10 only while their steps are the same)."""
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
            i = np.uint64(rows[p])
            k = counts[i] + 1
            counts[i] = k
            pairs += k
        nnz += rows.shape[0]
    return nnz, float(pairs)


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _upper_products(C, size, b, Q):
    """Q[a, c] += C_a . C_c for every pair of rows a <= c of the block C (``size`` rows of ``b``
    values each, row a in C[a b : (a + 1) b]; ``size`` a multiple of 4), in 4 x 4 tiles: each
    pass over the block's values feeds sixteen sums from eight rows, half of the products of
    ``C C^T`` (the tiles on the diagonal are computed whole, their lower halves unused).

    ``reassoc`` lets the compiler sum each of the sixteen in vector lanes (a fixed order for a
    given build, not the row order): without it the sums are chains of dependent additions
    and the kernel ran 2-3x slower than BLAS's product; with it, 1.5-3x faster (blocks of
    1,024-2,730 rows of 12-40 columns, one thread: OpenBLAS's dgemm on C C^T, whose syrk
    cannot be called from cached compiled code, took 15-126 us, these tiles 11-40 us, ~22 G
    multiply-adds a second)."""
    for a0 in range(0, size, 4):
        A0, A1 = C[a0 * b : (a0 + 1) * b], C[(a0 + 1) * b : (a0 + 2) * b]
        A2, A3 = C[(a0 + 2) * b : (a0 + 3) * b], C[(a0 + 3) * b : (a0 + 4) * b]
        for c0 in range(a0, size, 4):
            B0, B1 = C[c0 * b : (c0 + 1) * b], C[(c0 + 1) * b : (c0 + 2) * b]
            B2, B3 = C[(c0 + 2) * b : (c0 + 3) * b], C[(c0 + 3) * b : (c0 + 4) * b]
            s00 = s01 = s02 = s03 = s10 = s11 = s12 = s13 = 0.0
            s20 = s21 = s22 = s23 = s30 = s31 = s32 = s33 = 0.0
            for i in range(b):
                x0, x1, x2, x3 = A0[i], A1[i], A2[i], A3[i]
                y0, y1, y2, y3 = B0[i], B1[i], B2[i], B3[i]
                s00 += x0 * y0
                s01 += x0 * y1
                s02 += x0 * y2
                s03 += x0 * y3
                s10 += x1 * y0
                s11 += x1 * y1
                s12 += x1 * y2
                s13 += x1 * y3
                s20 += x2 * y0
                s21 += x2 * y1
                s22 += x2 * y2
                s23 += x2 * y3
                s30 += x3 * y0
                s31 += x3 * y1
                s32 += x3 * y2
                s33 += x3 * y3
            Q[a0, c0] += s00
            Q[a0, c0 + 1] += s01
            Q[a0, c0 + 2] += s02
            Q[a0, c0 + 3] += s03
            Q[a0 + 1, c0] += s10
            Q[a0 + 1, c0 + 1] += s11
            Q[a0 + 1, c0 + 2] += s12
            Q[a0 + 1, c0 + 3] += s13
            Q[a0 + 2, c0] += s20
            Q[a0 + 2, c0 + 1] += s21
            Q[a0 + 2, c0 + 2] += s22
            Q[a0 + 2, c0 + 3] += s23
            Q[a0 + 3, c0] += s30
            Q[a0 + 3, c0 + 1] += s31
            Q[a0 + 3, c0 + 2] += s32
            Q[a0 + 3, c0 + 3] += s33


@njit(cache=True, nogil=True)
def _block_rows(n, padded):
    """Rows of a dense or densified Gram matrix's scratch block of ``padded`` rows of values."""
    return min(n, max(DENSE_GRAM_BLOCK_ROWS, DENSE_GRAM_BLOCK_BYTES // (8 * padded)))


@njit(cache=True, nogil=True)
def _symmetric_from_upper(Q, size, m, D, fit_intercept):
    """The (size, size) Gram matrix from the upper triangle of the padded ``Q`` the tiles summed:
    exactly symmetric, the intercept's corner sum_i D_i."""
    out = np.empty((size, size))
    for a in range(size):
        for c in range(a, size):
            out[a, c] = Q[a, c]
            out[c, a] = Q[a, c]
    if fit_intercept:
        out[m, m] = D.sum()
    return out


@njit(cache=True, nogil=True)
def _dense_gram(data, indptr, active, m, D, fit_intercept):
    """:func:`model_gram` of dense columns, a block of rows at a time: the block's columns
    scaled by sqrt(D) (D >= 0: the loss is convex), and sqrt(D) itself for the intercept's
    column of ones, as the rows of a (size, b) array C, padded with rows of zeros to a multiple
    of 4, and the upper triangle of Q += C C^T by :func:`_upper_products`; then made exactly
    symmetric, the intercept's corner sum_i D_i. One scratch block of about
    ``DENSE_GRAM_BLOCK_BYTES``, reused: a copy of all n rows of the columns was a fresh
    allocation of m n floats per model, whose first touch (page faults) cost more than the
    product (100,000 x 84 with intercept: 89 -> 47 ms)."""
    n = D.shape[0]
    size = m + 1 if fit_intercept else m
    if size == 0:
        return np.zeros((0, 0))
    padded = (size + 3) // 4 * 4
    Q = np.zeros((padded, padded))
    rows = _block_rows(n, padded)
    scratch = np.empty(padded * rows)
    root = np.empty(rows)
    for first in range(0, n, rows):
        b = min(rows, n - first)
        for i in range(b):
            root[i] = np.sqrt(max(D[first + i], 0.0))  # a rounding below zero must not become a NaN
        # Rows of C written through one-dimensional slices: C[s, i] indexed in two dimensions
        # did not vectorise, and the copy cost as much as the product.
        for s in range(m):
            start = indptr[active[s]] + first
            source, row = data[start : start + b], scratch[s * b : (s + 1) * b]
            for i in range(b):
                row[i] = source[i] * root[i]
        if fit_intercept:
            # A loop, not ``scratch[m * b : size * b] = root[:b]``: an array assigned to a slice
            # compiles Numba's shape-mismatch error and its string formatting (2.5 s at the first
            # fit after installing).
            for i in range(b):
                scratch[m * b + i] = root[i]
        scratch[size * b : padded * b] = 0.0
        _upper_products(scratch, padded, b, Q)
    return _symmetric_from_upper(Q, size, m, D, fit_intercept)


@njit(cache=True, nogil=True)
def _densify_pays(n, m, fit_intercept, counts):
    """Whether sparse columns whose rows hold counts[i] of their entries are multiplied faster
    scattered into dense blocks (``SPARSE_PAIR_TILES``) than by their rows' outer products."""
    pairs = 0.0
    for i in range(n):
        k = float(counts[i])
        pairs += k * (k + 1.0)
    padded = (m + (1 if fit_intercept else 0) + 3) // 4 * 4
    return SPARSE_PAIR_TILES * 0.5 * pairs > 0.5 * n * padded * padded


@njit(cache=True, nogil=True)
def _densified_gram(data, indices, indptr, active, m, D, fit_intercept):
    """:func:`model_gram` of sparse columns dense enough (:func:`_densify_pays`): each block of
    rows of the columns active[:m] scattered, scaled by sqrt(D), into a zeroed dense block (the
    columns' next entries kept in cursors: their rows are increasing), then multiplied in tiles
    as :func:`_dense_gram` multiplies dense columns."""
    n = D.shape[0]
    size = m + 1 if fit_intercept else m
    padded = (size + 3) // 4 * 4
    Q = np.zeros((padded, padded))
    rows = _block_rows(n, padded)
    scratch = np.empty(padded * rows)
    root = np.empty(rows)
    cursor = np.empty(m, dtype=np.int64)
    for s in range(m):
        cursor[s] = indptr[active[s]]
    for first in range(0, n, rows):
        b = min(rows, n - first)
        last = first + b
        for i in range(b):
            root[i] = np.sqrt(max(D[first + i], 0.0))
        scratch[: padded * b] = 0.0
        for s in range(m):
            p, end = cursor[s], indptr[active[s] + 1]
            row = scratch[s * b : (s + 1) * b]
            while p < end and indices[p] < last:
                i = indices[p] - first
                row[i] = data[p] * root[i]
                p += 1
            cursor[s] = p
        if fit_intercept:
            for i in range(b):  # a loop: see _dense_gram
                scratch[m * b + i] = root[i]
        _upper_products(scratch, padded, b, Q)
    return _symmetric_from_upper(Q, size, m, D, fit_intercept)


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
    of ``data.memory`` stores them (canonical). Dense columns are copied out, a block of rows at
    a time, and multiplied in tiles instead (:func:`_dense_gram`), and so are sparse columns
    whose rows' outer products would cost more than the tiles (:func:`_densify_pays`,
    :func:`_densified_gram`). Shape (m [+ 1], m [+ 1])."""
    if dense:
        return _dense_gram(data, indptr, active, m, D, fit_intercept)
    n = counts.shape[0]
    if m > 0 and _densify_pays(n, m, fit_intercept, counts):
        return _densified_gram(data, indices, indptr, active, m, D, fit_intercept)
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
                i = np.uint64(indices[p])
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
    return symmetric_gram(Q, size, D, fit_intercept)


@njit(cache=True, nogil=True)
def symmetric_gram(Q, size, D, bordered):
    """Q, flat with its upper triangle summed, as the symmetric (size, size) matrix, and, when
    ``bordered`` (the intercept's row is the last), its corner sum_i D_i over every row, in
    order (an empty row's D counts there)."""
    if bordered:
        corner = 0.0
        for i in range(D.shape[0]):
            corner += D[i]
        Q[(size - 1) * size + size - 1] = corner
    Q2 = Q.reshape((size, size))
    for a in range(size):
        for b in range(a + 1, size):
            Q2[b, a] = Q2[a, b]
    return Q2


@njit(cache=True, nogil=True)
def gram_sweep(active, local, m, g, H, w, wpd, Q, Qd, lam1, lam2, shrink_at, fit_intercept, g_b, d_b):
    """:func:`model_sweep` with the model's curvature products read from its Gram matrix
    (:func:`model_gram`): Qd = Q (d, d_b) is kept instead of X d, so a coordinate costs
    O(1) to check and O(size of Q) to move, whatever its column's nonzeros. local[s] is
    the row of Q of active[s]; both are permuted together. With the intercept (Q's last row),
    each coordinate steps jointly with it, as :func:`~l1scale.solvers._cd_kernels.model_sweep`
    does (v_j = Q[j, b], s = Q[b, b] + nu): a move then costs twice as much; the sweep ends on the
    intercept's exact step (:func:`gram_intercept_step`).
    Returns (new m, largest violation, sum of violations, multiply-adds done, d_b, |the intercept's
    model gradient| before its last step, 0 without it)."""
    for s in range(m - 1):
        t = s + np.random.randint(m - s)
        active[s], active[t] = active[t], active[s]
        local[s], local[t] = local[t], local[s]
    vmax, vsum, s, work = 0.0, 0.0, 0, 0
    size = Q.shape[0]
    b = size - 1
    s_b = Q[b, b] + NU
    while s < m:
        j, loc = active[s], local[s]
        x = wpd[j]
        G = g[j] + (lam2 + NU) * (x - w[j]) + Qd[loc]
        h, v, G_b = H[j], 0.0, 0.0
        if fit_intercept:
            v = Q[loc, b]
            G_b = g_b + NU * d_b + Qd[b]
            G, h = intercept_eliminated(G, h, v, G_b, s_b)
        shrink, viol, z = coordinate_step(x, G, lam1, h, shrink_at)
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
        if fit_intercept:
            step_b = -(G_b + v * z) / s_b
            d_b += step_b
            for t in range(size):
                Qd[t] += step_b * Q[b, t]
            work += size
    if not fit_intercept:
        return m, vmax, vsum, work + m, d_b, 0.0
    step, viol = gram_intercept_step(g_b, d_b, Q, Qd)
    return m, vmax, vsum, work + m, d_b + step, viol


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
    for t in range(k):  # a loop: an array op on a slice compiles a shape check (_dense_gram)
        ridge[t] += lam2
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
    # The face's matrix with its ridge is positive definite: solved by Cholesky (LAPACK's potrf,
    # already compiled for the support-Newton steps; ``np.linalg.solve`` cost 3.5 s of compiling
    # at the first fit after installing). Where rounding leaves it not numerically positive
    # definite, it is damped until it is: the direction is checked below in any case.
    L = cholesky_factor(_with_ridge(A, ridge, 1e-10))
    if L.shape[0] == 0:
        L = cholesky_factor(_with_ridge(A, ridge, 1e-6))
    work = n_sys**3 // 3 + 2 * n_sys * n_sys
    if L.shape[0] == 0:
        return 0.0, work, False
    x = np.empty(n_sys)
    cholesky_solve(L, rhs, x)
    # The model's slope and curvature along the solve's direction x, from the face's matrix.
    slope, curv = 0.0, 0.0
    for a in range(n_sys):
        slope -= rhs[a] * x[a]
        qa = ridge[a] * x[a]
        for b in range(n_sys):
            qa += A[a, b] * x[b]
        curv += x[a] * qa
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
def _with_ridge(A, ridge, relative):
    """A copy of A with ``ridge`` and ``relative`` times itself on its diagonal: keeps the
    factorisation off zero pivots (one-hot blocks beside the intercept make the face's matrix
    singular but for the ridge)."""
    B = A.copy()
    for a in range(A.shape[0]):
        B[a, a] = A[a, a] * (1.0 + relative) + ridge[a]
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
    """The exact step on the intercept coordinate of the quadratic model, read from the Gram
    matrix's border; updates Qd. Returns (step, |the intercept's model gradient| before it)."""
    b = Q.shape[0] - 1
    G = g_b + NU * d_b + Qd[b]
    step = -G / (NU + Q[b, b])
    for t in range(Q.shape[0]):
        Qd[t] += step * Q[b, t]
    return step, abs(G)


@njit(cache=True, nogil=True)
def gram_times_step(Q, active, m, w, wpd, d_b, fit_intercept):
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
    read of the model's columns (:func:`_weighted_dots_with`), where :func:`model_gram` sums every row's outer product anew
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
    row = np.empty(m_new)
    for p in range(m_old, m_new):
        j = active[p]
        reads += _weighted_dots_with(data, indices, indptr, dense, j, active, p + 1, D, t, row)
        for s in range(p + 1):
            Q[s, p] = row[s]
            Q[p, s] = row[s]
        if fit_intercept:
            value = column_dot(data, indices, indptr, dense, j, D)
            Q[p, m_new] = value
            Q[m_new, p] = value
    return Q, reads


@njit(cache=True, nogil=True, inline="always")
def _weighted_dots_with(data, indices, indptr, dense, j, cols, count, D, t, out):
    """out[s] = x_c^T diag(D) x_j for c = cols[s], s < count: x_j scattered into ``t`` (zero on
    entry and on return, exactly), then one read of each column. Returns the nonzeros read."""
    reads = column_axpy(data, indices, indptr, dense, j, 1.0, t)  # t = x_j
    for s in range(count):
        c = cols[s]
        out[s] = column_weighted_dot(data, indices, indptr, dense, c, D, t, 0.0)
        reads += indptr[c + 1] - indptr[c]
    column_axpy(data, indices, indptr, dense, j, -1.0, t)  # back to zero, exactly
    return reads


@njit(cache=True, nogil=True)
def system_columns(data, indices, indptr, dense, support, positions, D, ridge, fit_intercept, t, out):
    """out[:, q] = M e_p, p = positions[q] (each < k: a weight of the support), for the support's
    Newton system M = X_S^T diag(D) X_S + ridge I, bordered by the intercept's row when it is
    fitted (as ``_cg_kernels.support_cg`` writes it): for each such weight j, its weighted dots
    with every column of the support (:func:`_weighted_dots_with`, as for :func:`border_gram`'s
    rows), in one call without the GIL, where a system product per weight read the support's
    columns twice, with NumPy calls between. ``t`` (n,): scratch, zero on entry and on return.
    Shapes: support (k,), out (k [+ 1], len(positions)). Returns the nonzeros of X read."""
    k = support.shape[0]
    reads = 0
    column = np.empty(k)
    for q in range(positions.shape[0]):
        p = positions[q]
        j = support[p]
        reads += _weighted_dots_with(data, indices, indptr, dense, j, support, k, D, t, column)
        for s in range(k):
            out[s, q] = column[s]
        out[p, q] += ridge
        if fit_intercept:
            out[k, q] = column_dot(data, indices, indptr, dense, j, D)
            reads += indptr[j + 1] - indptr[j]
    return reads


@njit(cache=True, nogil=True)
def curvature_term_gram(active, local, m, w, wpd, Qd, d_b):
    """:func:`_curvature_term` from Qd = Q (d, d_b) of the Gram matrix (its last row: the
    intercept's, when d_b moves)."""
    quad = d_b * Qd[Qd.shape[0] - 1] if d_b != 0.0 else 0.0
    for k in range(m):
        quad += (wpd[active[k]] - w[active[k]]) * Qd[local[k]]
    return quad
