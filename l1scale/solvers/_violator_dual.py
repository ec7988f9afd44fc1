"""The residual corrected along its violators: a dual point while the support still moves.

At (w, b), the residual r = c * loss'(y, z) has correlations g = X^T r. The features with
|g_j| > lam1 (the violators V) make it infeasible for the dual, and the rescaling that makes
it feasible shrinks all of r by the largest violation: its gap is about the square root of
the suboptimality, where the optimum's is zero. This candidate moves r along the violators'
directions in the metric of the loss's curvature,

    u = r - D (X_V a + a_b),   (X_V^T D X_V) a = g_V - (1 - margin) lam1 sign(g_V),

(with an intercept, its row holds sum_i u_i at 0): to first order, each violator's
correlation comes back to just inside lam1, and the others move only by what the violators'
columns share with theirs. A few CG steps on this system suffice (its solution is needed to
no more than the margin), the rows are moved into the conjugate's domain as for the model's
dual point (``_cd_kernels.model_dual_point``), and the correlations of u give its rescaling:
exact over the columns whose Cauchy-Schwarz bound from the residual's could reach lam1, bounded
over the rest (``_dual.correlations_near``: a correction along a few violators moves the residual
little, and earn's 50-lam path at tol 1e-3 read 4k-112k nonzeros for them instead of 73k-680k).

NewtonDual's system is the whole support's, which on text is ill-conditioned while the
support still changes (news20 at 0.01 lam_max: CG stopped at its cap of 200 products, 290M
nonzeros read, for a relative gap of 2.3e-2); V holds only the violated constraints. Measured
on news20 (points of a CD run, 10 CG products), relative gap of the rescaled residual -> this
point: at 0.1 lam_max 0.16 -> 1.5e-2, 6.2e-2 -> 9.1e-3, 7.8e-3 -> 1.7e-3; at 0.01 lam_max
2.3e-2 -> 5.1e-3, 5.9e-3 -> 7.9e-4. Where the model is singular (a9a's one-hot blocks beside
the intercept) the system is too, and the model's own dual point (``_model_dual``) is the one
that certifies.
"""

from __future__ import annotations

import numpy as np

from . import _cd_kernels as kernels
from . import _cg_kernels as cg_kernels
from ._dual import columns_nnz, correlations_near, loss_units
from ._quadratic_step import NU

__all__ = ["ViolatorDual"]


class ViolatorDual:
    """When and how a CD solve offers the residual corrected along its violators.

    Parameters
    ----------
    tol : float
        The solver's relative tolerance.
    gram_max : int
        As the solver's (CG's products on the violators' Gram matrix when it is small).
    enabled : bool
        False: never offered.
    """

    # Offered when the rescaled residual's relative gap is within min(reach * tol, most): the
    # correction gained 4-20x on news20, so a larger gap would not certify. ``most`` was 0.2; at
    # 0.3 (2026-12-02, tol 1e-1, nonzeros read on the 11 batch points and the generated ones) news20
    # at 0.01 lam_max certified at a pass with 1,052 violators (gap 0.276 -> 0.088, the fit 87.7M
    # -> 68.8M, returning 1.5e-3 suboptimality instead of 6.9e-5), the dense 200,000 x 40 at 0.1
    # 94.6M -> 82.8M, the hashed clicks at 0.1 20.0M -> 21.9M (an offer that gained nothing, 18,439
    # violators), the rest the same (1,586M -> 1,561M in all; a9a's 50-lam path 3,224M -> 3,211M).
    # At 0.5 news20 at 0.001, earn at 0.001 and mnist10k lost 3-13% to offers that missed.
    reach, most = 10.0, 0.3
    # CG on the violators' system (its solution matters only to about the margin): at most
    # max_products, and not tried when fewer than min_products fit in two passes' reads. One
    # product (a preconditioned gradient step on the system) already pays where the violators
    # are frequent columns: a9a at 0.01 lam_max, one-hot blocks, 1-2 products fit, and the
    # point certifies tol 1e-1 a pass sooner (nonzeros read 24.8M -> 20.4M; with at least 3,
    # it was never tried there); on the 132-point ladder, otherwise -22% (a dense synthetic
    # problem at tol 1e-1) to +5% (a9a at 0.01 to 1e-4), level in total.
    max_products, min_products = 10, 1
    cg_rtol = 1e-3
    # The violators' correlations are aimed this far (relative) inside lam1, and at most a tenth
    # of tol: the point's dual value is about a margin's fraction below what it would be on lam1
    # itself, so a fixed 1e-4 could not certify tol 1e-6 (earn's 50-lam path at tol 1e-6: 0 of
    # 13 offers certified, 12 with the margin at 1e-7).
    margin, tol_margin = 1e-4, 0.1

    def __init__(self, tol, gram_max=0, enabled=True):
        self.tol, self.gram_max, self.enabled = tol, gram_max, enabled

    def pays(self, dual, cert):
        """Whether to offer it: a loss with a dual, the plain L1 penalty (the elastic net's dual
        is not rescaled), and a residual gap it can bring within tol."""
        penalty = dual.problem.penalty
        reach = min(self.reach * self.tol, self.most)
        return self.enabled and dual.has_dual and penalty.l2 == 0.0 and cert.relative <= reach

    def certificate(self, pt, dual, kept, g_loss, cert, budget=np.inf):
        """Offer the corrected residual to ``dual``; returns the best dual point's certificate
        (``cert`` when there is no violator, no point, or when it would read more than
        ``budget`` nonzeros)."""
        problem = pt.problem
        lam1 = problem.penalty.l1
        arrays = problem.columns.arrays
        fit_b = problem.fit_intercept
        violators = kept[np.abs(g_loss[kept]) > lam1]
        k = violators.shape[0]
        if k == 0:
            return cert
        # CG's products read the violators' columns twice: at most two passes over the features
        # in play in all (dense or frequent violators: not worth it); and the whole attempt
        # (CG, the correction, and at most one pass for the correlations) within the budget.
        nnz_kept, nnz_violators = columns_nnz(problem.columns, kept), columns_nnz(problem.columns, violators)
        products = min(self.max_products, nnz_kept // max(nnz_violators, 1))
        if products < self.min_products or 2 * (products + 1) * nnz_violators + nnz_kept > budget:
            return cert
        rhs, diag = np.empty(k + int(fit_b)), np.empty(k + int(fit_b))
        g_v = g_loss[violators]
        margin = min(self.margin, self.tol_margin * self.tol)
        rhs[:k] = g_v - (1.0 - margin) * lam1 * np.sign(g_v)
        kernels.column_curvatures(*arrays, violators, pt.D, diag)
        diag[:k] += NU
        if fit_b:
            rhs[k] = float(pt.r.sum())
            diag[k] = float(pt.D.sum()) + NU
        a, t = np.empty(k + int(fit_b)), np.empty(problem.n_samples)
        _, reads, _, _ = cg_kernels.support_cg(
            *arrays,
            violators,
            pt.D,
            NU,
            NU,
            fit_b,
            rhs,
            diag,
            self.cg_rtol,
            products,
            a,
            t,
            self.gram_max,
            a,  # no crossing test (max_crossings < 0)
            -1,
            -1,  # no factorisation to hand on to (a default would compile a signature of its own)
        )
        cg_kernels.support_margins_change(*arrays, violators, -a, fit_b, t)
        u_c = np.empty(problem.n_samples)
        ok = kernels.model_dual_point(problem.loss.kernel_id, problem.y, problem.c, pt.r, pt.D, t, fit_b, u_c)
        pt.reads += reads + 2 * nnz_violators  # the curvatures and the correction read them once each
        if not ok:
            return cert
        corr, reads = correlations_near(problem, kept, g_loss, pt.r, u_c, pt.w)
        pt.reads += reads
        u = loss_units(u_c, problem.c)
        return dual.offer(pt.w, pt.b, pt.z, u, corr, kept, cert.objective)
