"""The support's Newton system factorised, for where conjugate gradients cannot solve it.

CD's support-Newton steps (``_support_newton``) solve

    M d = -grad,   M = X_S^T diag(D) X_S + (lam2 + nu) I, bordered by the intercept's row (corner sum D + nu),

by Jacobi-preconditioned CG. On a support of thousands of near-collinear columns (news20's bigrams at small
lam) CG stops at its cap of products with a fraction of the step, and the solver's certificate waits for the
last few steps. A Cholesky factorisation of M costs about as much as one such capped solve there (its Gram
matrix built row by row as for CD's models, then LAPACK), and gives the exact step, and the exact re-solve
with some coordinates held fixed, from one factorisation.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from . import _cd_kernels as kernels

__all__ = ["SupportFactor"]


class SupportFactor:
    """The Cholesky factorisation of the support's Newton matrix at one point,

        M = X_S^T diag(D) X_S + (lam2 + nu) I, bordered by the intercept's row (corner sum D + nu),

    built from its Gram matrix (``_cd_kernels.model_gram``) and factored by LAPACK. Solves with
    it are exact where CG's stop at a tolerance or a cap.

    Use :meth:`of` to build one (None when the matrix is not numerically positive definite).
    """

    def __init__(self, factor, size):
        self.factor, self.size = factor, size

    @classmethod
    def of(cls, pt, support):
        """(the factorisation at ``pt`` over ``support``, or None; the work: nonzeros of X read
        and the Gram matrix's multiply-adds, plus the factorisation's, in the units of
        ``_cd_kernels.DENSE_GRAM_SPEEDUP``)."""
        problem = pt.problem
        k, fit_b = support.shape[0], problem.fit_intercept
        arrays = problem.columns.arrays
        counts = np.empty(problem.n_samples, dtype=np.int64)
        nnz_cols, gram_work = kernels.gram_cost(*arrays, support, k, counts)
        M = kernels.model_gram(*arrays, support, k, pt.D, counts, fit_b)
        size = M.shape[0]
        diagonal = np.arange(k)
        M[diagonal, diagonal] += problem.penalty.l2 + kernels.NU
        if fit_b:
            M[k, k] += kernels.NU
        work = 2 * nnz_cols + int(gram_work + size**3 / (3.0 * kernels.DENSE_GRAM_SPEEDUP))
        try:
            factor = scipy.linalg.cho_factor(M, overwrite_a=True, check_finite=False)
        except np.linalg.LinAlgError:
            return None, work
        if not np.isfinite(factor[0][-1, -1]):
            return None, work
        return cls(factor, size), work

    def solve(self, rhs):
        """M^-1 rhs (rhs: (size,) or (size, q))."""
        return scipy.linalg.cho_solve(self.factor, rhs, check_finite=False)

    def solve_held(self, rhs, held, values):
        """The solution x of M x = rhs on the rows not ``held`` (a boolean mask of the support's
        coordinates, or integer positions), with x = ``values`` on those held: the Newton system
        with those coordinates fixed, ``M_RR x_R = rhs_R - M_RH values``, solved through M's own
        factorisation (M x + E lam = rhs, E^T x = values, with E the held columns of the identity:
        lam = (E^T M^-1 E)^-1 (E^T M^-1 rhs - values)), one multi-right-hand solve, not a new
        factorisation."""
        held = np.flatnonzero(held) if np.asarray(held).dtype == bool else np.asarray(held)
        x = self.solve(rhs)
        if held.shape[0] == 0:
            return x
        E = np.zeros((self.size, held.shape[0]))
        E[held, np.arange(held.shape[0])] = 1.0
        V = self.solve(E)  # M^-1 E
        lam = np.linalg.solve(V[held], x[held] - values)
        x -= V @ lam
        x[held] = values  # exactly: the solve leaves rounding there
        return x
