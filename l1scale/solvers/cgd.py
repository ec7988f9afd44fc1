"""Coordinate gradient descent (CGD) of Tseng & Yun (2009), as Qin et al. use it (Algorithms 2-3).

Minimises, for any smooth loss (ALGORITHMS.md sections 1 and 5),

    P(w, b) = sum_i c_i loss(y_i, x_i . w + b) + lam1 ||w||_1 + lam2/2 ||w||^2

(lam1 = lam * l1_ratio, lam2 = lam * (1 - l1_ratio), c_i = s_i / sum(s)); the paper's
lambda is n * lam. Each iteration, at (w, b) with r = c * loss'(y, z) and D = c * loss''(y, z)
at hand:

1. one pass over every column: the gradient g = X^T r + lam2 w and the diagonal Hessian
   H_jj = clip(sum_i D_i x_ij^2 + lam2, 1e-10, 1e10), and for every j the minimiser of the
   one-variable model g_j d + H_jj d^2 / 2 + lam1 |w_j + d|, in closed form
   d_j = median(-w_j, -(g_j + lam1) / H_jj, -(g_j - lam1) / H_jj);
   the unpenalised intercept's d_b = -g_b / H_bb (g_b = sum_i r_i, H_bb = clip(sum_i D_i));
2. the Gauss-Southwell-r block J = {j : |d_j| >= upsilon * max_k |d_k|} (the intercept is one
   more coordinate); d is zero outside J. upsilon in (0, 1]: 1 moves only the largest step(s),
   small values approach a full (Jacobi) diagonal-Newton step; 0.5 is Yun & Toh's choice;
3. Armijo (Algorithm 3, corrected as ALGORITHMS.md says): the largest alpha in {1, 1/2, ...} with
       P(w + alpha d, b + alpha d_b) <= P(w, b) + sigma alpha Delta,
       Delta = g.d + g_b d_b + gamma d^T H d + lam1 (||w + d||_1 - ||w||_1)
   (sigma = 0.1, gamma = 0). The paper's Delta omits the L1 change; without it Delta can be
   positive (a block that shrinks weights towards zero) and the rule then accepts steps that
   increase P. The margins of every trial are z + alpha X d, X d formed once over the block's
   columns; the loss change is summed term by term, and the accepted trial already holds r
   and D for step 1 of the next iteration. Where sigma alpha |Delta| is below the float
   resolution of P, the test uses the loss's second-order expansion along d (exact curvature
   sum_i D_i (X d)_i^2, one pass over n) instead of a difference of losses that is only
   rounding noise there: accepting that noise lets the diagonal model's overshoots along
   correlated columns through, and the iterates then circle with the gap stuck near 1e-8
   (a9a without intercept); with the expansion CGD reaches gaps of 1e-10 and below.

Choices of ours, the paper being silent: with an intercept and a loss with a conjugate, b is
first made exactly optimal for w (a 1-D Newton solve over the margins, an exact coordinate
minimisation and so a descent step), since the duality gap needs sum_i c_i loss'_i = 0; the
CGD step on b is then zero up to that solve's tolerance. The certificate (relative duality gap,
or KKT violation / lam1 for probit) is taken every iteration from the gradient of step 1
(Problem.certificate_from, one more pass over the n margins); the largest dual value seen is
kept. Margins are updated incrementally; a certificate that meets tol is taken again at
margins computed afresh before the solver stops.

Data accesses (History.data_accesses) count the nonzeros of X read: nnz(X) per gradient pass,
nnz(X_J) per X d, nnz(X) per fresh X w.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .. import checkpoint as checkpoints
from ..data.memory import column, column_moments
from ..losses import weighted_terms_along
from ..problems.base import ProblemLike
from .base import History, Result, Solver, Timer, certified_result

__all__ = ["CoordinateGradientDescent"]

# Bounds of the diagonal Hessian (Qin et al., the H_k above Algorithm 2).
_H_MIN, _H_MAX = 1e-10, 1e10
_EPS = float(np.finfo(np.float64).eps)


@njit(cache=True, inline="always")
def _model_step(wj, gj, hj, lam1):
    """argmin_d gj d + hj d^2 / 2 + lam1 |wj + d|: the median of -wj, -(gj + lam1)/hj, -(gj - lam1)/hj."""
    lo, hi = -(gj + lam1) / hj, -(gj - lam1) / hj  # lo <= hi
    if -wj < lo:
        return lo
    if -wj > hi:
        return hi
    return -wj


@njit(cache=True)
def _gradient_pass(data, indices, indptr, dense, r, D, w, lam1, lam2, v, H, d):
    """One pass over every column: v = X^T r (the loss gradient), H = clip(X^T D x^2 + lam2),
    and the CGD step d_j of each coordinate (step 1 of the module docstring).

    Shapes: r, D (n,); w, v, H, d (d,). Returns (max_j |d_j|, nnz(w)).
    """
    dmax, nnz = 0.0, 0
    for j in range(w.shape[0]):
        acc_g, acc_h = column_moments(data, indices, indptr, dense, j, r, D)
        v[j] = acc_g
        h = min(max(acc_h + lam2, _H_MIN), _H_MAX)
        H[j] = h
        d[j] = _model_step(w[j], acc_g + lam2 * w[j], h, lam1)
        dmax = max(dmax, abs(d[j]))
        if w[j] != 0.0:
            nnz += 1
    return dmax, nnz


@njit(cache=True)
def _block_direction(data, indices, indptr, dense, d, cut, w, v, H, lam1, lam2, block, xd):
    """The Gauss-Southwell-r block J = {j : |d_j| >= cut} into block[:m], X d_J into xd, and
    the parts of Armijo's Delta over J.

    Shapes: d, w, v, H, block (d,); xd (n,) (overwritten).
    Returns (m, g.d, d^T H d, lam1 (||w + d||_1 - ||w||_1), nonzeros read), sums over J.
    """
    xd[:] = 0.0
    m, gd, dhd, l1, reads = 0, 0.0, 0.0, 0.0, 0
    for j in range(d.shape[0]):
        dj = d[j]
        if dj == 0.0 or abs(dj) < cut:
            continue
        block[m] = j
        m += 1
        wj = w[j]
        gd += (v[j] + lam2 * wj) * dj
        dhd += H[j] * dj * dj
        l1 += lam1 * (abs(wj + dj) - abs(wj))
        rows, vals = column(data, indices, indptr, dense, j)
        for p in range(rows.shape[0]):
            xd[np.uint64(rows[p])] += dj * vals[p]
        reads += rows.shape[0]
    return m, gd, dhd, l1, reads


@njit(cache=True)
def _along(r, D, xd):
    """(sum_i r_i xd_i, sum_i D_i xd_i^2): slope and exact curvature of the loss term along d.
    Shapes (n,)."""
    slope, curv = 0.0, 0.0
    for i in range(xd.shape[0]):
        slope += r[i] * xd[i]
        curv += D[i] * xd[i] * xd[i]
    return slope, curv


@njit(cache=True)
def _penalty_change(block, m, w, d, step, lam1, lam2):
    """penalty(w + step d) - penalty(w) over block[:m]. Shapes: block, w, d (d,)."""
    acc = 0.0
    for k in range(m):
        j = block[k]
        x = w[j]
        u = x + step * d[j]
        acc += lam1 * (abs(u) - abs(x)) + 0.5 * lam2 * (u - x) * (u + x)
    return acc


@njit(cache=True)
def _take_step(block, m, w, d, step):
    """w <- w + step d on block[:m] (d_j = -w_j at step 1 gives exactly 0). Shapes (d,)."""
    for k in range(m):
        j = block[k]
        w[j] = w[j] + step * d[j]


class _Fixed(NamedTuple):
    """What a solve does not change: the loss's kernel id, labels y and weights c (n,), and the
    penalty's lam1 (L1) and lam2 (L2)."""

    kind: int
    y: np.ndarray
    c: np.ndarray
    lam1: float
    lam2: float


class _Margins(NamedTuple):
    """The margins z and loss terms lv at the current point, and the arrays that receive a
    trial's: z_new, lv_new, and r = c loss', D = c loss'' (overwritten by each trial). Shapes (n,)."""

    z: np.ndarray
    lv: np.ndarray
    z_new: np.ndarray
    lv_new: np.ndarray
    r: np.ndarray
    D: np.ndarray


class _Direction(NamedTuple):
    """A block step d and what Armijo's test needs of it: the block ``block[:m]`` (int64 (d,)),
    the step d (d,) (zero outside the block), X d (n,), Delta, and the loss term's slope and
    exact curvature along d (``_along``)."""

    block: np.ndarray
    m: int
    d: np.ndarray
    xd: np.ndarray
    delta: float
    slope: float
    curv: float


class CoordinateGradientDescent(Solver):
    """Tseng & Yun's coordinate gradient descent (Qin et al., Algorithms 2-3).

    Parameters
    ----------
    tol : float, default 1e-6
        Stop when the duality gap <= tol * P (or KKT violation <= tol * lam1 for
        losses without a conjugate).
    max_iter : int, default 10000
        Iterations (one gradient pass, one block step and its line search each).
    upsilon : float in (0, 1], default 0.5
        Gauss-Southwell-r threshold: the block is every j with |d_j| >= upsilon max_k |d_k|.
    sigma : float in (0, 1), default 0.1
        Armijo constant.
    callback : callable, optional
        Called as ``callback(iteration, history)`` after each iteration.
    verbose : int, default 0
    random_state : ignored
        CGD is deterministic; accepted so that every solver takes the same arguments.
    checkpoint : str or path-like, optional
        File holding the complete state (iterate, margins, loss terms, best dual value,
        History), written atomically at the start of an iteration, at most every
        ``checkpoint_interval`` seconds; an existing one is resumed and the resumed run
        ends with the coefficients of an uninterrupted one, bit for bit. One written for
        other data or parameters is refused (:mod:`l1scale.checkpoint`).
    checkpoint_interval : float, default 5
        Least seconds between two checkpoint writes.
    """

    name = "cgd"
    resumable = True  # takes checkpoint= (l1scale.checkpoint)
    data_access = "columns"
    requires = ("smooth", "curvature_kernel")
    # Weight of d^T H d in Delta (Tseng & Yun's 0 <= gamma < 1; ALGORITHMS.md: 0) and the most halvings.
    gamma = 0.0
    max_line_search = 50

    def __init__(
        self,
        tol=1e-6,
        max_iter=10000,
        upsilon=0.5,
        sigma=0.1,
        callback=None,
        verbose=0,
        random_state=None,
        checkpoint=None,
        checkpoint_interval=checkpoints.DEFAULT_INTERVAL,
    ):
        self.checkpoint, self.checkpoint_interval = checkpoint, checkpoint_interval
        self.tol = tol
        self.max_iter = max_iter
        self.upsilon = upsilon
        self.sigma = sigma
        self.callback = callback
        self.verbose = verbose
        self.random_state = random_state

    def _check_parameters(self):
        if not 0.0 < self.upsilon <= 1.0:
            raise ValueError(f"upsilon must be in (0, 1], got upsilon={self.upsilon!r}")
        if not 0.0 < self.sigma < 1.0:
            raise ValueError(f"sigma must be in (0, 1), got sigma={self.sigma!r}")
        if not self.tol >= 0.0:
            raise ValueError(f"tol must be >= 0, got tol={self.tol!r}")

    def solve(self, problem: ProblemLike, coef_init=None, intercept_init=None) -> Result:
        """Minimise ``problem`` (kind ``"memory"``: its columns) from ``coef_init`` (default 0) and
        ``intercept_init`` (default 0)."""
        self.check_problem(problem)
        self._check_parameters()
        timer = Timer()
        n, dim = problem.n_samples, problem.n_features
        cols, kind = problem.columns, problem.loss.kernel_id
        arrays = cols.arrays
        y, c = problem.y, problem.c
        lam1, lam2 = problem.penalty.l1, problem.penalty.l2
        fit_intercept = problem.fit_intercept
        exact_b = fit_intercept and problem.loss.has_conjugate
        fixed = _Fixed(kind, y, c, lam1, lam2)
        w = np.zeros(dim) if coef_init is None else np.array(coef_init, dtype=np.float64).reshape(dim)
        b = float(intercept_init or 0.0) if fit_intercept else 0.0
        v, H, d = np.empty(dim), np.empty(dim), np.empty(dim)
        block = np.empty(dim, dtype=np.int64)
        # Per-sample state at the current point and at a trial (swapped on acceptance).
        z, lv, z_new, lv_new = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
        r, D, xd, ones = np.empty(n), np.empty(n), np.empty(n), np.ones(n)
        history, reads, best_dual = History(), 0, -np.inf
        stop_reason, converged, failed, it = "max_iter", False, False, 0
        loss_sum, reads = self._fresh_margins(problem, w, b, z, lv, r, D, reads)
        exact = True
        ck, saved = checkpoints.start(self, problem)
        if saved is not None:
            for name, target in (("w", w), ("z", z), ("lv", lv), ("r", r), ("D", D), ("xd", xd)):
                saved.into(name, target)
            b, loss_sum, best_dual = saved.scalar("b"), saved.scalar("loss_sum"), saved.scalar("best_dual")
            reads, it = saved.scalar("reads", int, 0), saved.scalar("it", int, 0)
            failed, exact = saved.scalar("failed", bool), saved.scalar("exact", bool)
            saved.history(history)
            timer.exclude(-saved.scalar("elapsed"))
        while True:
            if ck is not None and ck.due():  # the state at the top of an iteration says all that follows
                ck.save(
                    {
                        "w": w,
                        "z": z,
                        "lv": lv,
                        "r": r,
                        "D": D,
                        "xd": xd,
                        "b": b,
                        "loss_sum": loss_sum,
                        "best_dual": best_dual,
                        "reads": reads,
                        "it": it,
                        "failed": failed,
                        "exact": exact,
                        "history": history.as_dict(),
                        "elapsed": timer(),
                    }
                )
            if exact_b:
                # The intercept made optimal for w (a descent step the dual needs).
                b_opt = problem.optimal_intercept(z - b, b)
                if b_opt != b:
                    loss_sum += weighted_terms_along(kind, y, z, ones, b_opt - b, c, lv, z_new, lv_new, r, D)
                    z, z_new, lv, lv_new, b = z_new, z, lv_new, lv, b_opt
            pen = problem.penalty.value(w)
            objective = loss_sum + pen
            # Step 1: gradient, diagonal Hessian and every coordinate's step; the certificate.
            dmax, nnz = _gradient_pass(*arrays, r, D, w, lam1, lam2, v, H, d)
            reads += cols.nnz
            cert, best_dual = self._certify(problem, w, b, z, v, objective, best_dual)
            if cert.relative <= self.tol and not exact:
                # Taken again at margins computed afresh (they drift by rounding).
                loss_sum, reads = self._fresh_margins(problem, w, b, z, lv, r, D, reads)
                exact = True
                objective = loss_sum + pen
                dmax, nnz = _gradient_pass(*arrays, r, D, w, lam1, lam2, v, H, d)
                reads += cols.nnz
                cert, best_dual = self._certify(problem, w, b, z, v, objective, best_dual)
            history.append(
                objective=objective, certificate=cert.value, nnz=nnz, time=timer(), data_accesses=reads, active=None
            )
            if self.callback is not None:
                self.callback(it, history)
            if self.verbose:
                print(
                    f"cgd iter {it:5d}  P={objective:.12g}  {cert.name}={cert.value:.3e}  nnz={nnz}  t={timer():.3f}s"
                )
            if cert.relative <= self.tol:
                stop_reason, converged = cert.name, True
                break
            if it >= self.max_iter or failed:
                break
            g_b = float(r.sum()) if fit_intercept else 0.0
            h_b = min(max(float(D.sum()), _H_MIN), _H_MAX)
            d_b = -g_b / h_b if fit_intercept else 0.0
            # Step 2: the Gauss-Southwell-r block and X d over its columns.
            cut = self.upsilon * max(dmax, abs(d_b))
            m, gd, dhd, l1_change, block_reads = _block_direction(*arrays, d, cut, w, v, H, lam1, lam2, block, xd)
            reads += block_reads
            if abs(d_b) < cut:
                d_b = 0.0
            xd += d_b
            delta = self._delta(gd + g_b * d_b, dhd + h_b * d_b * d_b, l1_change)
            # Step 3: Armijo along d.
            slope, curv = _along(r, D, xd)
            direction = _Direction(block, m, d, xd, delta, slope, curv)
            trial = _Margins(z, lv, z_new, lv_new, r, D)
            step, loss_change, pen_change = self._armijo(fixed, w, trial, direction, objective)
            if step is None:
                # No step: certify where we are, at fresh margins, then stop.
                failed = True
                loss_sum, reads = self._fresh_margins(problem, w, b, z, lv, r, D, reads)
                exact = True
                continue
            _take_step(block, m, w, d, step)
            b += step * d_b
            z, z_new, lv, lv_new = z_new, z, lv_new, lv
            loss_sum += loss_change
            exact = False
            it += 1
        return certified_result(
            self,
            coef=w,
            intercept=b,
            n_iter=it,
            converged=converged,
            stop_reason=stop_reason,
            cert=cert,
            history=history,
            timer=timer,
            line_search_failed=failed,
        )

    def _delta(self, gd, dhd, l1_change):
        """Tseng & Yun's Delta = g.d + gamma d^T H d + lam1 (||w + d||_1 - ||w||_1) (< 0 for d != 0).

        Qin et al.'s Algorithm 3 omits the L1 change (a typo, ALGORITHMS.md section 5)."""
        return gd + self.gamma * dhd + l1_change

    def _armijo(self, fixed, w, trial, direction, objective):
        """Largest step in {1, 1/2, ...} with P(x + step d) - P(x) <= sigma step Delta.

        ``fixed``: ``_Fixed``; ``w`` the coefficients (not changed); ``trial``:
        ``_Margins``; ``direction``: ``_Direction``; ``objective``: P(x).

        Where sigma step |Delta| is below the float resolution of P (8 eps |P|), the change of
        the loss is taken from its second-order expansion along d, step slope + step^2 curv / 2
        (slope, curv from `_along`: exact curvature, not the diagonal model's), accurate to third
        order in steps that small; a difference of losses there is rounding noise, and testing it
        with an allowance would accept the diagonal model's overshoots along correlated columns
        and leave the iterates circling (the gap stuck near 1e-8).
        The trial's margins, losses, r and D are left in z_new, lv_new, r, D.
        Returns (step, loss change, penalty change), or (None, 0, 0) on failure."""
        kind, y, c, lam1, lam2 = fixed
        z, lv, z_new, lv_new, r, D = trial
        block, m, d, xd, delta, slope, curv = direction
        resolution = 8 * _EPS * abs(objective)
        step = 1.0
        for _ in range(self.max_line_search):
            bound = self.sigma * step * delta
            pen_change = _penalty_change(block, m, w, d, step, lam1, lam2)
            if -bound <= resolution:
                ok = step * slope + 0.5 * step * step * curv + pen_change <= bound
            else:
                ok = None
            if ok is not False:
                loss_change = weighted_terms_along(kind, y, z, xd, step, c, lv, z_new, lv_new, r, D)
                if ok or loss_change + pen_change <= bound:
                    return step, loss_change, pen_change
            step *= 0.5
        return None, 0.0, 0.0

    @staticmethod
    def _certify(problem, w, b, z, v, objective, best_dual):
        """The problem's certificate from the loss gradient v = X^T r; for the duality gap, the
        largest dual value seen so far (any feasible dual point bounds P* from below)."""
        cert = problem.certificate_from(w, b, z, None, v, primal=objective)
        if cert.name == "duality_gap":
            best_dual = max(best_dual, cert.objective - cert.value)
            gap = objective - best_dual
            cert = cert._replace(value=gap, relative=gap / max(abs(objective), 1e-300))
        return cert, best_dual

    @staticmethod
    def _fresh_margins(problem, w, b, z, lv, r, D, reads):
        """z = X w + b computed afresh, lv, r, D at it (in place). Returns (loss sum, reads)."""
        if w.any():
            z[:] = np.asarray(problem.X @ w, dtype=np.float64).reshape(-1)
            reads += problem.columns.nnz
        else:
            z[:] = 0.0
        z += b
        zero = np.zeros_like(z)
        loss_sum = weighted_terms_along(problem.loss.kernel_id, problem.y, z, zero, 0.0, problem.c, zero, z, lv, r, D)
        return loss_sum, reads
