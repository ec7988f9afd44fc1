"""The support's Newton system factorised, for where conjugate gradients cannot solve it.

CD's support-Newton steps (``_support_newton``) solve

    M d = -grad,   M = X_S^T diag(D) X_S + (lam2 + nu) I, bordered by the intercept's row (corner sum D + nu),

by Jacobi-preconditioned CG. On a support of thousands of near-collinear columns (news20's bigrams at small
lam) CG stops at its cap of products with a fraction of the step, and the solver's certificate waits for the
last few steps. A Cholesky factorisation of M costs about as much as one such capped solve there (its Gram
matrix built row by row as for CD's models, then LAPACK), and gives the exact step, and the exact re-solve
with some coordinates held fixed, from one factorisation.

Between two Newton steps near the optimum the curvatures D move little, so a factorisation made at an
earlier point is a near-exact preconditioner for the next points' systems (``SupportFactor.preconditioner``,
``preconditioned_cg``): CG converges in a few products where a new factorisation would cost hundreds of
products' worth. Weights that have left the support since are held at zero in it, weights that have
entered are bordered on exactly (their rows of the new system and the Schur complement of the old block).

The factorisation, its one-right-hand-side solves, the preconditioner's application and the
preconditioned CG loop run in Numba (``_factor_kernels``: LAPACK's potrf through Numba's
``np.linalg.cholesky``, the triangular solves as loops), which releases the GIL: SciPy's ``cho_factor``
and ``cho_solve`` hold it, and in a cross-validation's threads on earn they were an eighth of the time a
thread held the GIL (py-spy ``--gil``), time in which the other thread waited; the CG loop and the
application, a dozen NumPy calls each, about another quarter (earn's 50-lam path to tol 1e-4: its
preconditioned CG 16 -> 10.5 ms, the same products and iterates).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.linalg

from .._threads import one_blas_thread
from . import _cg_kernels as cg_kernels
from . import _factor_kernels as factor_kernels
from . import _gram_kernels as gram_kernels
from ._cholesky import cholesky_factor, cholesky_solve
from ._dual import columns_nnz
from ._factor_kernels import PreconditionerParts
from ._quadratic_step import NU

__all__ = [
    "STALE_MAX_FRESH",
    "STALE_MAX_HELD",
    "STALE_MAX_PRODUCTS",
    "Preconditioner",
    "SupportFactor",
    "cholesky_work",
    "preconditioned_cg",
    "system_product",
]

# An earlier factorisation preconditions CG for at most this many products before a new one is made
# (a new one costs a few hundred products' worth on the supports that come here), ...
STALE_MAX_PRODUCTS = 20
# ... and only while at most this many of its weights have left the support (each is one more
# right-hand side in the held solve), and at most this many have come (each costs a product).
STALE_MAX_HELD = 64
STALE_MAX_FRESH = 16


class Preconditioner(NamedTuple):
    """An approximate inverse of a system (:meth:`SupportFactor.preconditioner`): ``parts``, what
    its application reads (``_factor_kernels.precondition``); ``work``: what one application costs,
    in nonzeros-read units (two triangular solves read a factor's size^2 / 2 entries each, from
    memory, 8 bytes against a stored value's 12: news20's 2,862 columns, 5 ms a solve against
    2.2 ms a product); ``setup``: what building it cost, in the same units."""

    parts: PreconditionerParts
    work: int
    setup: int = 0

    @property
    def size(self) -> int:
        """The system's size: its rows shared with the factorisation and the fresh ones."""
        return self.parts.rows_new.shape[0] + self.parts.fresh.shape[0]

    def apply(self, residual):
        """The approximate inverse applied to ``residual`` (a new array)."""
        out = np.empty(self.size)
        factor_kernels.precondition(self.parts, np.ascontiguousarray(residual, dtype=np.float64), out)
        return out


class SupportFactor:
    """The Cholesky factorisation of the support's Newton matrix at one point,

        M = X_S^T diag(D) X_S + (lam2 + nu) I, bordered by the intercept's row (corner sum D + nu),

    built from its Gram matrix (``_gram_kernels.model_gram``) and factored by LAPACK (:func:`cholesky_factor`:
    ``factor`` is the lower factor L, M = L L^T). Solves with it are exact where CG's stop at a
    tolerance or a cap.

    Use :meth:`of` to build one (None when the matrix is not numerically positive definite).
    """

    def __init__(self, factor, size, support=None, moves=-1, ridge=0.0, D=None):
        self.factor, self.size = factor, size
        # Where it was made: the support, the iterate's move count (``_cd_state.Iterate.moves``) and the
        # ridge lam2 + nu. The same three at a later solve: the factorisation is that system's.
        self.support, self.moves, self.ridge = support, moves, ridge
        self.D = D  # the curvatures it was made from (a checkpoint rebuilds it from them: :meth:`at`)
        # Made from the Gram matrix a CG solve had built and not converged on (``_support_newton``).
        self.after_cg = False

    def is_exact_for(self, pt, support) -> bool:
        """Whether this is the factorisation of ``pt``'s system on ``support`` (made at this point)."""
        return (
            self.moves == pt.moves
            and self.ridge == pt.problem.penalty.l2 + NU
            and self.support is not None
            and np.array_equal(self.support, support)
        )

    @classmethod
    def of(cls, pt, support, gram=None):
        """(the factorisation at ``pt`` over ``support``, or None; the work: nonzeros of X read
        and the Gram matrix's multiply-adds, plus the factorisation's, in the units of
        ``_gram_kernels.DENSE_GRAM_SPEEDUP``). ``gram``: the system's Gram matrix at ``pt``
        when the caller has it (``_gram_cache``), else it is built."""
        return cls.at(pt.problem, pt.D, support, pt.moves, gram=gram)

    @classmethod
    def at(cls, problem, D, support, moves=-1, ridge=None, gram=None):
        """:meth:`of` from the curvatures ``D`` of a point (``moves``: its move count; ``ridge``:
        lam2 + nu, by default the problem's)."""
        ridge = problem.penalty.l2 + NU if ridge is None else float(ridge)
        k, fit_b = support.shape[0], problem.fit_intercept
        if gram is None:
            arrays = problem.columns.arrays
            counts = np.empty(problem.n_samples, dtype=np.int64)
            nnz_cols, gram_work = gram_kernels.gram_cost(*arrays, support, k, counts)
            M = gram_kernels.model_gram(*arrays, support, k, D, counts, fit_b)
        else:
            M, nnz_cols, gram_work = gram.copy(), 0, float(gram.size)
        size = M.shape[0]
        diagonal = np.arange(k)
        M[diagonal, diagonal] += ridge
        if fit_b:
            M[k, k] += NU
        work = _factorisation_work(nnz_cols, gram_work, size)
        factor = cholesky_factor(M)
        if factor.shape[0] == 0:
            return None, work
        return cls(factor, size, support.copy(), moves, ridge, D.copy()), work

    @staticmethod
    def estimated_work(problem, support) -> int:
        """The work :meth:`of` would report on ``support`` (one counting pass over its columns)."""
        counts = np.empty(problem.n_samples, dtype=np.int64)
        k = support.shape[0]
        nnz_cols, gram_work = gram_kernels.gram_cost(*problem.columns.arrays, support, k, counts)
        return _factorisation_work(nnz_cols, gram_work, k + int(problem.fit_intercept))

    @staticmethod
    def least_work(problem, support) -> int:
        """A lower bound of :meth:`estimated_work` that reads nothing: the factorisation alone."""
        return int(cholesky_work(support.shape[0] + int(problem.fit_intercept)))

    def solve(self, rhs):
        """M^-1 rhs (rhs: (size,) or (size, q)). One right-hand side (each Newton step, each
        preconditioned CG product) by :func:`cholesky_solve`, without the GIL; several (the
        held coordinates' columns, once per factorisation reused) by LAPACK's blocked triangular
        solves through SciPy, which hold the GIL but read the factor once for all of them (64
        columns of news20's 2,900-weight system: 31 ms, where 64 vector solves took 460 ms), on
        L^T's Fortran-ordered view of the C-ordered factor (SciPy's ``cho_solve`` copied it
        first: 230 columns 0.20-0.41 s against 0.12-0.15 s, one thread)."""
        rhs = np.asarray(rhs, dtype=np.float64)
        if rhs.ndim == 1:
            out = np.empty(self.size)
            cholesky_solve(self.factor, rhs, out)
            return out
        with one_blas_thread():  # the same result with n_jobs = 1 (BLAS on every core) as with more
            return scipy.linalg.solve_triangular(self.factor.T, self._forward(rhs), lower=False, check_finite=False)

    def solve_held(self, rhs, held, values):
        """The solution x of M x = rhs on the rows not ``held`` (a boolean mask of the support's
        coordinates, or integer positions), with x = ``values`` on those held: the Newton system
        with those coordinates fixed, ``M_RR x_R = rhs_R - M_RH values``, solved through M's own
        factorisation (M x + E lam = rhs, E^T x = values, with E the held columns of the identity:
        lam = (E^T M^-1 E)^-1 (E^T M^-1 rhs - values), then x = M^-1 (rhs - E lam)), not a new
        factorisation. E^T M^-1 E is Y^T Y with Y = L^-1 E, forward solves only
        (:meth:`_held_block`), and x then takes one more solve, where M^-1 E whole took both
        triangular solves of every held column: a 2,864-weight system with 230 weights held (news20
        at 0.001 lam_max), one thread, 0.25-0.40 s -> 0.06-0.10 s; that fit to tol 1e-6 3.10 ->
        2.66 s, to 1e-4 2.44 -> 2.27 s (the same iterates and objective)."""
        held = np.flatnonzero(held) if np.asarray(held).dtype == bool else np.asarray(held)
        x = self.solve(rhs)
        if held.shape[0] == 0:
            return x
        with one_blas_thread():  # the same result with n_jobs = 1 (BLAS on every core) as with more
            block = self._held_block(held)
            lam = np.linalg.solve(block, x[held] - values)
        moved = np.zeros(self.size)
        moved[held] = lam
        x -= self.solve(moved)
        x[held] = values  # exactly: the solves leave rounding there
        return x

    def _held_block(self, held):
        """E^T M^-1 E = Y^T Y, Y = L^-1 E (E the columns ``held`` of the identity): forward solves only."""
        Y = self._forward(self._unit_columns(held))
        return Y.T @ Y

    def _forward(self, rhs):
        """L^-1 rhs for several right-hand sides (LAPACK's blocked triangular solve, on L^T's
        Fortran-ordered view of the C-ordered factor: no copy)."""
        return scipy.linalg.solve_triangular(self.factor.T, rhs, lower=False, trans="T", check_finite=False)

    def _inverse_columns(self, held):
        """M^-1 E, E the columns ``held`` of the identity: what holding those coordinates needs."""
        return self.solve(self._unit_columns(held))

    def _unit_columns(self, held):
        """E: the columns ``held`` of the size x size identity."""
        E = np.zeros((self.size, held.shape[0]))
        E[held, np.arange(held.shape[0])] = 1.0
        return E

    def _overlap(self, support):
        """For each weight of ``support`` (sorted), its position in this factorisation's support
        (clipped) and whether it is there."""
        own = self.support
        at = np.minimum(np.searchsorted(own, support), own.shape[0] - 1)
        return at, own[at] == support

    def reaches(self, support) -> bool:
        """Whether this factorisation can precondition a system on ``support`` (sorted;
        :meth:`preconditioner`): at most ``STALE_MAX_HELD`` of its weights have left it, at most
        ``STALE_MAX_FRESH`` have come, and at least half of ``support`` is its own."""
        if self.support is None or self.support.shape[0] == 0 or support.shape[0] == 0:
            return False
        _, shared = self._overlap(support)
        return self._within_reach(support.shape[0], int(shared.sum()))

    def _within_reach(self, k, n_shared) -> bool:
        """:meth:`reaches` from the counts: a support of ``k`` weights, ``n_shared`` of them this one's."""
        fresh, held = k - n_shared, self.support.shape[0] - n_shared
        return held <= STALE_MAX_HELD and fresh <= STALE_MAX_FRESH and 2 * n_shared >= k

    def preconditioner(self, pt, support):
        """An approximate inverse of the system at ``pt`` on ``support`` (sorted; another point's,
        or another support's): on the weights this factorisation has, its solve, with those that
        have left the support held at zero (as in :meth:`solve_held`); the weights new to it are
        bordered on exactly (their rows of the new system, one product each, and the Schur
        complement of this factorisation's block). Returns a :class:`Preconditioner`, or None
        when more than ``STALE_MAX_HELD`` weights have left, more than ``STALE_MAX_FRESH`` have
        come, or fewer than half of ``support`` are its own."""
        own = self.support
        k, k_own = support.shape[0], own.shape[0]
        fit_b = self.size > k_own
        at, shared = self._overlap(support)
        if not self._within_reach(k, int(shared.sum())):
            return None
        kept = np.zeros(k_own, dtype=bool)
        kept[at[shared]] = True
        held = np.flatnonzero(~kept)
        fresh = np.flatnonzero(~shared)
        rows_new = np.flatnonzero(shared)  # positions in the new system ...
        rows_own = at[shared]  # ... and in this one
        if fit_b:
            rows_new, rows_own = np.append(rows_new, k), np.append(rows_own, k_own)
        solve_work = self.size**2 // 2  # see Preconditioner
        setup = 0
        V, schur_held = np.empty((self.size, 0)), np.empty((0, 0))
        if held.shape[0]:
            V = np.ascontiguousarray(self._inverse_columns(held))  # once: each application is then one solve
            # E^T M^-1 E, a principal block of M^-1, is positive definite: Cholesky, whose solves
            # (as every solve of an application) run in Numba without the GIL (scipy's LU and
            # Cholesky wrappers held it, 11% of the time earn's 5-fold CV held it, py-spy --gil)
            schur_held = cholesky_factor(np.ascontiguousarray(V[held]))
            if schur_held.shape[0] == 0:
                return None
            setup += held.shape[0] * solve_work
        r = rows_new.shape[0]
        B, W, schur = np.empty((r, 0)), np.empty((r, 0)), np.empty((0, 0))
        if fresh.shape[0]:
            # The new system's columns of the fresh weights: one kernel without the GIL, one read of
            # the support's columns each (then a solve each, also without it: one blocked solve
            # through SciPy would hold the GIL for all of them).
            problem = pt.problem
            columns = np.empty((k + int(fit_b), fresh.shape[0]))
            setup += gram_kernels.system_columns(
                *problem.columns.arrays,
                support,
                fresh,
                pt.D,
                problem.penalty.l2 + NU,
                fit_b,
                np.zeros(problem.n_samples),
                columns,
            )
            B, C = columns[rows_new], columns[fresh]
            W = factor_kernels.base_columns(self.factor, rows_own, held, V, schur_held, B)
            schur = cholesky_factor(np.ascontiguousarray(C - B.T @ W))
            if schur.shape[0] == 0:  # not positive definite: the new columns lie nearly in the old
                return None  # ones' span, where this block's error is magnified; a new factorisation is the way
            setup += fresh.shape[0] * solve_work
        parts = PreconditionerParts(self.factor, rows_new, rows_own, held, V, schur_held, fresh, B, W, schur)
        return Preconditioner(parts, solve_work, setup)


def _factorisation_work(nnz_cols, gram_work, size) -> int:
    """:meth:`SupportFactor.of`'s work: the columns read twice (counting, then the Gram matrix), the
    Gram matrix's multiply-adds, and the factorisation's."""
    return 2 * nnz_cols + int(gram_work + cholesky_work(size))


def cholesky_work(size) -> float:
    """A Cholesky factorisation's size^3 / 6 multiply-adds, in the scalar loops' units (measured at
    2,862 of news20's columns: Gram matrix and factorisation 0.68 s, a CG product over the same
    columns 2.2 ms: 310 products; this count with the Gram matrix's gives 300)."""
    return size**3 / (6.0 * gram_kernels.DENSE_GRAM_SPEEDUP)


def system_product(pt, support, v, out, margins) -> int:
    """out = M v for the support's Newton system at ``pt`` (as ``_cg_kernels.support_cg`` writes it:
    ``X_S^T diag(D) X_S + (lam2 + nu) I``, the intercept's row with curvature floor nu); ``margins``
    (n,) is scratch. Returns the nonzeros of X read."""
    problem = pt.problem
    cg_kernels.system_times(
        *problem.columns.arrays, support, pt.D, problem.penalty.l2 + NU, NU, problem.fit_intercept, v, margins, out
    )
    return 2 * columns_nnz(problem.columns, support)


def preconditioned_cg(pt, support, rhs, precondition, rtol, max_products):
    """Conjugate gradients for the support's Newton system at ``pt`` (:func:`system_product`),
    ``M x = rhs`` from x = 0, with the :class:`Preconditioner` ``precondition``
    (:meth:`SupportFactor.preconditioner`), in one kernel (``_factor_kernels.preconditioned_cg``).
    It stops at the relative residual ``rtol``, at ``max_products``, or early once its rate of
    convergence says it would not reach ``rtol`` within twice that many. Returns (x, products,
    nonzeros of X read, including the preconditioner's setup, converged)."""
    problem = pt.problem
    x = np.empty(rhs.shape[0])
    products, applications, converged = factor_kernels.preconditioned_cg(
        *problem.columns.arrays,
        support,
        pt.D,
        problem.penalty.l2 + NU,
        NU,
        problem.fit_intercept,
        np.ascontiguousarray(rhs, dtype=np.float64),
        precondition.parts,
        rtol,
        max_products,
        x,
    )
    reads = precondition.setup + applications * precondition.work + products * 2 * columns_nnz(problem.columns, support)
    return x, products, reads, bool(converged)
