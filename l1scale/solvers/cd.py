"""Batch coordinate descent: newGLMNET-style outer Newton / inner CD with shrinking.

Minimises, for any smooth loss (ALGORITHMS.md section 1),

    P(w, b) = sum_i c_i loss(y_i, x_i . w + b) + lam1 ||w||_1 + lam2/2 ||w||^2

(lam1 = lam * l1_ratio, lam2 = lam * (1 - l1_ratio), c_i = s_i / sum(s)) in the way
of Yuan, Ho & Lin (2012), "An improved GLMNET for L1-regularized logistic
regression" (liblinear's ``-s 6``):

1. at (w, b) take r = c * loss'(y, z), D = c * loss''(y, z) and the full gradient
   g = X^T r + lam2 w; certify (duality gap or KKT) and stop when good enough;
2. keep a working set: drop w_j = 0 with |g_j| < lam1 - M/n (M, the largest
   violation of the previous iteration: liblinear's outer shrinking);
3. minimise the quadratic model  g.d + d^T H d / 2 + lam1 ||w + d||_1  with
   H = X^T diag(D) X + lam2 I by cyclic CD on the working set (random order,
   inner shrinking), the unpenalised intercept as one more coordinate;
4. line search on P along d (Armijo with the L1 change in the decrease);
5. tighten the inner tolerance when the model was solved in one sweep.

With an intercept, b is first set exactly optimal for the current w (a 1-D
Newton solve; a descent step), so that the dual point sum_i c_i u_i = 0 needed by
the duality gap is at hand at every iteration for free.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from numba import njit

from ..data.memory import column
from ..losses import weighted_terms, weighted_value_along
from ..exceptions import ConvergenceWarning
from .base import History, Result, Solver, Timer

__all__ = ["CoordinateDescent"]

# Curvature floor of the quadratic model (liblinear's nu): keeps H_jj > 0 on
# columns whose rows all have zero curvature.
_NU = 1e-12
_EPS = float(np.finfo(np.float64).eps)


@njit(cache=True)
def _seed(seed):
    np.random.seed(seed)


@njit(cache=True)
def _gradient_and_curvature(data, indices, indptr, dense, ws, r, D, g, H):
    """g[k] = sum_i r_i x_ij and H[k] = sum_i D_i x_ij^2 for j = ws[k]; returns nonzeros read.

    Shapes: ws (m,), r, D (n,), g, H (m,).
    """
    reads = 0
    for k in range(ws.shape[0]):
        rows, vals = column(data, indices, indptr, dense, ws[k])
        acc_g, acc_h = 0.0, 0.0
        for p in range(rows.shape[0]):
            i = rows[p]
            acc_g += r[i] * vals[p]
            acc_h += D[i] * vals[p] * vals[p]
        g[k], H[k] = acc_g, acc_h
        reads += rows.shape[0]
    return reads


@njit(cache=True)
def _quadratic_cd_sweep(data, indices, indptr, dense, ws, order, n_active, g, H, w, d,
                        xTd, D, lam1, lam2, shrink_at):
    """One sweep of CD on  g.d + d^T H d / 2 + lam1 ||w + d||_1  over order[:n_active].

    ws (m,) feature of each working-set slot; order (m,) slots, the active ones first
    (shuffled here; a shrunk slot is swapped behind them); g, H, w, d (m,) per slot;
    xTd (n,) = X d maintained; D (n,) curvature weights. A zero coordinate whose
    gradient stays inside (-lam1 + shrink_at, lam1 - shrink_at) is shrunk.
    Returns (largest violation, sum of violations, new n_active, nonzeros read).
    """
    for s in range(n_active - 1):
        t = s + np.random.randint(n_active - s)
        order[s], order[t] = order[t], order[s]
    vmax, vsum, reads, s = 0.0, 0.0, 0, 0
    while s < n_active:
        k = order[s]
        rows, vals = column(data, indices, indptr, dense, ws[k])
        acc = 0.0
        for p in range(rows.shape[0]):
            acc += vals[p] * D[rows[p]] * xTd[rows[p]]
        reads += rows.shape[0]
        G = g[k] + acc + (lam2 + _NU) * d[k]
        Gp, Gn, wpd = G + lam1, G - lam1, w[k] + d[k]
        if wpd == 0.0:
            if Gp < 0.0:
                viol = -Gp
            elif Gn > 0.0:
                viol = Gn
            elif Gp > shrink_at and Gn < -shrink_at:
                n_active -= 1
                order[s], order[n_active] = order[n_active], order[s]
                continue
            else:
                viol = 0.0
        else:
            viol = abs(Gp) if wpd > 0.0 else abs(Gn)
        vmax = max(vmax, viol)
        vsum += viol
        # Newton step on the one-variable model, soft-thresholded.
        if Gp <= H[k] * wpd:
            step = -Gp / H[k]
        elif Gn >= H[k] * wpd:
            step = -Gn / H[k]
        else:
            step = -wpd
        s += 1
        if abs(step) < 1e-12:
            continue
        step = min(max(step, -10.0), 10.0)
        d[k] += step
        for p in range(rows.shape[0]):
            xTd[rows[p]] += step * vals[p]
        reads += rows.shape[0]
    return vmax, vsum, n_active, reads


@njit(cache=True)
def _intercept_step(g_b, xTd, D):
    """Exact step on the intercept coordinate of the quadratic model; updates xTd.

    Returns (step, |gradient| before it). Shapes: xTd, D (n,).
    """
    G, Hb = g_b, _NU
    for i in range(xTd.shape[0]):
        G += D[i] * xTd[i]
        Hb += D[i]
    step = -G / Hb
    for i in range(xTd.shape[0]):
        xTd[i] += step
    return step, abs(G)


class CoordinateDescent(Solver):
    """newGLMNET coordinate descent with shrinking: the reference batch solver.

    Parameters
    ----------
    tol : float, default 1e-6
        Stop when the duality gap <= tol * P (or KKT violation <= tol * lam1 for
        losses without a conjugate).
    max_iter : int, default 200
        Outer (Newton) iterations.
    max_inner : int, default 1000
        CD sweeps per quadratic model.
    random_state : int, default 0
        Seed of the coordinate order.
    callback : callable, optional
        Called as ``callback(iteration, history)`` after each certificate.
    verbose : int, default 0
    """

    name = "cd"
    # Certify (full gradient, duality gap) once the working-set violation has
    # dropped by this factor; tightened tenfold after each certificate that fails.
    check_ratio = 1e-2
    data_access = "columns"
    requires = ("smooth", "curvature_kernel")

    def __init__(self, tol=1e-6, max_iter=200, max_inner=1000, random_state=0, callback=None, verbose=0):
        self.tol = tol
        self.max_iter = max_iter
        self.max_inner = max_inner
        self.random_state = random_state
        self.callback = callback
        self.verbose = verbose

    def solve(self, problem, coef_init=None, intercept_init=None) -> Result:
        self.check_problem(problem)
        compile_seconds = _warm_up()
        timer = Timer()
        n, dim = problem.n_samples, problem.n_features
        cols, kind = problem.columns, problem.loss.kernel_id
        y, c = problem.y, problem.c
        lam1, lam2 = problem.penalty.l1, problem.penalty.l2
        w = np.zeros(dim) if coef_init is None else np.array(coef_init, dtype=np.float64).reshape(dim)
        b = float(intercept_init or 0.0) if problem.fit_intercept else 0.0
        z = problem.X @ w + b
        r, D = np.empty(n), np.empty(n)
        _seed(0 if self.random_state is None else int(self.random_state) % (2**32))
        history, reads = History(), cols.nnz
        # Outer working set (liblinear's outer shrinking): it only shrinks between
        # certificates; a certificate computes the full gradient and rebuilds it.
        active = np.arange(dim, dtype=np.int64)
        worst_prev, inner_eps, check_eps, vsum_init = np.inf, 1.0, self.check_ratio, None
        stop_reason, converged, cert = "max_iter", False, None
        for it in range(self.max_iter + 1):
            loss_sum = weighted_terms(kind, y, z, c, r, D)
            g, H = np.empty(active.shape[0]), np.empty(active.shape[0])
            reads += _gradient_and_curvature(*cols.arrays, active, r, D, g, H)
            g += lam2 * w[active]
            g_b = float(r.sum()) if problem.fit_intercept else 0.0
            viol = problem.penalty.subdifferential_distance(w[active], g - lam2 * w[active])
            vsum = float(viol.sum()) + abs(g_b)
            if vsum_init is None:
                vsum_init = vsum
            objective = loss_sum + problem.penalty.value(w)
            certified = vsum <= check_eps * vsum_init or it == self.max_iter
            if certified:
                b, z, cert = self._certify(problem, w, b, z)
                reads += cols.nnz
            history.append(objective=objective if not certified else cert.objective,
                           certificate=cert.value if certified else np.nan,
                           nnz=np.count_nonzero(w), time=timer(), data_accesses=reads)
            if self.callback is not None:
                self.callback(it, history)
            if self.verbose:
                shown = f"{cert.name}={cert.value:.3e}" if certified else f"viol={vsum:.3e}"
                print(f"cd iter {it:4d}  P={history.objective[-1]:.12g}  {shown}  "
                      f"nnz={np.count_nonzero(w)}  active={active.shape[0]}  t={timer():.3f}s")
            if certified:
                if cert.relative <= self.tol:
                    stop_reason, converged = cert.name, True
                    break
                if it == self.max_iter:
                    break
                # Not yet: look for more, over every feature, with a tighter trigger.
                check_eps *= 0.1
                active, worst_prev = np.arange(dim, dtype=np.int64), np.inf
                continue
            # Outer shrinking: a zero weight well inside (-lam1, lam1) leaves the working set.
            keep = (w[active] != 0.0) | (np.abs(g - lam2 * w[active]) >= lam1 - worst_prev / n)
            worst_prev = float(np.max(viol, initial=0.0))
            active, g, H = active[keep], g[keep], H[keep]
            d, d_b, xTd, sweeps, inner_reads = self._newton_direction(
                problem, active, w[active], g, H, g_b, D, inner_eps * vsum_init)
            reads += inner_reads
            if sweeps == 1:
                inner_eps *= 0.25
            step = self._line_search(problem, active, w, loss_sum, z, g, g_b, d, d_b, xTd)
            if step is None:
                b, z, cert = self._certify(problem, w, b, z)
                stop_reason = "line_search"
                warnings.warn("line search failed to decrease the objective; stopping at relative "
                              f"{cert.name} {cert.relative:.2e}", ConvergenceWarning, stacklevel=2)
                break
            w[active] += step * d
            b += step * d_b
            z += step * xTd
        if not converged and stop_reason == "max_iter":
            warnings.warn(f"cd did not reach tol={self.tol:g} in max_iter={self.max_iter} iterations "
                          f"(relative {cert.name} {cert.relative:.2e}); increase max_iter or tol",
                          ConvergenceWarning, stacklevel=2)
        return Result(coef=w, intercept=b, objective=cert.objective, n_iter=it, converged=converged,
                      stop_reason=stop_reason, certificate_name=cert.name, certificate=cert.value,
                      relative_certificate=cert.relative, history=history,
                      timings={"solve": timer(), "compile": compile_seconds})

    @staticmethod
    def _certify(problem, w, b, z):
        """Full certificate at (w, b): margins afresh (z was maintained incrementally)
        and, with an intercept, b made exactly optimal for w first (a descent step).
        Returns (b, z, Certificate)."""
        z = problem.X @ w
        if problem.fit_intercept:
            b = problem.optimal_intercept(z, b)
        z += b
        u = problem.loss.derivative(problem.y, z)
        cert = problem.certificate_from(w, b, z, u, problem.X.T @ (problem.c * u))
        return b, z, cert

    def _newton_direction(self, problem, ws, w_ws, g_ws, H, g_b, D, inner_tol):
        """Minimise the quadratic model on the working set by CD sweeps.

        Returns (d, d_b, xTd, sweeps, nonzeros read)."""
        data, indices, indptr, dense = problem.columns.arrays
        lam1, lam2 = problem.penalty.l1, problem.penalty.l2
        n = problem.n_samples
        H = H + lam2 + _NU
        reads = 0
        d, xTd, d_b = np.zeros(ws.shape[0]), np.zeros(n), 0.0
        order = np.arange(ws.shape[0], dtype=np.int64)
        n_active, worst_prev, sweeps = ws.shape[0], np.inf, 0
        for sweeps in range(1, self.max_inner + 1):
            vmax, vsum, n_active, sweep_reads = _quadratic_cd_sweep(
                data, indices, indptr, dense, ws, order, n_active, g_ws, H, w_ws, d, xTd, D,
                lam1, lam2, worst_prev / n)
            reads += sweep_reads
            if problem.fit_intercept:
                step_b, viol_b = _intercept_step(g_b, xTd, D)
                d_b += step_b
                vmax, vsum = max(vmax, viol_b), vsum + viol_b
            if vsum <= inner_tol:
                if n_active == ws.shape[0]:
                    break
                # Converged on the shrunk set: check every slot once more.
                n_active, worst_prev = ws.shape[0], np.inf
            else:
                worst_prev = vmax
        return d, d_b, xTd, sweeps, reads

    @staticmethod
    def _line_search(problem, ws, w, loss_sum, z, g, g_b, d, d_b, xTd, sigma=0.01, max_steps=30):
        """Largest step in {1, 1/2, ...} with P(w + s d) - P(w) <= sigma s Delta,
        Delta = g.d + g_b d_b + lam1 (||w + d||_1 - ||w||_1). Returns the step or None."""
        kind, y, c = problem.loss.kernel_id, problem.y, problem.c
        lam1, lam2 = problem.penalty.l1, problem.penalty.l2
        w_ws = w[ws]
        l1_old = float(np.abs(w_ws).sum())
        delta = float(g @ d) + g_b * d_b + lam1 * (float(np.abs(w_ws + d).sum()) - l1_old)
        f_old = loss_sum + 0.5 * lam2 * float(w_ws @ w_ws)
        # Rounding allowance: near the optimum both sides are below float resolution.
        slack = 8 * _EPS * (abs(f_old) + lam1 * l1_old)
        step = 1.0
        for _ in range(max_steps):
            w_new = w_ws + step * d
            f_new = weighted_value_along(kind, y, z, xTd, step, c) + 0.5 * lam2 * float(w_new @ w_new)
            if f_new - f_old + lam1 * (float(np.abs(w_new).sum()) - l1_old) <= sigma * step * delta + slack:
                return step
            step *= 0.5
        return None


_COMPILED = False


def _warm_up() -> float:
    """Compile (or load from cache) the kernels on tiny inputs; returns the seconds it took."""
    global _COMPILED
    if _COMPILED:
        return 0.0
    start = time.perf_counter()
    data, idx, ptr = np.ones(2), np.arange(2, dtype=np.int64), np.array([0, 2], dtype=np.int64)
    ws, D, out = np.zeros(1, dtype=np.int64), np.ones(2), np.zeros(1)
    _gradient_and_curvature(data, idx, ptr, False, ws, D, D, out, out.copy())
    weighted_terms(0, D, D, D, D.copy(), D.copy())
    weighted_value_along(0, D, D, D, 1.0, D)
    _quadratic_cd_sweep(data, idx, ptr, False, ws, ws.copy(), 1, out, np.ones(1), out, np.zeros(1),
                        np.zeros(2), D, 0.1, 0.0, 0.0)
    _intercept_step(0.0, np.zeros(2), D)
    _seed(0)
    _COMPILED = True
    return time.perf_counter() - start
