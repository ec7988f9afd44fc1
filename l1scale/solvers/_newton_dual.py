"""The dual point of a support-Newton step: a certificate that follows the primal.

Near the optimum, the residual that the support's quadratic model predicts at its Newton point
meets the support's KKT conditions by construction, so its duality gap falls with the
suboptimality, where the rescaled residual's falls with the KKT violations (about its square
root). :class:`NewtonDual` offers that point when a certificate misses tol, and makes it tight
where three things would keep it from certifying (each measured on news20 at 0.001 lam_max,
2,864 bigrams, where they held the point's gap at 1.3e-4 while the iterate was 8e-8 from the
optimum):

- zero weights that violate optimality at the iterate (``pays`` lets a few enter the system);
- zero weights that violate it at the Newton point only (the point's own violators: it is
  solved again with them in, :meth:`NewtonDual._violators_of_point`);
- the step's own defects: weights it carries across zero (held there) and the curvature floor
  ``NU`` on the system's diagonal, which moves the point's correlations by ``NU d_j`` where
  near-duplicate columns make the Newton step d large (the rest of the system solved again
  without the floor by a few conjugate-gradient products, preconditioned by the iterate's
  factorisation, :func:`floor_free`).
"""

from __future__ import annotations

import numpy as np

from . import _cd_kernels as kernels
from . import _cg_kernels as cg_kernels
from ._dual import columns_nnz, correlations_near, loss_units, residual_distance
from ._quadratic_step import NU
from ._support_factor import STALE_MAX_PRODUCTS, system_product
from ._support_newton import (
    CG_MAX_PRODUCTS,
    support_newton_direction,
    support_newton_step,
    system_gradient,
)

__all__ = ["POLISH_HALVINGS", "NewtonDual", "floor_free", "newton_dual_point"]

_NO_FEATURES = np.empty(0, dtype=np.int64)
# Line-search lengths the step of a certified Newton point gets (NewtonDual.polish).
POLISH_HALVINGS = 3


def floor_free(pt, system, grad, step, free, precondition, target, max_products):
    """The Newton system on ``system`` solved without the curvature floor NU on its diagonal,
    ``(X_S^T D X_S + lam2 I) d = -grad`` on the rows ``free`` (the others keep their values in ``step``), by
    conjugate gradients from ``step`` preconditioned by ``precondition`` (an approximate inverse of
    the free rows' system with the floor: :meth:`SupportFactor.preconditioner`).

    A dual point's correlations on the support are ``-lam1 sign(w_j) - NU d_j`` at the floored
    system's solution, and near-duplicate columns (bigrams set in the same 60 rows) make d_j large
    along their difference: news20 at 0.001 lam_max, d_j = 23 moved one by 1.3e-5 lam1, and the
    point's gap by as much, 10x tol at tol 1e-6. With the floor's factorisation as preconditioner
    only those few directions are left to CG: 3 products took that to 1e-10 lam1. It stops once no
    free weight's row is off by more than ``target`` (the correlation's distance to lam1), or at
    ``max_products``; the step whose rows were closest is returned (a direction without curvature
    grows without bound: the best step so far is kept). Returns (the step, nonzeros of X read and
    the preconditioner's work)."""
    problem = pt.problem
    k = system.shape[0]
    margins, product = np.empty(problem.n_samples), np.empty(step.shape[0])
    weights = free < k

    def floorless(v):  # the system's product without the floor (system_product adds lam2 + NU)
        read = system_product(pt, system, v, product, margins)
        product[:k] -= NU * v[:k]
        if k < v.shape[0]:
            product[k] -= NU * v[k]
        return product[free], read  # a new array (fancy indexing)

    x = step.copy()
    at_step, reads = floorless(x)
    res = -(grad[free] + at_step)
    reads += precondition.setup
    full = np.zeros(step.shape[0])  # a direction on the free rows, the held ones at zero
    best, best_x = float(np.abs(res[weights]).max(initial=0.0)), x.copy()
    if best <= target:
        return x, reads
    products = 0
    z = precondition.apply(res)
    direction = z.copy()
    rz = cg_kernels.dot(res, z)
    reads += precondition.work
    while best > target and products < max_products:
        full[free] = direction
        q, read = floorless(full)
        reads += read
        products += 1
        curvature = cg_kernels.dot(direction, q)
        if not curvature > 0.0:
            break
        alpha = rz / curvature
        x[free] += alpha * direction
        res -= alpha * q
        size = float(np.abs(res[weights]).max(initial=0.0))
        if size < best:
            best, best_x = size, x.copy()
        z = precondition.apply(res)
        reads += precondition.work
        rz_new = cg_kernels.dot(res, z)
        direction = z + (rz_new / rz) * direction
        rz = rz_new
    return best_x, reads


def _grown_support(w, support, entering, entering_signs):
    """``support`` with the zero weights ``entering`` added (sorted), and the signs of the L1
    term's gradient on it: the weights' own, ``entering_signs`` on the new ones (None where none
    is new: the weights' own)."""
    if entering.shape[0] == 0:
        return support, None
    grown = np.union1d(support, entering)
    signs = np.sign(w[grown])
    signs[np.searchsorted(grown, entering)] = entering_signs
    return grown, signs


def newton_dual_point(pt, support, step, kept, g_loss):
    """The dual point of a Newton step on the support: the residual the quadratic model
    predicts at w + d, ``r + D (X_S d + d_b)``, and bounds on its correlations.

    At that point the support's KKT conditions hold exactly (to CG's tolerance), where the
    rescaled residual of w must shrink all of u until the most violated of them holds: once the
    support is the optimum's, the gap of this point falls with the suboptimality itself, not
    with the violations (a9a, earn: gap = suboptimality to two digits, where the residual's gap
    is 1e2-1e5 times larger). The step is not taken; only its dual point is offered.

    Parameters
    ----------
    pt : the solver's iterate (r, D at its margins; b optimal for w when it is fitted).
    support, step : the support and the solution of its Newton system (:func:`support_newton_direction`).
    kept : ndarray of int
        The features not screened out: the correlations are bounded on these.
    g_loss : ndarray (d,)
        X^T r, exact on ``kept`` (the certifying pass at this point).

    Returns (u in loss' units, upper bounds of |x_j^T (c u)| on ``kept``, nonzeros of X read).
    The bounds are exact on the support and wherever Cauchy-Schwarz from the residual's
    correlations could reach lam1; elsewhere |g_j| + ||x_j||_c ||u - r||_{1/c}
    (``_dual.correlations_near``).
    """
    problem = pt.problem
    fit_b = problem.fit_intercept
    arrays, c = problem.columns.arrays, problem.c
    dz = np.empty(problem.n_samples)
    cg_kernels.support_margins_change(*arrays, support, step, fit_b, dz)
    shift = pt.D * dz
    if fit_b:  # sum(c u) = 0 exactly (the CG solve leaves a rounding-size sum)
        total = pt.D.sum()
        if total > 0.0:
            shift -= (float((pt.r + shift).sum()) / total) * pt.D
    u_c = pt.r + shift  # c * u
    bound, reads = correlations_near(problem, kept, g_loss, pt.r, u_c, pt.w)
    return loss_units(u_c, c), bound, columns_nnz(problem.columns, support) + reads


class NewtonDual:
    """The dual point of a support-Newton step, offered when a certificate misses tol.

    When no zero weight violates optimality, the support is likely the optimum's, and the
    residual that the quadratic model predicts at the support's Newton point (``newton_dual_point``)
    is a nearly exact dual point: its gap is about the suboptimality, where the rescaled residual's
    is about its square root. A few zero weights that barely violate optimality join the system
    (see :meth:`pays`): a rescaled point loses first order in their violation, where the Newton
    point meets their KKT conditions too. At a tol of at most ``entering_violation``^2, a point
    whose rescaling is what keeps it from certifying is made tight (the module's docstring: its
    own violators let in, its crossing weights held at zero, the rest solved without the curvature
    floor). If it certifies, the step it came from is taken (one line search) and the solve stops.

    Parameters
    ----------
    tol : float
        The solver's relative tolerance.
    verbose, gram_max : as the solver's.
    enabled : bool
        False: never offered (``pays`` is False).
    """

    # Offered only when a diagonal Newton step's predicted decrease is within this many tol P.
    estimate_slack = 10.0
    # Zero weights that still violate optimality join the system (with the signs they would enter
    # with) when there are at most this many and none violates by more than this fraction of lam1
    # (at tol at most its square).
    max_entering = 4
    entering_violation = 1e-2

    def __init__(self, tol, verbose=0, gram_max=0, enabled=True):
        self.tol, self.verbose, self.gram_max, self.enabled = tol, verbose, gram_max, enabled
        self.entering = _NO_FEATURES  # the zero weights that join the system: set by pays

    def pays(self, pt, dual, vzero, nnz, g_loss, H, kept, objective):
        """Whether to offer it (its CG solve costs a few passes over the support's columns, so
        only where it can certify tol):

        - a loss with a dual and the plain L1 penalty (the elastic net's dual is not rescaled:
          the residual's gap already falls with the suboptimality);
        - a nonzero support, and no zero weight violating optimality by more than tol lam1 (a
          feature still to enter: the point's rescaling would be as poor as the residual's),
          except at most ``max_entering`` of them, by at most ``entering_violation`` lam1, when
          tol is at most ``entering_violation``^2: those enter the system (``entering``), each with
          the sign of -g_j, so that the Newton point meets their KKT conditions too (news20 at
          0.001 lam_max: one bigram at 6e-5 lam1 kept the gap at 4.6e-5 while the suboptimality
          fell from 3e-9 to 3e-11). At a looser tol the rounds certify soon enough, and a try that
          misses costs its Newton solve (news20's 50-lam path at tol 1e-3: 5 of 11 tries missed
          tol by 1-2x, the path +25% in time);
        - the suboptimality that a diagonal Newton step on the support and those features would
          remove, sum_j v_j^2 / (2 H_jj) (v_j: their KKT violations), within 10 tol P: the
          Newton point's gap is about the suboptimality left, so a larger one cannot certify."""
        penalty = pt.problem.penalty
        self.entering = _NO_FEATURES
        if not (self.enabled and dual.has_dual and penalty.l2 == 0.0 and nnz > 0):
            return False
        lam1 = penalty.l1
        if vzero > self.tol * lam1 and (
            vzero > self.entering_violation * lam1 or self.tol > self.entering_violation**2
        ):
            return False
        support = kept[pt.w[kept] != 0.0]
        viol = g_loss[support] + lam1 * np.sign(pt.w[support])
        estimate = 0.5 * float((viol * viol / H[support]).sum())
        limit = self.estimate_slack * self.tol * abs(objective)
        if estimate > limit:
            return False  # entering features only add to it: no pass over them
        if vzero > self.tol * lam1:
            zero = kept[pt.w[kept] == 0.0]
            entering = zero[np.abs(g_loss[zero]) > lam1 * (1.0 + self.tol)]
            if entering.shape[0] > self.max_entering:
                return False
            curvature = np.empty(entering.shape[0])  # exact: H holds what the last outer pass read
            kernels.column_curvatures(*pt.problem.columns.arrays, entering, pt.D, curvature)
            pt.reads += columns_nnz(pt.problem.columns, entering)
            excess = np.abs(g_loss[entering]) - lam1
            estimate += 0.5 * float((excess * excess / (curvature + NU)).sum())
            self.entering = entering
        return estimate <= limit

    def certificate(
        self,
        pt,
        dual,
        kept,
        g_loss,
        H,
        violation,
        objective,
        max_products=CG_MAX_PRODUCTS,
        direct=False,
        factorise_after=None,
    ):
        """The best dual point's certificate once the Newton point's is offered, and the step
        ``(support, NewtonSolve)`` (the step itself is not taken; ``direct``, ``factorise_after``:
        solved by a factorisation, as in :func:`support_newton_step`).

        CG is solved until the support's correlations are within about a tenth of tol of lam1
        (relative): the error shrinks the dual point by as much, and the gap grows with it; a
        tighter solve buys the dual nothing. It stops at ``max_products`` (the solver's budget)
        at the latest; ``capped`` says it did. The features ``pays`` let enter are in the
        system and in the returned support (a step taken from it keeps them at zero), and so are
        those the tightened point let in; the tightened step is the one returned (its crossing
        weights at zero, the rest solved without the floor: the solver's next Newton step may take
        it as its direction on an unchanged support)."""
        support = kept[pt.w[kept] != 0.0]
        entering, entering_signs = self.entering, -np.sign(g_loss[self.entering])
        rtol = 0.1 * self.tol / max(violation, 1e-300)
        options = dict(
            verbose=self.verbose,
            gram_max=self.gram_max,
            rtol=rtol,
            max_products=max_products,
            direct=direct,
            factorise_after=factorise_after,
        )
        # At a tol the rounds would not soon certify, the point is made tight (see the module's
        # docstring): at a looser one a try costs its Newton solve and the point is close enough.
        tight = self.tol <= self.entering_violation**2
        system, signs = _grown_support(pt.w, support, entering, entering_signs)
        solve = support_newton_direction(pt, system, H, violation, signs=signs, **options)
        pt.reads += solve.reads
        cert, u, v = self._offer(pt, dual, system, solve.step, kept, g_loss, objective)
        # What the point's rescaling costs, about its largest correlation's excess over lam1
        # (relative); where that is not a good share of its gap, the gap is the iterate's own
        # suboptimality, which no tightening removes (measured on the twelve batch points at tol
        # 1e-4 .. 1e-8: the excess was 1e-12-6e-8 of a gap of 3e-6-1e-3 there, where news20's at
        # 0.001 lam_max, 1.7e-4 against 1.3e-4, was all of it).
        excess = float(v.max(initial=0.0)) / pt.problem.penalty.l1 - 1.0
        if cert.relative <= self.tol or not tight or not 0.5 * cert.relative <= excess <= self.entering_violation:
            return cert, (system, solve)
        # The point's own violators: zero weights off the system whose correlations at the Newton
        # point pass lam1 (by little: at the iterate they did not) shrink its rescaling by as much
        # (news20 at 0.001 lam_max: one bigram at 1.00017 lam1). They enter the system, and the step
        # is solved again on it, tightened.
        more, more_signs = self._violators_of_point(pt, system, kept, u, v)
        grown, grown_signs = _grown_support(
            pt.w, support, np.concatenate([entering, more]), np.concatenate([entering_signs, more_signs])
        )
        tightened = self._tightened(pt, system, solve, grown, grown_signs)
        if tightened is not None:
            system, solve = grown, tightened
            cert, u, v = self._offer(pt, dual, system, solve.step, kept, g_loss, objective)
        return cert, (system, solve)

    def _offer(self, pt, dual, system, step, kept, g_loss, objective):
        """Offer the Newton point of ``step`` on ``system``; returns (the best dual point's
        certificate, the point u, bounds on its correlations on ``kept``)."""
        u, v, more = newton_dual_point(pt, system, step, kept, g_loss)
        pt.reads += more
        cert = dual.offer(pt.w, pt.b, pt.z, u, v, kept, objective)
        if self.verbose > 1:
            print(f"   Newton dual point: |S|={system.shape[0]} relative gap {cert.relative:.3e}")
        return cert, u, v

    def _tightened(self, pt, system, solve, grown, signs):
        """The Newton step ``solve`` (on ``system``) solved again on ``grown`` (``system`` and the
        zero weights to enter, with ``signs``, the L1 term's on ``grown``), tightened for a dual
        point: the weights it carries across zero held there (their sign flipped against the signs
        the system had, so the point's correlations there are lam1's with the wrong sign: news20's
        near-duplicate bigrams, whose step of +-23 along their difference the curvature floor
        allows), and the rest solved without the curvature floor NU (:func:`floor_free`), by CG
        from the step, preconditioned by the iterate's factorisation. Returns the
        :class:`NewtonSolve` on ``grown``, or None where no factorisation can precondition it."""
        factor = pt.factor
        if factor is None:
            return None
        problem, w = pt.problem, pt.w[grown]
        k, fit_b = grown.shape[0], problem.fit_intercept
        step = np.zeros(k + int(fit_b))
        step[np.searchsorted(grown, system)] = solve.step[: system.shape[0]]
        if fit_b:
            step[k] = solve.step[-1]
        if signs is None:
            signs = np.sign(w)
        crossing = signs * (w + step[:k]) < 0.0
        step[:k][crossing] = -w[crossing]
        precondition = factor.preconditioner(pt, grown[~crossing])
        if precondition is None:
            return None
        if np.array_equal(grown, system):  # nothing new entered: the solve's own right side
            grad = solve.grad
        else:
            grad = system_gradient(pt, grown, signs)
            pt.reads += columns_nnz(problem.columns, grown)
        free = np.flatnonzero(np.append(~crossing, True) if fit_b else ~crossing)
        target = 0.1 * self.tol * problem.penalty.l1
        step, more = floor_free(pt, grown, grad, step, free, precondition, target, STALE_MAX_PRODUCTS)
        pt.reads += more
        return solve._replace(grad=grad, step=step, factor=None, stale=factor, gram=None)

    def _violators_of_point(self, pt, system, kept, u, v):
        """The features of ``kept`` off ``system`` whose correlations at the dual point ``u`` pass
        lam1 (``v``: their exact values there, :func:`newton_dual_point`), with the signs they would
        enter with, -sign(x_j^T (c u)); none when there are more than ``max_entering`` of them or
        one passes lam1 by more than ``entering_violation``: the Newton point is then not the
        optimum's yet, and a re-solve would not certify."""
        problem = pt.problem
        lam1 = problem.penalty.l1
        over = (v > lam1) & ~np.isin(kept, system, assume_unique=True)
        count = int(over.sum())
        if count == 0 or count > self.max_entering or float(v[over].max()) > lam1 * (1.0 + self.entering_violation):
            return _NO_FEATURES, np.empty(0)
        cols = kept[over]
        corr = np.empty(problem.n_features)
        kernels.check_pass(*problem.columns.arrays, cols, problem.c * u, pt.w, lam1, 0.0, corr)
        pt.reads += columns_nnz(problem.columns, cols)
        return cols, -np.sign(corr[cols])

    def polish(self, pt, newton, H, g_loss, kept, norms, violation):
        """Once the Newton point's dual has certified tol, take the step it came from (already
        solved: one line search) when it lowers P: the certificate only tightens (same dual
        point, lower P), and the returned model's own residual comes closer to certifying too
        (the support's KKT violations fall quadratically).

        Returns bounds on the loss gradient |x_j^T r| on ``kept`` at the new point, signed as
        the old gradient (exact on the support; elsewhere |g_j| + ||x_j||_c ||r_new - r||_{1/c}:
        a path's carried screening needs bounds, not values), or None when the step was rejected
        (the iterate is then as it was)."""
        support, solve = newton
        problem = pt.problem
        r_before = pt.r.copy()
        t, reads, _ = support_newton_step(
            pt,
            support,
            H,
            violation,
            verbose=self.verbose,
            gram_max=self.gram_max,
            direction=solve,
            max_halvings=POLISH_HALVINGS,
        )
        pt.reads += reads
        if t == 0.0:
            pt.recenter()  # r and D hold a trial's values: back to the certified point's
            return None
        pt.centered = False
        drift = residual_distance(pt.r, r_before, problem.c)
        bounds = np.copysign(np.abs(g_loss[kept]) + norms[kept] * drift, g_loss[kept])
        exact = np.empty(support.shape[0] + int(problem.fit_intercept))
        cg_kernels.support_gradient(*problem.columns.arrays, support, pt.r, problem.fit_intercept, exact)
        pt.reads += columns_nnz(problem.columns, support)
        bounds[np.searchsorted(kept, support)] = exact[: support.shape[0]]
        return bounds
