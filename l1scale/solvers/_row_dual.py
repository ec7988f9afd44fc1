"""The residual made feasible row by row: a dual point for data whose violators are local.

A dual point must meet |x_j^T (c u)| <= lam1 on every feature in play. The rescaled residual
(``_dual``) meets it by shrinking every row by the largest violation, so that one feature at
1.46 lam1 costs the whole dual a third of its value. Where a violator's column is set in a few
rows (hashed click features seen in one or two rows, rare n-grams), only those rows need to
shrink: this point shrinks, for each feature j over lam1, the rows whose terms x_ij (c u)_i
push its correlation past lam1, by the factor that brings it back (the other rows of j keep
their terms, which pull the other way), a row taking the least factor any of its violators asks
for (:func:`shrink_factors`). Those rows change the correlations of the other features set in
them, so the step is repeated on the point's exact correlations (over the features in
play, read where the Cauchy-Schwarz bound from the residual's could reach lam1) while it gains,
and the final point is rescaled as any other (its last excess, by then a few thousandths). With an intercept, sum_i c_i u_i = 0 is restored by scaling down the larger
of its positive and negative parts. Shrinking a row towards zero keeps it in the conjugate's
domain (an interval holding u_i and 0), as the uniform rescaling does.

Measured on the hashed-click set (20,000 rows of 50 features of 1,000,000; the benchmark's
``clicks``), at the full passes of a CD solve, the rescaled residual's relative gap -> this point's
after three rounds: at 0.01 lam_max 0.41 -> 8.9e-2 (suboptimality 1.6e-2), 0.27 -> 9.4e-3 (5.2e-4),
7.5e-3 -> 4.1e-4 (1.1e-5); at 0.1 lam_max 0.30 -> 3.2e-2 (3.7e-3), 2.8e-2 -> 1.4e-3 (5.2e-5). On
text whose violators are frequent words (news20, earn) it gains 5-30%, and the rounds stop after
the first (:attr:`RowDual.min_gain`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..data.memory import column
from ._dual import columns_nnz, correlations_near, loss_units

__all__ = ["RowDual", "balance_sum", "shrink_factors"]


@njit(cache=True, nogil=True)
def shrink_factors(data, indices, indptr, dense, cols, corr, theta, bound, factors):
    """Row factors that bring every column of ``cols`` whose correlation ``corr[q]`` (its
    x_j^T theta) passes ``bound`` in magnitude back to it: its terms x_ij theta_i of corr's sign
    sum to ``same`` in magnitude, the others to ``opposite`` (|corr| = same - opposite), and
    shrinking the former by f = (bound + opposite) / same alone gives |corr| = bound. Each such
    row's ``factors[i]`` becomes min(factors[i], f); the others are left. Shapes: cols, corr (k,);
    theta, factors (n,). Returns the stored values read."""
    reads = 0
    for q in range(cols.shape[0]):
        cq = corr[q]
        if abs(cq) <= bound:
            continue
        rows, vals = column(data, indices, indptr, dense, cols[q])  # unsigned positions below
        same, opposite = 0.0, 0.0
        for p in range(rows.shape[0]):
            t = vals[p] * theta[np.uint64(rows[p])]
            if t * cq > 0.0:
                same += abs(t)
            else:
                opposite += abs(t)
        if same <= 0.0:
            continue
        f = (bound + opposite) / same
        for p in range(rows.shape[0]):
            i = np.uint64(rows[p])
            if vals[p] * theta[i] * cq > 0.0 and f < factors[i]:
                factors[i] = f
        reads += 2 * rows.shape[0]
    return reads


@njit(cache=True, nogil=True)
def balance_sum(theta):
    """Scale the larger of theta's positive and negative parts down to the other's size, so that
    sum(theta) = 0 (the intercept's dual constraint); both parts are scaled towards zero only (a
    theta of one sign becomes zero, which meets it too)."""
    positive, negative = 0.0, 0.0
    for i in range(theta.shape[0]):
        if theta[i] > 0.0:
            positive += theta[i]
        else:
            negative -= theta[i]
    if positive == negative:
        return
    if positive == 0.0 or negative == 0.0:
        theta[:] = 0.0
        return
    scale = negative / positive if positive > negative else positive / negative
    for i in range(theta.shape[0]):
        if (theta[i] > 0.0) == (positive > negative):
            theta[i] *= scale


class RowDual:
    """When and how a CD solve offers the residual made feasible row by row: at a full pass whose
    rescaled residual misses tol by at most ``reach`` times, in at most ``max_rounds`` rounds.

    Parameters
    ----------
    tol : float
        The solver's relative tolerance (the point aims a tenth of it inside lam1, at most).
    enabled : bool
        False: never offered (``CoordinateDescent.row_dual``).
    """

    # Offered when the rescaled residual's relative gap is within min(reach * tol, most): the
    # point gained up to 30x on the click data, so a larger gap would not certify.
    reach, most = 10.0, 0.5
    # At most this many rounds, each a pass over the features in play; another only while the
    # last lowered the best gap to at most min_gain of what it was.
    max_rounds, min_gain = 3, 0.7
    # Rent or buy: a round (the violators' columns twice, and at most a pass over the features in
    # play) is taken only while what the tries have read stays within this fraction of what the
    # solve read since its last certificate (``budget``), so that a try that does not certify
    # costs a fraction of the outer round it could have saved.
    budget_share = 0.25
    # The violators' correlations are aimed this far (relative) inside lam1, and at most a tenth
    # of tol (as the violators' dual point's: the margin costs the dual about its fraction).
    margin, tol_margin = 1e-4, 0.1

    def __init__(self, tol, enabled=True):
        self.tol, self.enabled = tol, enabled

    def pays(self, dual, cert):
        """Whether to offer it: a loss with a dual, the plain L1 penalty (the elastic net's dual
        is not rescaled), and a residual gap it can bring within tol."""
        penalty = dual.problem.penalty
        reach = min(self.reach * self.tol, self.most)
        return self.enabled and dual.has_dual and penalty.l2 == 0.0 and self.tol < cert.relative <= reach

    def certificate(self, pt, dual, kept, g_loss, cert, budget=np.inf):
        """Offer the residual shrunk row by row to ``dual``, in rounds while they gain; returns
        the best dual point's certificate (``cert`` when no round is taken). ``g_loss``: X^T r on
        ``kept`` at this point (the certifying pass's); ``budget``: the nonzeros the solve read
        since its last certificate (a share of it is what the rounds may read).

        A round reads the violators' columns twice (their factors) and the point's correlations
        where the Cauchy-Schwarz bound from the residual's could reach lam1
        (``_dual.correlations_near``: rows shrunk here and there leave most features far from
        it). Another follows while the last lowered the point's own gap (the rescaled residual's,
        at first) to at most ``min_gain`` of what it was."""
        problem = pt.problem
        arrays = problem.columns.arrays
        lam1 = problem.penalty.l1
        bound = lam1 * (1.0 - min(self.margin, self.tol_margin * self.tol))
        theta, corr = pt.r.copy(), g_loss[kept]
        last = (cert.objective - dual.residual_dual) / max(abs(cert.objective), 1e-300)
        budget *= self.budget_share
        nnz_kept = columns_nnz(problem.columns, kept)
        for _ in range(self.max_rounds):
            violators = kept[np.abs(corr) > bound]
            if violators.shape[0] == 0 or 2 * columns_nnz(problem.columns, violators) + nnz_kept > budget:
                break
            factors = np.ones(problem.n_samples)
            reads = shrink_factors(*arrays, kept, corr, theta, bound, factors)
            pt.reads += reads
            budget -= reads
            shrunk = theta * factors
            if problem.fit_intercept:
                balance_sum(shrunk)
            u = loss_units(shrunk, problem.c)
            theta = shrunk
            corr, reads = correlations_near(problem, kept, g_loss, pt.r, theta, pt.w, signed=True)
            pt.reads += reads
            budget -= reads
            cert, point = dual.offer(pt.w, pt.b, pt.z, u, np.abs(corr), kept, cert.objective, own=True)
            if cert.relative <= self.tol or point.relative > self.min_gain * last or budget < 0:
                break
            last = point.relative
        return cert
