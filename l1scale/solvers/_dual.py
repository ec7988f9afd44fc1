"""The dual side of batch solvers: the best dual point seen, the certificate it gives,
and gap-safe screening.

For a loss with a conjugate, any feasible dual point bounds P* from below, so a solver
may certify with the best dual value seen along its run (celer keeps the best of several
candidates the same way); each candidate is the rescaled residual at an iterate,
``u = loss'(y, z) * min(1, lam1 / ||X^T c u||_inf)`` (ALGORITHMS.md section 1), feasible
only on the features not screened out (which suffices: screening is safe).

Gap-safe screening (Ndiaye, Fercoq, Gramfort & Salmon 2017): f_i* is (1/L)-strongly convex
when the loss has curvature at most L, so the dual optimum u* lies within
``radius = sqrt(2 L gap)`` of any feasible u in the norm ``||u||_c = sqrt(sum_i c_i u_i^2)``
(gap = P(w) - D(u)); hence ``|x_j^T (c u*)| <= |x_j^T (c u)| + ||x_j||_c radius``, and a
feature for which the right side is below lam1 is zero at every optimum (the elastic net
included: its dual is as strongly concave, and w*_j = 0 exactly when |x_j^T (c u*)| <= lam1).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..problems.base import Certificate
from ..problems.memory import dual_scale
from . import _cd_kernels as kernels

__all__ = [
    "DualPoints",
    "SequentialScreening",
    "columns_nnz",
    "correlations_near",
    "loss_units",
    "residual_distance",
]

# A feature is screened out only when its bound is below lam1 by this relative margin, so
# that rounding in the dual quantities can never remove a feature of the support.
_SCREEN_MARGIN = 1e-9


class DualPoints:
    """The best dual point of one problem, its candidates and what it proves.

    Parameters
    ----------
    problem : Problem
    """

    def __init__(self, problem):
        self.problem = problem
        self.has_dual = problem.loss.has_conjugate
        self.best_dual = -np.inf
        # The best dual point u (loss' units: Problem.dual_value(u) is best_dual) and
        # |x_j^T (c u)| for the features it was computed on.
        self.best_point = np.zeros(problem.n_samples)
        self.best_corr = np.full(problem.n_features, np.inf)
        self.residual_dual = None  # the dual value of the last rescaled residual offered by certificate

    def certificate(self, w, b, z, v, cols, primal, residual=None):
        """The certificate at (w, b): its rescaled residual offered, then the best dual point's gap.

        Parameters
        ----------
        w : ndarray (d,)
        b : float
        z : ndarray (n,)  margins
        v : ndarray (d,)  loss gradient X^T (c loss'(y, z)); read on ``cols`` only
        cols : ndarray of int
            The features not screened out: the dual needs feasibility on these only.
        primal : float
            P(w, b).
        residual : ndarray (n,), optional
            c * loss'(y, z), when the solver keeps it with z: loss' is then not evaluated again.
        """
        v_cols = v[cols]
        problem = self.problem
        cert = problem.certificate_from(w[cols], b, z, None, v_cols, primal=primal, residual=residual)
        if not self.has_dual:
            return cert
        self.residual_dual = cert.objective - cert.value  # the rescaled residual's own (a path carries it)
        if self._offer(cert, v_cols, cols):
            if residual is None:
                self.best_point[:] = problem.loss.derivative(problem.y, z)
            else:  # loss' units; rows of zero weight have none in the dual
                self.best_point[:] = 0.0
                np.divide(residual, problem.c, out=self.best_point, where=problem.c > 0.0)
        return self.best(cert, primal)

    def offer(self, w, b, z, u, v, cols, primal, own=False):
        """Offer the dual point ``u`` (loss' units) whose correlations ``|x_j^T (c u)|`` are at most
        ``v`` on ``cols`` (bounds suffice: the rescaling then makes it feasible all the same);
        returns the best dual point's certificate at ``primal`` (with ``own``, also the point's
        own: (best, own))."""
        cert = self.problem.certificate_from(w[cols], b, z, u, v, primal=primal)
        if self._offer(cert, v, cols):
            self.best_point[:] = u
        return (self.best(cert, primal), cert) if own else self.best(cert, primal)

    def adopt(self, other):
        """Take ``other``'s best dual point (of the same problem) where it is better, and its last
        rescaled residual's value."""
        if other.best_dual > self.best_dual:
            self.best_dual = other.best_dual
            self.best_point[:] = other.best_point
            self.best_corr = other.best_corr.copy()
        self.residual_dual = other.residual_dual

    def best(self, cert, primal):
        """``cert`` with the gap of the best dual point at the primal value ``primal``."""
        if not self.has_dual:
            return cert
        gap = primal - self.best_dual
        return cert._replace(value=gap, relative=gap / max(abs(primal), 1e-300), objective=primal)

    def screen(self, cols, w, norms, primal, lam1):
        """The features of ``cols`` proven zero at the optimum (and zero now): a boolean mask."""
        if not self.has_dual or not np.isfinite(self.best_dual):
            return np.zeros(cols.shape[0], dtype=bool)
        L = self.problem.loss.curvature_bound
        radius = np.sqrt(2.0 * L * max(primal - self.best_dual, 0.0))
        bound = self.best_corr[cols] + norms[cols] * radius
        return (bound < lam1 * (1.0 - _SCREEN_MARGIN)) & (w[cols] == 0.0)

    def _offer(self, cert, v, cols):
        """Keep this candidate if its dual value is the best; returns whether it was."""
        dual = cert.objective - cert.value
        if not dual > self.best_dual:
            return False
        scale = dual_scale(self.problem.penalty, v)
        self.best_dual = dual
        self.best_corr[:] = np.inf
        _put_scaled_abs(cols, v, scale, self.best_corr)
        return True


class SequentialScreening:
    """Gap-safe screening carried from one lam of a path to the next, without a pass over the data.

    After each solve it keeps the residual r = c * loss'(y, z) at the solution and, for every
    feature, a bound ``corr_j >= |x_j^T r|``:

    - exact on the features the solve's last pass read;
    - for the others (proven zero during the solve), the better of two: the last bound carried
      by Cauchy-Schwarz in the c-weighted norm, ``|x_j^T r_old| + ||x_j||_c ||(r - r_old) / c||_c``;
      and the sphere of the solution's own gap, ``(lam1 + ||x_j||_c R) / s`` with s the
      residual's rescaling and R = sqrt(2 L gap) (the dual optimum u* is within R of s r / c and
      has |x_j^T c u*| <= lam1 on every feature zero at the optimum).

    At the next lam the rescaled residual ``u * min(1, lam1 / max_j corr_j)`` is then feasible
    for the whole problem, its gap at the warm start gives the sphere of Ndiaye et al. (the
    sequential rule, with the bounds standing in for the correlations), and a feature whose
    bound on that sphere stays below lam1 is zero at the new optimum: the solve never reads it.

    Parameters
    ----------
    problem : Problem
        The path's problem (any lam; the data, labels and weights are what count).
    """

    def __init__(self, problem):
        problem.null_gradient()  # reads the columns once for both (before column_norms alone)
        self.norms = problem.column_norms()
        self.c = problem.c
        self.residual = None
        self.corr = np.full(problem.n_features, np.inf)

    def update(self, problem, w, b, z, primal, residual, loss_gradient, exact, residual_dual=None):
        """Take a solution of ``problem``: (w, b), its margins z, objective ``primal``, residual
        ``c * loss'(y, z)``, and loss gradient ``X^T residual`` known on the features ``exact``
        (every other feature is zero at ``problem``'s optimum). ``residual_dual``: the dual value of
        that residual rescaled on ``exact``, when the solve's last certificate computed it at this
        very point (it is then not computed again: one pass of conjugates per lam)."""
        if self.residual is not None:
            _add_scaled(self.corr, self.norms, residual_distance(residual, self.residual, self.c))
        self.residual = residual.copy()
        v = loss_gradient[exact]
        if residual_dual is None:
            cert = problem.certificate_from(w[exact], b, z, None, v, primal=primal, residual=residual)
        else:
            cert = Certificate.duality_gap(primal, residual_dual)
        pen = problem.penalty
        scale = dual_scale(pen, v)
        if np.isfinite(cert.value) and scale > 0.0:
            radius = np.sqrt(2.0 * problem.loss.curvature_bound * max(cert.value, 0.0))
            _lower_to_sphere(self.corr, self.norms, pen.l1 * (1.0 + _SCREEN_MARGIN), radius, scale)
        _put_scaled_abs(exact, v, 1.0, self.corr)

    def screen(self, problem, w, b, z, primal):
        """The features proven zero at the optimum of ``problem`` (and zero in w), from the last
        solution (w, b) with margins z and objective ``primal`` under ``problem``'s lam: a boolean
        mask, or None when nothing is known yet (or the loss has no conjugate)."""
        if self.residual is None or not problem.loss.has_conjugate:
            return None
        cert = problem.certificate_from(w, b, z, None, self.corr, primal=primal, residual=self.residual)
        if not np.isfinite(cert.value):
            return None
        pen = problem.penalty
        scale = dual_scale(pen, self.corr)  # bounds on the correlations: the scale of a feasible point
        radius = np.sqrt(2.0 * problem.loss.curvature_bound * max(cert.value, 0.0))
        out = np.empty(self.corr.shape[0], dtype=np.bool_)
        _sphere_screen_all(self.corr, scale, self.norms, radius, pen.l1 * (1.0 - _SCREEN_MARGIN), w, out)
        return out


def residual_distance(r_new, r_old, c) -> float:
    """||(r_new - r_old) / c||_c = sqrt(sum_i (r_new_i - r_old_i)^2 / c_i) over the rows of positive
    weight (the others have a zero residual), for c-weighted residuals r = c loss': by
    Cauchy-Schwarz, |x_j^T r_new - x_j^T r_old| <= ||x_j||_c times it."""
    return float(np.sqrt(_weighted_square_distance(r_new, r_old, c)))


@njit(cache=True, nogil=True)
def _weighted_square_distance(a, b, c):
    """sum_{c_i > 0} (a_i - b_i)^2 / c_i in one pass (the NumPy expression it replaces made four
    temporaries of n under the GIL: 50 us a call on earn, a few calls a lam of a path). Summed in
    blocks of 1,024 terms and then the blocks: the rounding error stays below (1,024 + n / 1,024)
    ulps of the sum, within the screening's margin (``_SCREEN_MARGIN``) for any n up to 10^9."""
    total = 0.0
    n = a.shape[0]
    for start in range(0, n, 1024):
        block = 0.0
        for i in range(start, min(start + 1024, n)):
            if c[i] > 0.0:
                t = a[i] - b[i]
                block += t * t / c[i]
        total += block
    return total


def correlations_near(problem, kept, g_loss, r, u_c, w, margin=1e-3, signed=False):
    """Bounds on ``|x_j^T u_c|`` over the features ``kept``, exact wherever they could reach lam1
    (with ``signed``, the exact ones are the signed ``x_j^T u_c``).

    ``g_loss`` holds the exact correlations ``x_j^T r`` (on ``kept``) of a nearby c-weighted
    residual ``r``, the last certifying pass's. By Cauchy-Schwarz, ``|x_j^T u_c| <= |g_j| +
    ||x_j||_c ||(u_c - r) / c||_c`` (:func:`residual_distance`). Where that bound stays below
    ``(1 - margin) lam1`` it stands in for the correlation; the other columns, and those of the
    nonzero weights, are read. A dual point's rescaling, min(1, lam1 / max_j |x_j^T u_c|), is then
    what the exact correlations give, and so is its dual value, for a pass over the columns near
    the bound (the support and the features about to enter) instead of all of them. Gap-safe
    screening from these bounds is weaker where they stand in.

    Returns (the bounds on ``kept``, the nonzeros of X read)."""
    lam1 = problem.penalty.l1
    shift = residual_distance(u_c, r, problem.c)
    # Inflated past float rounding (screening's margin): a bound must never fall below the sum.
    bound = (np.abs(g_loss[kept]) + problem.column_norms()[kept] * shift) * (1.0 + _SCREEN_MARGIN)
    exact = (bound >= lam1 * (1.0 - margin)) | (w[kept] != 0.0)
    cols = kept[exact]
    if cols.shape[0] == 0:
        return bound, 0
    corr = np.empty(problem.n_features)
    kernels.check_pass(*problem.columns.arrays, cols, u_c, w, lam1, 0.0, corr)
    bound[exact] = corr[cols] if signed else np.abs(corr[cols])
    return bound, columns_nnz(problem.columns, cols)


# The bookkeeping of bounds over the features, as loops: each NumPy expression it replaces made
# temporaries of d floats (four to six per call; earn's 50-lam path called them 1,500 times) and,
# in threads, released and took back the GIL for each. They release it once, as every kernel of a
# solve does (``l1scale._threads``), and compute each entry with the same operations as the
# expressions did, to the bit.


@njit(cache=True, nogil=True)
def _sphere_screen_all(corr, scale, norms, radius, limit, w, out):
    """out[j] = scale corr_j + ||x_j|| radius < limit and w_j == 0 over every feature: gap-safe
    screening on the sphere of ``radius`` (contiguous: the loop vectorises, 10 us on earn against
    NumPy's 38; over a gathered subset a loop was no faster than NumPy, which does that one)."""
    for j in range(corr.shape[0]):
        out[j] = (scale * corr[j] + norms[j] * radius < limit) & (w[j] == 0.0)


@njit(cache=True, nogil=True)
def _put_scaled_abs(cols, v, scale, out):
    """out[cols[q]] = scale |v_q|."""
    for q in range(cols.shape[0]):
        out[cols[q]] = scale * abs(v[q])


@njit(cache=True, nogil=True)
def _add_scaled(corr, norms, shift):
    """corr += norms shift (Cauchy-Schwarz carried over a move of the residual)."""
    for j in range(corr.shape[0]):
        corr[j] += norms[j] * shift


@njit(cache=True, nogil=True)
def _lower_to_sphere(corr, norms, top, radius, scale):
    """corr = min(corr, (top + norms radius) / scale): the bound the sphere of the solution's gap
    gives, where it is the better one."""
    for j in range(corr.shape[0]):
        bound = (top + norms[j] * radius) / scale
        if bound < corr[j]:
            corr[j] = bound


def loss_units(u_c, c):
    """A c-weighted dual point in loss' units, u_c / c (0 on rows of zero weight: they have no
    dual variable)."""
    u = np.zeros(u_c.shape[0])
    np.divide(u_c, c, out=u, where=c > 0.0)
    return u


def columns_nnz(columns, cols) -> int:
    """Stored values in the columns ``cols`` of a column layout (what a pass over them reads)."""
    if cols.shape[0] == columns.shape[1]:
        return columns.nnz
    if columns.dense:
        return int(cols.shape[0]) * int(columns.shape[0])
    return int(_columns_nnz(columns.indptr, cols))


@njit(cache=True, nogil=True)
def _columns_nnz(indptr, cols):
    """sum_j indptr[j + 1] - indptr[j] over ``cols``. The NumPy expression it replaces (four
    calls, three temporaries of len(cols)) was 10% of the time earn's path held the GIL (py-spy
    --gil). nogil like every kernel of a solve, short ones included (``_threads``)."""
    total = 0
    for k in range(cols.shape[0]):
        j = cols[k]
        total += indptr[j + 1] - indptr[j]
    return total
