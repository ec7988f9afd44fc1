"""Jitted conjugate gradients for the Newton system on a support (CD's support-Newton steps, the
violators' dual point, multinomial CD): products over the support's columns until a Gram matrix of
the system pays (``_gram_kernels.model_gram``), and the vector operations they share. Notation as
in ``_cd_kernels``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..data.memory import column_dots, columns_axpy
from ._gram_kernels import gram_cost, model_gram


@njit(cache=True, nogil=True, inline="always")
def _support_times(data, indices, indptr, dense, support, x, fit_intercept, t):
    """t = X_S x[:k] (+ x[k], the intercept). Shapes: support (k,), x (k [+ 1],), t (n,)."""
    k = support.shape[0]
    t[:] = x[k] if fit_intercept else 0.0
    columns_axpy(data, indices, indptr, dense, support, x[:k], t)


@njit(cache=True, nogil=True, inline="always")
def _support_transpose_times(data, indices, indptr, dense, support, t, fit_intercept, out):
    """out[:k] = X_S^T t (and out[k] = sum(t)). Shapes: t (n,), out (k [+ 1],)."""
    k = support.shape[0]
    column_dots(data, indices, indptr, dense, support, t, out[:k])
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


@njit(cache=True, nogil=True, inline="always")
def system_times(data, indices, indptr, dense, support, D, ridge, nu, fit_intercept, v, t, out):
    """out = M v for the support's Newton system M = X_S^T diag(D) X_S + ridge I, bordered by the
    intercept's row (curvature floor nu) when it is fitted: the columns read twice. ``t`` (n,):
    scratch. Shapes: v, out (k [+ 1],)."""
    k = support.shape[0]
    _support_times(data, indices, indptr, dense, support, v, fit_intercept, t)
    t *= D
    _support_transpose_times(data, indices, indptr, dense, support, t, fit_intercept, out)
    for q in range(k):
        out[q] += ridge * v[q]
    if fit_intercept:
        out[k] += nu * v[k]


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
    gram_products,
):
    """Jacobi-preconditioned conjugate gradients for the Newton system on the support,

        (X_S^T diag(D) X_S + ridge I) x[:k] (+ the intercept row, curvature floor nu) = rhs,

    from x = 0. Each product reads the support's columns twice, until those reads reach the
    cost of the system's Gram matrix (:func:`model_gram`, when k <= gram_max and a product
    with it, (k + 1)^2, costs less); the products are then taken on it (rent-or-buy, as in
    :func:`newton_direction`). With ``gram_products`` >= 0 it stops, not converged, after that many
    products on the Gram matrix: the caller then factorises the matrix it returns (rent or buy once
    more, ``_support_newton.support_newton_direction``).
    Off the Gram matrix, when ``max_crossings`` >= 0, it also stops once its iterate would carry
    more than ``max_crossings`` of the weights ``w_s`` (the support's, (k,)) across zero: a step
    the line search's projection will cut short whatever products follow (CG's iterates grow in
    norm from x = 0).
    Shapes: support (k,); D, t (n,) (t: workspace); rhs, diag, x (k [+ 1],).
    Returns (products with the matrix, work: nonzeros of X read plus the Gram matrix's
    multiply-adds, the Gram matrix when it was built, else an empty (0, 0) array: the system at
    this point without its ridge, for a re-solve on some of its rows, :func:`gram_cg`; whether
    the residual reached ``rtol``).
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
    on_gram = 0
    while products < max_iter and np.sqrt(dot(res, res)) > stop:
        if use_gram and 0 <= gram_products <= on_gram:
            break
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
            on_gram += 1
        else:
            system_times(data, indices, indptr, dense, support, D, ridge, nu, fit_intercept, direction, t, product)
            reads += 2 * nnz_support
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
    return products, reads, Q, np.sqrt(dot(res, res)) <= stop


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
