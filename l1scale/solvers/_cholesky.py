"""Cholesky factor and solves of a symmetric positive definite matrix, in Numba (no GIL).

Shared by the support-Newton factorisation (``_support_factor``, ``_factor_kernels``), the Lasso's
covariance solve (``_covariance``) and the face solves on a model's Gram matrix
(``_gram_kernels.gram_support_solve``). A module of its own, with no import from the solvers' other
kernels, so that each of them can call it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["cholesky_factor", "cholesky_solve"]


@njit(cache=True, nogil=True)
def cholesky_factor(M):
    """The lower Cholesky factor L of the symmetric matrix M (M = L L^T; LAPACK's potrf), or an
    empty (0, 0) array when M is not numerically positive definite."""
    try:
        L = np.linalg.cholesky(M)
    except Exception:  # noqa: BLE001 (Numba raises LinAlgError as a plain exception)
        return np.empty((0, 0))
    for a in range(L.shape[0]):
        if not (np.isfinite(L[a, a]) and L[a, a] > 0.0):
            return np.empty((0, 0))
    return L


@njit(cache=True, nogil=True)
def cholesky_solve(L, rhs, out):
    """out = (L L^T)^-1 rhs: L y = rhs by rows of L, then L^T x = y by rows of L as well (each
    x_j found is taken out of the rows above it: C-ordered L is read contiguously both ways)."""
    k = L.shape[0]
    for i in range(k):
        acc = rhs[i]
        for j in range(i):
            acc -= L[i, j] * out[j]
        out[i] = acc / L[i, i]
    for j in range(k - 1, -1, -1):
        xj = out[j] / L[j, j]
        out[j] = xj
        for i in range(j):
            out[i] -= L[j, i] * xj
