"""A Newton step on the support, for when coordinate descent has found it.

Once the signs of w have settled, the L1 term is linear on their orthant and P is smooth
there. Its Newton system on the support S (and the intercept),

    (X_S^T diag(D) X_S + lam2 I) d = -(X_S^T r + lam2 w_S + lam1 sign(w_S)),

is solved by conjugate gradients preconditioned by the diagonal: ill-conditioning
(correlated text features, one-hot blocks) costs CG a few more products, where cyclic
CD on the same quadratic model needs thousands of sweeps. The step is projected onto the
orthant (a coordinate that would change sign stops at zero) and backtracked until Armijo's
condition holds (orthant-wise projected Newton, as in OWL-QN). Near the optimum it converges
quadratically, and so do the support's KKT violations: the rescaled residual then makes a
tight dual point, so the duality gap follows the suboptimality.
"""

from __future__ import annotations

import numpy as np

from ..losses import weighted_terms_along
from . import _cd_kernels as kernels
from ._dual import columns_nnz

__all__ = ["support_newton_step"]

_EPS = float(np.finfo(np.float64).eps)
# CG's relative residual: the square of the largest relative KKT violation, within
# [1e-10, 0.1] (an inexact Newton step whose forcing term falls with the gradient converges
# superlinearly: loose and cheap far from the optimum, tight for the last steps), and its cap.
_CG_RTOL_RANGE = (1e-10, 0.1)
_CG_MAX_ITER = 200
_SIGMA = 0.01
_MAX_HALVINGS = 30


def support_newton_step(pt, support, H, nu, violation, verbose=0, gram_max=0):
    """One projected Newton step on the support of ``pt.w``; updates ``pt`` when it is accepted.

    Parameters
    ----------
    pt : the solver's iterate (``w``, ``b``, margins, losses, ``r``, ``D``; see ``cd._Iterate``).
    support : ndarray of int
        The nonzero weights, sorted.
    H : ndarray (d,)
        Diagonal curvature at the current point on the support (the preconditioner).
    nu : float
        Curvature floor added to the diagonal.
    violation : float
        The largest KKT violation relative to lam1 at the current point (sets CG's tolerance).
    gram_max : int
        Largest support whose CG products may be taken on its Gram matrix.

    Returns (the step length taken, 0.0 when rejected; nonzeros of X read).
    """
    problem, w = pt.problem, pt.w
    k, fit_b = support.shape[0], problem.fit_intercept
    if k == 0:
        return 0.0, 0
    lam1, lam2 = problem.penalty.l1, problem.penalty.l2
    arrays = problem.columns.arrays
    wS, sign = w[support], np.sign(w[support])
    size = k + int(fit_b)
    grad, diag = np.empty(size), np.empty(size)
    kernels.support_gradient(*arrays, support, pt.r, fit_b, grad)
    grad[:k] += lam2 * wS + lam1 * sign
    diag[:k] = H[support]
    if fit_b:
        diag[k] = pt.D.sum() + nu
    step, work = np.empty(size), np.empty(problem.n_samples)
    rtol = float(np.clip(violation * violation, *_CG_RTOL_RANGE))
    products, reads = kernels.support_cg(
        *arrays, support, pt.D, lam2 + nu, nu, fit_b, -grad, diag, rtol, _CG_MAX_ITER, step, work, gram_max
    )
    nnz_S = columns_nnz(problem.columns, support)
    reads += 2 * nnz_S
    if verbose > 1:
        print(f"   support newton: |S|={k} cg products={products}")
    d_w, d_b = step[:k], (step[k] if fit_b else 0.0)
    objective = pt.objective
    slack = 8 * _EPS * abs(objective)
    move = np.empty(size)
    t = 1.0
    for _ in range(_MAX_HALVINGS):
        trial = wS + t * d_w
        trial[np.sign(trial) != sign] = 0.0  # projected onto the orthant of w
        delta = trial - wS
        decrease = float(grad[:k] @ delta) + (t * d_b * grad[k] if fit_b else 0.0)
        move[:k] = delta
        if fit_b:
            move[k] = t * d_b
        kernels.support_margins_change(*arrays, support, move, fit_b, work)
        dz = work
        reads += nnz_S
        loss_change = weighted_terms_along(
            problem.loss.kernel_id, problem.y, pt.z, dz, 1.0, problem.c, pt.lv, pt.z_new, pt.lv_new, pt.r, pt.D
        )
        pen_change = float(lam1 * (np.abs(trial).sum() - np.abs(wS).sum()) + 0.5 * lam2 * (trial @ trial - wS @ wS))
        if decrease < 0.0 and loss_change + pen_change <= _SIGMA * decrease + slack:
            w[support] = trial
            pt.b += t * d_b
            pt.accept()
            pt.loss_sum += loss_change
            pt.pen += pen_change
            return t, reads
        t *= 0.5
    # Rejected: r and D hold a trial's values; the caller makes them afresh.
    return 0.0, reads
