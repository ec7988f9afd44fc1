"""The support-Newton system's preconditioned conjugate gradients in Numba: CG preconditioned by an
earlier point's Cholesky factorisation (``_support_factor``; the factor and its solves are in
``_cholesky``), without the GIL.

A path's later lams solve their Newton systems by CG preconditioned with the last lam's
factorisation (:meth:`_support_factor.SupportFactor.preconditioner`): a few products each, on
supports of tens to thousands of weights. Each product and each application of the
preconditioner is microseconds to a millisecond of arithmetic, and the loop around them was
Python over NumPy: a dozen small array operations an application, each holding the GIL. In a
cross-validation's threads (``n_jobs``) a solve waits for the GIL as long as the other holds it,
and on earn's 5-fold CV (py-spy ``--gil``, one thread) the support-Newton steps' Python held it
for about a quarter of the time the GIL was held at all. Here the application
(:func:`precondition`) and the whole loop (:func:`preconditioned_cg`) are one call each.

The preconditioner's parts (:class:`PreconditionerParts`), in the notation of
:meth:`~l1scale.solvers._support_factor.SupportFactor.preconditioner`: the factorisation's block
M_own = L L^T over its own support, the rows of the new system it shares with it, the weights
that have left the support since (held at zero: a Schur complement on M_own^-1), and the weights
new to it (bordered on exactly: their columns of the new system and the Schur complement of the
old block).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from . import _cg_kernels as cg_kernels
from ._cholesky import cholesky_solve

__all__ = [
    "PreconditionerParts",
    "base_columns",
    "precondition",
    "preconditioned_cg",
]


class PreconditionerParts(NamedTuple):
    """What one application of a stale factorisation's preconditioner reads (all C-ordered).

    Attributes
    ----------
    factor : ndarray (size, size)
        L, the lower Cholesky factor of the factorisation's own system M_own = L L^T.
    rows_new, rows_own : ndarray of int64 (r,)
        The rows of the new system that M_own has, and their positions in M_own.
    held : ndarray of int64 (h,)
        Positions in M_own of the weights that have left the support (held at zero).
    held_columns : ndarray (size, h)
        M_own^-1 E, E the columns ``held`` of the identity.
    held_schur : ndarray (h, h)
        The Cholesky factor of E^T M_own^-1 E.
    fresh : ndarray of int64 (f,)
        Positions in the new system of the weights new to M_own.
    fresh_rows : ndarray (r, f)
        B: the new system's columns of the fresh weights, on the rows ``rows_new``.
    fresh_solved : ndarray (r, f)
        W: the held block's inverse applied to each column of B (:func:`base_columns`).
    fresh_schur : ndarray (f, f)
        The Cholesky factor of C - B^T W, C the fresh weights' own block of the new system.
    """

    factor: np.ndarray
    rows_new: np.ndarray
    rows_own: np.ndarray
    held: np.ndarray
    held_columns: np.ndarray
    held_schur: np.ndarray
    fresh: np.ndarray
    fresh_rows: np.ndarray
    fresh_solved: np.ndarray
    fresh_schur: np.ndarray


@njit(cache=True, nogil=True, inline="always")
def _held_block_solve(factor, rows_own, held, held_columns, held_schur, r_shared, out):
    """out = the held block's inverse applied to r_shared: M_own^-1 on the shared rows, with the
    weights that have left held at zero (``SupportFactor.solve_held`` at zero values)."""
    size = factor.shape[0]
    full = np.empty(size)
    for q in range(rows_own.shape[0]):
        full[rows_own[q]] = r_shared[q]
    for q in range(held.shape[0]):
        full[held[q]] = 0.0
    x = np.empty(size)
    cholesky_solve(factor, full, x)
    h = held.shape[0]
    if h:
        x_held, lam = np.empty(h), np.empty(h)
        for q in range(h):
            x_held[q] = x[held[q]]
        cholesky_solve(held_schur, x_held, lam)
        for a in range(size):
            acc = 0.0
            for q in range(h):
                acc += held_columns[a, q] * lam[q]
            x[a] -= acc
    for q in range(rows_own.shape[0]):
        out[q] = x[rows_own[q]]


@njit(cache=True, nogil=True)
def base_columns(factor, rows_own, held, held_columns, held_schur, B):
    """W: the held block's inverse applied to each column of B (r, f), as (r, f)."""
    r, f = B.shape
    W = np.empty((r, f))
    column, solved = np.empty(r), np.empty(r)
    for q in range(f):
        for a in range(r):
            column[a] = B[a, q]
        _held_block_solve(factor, rows_own, held, held_columns, held_schur, column, solved)
        for a in range(r):
            W[a, q] = solved[a]
    return W


@njit(cache=True, nogil=True)
def precondition(parts, residual, out):
    """out = the preconditioner applied to ``residual`` (the new system's size): the held block's
    inverse on the shared rows, and the fresh weights bordered on by their Schur complement."""
    rows_new, fresh = parts.rows_new, parts.fresh
    r, f = rows_new.shape[0], fresh.shape[0]
    r_shared, y = np.empty(r), np.empty(r)
    for q in range(r):
        r_shared[q] = residual[rows_new[q]]
    _held_block_solve(parts.factor, parts.rows_own, parts.held, parts.held_columns, parts.held_schur, r_shared, y)
    if f:
        B, W = parts.fresh_rows, parts.fresh_solved
        rhs, fresh_x = np.empty(f), np.empty(f)
        for q in range(f):
            acc = 0.0
            for a in range(r):
                acc += B[a, q] * y[a]
            rhs[q] = residual[fresh[q]] - acc
        cholesky_solve(parts.fresh_schur, rhs, fresh_x)
        for a in range(r):
            acc = 0.0
            for q in range(f):
                acc += W[a, q] * fresh_x[q]
            y[a] -= acc
        for q in range(f):
            out[fresh[q]] = fresh_x[q]
    for q in range(r):
        out[rows_new[q]] = y[q]


@njit(cache=True, nogil=True)
def preconditioned_cg(data, indices, indptr, dense, support, D, ridge, nu, fit_b, rhs, parts, rtol, max_products, x):
    """Conjugate gradients for the support's Newton system

        (X_S^T diag(D) X_S + ridge I) x[:k] (+ the intercept row, curvature floor nu) = rhs,

    from x = 0 (filled in place), preconditioned by :func:`precondition` with ``parts``. Stops at
    the relative residual ``rtol``, at ``max_products``, or early once its rate of convergence
    says it would not reach ``rtol`` within twice that many. Returns (products, applications of
    the preconditioner, converged)."""
    margins, product = np.empty(D.shape[0]), np.empty(rhs.shape[0])
    res, z = rhs.copy(), np.empty(rhs.shape[0])
    x[:] = 0.0
    precondition(parts, res, z)
    applications = 1
    direction = z.copy()
    rz = cg_kernels.dot(res, z)
    size = np.sqrt(cg_kernels.dot(rhs, rhs))
    stop = rtol * size
    products = 0
    converged = size <= stop
    while not converged and products < max_products:
        cg_kernels.system_times(data, indices, indptr, dense, support, D, ridge, nu, fit_b, direction, margins, product)
        products += 1
        if not cg_kernels.cg_advance(x, res, direction, product, rz):
            break
        left = np.sqrt(cg_kernels.dot(res, res))
        converged = left <= stop
        if converged:
            break
        # Each product has divided the residual by (size / left)^(1 / products) on the whole:
        # at that rate, would it reach rtol within twice the cap?
        if products >= 4 and left > 0.0 and products * np.log(stop / size) < 2 * max_products * np.log(left / size):
            break
        precondition(parts, res, z)
        applications += 1
        rz_new = cg_kernels.dot(res, z)
        beta = rz_new / rz
        for j in range(direction.shape[0]):
            direction[j] = z[j] + beta * direction[j]
        rz = rz_new
    return products, applications, converged
