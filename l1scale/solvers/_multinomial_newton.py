"""The dual point of a Newton step on the support, for the multinomial solver.

The binary solver's ``_newton_dual.NewtonDual``, for the softmax loss: when the certificate
of the residual ``R = c (P - Y)`` misses tol while no zero weight violates optimality, the
Newton system of the loss on the support S = {(j, k): W_jk != 0} (and the intercepts),

    (X^T H X)_SS V_S = -(G_S + lam1 sign(W_S)),   H_i = c_i (diag(p_i) - p_i p_i^T),

is solved by preconditioned conjugate gradients, and the residual that the quadratic model
predicts at W + V, ``U = R + H (X V + db)``, is offered as a dual point. Its correlations meet
the support's KKT conditions, so once the support is final its gap is about the suboptimality
itself, where the rescaled residual's is about its square root (digits at 0.02 lam_max: 3.1e-3
against 1.4e-1 at 1.2e-3 suboptimality; 4.0e-5 against 2.8e-2 at 4.0e-5).

The softmax loss does not change when a row of margins moves by a constant: the intercepts'
block, and every feature row whose K weights are all in S, have the direction of ones in the
Hessian's null space. CG works on the complement (each such block centred), where the system is
consistent; the dual point does not depend on the null directions (H_i 1 = 0).
"""

from __future__ import annotations

import numpy as np

from . import _multinomial_kernels as kernels
from ._dual import columns_nnz

__all__ = ["newton_dual_value"]

_CG_MAX_ITER = 200
_CG_RTOL_RANGE = (1e-10, 0.1)
# Offered only when a diagonal Newton step's predicted decrease is within this many tol P.
_ESTIMATE_SLACK = 10.0


def entering_reach(tol):
    """The largest violation of a zero weight, relative to lam1, at which the point is still tried:
    tol, and below 1e-2 up to min(sqrt(tol), 100 tol, 0.01). A violation v costs the point's gap
    about v / 10 (digits at 0.02 lam_max: 4.6e-2 -> 3.3e-3), so sqrt(tol) would do, but a try that
    fails costs a CG solve and an outer pass. Measured (tol as the reach, against this), nonzeros
    read to 1e-3 / 1e-4: digits at 0.02 lam_max 118M / 121M -> 73M / 74M, at 0.005 275M / 280M ->
    166M / 170M; wine at 0.005 0.56M / 0.60M -> 0.42M / 0.44M; mnist10k at 0.05 to 1e-4 2.03G ->
    1.39G (2.99 s -> 2.64 s). At 1e-2, sqrt(tol) wins on digits at 0.02 (69M -> 41M) but loses on
    digits at 0.005 (+9%), wine at 0.02 and mnist10k (0.67 s -> 0.92 s): hence the 0.01 cap. At
    1e-6 (100 tol), unchanged."""
    return max(tol, min(np.sqrt(tol), 100.0 * tol, 0.01))


def newton_dual_value(problem, st, G_loss, H, vzero, objective, tol):
    """The dual value of the support's Newton point, or -inf where it is not worth its CG solve.

    Parameters
    ----------
    problem : MultinomialProblem
    st : the solver's state (W, b, P, CP, R, D at the current margins; intercepts optimal).
    G_loss : ndarray (d, K)
        X^T R on every feature (the certifying pass at this point).
    H : ndarray (d, K)
        Diagonal curvature of the last pass that read it (the preconditioner).
    vzero : float
        The largest KKT violation of a zero weight at this point.
    objective : float
        P(W, b).
    tol : float
        The solver's relative tolerance.

    Returns (the dual value, nonzeros of X read, the step ``(V, db)`` it came from: V (d, K)
    zero off the support; None where nothing was solved).
    """
    W = st.W
    lam1 = problem.penalty.l1
    S = W != 0.0
    # A zero weight violating optimality by much more than tol (relative to lam1) is a feature still
    # to enter: the point's rescaling would then be as poor as the residual's.
    if problem.penalty.l2 != 0.0 or vzero > entering_reach(tol) * lam1 or not S.any():
        return -np.inf, 0, None
    viol = G_loss[S] + lam1 * np.sign(W[S])
    if 0.5 * float((viol * viol / H[S]).sum()) > _ESTIMATE_SLACK * tol * abs(objective):
        return -np.inf, 0, None
    system = _SupportSystem(problem, st, S)
    rhs = system.pack(-np.where(S, G_loss + lam1 * np.sign(W), 0.0), -st.R.sum(axis=0))
    diag = system.pack(np.where(S, H, 1.0), st.D.sum(axis=0) + kernels.NU)
    relative = float(np.max(np.abs(viol), initial=0.0)) / lam1
    rtol = float(np.clip(0.1 * tol / max(relative, 1e-300), *_CG_RTOL_RANGE))
    x, _, reads = kernels.support_cg(
        *problem.columns.arrays, *system.layout, problem.fit_intercept, st.P, st.CP, rhs, diag, rtol, _CG_MAX_ITER
    )
    system.reads += reads
    HdZ = system.hessian_margins(x)
    c, P = problem.c, st.P
    rows = c > 0.0
    # The largest step in [0, 1] along H dZ that keeps every row of U / c + Y in the simplex.
    change = np.zeros_like(HdZ)
    change[rows] = HdZ[rows] / c[rows, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        limits = np.where(change < 0.0, -P / change, np.inf)
    t = min(1.0, float(limits.min(initial=np.inf)))
    V, db = system.unpack(x)
    step = (V.copy(), db.copy())
    if not t > 0.0:
        return -np.inf, system.reads, step
    # Correlations of U on every feature: those of R plus t X^T (H dZ) (one pass over X).
    every = np.arange(problem.n_features, dtype=np.int64)
    XtH = np.zeros_like(W)
    kernels.outer_pass(
        *problem.columns.arrays,
        every,
        HdZ,
        st.D,
        W,
        lam1,
        0.0,
        np.inf,
        False,
        XtH,
        np.empty_like(W),
        np.empty(problem.n_features, dtype=np.int64),
    )
    reads = system.reads + columns_nnz(problem.columns, every)
    probabilities = np.clip(P + t * change, 0.0, None)
    return problem.dual(probabilities, G_loss + t * XtH), reads, step


class _SupportSystem:
    """The Newton system on the support, packed as one vector ``[V_S, db]``: its layout for the
    CG kernel (``_multinomial_kernels.support_cg``, which also projects off the null
    directions), and the Hessian times a step's margins."""

    def __init__(self, problem, st, S):
        self.problem, self.st, self.S = problem, st, S
        self.n_support = int(S.sum())
        self.fit_b = problem.fit_intercept
        self.rows = np.flatnonzero(S.any(axis=1)).astype(np.int64)
        self.full_rows = np.flatnonzero(S.all(axis=1))
        self.reads = 0
        d, K = S.shape
        self._V = np.zeros((d, K))
        self._dZ = np.empty((problem.n_samples, K))
        # For the CG kernel: the support's (row, class) pairs in packing order, its distinct rows,
        # and the packed positions of every full row (its ones direction is projected out).
        sup_j, sup_k = (a.astype(np.int64) for a in np.nonzero(S))
        position = np.cumsum(S.ravel()).reshape(S.shape) - 1
        self.layout = (sup_j, sup_k, self.rows, position[self.full_rows].astype(np.int64).reshape(-1, K))

    def pack(self, block, intercepts):
        x = block[self.S]
        return np.concatenate([x, intercepts]) if self.fit_b else x

    def unpack(self, x):
        self._V[self.S] = x[: self.n_support]
        return self._V, (x[self.n_support :] if self.fit_b else np.zeros(self.S.shape[1]))

    def hessian_margins(self, x):
        """H (X V + db), row by row: c_i (p_i * dz_i - p_i (p_i . dz_i)), shape (n, K)."""
        V, db = self.unpack(x)
        arrays = self.problem.columns.arrays
        self.reads += kernels.support_margins(*arrays, V, db, self._dZ)
        st = self.st
        return st.CP * self._dZ - st.CP * (st.P * self._dZ).sum(axis=1, keepdims=True)
