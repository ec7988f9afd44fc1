"""Batch coordinate descent: newGLMNET-style outer Newton / inner CD with shrinking.

Minimises, for any smooth loss (ALGORITHMS.md section 1),

    P(w, b) = sum_i c_i loss(y_i, x_i . w + b) + lam1 ||w||_1 + lam2/2 ||w||^2

(lam1 = lam * l1_ratio, lam2 = lam * (1 - l1_ratio), c_i = s_i / sum(s)) in the way
of Yuan, Ho & Lin (2012), "An improved GLMNET for L1-regularized logistic
regression", following liblinear's ``solve_l1r_lr`` (``-s 6``) rule for rule:

1. at (w, b), with r = c * loss'(y, z) and D = c * loss''(y, z) at hand, one pass
   over every column gives the gradient g = X^T r + lam2 w and the diagonal
   H_jj = (X^T diag(D) X)_jj + lam2 + nu; a zero weight with |g_j| < lam1 - M/n
   (M: the largest violation of the previous iteration) leaves the working set
   (outer shrinking);
2. minimise the quadratic model  g.d + d^T H d / 2 + lam1 ||w + d||_1  by cyclic CD
   on the working set (random order; inner shrinking at M_inner/n; stop when the
   sum of violations is below inner_eps times that of the first iteration, after
   a last sweep over the whole working set), the unpenalised intercept as one more
   coordinate;
3. Armijo line search on P along d (step halving, the L1 change in the decrease),
   the change of the loss summed term by term so that it stays accurate near the
   optimum; the accepted trial already holds r, D and the margins of step 1;
4. inner_eps /= 4 when the model was solved in one sweep.

Optimality is certified by the duality gap (the largest dual value seen so far is
kept: any feasible dual point bounds P* from below) or, without a conjugate, by the
KKT violation. Step 1 gives X^T r over every column at each iteration, so a
certificate costs one pass over the n margins; it is taken once the largest
violation has dropped as far as the last gap says it must. With an intercept, b is
first made exactly optimal for w (a 1-D Newton solve, itself a descent step), so
that sum_i c_i u_i = 0 as the dual needs.
"""

from __future__ import annotations


import numpy as np
from numba import njit

from ..data.memory import column, column_moments
from ..losses import weighted_conjugate, weighted_terms_along, weighted_value
from .base import History, Result, Solver, Timer, certified_result, compiled_once

__all__ = ["CoordinateDescent"]

# Curvature floor of the quadratic model (liblinear's nu): keeps H_jj > 0 on
# columns whose rows all have zero curvature.
_NU = 1e-12
_EPS = float(np.finfo(np.float64).eps)


@njit(cache=True)
def _seed(seed):
    np.random.seed(seed)


@njit(cache=True)
def _outer_pass(data, indices, indptr, dense, r, D, w, lam1, lam2, shrink_at, g, H, active):
    """Gradient, curvature and violations over every column; liblinear's outer shrinking.

    g[j] = sum_i r_i x_ij + lam2 w_j and H[j] = sum_i D_i x_ij^2 + lam2 + nu for every j;
    a zero weight with |g_j| < lam1 - shrink_at is left out, the others are written
    to active[:m]. Shapes: r, D (n,); w, g, H, active (d,).
    Returns (m, largest violation, sum of violations, max_j |g_j - lam2 w_j|, nnz(w)).
    """
    m, vmax, vsum, gmax, nnz = 0, 0.0, 0.0, 0.0, 0
    for j in range(w.shape[0]):
        acc_g, acc_h = column_moments(data, indices, indptr, dense, j, r, D)
        gmax = max(gmax, abs(acc_g))
        wj = w[j]
        gj = acc_g + lam2 * wj
        g[j], H[j] = gj, acc_h + lam2 + _NU
        if wj == 0.0:
            viol = max(abs(gj) - lam1, 0.0)
            if abs(gj) < lam1 - shrink_at:
                continue
        else:
            nnz += 1
            viol = abs(gj + lam1) if wj > 0.0 else abs(gj - lam1)
        vmax = max(vmax, viol)
        vsum += viol
        active[m] = j
        m += 1
    return m, vmax, vsum, gmax, nnz


@njit(cache=True)
def _model_sweep(data, indices, indptr, dense, active, m, g, H, w, wpd, xTd, D, lam1, lam2, shrink_at):
    """One CD sweep, in random order, over active[:m] of the quadratic model

        g.d + d^T H d / 2 + lam1 ||w + d||_1,  d = wpd - w,  H = X^T diag(D) X + (lam2 + nu) I,

    updating wpd (= w + d) and xTd (= X d). A zero coordinate whose model gradient stays
    inside (-lam1 + shrink_at, lam1 - shrink_at) is swapped behind active[:m].
    Shapes: active (k,), g, H, w, wpd (d,), xTd, D (n,).
    Returns (new m, largest violation, sum of violations, nonzeros read).
    """
    for s in range(m - 1):
        t = s + np.random.randint(m - s)
        active[s], active[t] = active[t], active[s]
    vmax, vsum, reads, s = 0.0, 0.0, 0, 0
    while s < m:
        j = active[s]
        rows, vals = column(data, indices, indptr, dense, j)
        x = wpd[j]
        G = g[j] + (lam2 + _NU) * (x - w[j])
        for p in range(rows.shape[0]):
            G += vals[p] * D[rows[p]] * xTd[rows[p]]
        reads += rows.shape[0]
        Gp, Gn = G + lam1, G - lam1
        if x == 0.0:
            if Gp < 0.0:
                viol = -Gp
            elif Gn > 0.0:
                viol = Gn
            elif Gp > shrink_at and Gn < -shrink_at:
                m -= 1
                active[s], active[m] = active[m], active[s]
                continue
            else:
                viol = 0.0
        else:
            viol = abs(Gp) if x > 0.0 else abs(Gn)
        s += 1
        # Newton step on the one-variable model, soft-thresholded; a step to zero makes
        # w + d exactly 0. Skipped, and its violation not counted (it is at rounding
        # level and would otherwise hold the model open): a step that does not change
        # w + d, or one below 1e-12 away from zero (so that lam = lam_max gives w = 0
        # exactly). liblinear skips every step below 1e-12, which leaves the gap stuck
        # near 1e-12 H_jj relative.
        h = H[j]
        if Gp < h * x:
            z = min(max(-Gp / h, -10.0), 10.0)
        elif Gn > h * x:
            z = min(max(-Gn / h, -10.0), 10.0)
        else:
            z = -x
        if x + z == x or (x == 0.0 and abs(z) < 1e-12):
            continue
        vmax = max(vmax, viol)
        vsum += viol
        wpd[j] = x + z
        for p in range(rows.shape[0]):
            xTd[rows[p]] += z * vals[p]
        reads += rows.shape[0]
    return m, vmax, vsum, reads


@njit(cache=True)
def _intercept_step(g_b, d_b, xTd, D):
    """Exact step on the intercept coordinate of the quadratic model; updates xTd.

    Returns (step, |model gradient| before it). Shapes: xTd, D (n,).
    """
    G, Hb = g_b + _NU * d_b, _NU
    for i in range(xTd.shape[0]):
        G += D[i] * xTd[i]
        Hb += D[i]
    step = -G / Hb
    for i in range(xTd.shape[0]):
        xTd[i] += step
    return step, abs(G)


@njit(cache=True)
def _newton_direction(data, indices, indptr, dense, active, m_outer, g, H, w, wpd, xTd, D,
                      lam1, lam2, fit_intercept, g_b, inner_tol, max_inner):
    """Minimise the quadratic model over active[:m_outer] (and the intercept) by CD sweeps.

    liblinear's inner loop: shrinking at the last sweep's largest violation / n; when the
    sum of violations is <= inner_tol on the shrunk set, one more sweep over the whole
    working set decides. wpd (d,) enters equal to w and leaves as w + d; xTd (n,) = X d + d_b.
    Returns (d_b, sweeps, nonzeros read).
    """
    xTd[:] = 0.0
    n = xTd.shape[0]
    m, shrink_at, d_b, reads, sweeps = m_outer, np.inf, 0.0, 0, 0
    while sweeps < max_inner:
        m, vmax, vsum, sweep_reads = _model_sweep(data, indices, indptr, dense, active, m, g, H,
                                                  w, wpd, xTd, D, lam1, lam2, shrink_at)
        reads += sweep_reads
        if fit_intercept:
            step, viol = _intercept_step(g_b, d_b, xTd, D)
            d_b += step
            vmax, vsum = max(vmax, viol), vsum + viol
        sweeps += 1
        if vsum <= inner_tol:
            if m == m_outer:
                break
            m, shrink_at = m_outer, np.inf
        else:
            shrink_at = vmax / n
    return d_b, sweeps, reads


@njit(cache=True)
def _model_decrease(active, m, g, w, wpd, lam1):
    """sum_j g_j d_j + lam1 (||w + d||_1 - ||w||_1) over active[:m], d = wpd - w."""
    acc = 0.0
    for k in range(m):
        j = active[k]
        acc += g[j] * (wpd[j] - w[j]) + lam1 * (abs(wpd[j]) - abs(w[j]))
    return acc


@njit(cache=True)
def _penalty_change(active, m, w, wpd, step, lam1, lam2):
    """penalty(w + step d) - penalty(w) over active[:m], d = wpd - w."""
    acc = 0.0
    for k in range(m):
        j = active[k]
        x = w[j]
        v = wpd[j] if step == 1.0 else x + step * (wpd[j] - x)
        acc += lam1 * (abs(v) - abs(x)) + 0.5 * lam2 * (v - x) * (v + x)
    return acc


@njit(cache=True)
def _take_step(active, m, w, wpd, step):
    """w <- w + step (wpd - w) on active[:m] (exactly wpd for step 1), and wpd <- w."""
    for k in range(m):
        j = active[k]
        if step != 1.0:
            wpd[j] = w[j] + step * (wpd[j] - w[j])
        w[j] = wpd[j]


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
        Called as ``callback(iteration, history)`` after each iteration.
    verbose : int, default 0
    """

    name = "cd"
    data_access = "columns"
    requires = ("smooth", "curvature_kernel")
    # Armijo constant and the most step halvings (liblinear's sigma, max_num_linesearch).
    sigma = 0.01
    max_line_search = 30
    # Inexact Newton forcing: the model is also solved until its violations sum to at
    # most this fraction of the outer ones. liblinear's inner tolerance alone (inner_eps
    # times the first violation, tightened only when a model takes one sweep) stalls on
    # ill-conditioned models, which never take one sweep: each Newton step then only
    # shaves the violation down to that fixed tolerance.
    forcing = 0.25

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
        arrays = cols.arrays
        y, c = problem.y, problem.c
        lam1, lam2 = problem.penalty.l1, problem.penalty.l2
        fit_intercept = problem.fit_intercept
        w = np.zeros(dim) if coef_init is None else np.array(coef_init, dtype=np.float64).reshape(dim)
        b = float(intercept_init or 0.0) if fit_intercept else 0.0
        wpd, g, H = w.copy(), np.empty(dim), np.empty(dim)
        active = np.arange(dim, dtype=np.int64)
        # Per-sample state at the current point and at a line-search trial (swapped on acceptance).
        z, lv, xTd = np.empty(n), np.zeros(n), np.zeros(n)
        z_new, lv_new, r, D = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
        _seed(0 if self.random_state is None else int(self.random_state) % (2**32))
        history, reads = History(), 0
        vsum_init, vmax_prev, inner_eps = None, np.inf, 1.0
        trigger, best_dual, fresh = -np.inf, -np.inf, False
        stop_reason, converged, cert, failed = "max_iter", False, None, False
        it = 0
        # Margins from scratch; b made optimal first when it is fitted.
        b, loss_sum, reads = self._refresh(problem, w, b, lv, r, D, xTd, z_new, lv_new, reads)
        z, z_new, lv, lv_new = z_new, z, lv_new, lv
        pen = lam1 * float(np.abs(w).sum()) + 0.5 * lam2 * float(np.sum(w * w))
        certify = coef_init is not None or self.max_iter <= 0
        while True:
            if certify and not fresh:
                # A certificate is taken at exact margins (and optimal b).
                b, loss_sum, reads = self._refresh(problem, w, b, lv, r, D, xTd, z_new, lv_new, reads)
                z, z_new, lv, lv_new = z_new, z, lv_new, lv
                pen = lam1 * float(np.abs(w).sum()) + 0.5 * lam2 * float(np.sum(w * w))
                fresh = True
            m, vmax, vsum, gmax, nnz = _outer_pass(*arrays, r, D, w, lam1, lam2, vmax_prev / n, g, H, active)
            reads += cols.nnz
            g_b = float(r.sum()) if fit_intercept else 0.0
            vmax, vsum = max(vmax, abs(g_b)), vsum + abs(g_b)
            if vsum_init is None:
                vsum_init = vsum
            objective = loss_sum + pen
            if certify:
                cert = problem.certificate_from(w, b, z, None, g if lam2 == 0.0 else g - lam2 * w,
                                                primal=objective)
                if cert.name == "duality_gap":
                    best_dual = max(best_dual, cert.objective - cert.value)
                    gap = objective - best_dual
                    cert = cert._replace(value=gap, relative=gap / max(abs(objective), 1e-300))
            history.append(objective=objective, certificate=cert.value if certify else np.nan,
                           nnz=nnz, time=timer(), data_accesses=reads)
            if self.callback is not None:
                self.callback(it, history)
            if self.verbose:
                shown = f"{cert.name}={cert.value:.3e}" if certify else f"viol={vsum:.3e}"
                print(f"cd iter {it:4d}  P={objective:.12g}  {shown}  nnz={nnz}  active={m}  t={timer():.3f}s")
            if certify:
                if cert.relative <= self.tol:
                    stop_reason, converged = cert.name, True
                    break
                if it >= self.max_iter or failed:
                    break
                # The gap falls about in step with the largest violation: certify again
                # once that has dropped as far as this gap says it must (at least 10x).
                trigger = vmax * min(0.1, max(self.tol / max(cert.relative, 1e-300), 1e-6))
            # Newton direction on the working set, then the line search along it.
            d_b, sweeps, inner_reads = _newton_direction(
                *arrays, active, m, g, H, w, wpd, xTd, D, lam1, lam2, fit_intercept, g_b,
                min(inner_eps * vsum_init, self.forcing * vsum), self.max_inner)
            reads += inner_reads
            if sweeps == 1:
                inner_eps *= 0.25
            step, loss_change, pen_change = self._line_search(
                kind, y, c, z, xTd, lv, z_new, lv_new, r, D, active, m, g, g_b, w, wpd, d_b,
                lam1, lam2, loss_sum + pen)
            it += 1
            if step is None:
                # No step: certify where we are (exact margins), then stop.
                failed, certify, fresh = True, True, False
                wpd[active[:m]] = w[active[:m]]
                continue
            _take_step(active, m, w, wpd, step)
            b += step * d_b
            z, z_new, lv, lv_new = z_new, z, lv_new, lv
            loss_sum += loss_change
            pen += pen_change
            vmax_prev, fresh = vmax, False
            # Certify when the violation says so, at the last iteration, or when the step
            # no longer moves the objective (float resolution).
            certify = (vmax <= trigger or it >= self.max_iter
                       or -(loss_change + pen_change) <= 8 * _EPS * abs(objective))
        return certified_result(self, coef=w, intercept=b, n_iter=it, converged=converged, stop_reason=stop_reason,
                                cert=cert, history=history, timer=timer, compile_seconds=compile_seconds,
                                line_search_failed=failed)

    @staticmethod
    def _refresh(problem, w, b, lv, r, D, xTd, z_out, lv_out, reads):
        """Margins afresh (they were maintained incrementally) into z_out, with b made
        optimal for w first when fitted; lv_out, r, D at them. Returns (b, loss, reads)."""
        if w.any():
            zw = np.asarray(problem.X @ w, dtype=np.float64).reshape(-1)
            reads += problem.columns.nnz
        else:
            zw = np.zeros(problem.n_samples)
        if problem.fit_intercept:
            b = problem.optimal_intercept(zw, b)
            zw += b
        xTd[:] = 0.0
        lv[:] = 0.0
        loss_sum = weighted_terms_along(problem.loss.kernel_id, problem.y, zw, xTd, 0.0, problem.c,
                                        lv, z_out, lv_out, r, D)
        return b, loss_sum, reads

    def _line_search(self, kind, y, c, z, xTd, lv, z_new, lv_new, r, D, active, m, g, g_b,
                     w, wpd, d_b, lam1, lam2, objective):
        """Largest step in {1, 1/2, ...} with P(w + s d) - P(w) <= sigma s Delta,
        Delta = g.d + g_b d_b + lam1 (||w + d||_1 - ||w||_1).

        The trial's margins, losses, r and D are left in z_new, lv_new, r, D.
        Returns (step, loss change, penalty change), or (None, 0, 0) on failure."""
        delta = _model_decrease(active, m, g, w, wpd, lam1) + g_b * d_b
        # Rounding allowance: near the optimum both sides are at float resolution.
        slack = 8 * _EPS * abs(objective)
        step = 1.0
        for _ in range(self.max_line_search):
            loss_change = weighted_terms_along(kind, y, z, xTd, step, c, lv, z_new, lv_new, r, D)
            pen_change = _penalty_change(active, m, w, wpd, step, lam1, lam2)
            if loss_change + pen_change <= self.sigma * step * delta + slack:
                return step, loss_change, pen_change
            step *= 0.5
        return None, 0.0, 0.0


@compiled_once
def _warm_up():
    """Compile (or load from cache) the kernels on tiny inputs."""
    data, idx, ptr = np.ones(2), np.arange(2, dtype=np.int64), np.array([0, 2], dtype=np.int64)
    ws, v2, v1 = np.zeros(1, dtype=np.int64), np.ones(2), np.zeros(1)
    _outer_pass(data, idx, ptr, False, v2, v2, v1, 0.1, 0.0, 0.0, v1.copy(), v1.copy(), ws.copy())
    _newton_direction(data, idx, ptr, False, ws.copy(), 1, v1, np.ones(1), v1, v1.copy(), np.zeros(2),
                      v2, 0.1, 0.0, True, 0.0, 1.0, 1)
    _model_decrease(ws, 1, v1, v1, v1, 0.1)
    _penalty_change(ws, 1, v1, v1, 1.0, 0.1, 0.0)
    _take_step(ws, 1, v1.copy(), v1.copy(), 0.5)
    weighted_terms_along(0, v2, v2, v2, 1.0, v2, v2, v2.copy(), v2.copy(), v2.copy(), v2.copy())
    weighted_conjugate(0, v2, v2, v2, 1.0)  # certificates (Problem.certificate_from)
    weighted_value(0, v2, v2, v2)
    _seed(0)
