"""Jitted kernels of the multinomial coordinate-descent solver (``multinomial.py`` drives them).

Notation: K classes; W (d, K) the coefficients, row j = feature j's K weights; Z (n, K)
the margins X W + b; P = softmax(Z) row by row; CP = c P; R = c (P - Y) the loss gradient
on the margins; D = c P (1 - P) the diagonal of its Hessian. Every kernel works in place on
arrays the driver owns, reads X by columns (``data.memory.column``: dense and sparse alike)
and releases the GIL.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..data.memory import column, dense_columns
from ..losses import softmax_row
from ._cg_kernels import cg_advance, dot

# Curvature floor of the quadratic model (liblinear's nu), as in the binary solver.
NU = 1e-12


@njit(cache=True, nogil=True)
def seed(value):
    np.random.seed(value)


@njit(cache=True, nogil=True)
def support_margins(data, indices, indptr, dense, W, b, Z):
    """Z = X W + b from the nonzero rows of W. Shapes: W (d, K), b (K,), Z (n, K).
    Returns the nonzeros of X read."""
    K = W.shape[1]
    for i in range(Z.shape[0]):
        for k in range(K):
            Z[i, k] = b[k]
    reads = 0
    for j in range(W.shape[0]):
        nonzero = False
        for k in range(K):
            nonzero = nonzero or W[j, k] != 0.0
        if nonzero:
            rows, vals = column(data, indices, indptr, dense, j)
            for p in range(rows.shape[0]):
                i, v = np.uint64(rows[p]), vals[p]
                for k in range(K):
                    Z[i, k] += W[j, k] * v
            reads += rows.shape[0]
    return reads


@njit(cache=True, nogil=True)
def state_at(Z, y, c, P, CP, R, D, lv):
    """At margins Z: P, CP = c P, R = c (P - Y), D = c P (1 - P) and the losses lv;
    returns sum_i c_i lv_i. Shapes: Z, P, CP, R, D (n, K); y, c, lv (n,)."""
    total = 0.0
    for i in range(Z.shape[0]):
        lv[i] = softmax_row(Z[i], P[i]) - Z[i, y[i]]
        ci = c[i]
        total += ci * lv[i]
        for k in range(Z.shape[1]):
            p = P[i, k]
            CP[i, k] = ci * p
            R[i, k] = ci * (p - (1.0 if k == y[i] else 0.0))
            D[i, k] = ci * p * (1.0 - p)
    return total


@njit(cache=True, nogil=True)
def trial_losses(Z, dZ, step, y, c, lv, Z_new, lv_new, p):
    """Z_new = Z + step dZ^T and its losses lv_new; returns sum_i c_i (lv_new_i - lv_i), summed
    term by term so that it stays accurate when the change is tiny. Shapes: Z, Z_new (n, K);
    dZ (K, n) (class-major, as the model sweeps keep it); y, c, lv, lv_new (n,); p (K,) scratch."""
    change = 0.0
    for i in range(Z.shape[0]):
        for k in range(Z.shape[1]):
            Z_new[i, k] = Z[i, k] + step * dZ[k, i]
        lv_new[i] = softmax_row(Z_new[i], p) - Z_new[i, y[i]]
        change += c[i] * (lv_new[i] - lv[i])
    return change


@njit(cache=True, nogil=True)
def outer_pass(data, indices, indptr, dense, cols, R, D, W, lam1, lam2, shrink_at, curvature, G, H, active):
    """Gradient (and curvature) of every row j in ``cols``; liblinear's outer shrinking by rows.

    G[j] = X_j^T R + lam2 W[j]; with ``curvature``, H[j] = X_j^2 . D + lam2 + nu. A row of W that
    is zero and whose gradient stays inside lam1 - shrink_at is left out; the others go to
    active[:m]. Shapes: R, D (n, K); W, G, H (d, K); cols, active (k,).
    Returns (m, largest violation, sum of violations, nnz(W) over cols, largest violation of a
    zero weight)."""
    K = W.shape[1]
    acc_g, acc_h = np.empty(K), np.empty(K)
    m, vmax, vsum, nnz, vzero = 0, 0.0, 0.0, 0, 0.0
    for q in range(cols.shape[0]):
        j = cols[q]
        rows, vals = column(data, indices, indptr, dense, j)
        acc_g[:] = 0.0
        acc_h[:] = 0.0
        if curvature:
            for p in range(rows.shape[0]):
                i, v = np.uint64(rows[p]), vals[p]
                for k in range(K):
                    acc_g[k] += v * R[i, k]
                    acc_h[k] += v * v * D[i, k]
        else:
            for p in range(rows.shape[0]):
                i, v = np.uint64(rows[p]), vals[p]
                for k in range(K):
                    acc_g[k] += v * R[i, k]
        keep = False
        for k in range(K):
            wjk = W[j, k]
            gjk = acc_g[k] + lam2 * wjk
            G[j, k] = gjk
            if curvature:
                H[j, k] = acc_h[k] + lam2 + NU
            if wjk == 0.0:
                viol = max(abs(gjk) - lam1, 0.0)
                vzero = max(vzero, viol)
                keep = keep or abs(gjk) >= lam1 - shrink_at
            else:
                nnz += 1
                keep = True
                viol = abs(gjk + lam1) if wjk > 0.0 else abs(gjk - lam1)
            vmax = max(vmax, viol)
            vsum += viol
        if keep:
            active[m] = j
            m += 1
    return m, vmax, vsum, nnz, vzero


@njit(cache=True, nogil=True)
def model_sweep(data, indices, indptr, dense, active, m, G, H, W, Wpd, dZ, S, P, CP, lam1, lam2, shrink_at, skip):
    """One CD sweep, rows in random order and each row's K coordinates in turn, over active[:m]
    of the proximal-Newton model

        <G, Delta> + 1/2 sum_i c_i dz_i^T (diag p_i - p_i p_i^T) dz_i + lam1 ||W + Delta||_1
        (+ lam2 / 2 ||W + Delta||^2 beyond G's linear part),  Delta = Wpd - W,  dz = X Delta + db,

    with the exact curvature H[j, k] of each coordinate. Kept up to date: dZ = X Delta + db and
    S_i = p_i . dz_i, so a coordinate's model gradient is G + sum_i x_ij CP_ik (dZ_ik - S_i).
    Inner shrinking (liblinear's): a coordinate at zero whose model gradient is inside
    (-lam1 + shrink_at, lam1 - shrink_at) is marked in ``skip`` and passed over until the caller
    clears ``skip``. dZ, P and CP are class-major (K, n): a coordinate's pass over its column
    then reads them in row order. Shapes: active (k,); G, H, W, Wpd (d, K); dZ, P, CP (K, n);
    S (n,); skip (d, K) bool.
    Returns (largest violation, sum of violations, nonzeros read)."""
    for s in range(m - 1):
        t = s + np.random.randint(m - s)
        active[s], active[t] = active[t], active[s]
    K = W.shape[1]
    vmax, vsum, reads = 0.0, 0.0, 0
    for s in range(m):
        j = active[s]
        rows, vals = column(data, indices, indptr, dense, j)
        for k in range(K):
            if skip[j, k]:
                continue
            x = Wpd[j, k]
            CPk, dZk, Pk = CP[k], dZ[k], P[k]
            g = G[j, k] + (lam2 + NU) * (x - W[j, k])
            if dense:  # contiguous: no index loads, and the loop vectorises
                for i in range(vals.shape[0]):
                    g += vals[i] * CPk[i] * (dZk[i] - S[i])
            else:
                for p in range(rows.shape[0]):
                    i = np.uint64(rows[p])
                    g += vals[p] * CPk[i] * (dZk[i] - S[i])
            reads += rows.shape[0]
            h = H[j, k]
            gp, gn = g + lam1, g - lam1
            if x == 0.0:
                if gp > shrink_at and gn < -shrink_at:
                    skip[j, k] = True
                    continue
                viol = -gp if gp < 0.0 else (max(0.0, gn))
            else:
                viol = abs(gp) if x > 0.0 else abs(gn)
            vmax = max(vmax, viol)
            vsum += viol
            if gp <= h * x:
                delta = -gp / h
            elif gn >= h * x:
                delta = -gn / h
            else:
                delta = -x
            if delta != 0.0:
                Wpd[j, k] = x + delta
                if dense:
                    for i in range(vals.shape[0]):
                        dv = delta * vals[i]
                        dZk[i] += dv
                        S[i] += Pk[i] * dv
                else:
                    for p in range(rows.shape[0]):
                        i = np.uint64(rows[p])
                        dv = delta * vals[p]
                        dZk[i] += dv
                        S[i] += Pk[i] * dv
    return vmax, vsum, reads


@njit(cache=True, nogil=True)
def intercept_sweep(gb, Hb, db, dZ, S, P, CP):
    """One CD sweep over the K intercepts of the model (unpenalised): for each class k the
    exact minimiser along db_k, gradient gb_k + sum_i CP_ik (dZ_ik - S_i), curvature Hb_k;
    dZ and S updated. Shapes: gb, Hb, db (K,); dZ, P, CP (K, n) (class-major); S (n,).
    Returns the largest absolute model gradient met."""
    K, n = dZ.shape
    vmax = 0.0
    for k in range(K):
        g = gb[k]
        for i in range(n):
            g += CP[k, i] * (dZ[k, i] - S[i])
        vmax = max(vmax, abs(g))
        delta = -g / Hb[k]
        db[k] += delta
        for i in range(n):
            dZ[k, i] += delta
            S[i] += P[k, i] * delta
    return vmax


@njit(cache=True, nogil=True)
def _support_product(data, indices, indptr, dense, x, sup_j, sup_k, rows, fit_b, P, CP, V, db, dZ, G, out, A):
    """out = (H X)_S-block product of the multinomial Newton system with x = [V_S, db]:
    (X^T H X V)_S (+ the intercepts' rows sum_i H_i (x_i V + db)) + nu x, H_i = c_i (diag p_i - p_i p_i^T).
    V, db, dZ, G are workspace. Dense data: A (len(rows), n) holds the columns of ``rows``, and the
    two products with X are BLAS's. Returns the nonzeros of X read."""
    ns = sup_j.shape[0]
    K = P.shape[1]
    for t in range(ns):
        V[sup_j[t], sup_k[t]] = x[t]
    for k in range(K):
        db[k] = x[ns + k] if fit_b else 0.0
    if dense:
        Vr = np.empty((rows.shape[0], K))
        for q in range(rows.shape[0]):
            for k in range(K):
                Vr[q, k] = V[rows[q], k]
        product = np.dot(A.T, Vr)
        for i in range(dZ.shape[0]):  # a loop: a slice assigned an array compiles a shape check
            for k in range(K):
                dZ[i, k] = product[i, k] + db[k]
        reads = rows.shape[0] * dZ.shape[0]
    else:
        reads = support_margins(data, indices, indptr, dense, V, db, dZ)
    for i in range(dZ.shape[0]):  # dZ becomes H dZ, row by row
        s = 0.0
        for k in range(K):
            s += P[i, k] * dZ[i, k]
        for k in range(K):
            dZ[i, k] = CP[i, k] * (dZ[i, k] - s)
    if dense:
        Gr = np.dot(A, dZ)
        for q in range(rows.shape[0]):
            for k in range(K):
                G[rows[q], k] = Gr[q, k]
        reads += rows.shape[0] * dZ.shape[0]
    else:
        for q in range(rows.shape[0]):
            j = rows[q]
            r_idx, vals = column(data, indices, indptr, dense, j)
            for k in range(K):
                G[j, k] = 0.0
            for p in range(r_idx.shape[0]):
                i, v = r_idx[p], vals[p]
                for k in range(K):
                    G[j, k] += v * dZ[i, k]
            reads += r_idx.shape[0]
    for t in range(ns):
        out[t] = G[sup_j[t], sup_k[t]] + NU * x[t]
    if fit_b:
        for k in range(K):
            acc = 0.0
            for i in range(dZ.shape[0]):
                acc += dZ[i, k]
            out[ns + k] = acc + NU * x[ns + k]
    return reads


@njit(cache=True, nogil=True)
def _project_off_ones(x, full_pos, ns, fit_b, K):
    """x with the mean across classes removed from every full row's block and the intercepts'."""
    for r in range(full_pos.shape[0]):
        mean = 0.0
        for k in range(K):
            mean += x[full_pos[r, k]]
        mean /= K
        for k in range(K):
            x[full_pos[r, k]] -= mean
    if fit_b:
        mean = 0.0
        for k in range(K):
            mean += x[ns + k]
        mean /= K
        for k in range(K):
            x[ns + k] -= mean


@njit(cache=True, nogil=True)
def support_cg(data, indices, indptr, dense, sup_j, sup_k, rows, full_pos, fit_b, P, CP, rhs, diag, rtol, max_iter):
    """Jacobi-preconditioned conjugate gradients on the multinomial Newton system of the support
    S = {(sup_j[t], sup_k[t])} (and the intercepts when ``fit_b``), on the complement of the
    softmax's null directions (ones over a full row of W, ``full_pos``, and over the intercepts),
    from x = 0. ``rows``: the distinct rows of S. Returns (x, products, nonzeros of X read)."""
    n, K = P.shape
    d = 0
    for t in range(sup_j.shape[0]):
        d = max(d, sup_j[t] + 1)
    for q in range(rows.shape[0]):
        d = max(d, rows[q] + 1)
    ns = sup_j.shape[0]
    V, G = np.zeros((d, K)), np.zeros((d, K))
    db, dZ = np.zeros(K), np.empty((n, K))
    b = rhs.copy()
    _project_off_ones(b, full_pos, ns, fit_b, K)
    x = np.zeros_like(b)
    res = b.copy()
    z = res / diag
    _project_off_ones(z, full_pos, ns, fit_b, K)
    direction = z.copy()
    Ad = np.empty_like(b)
    rz = dot(res, z)
    stop = rtol * np.sqrt(dot(b, b))
    products, reads = 0, 0
    # Dense: the rows' columns, for BLAS.
    A = dense_columns(data, indptr, rows, n) if dense else np.empty((0, n))
    while products < max_iter:
        if np.sqrt(dot(res, res)) <= stop or rz <= 0.0:
            break
        reads += _support_product(
            data, indices, indptr, dense, direction, sup_j, sup_k, rows, fit_b, P, CP, V, db, dZ, G, Ad, A
        )
        products += 1
        _project_off_ones(Ad, full_pos, ns, fit_b, K)
        if not cg_advance(x, res, direction, Ad, rz):
            break
        z = res / diag
        _project_off_ones(z, full_pos, ns, fit_b, K)
        rz_new = dot(res, z)
        direction = z + (rz_new / rz) * direction
        rz = rz_new
    return x, products, reads
