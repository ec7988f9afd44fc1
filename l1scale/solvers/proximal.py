"""Proximal gradient methods: ISTA, FISTA and multi-scale FISTA (seed 2, Qin et al., Algorithm 1).

Minimises, for any smooth loss (ALGORITHMS.md sections 1 and 5),

    P(w, b) = f(w, b) + lam1 ||w||_1,   f(w, b) = sum_i c_i loss(y_i, x_i . w + b) + lam2/2 ||w||^2

(lam1 = lam * l1_ratio, lam2 = lam * (1 - l1_ratio), c_i = s_i / sum(s)). Each iteration
k, at the gradient point y_k (the iterate itself for ISTA, the extrapolated point for
FISTA; the paper calls it x_k):

1. gradient g = X^T r + lam2 w with r = c * loss'(y, z) (one product with X^T); for
   multi-scale FISTA the diagonal curvature h_j = sum_i c_i loss''_i x_ij^2 + lam2 in
   the same pass over the columns;
2. the scaling H: the identity (ISTA, FISTA; eq. 6), or diag(h) taken monotone,
   H_jj = min(h_j, H_jj of the previous step) (eq. 7, the default: H_{k-1} - H_k is
   PSD, which the O(1/k^2) proof needs), or diag(h) as it is (eq. 8: the paper writes
   H_k^ii = d2f/d(x_k^j)^2, read with j = i (a typo): the current diagonal without the
   min, as CGD's H; it gives up the monotonicity and with it the proof, the paper saying
   condition 10 holds for "the first two choices" only); H_jj is floored at
   ``floor_ratio`` times its value at the start (and above 0 for empty columns), a
   floor that stays fixed so that eq. 7 remains monotone;
3. backtracking: p_j = sign(z_j) max(|z_j| - lam1 mu / H_jj, 0), z_j = w_j - (mu / H_jj) g_j,
   one product X p per trial; mu <- eta mu until F(p) <= Q_mu(p; y_k), i.e.
   f(p) <= f(y_k) + g.(p - y_k) + (p - y_k)^T H (p - y_k) / (2 mu), the change
   f(p) - f(y_k) summed term by term (a difference of two sums of n terms carries
   rounding errors that reject every step near the optimum and stall the solver);
4. the next gradient point: y_{k+1} = p (ISTA), or p + ((t_k - 1)/t_{k+1}) (p - x_k) with
   t_{k+1} = (1 + sqrt(1 + 4 t_k^2))/2 (FISTA); its margins are the same combination of
   the margins X p and X x_k already at hand (no product).

Two products with X per iteration (X^T r and one X p), plus one X p per extra
backtracking trial; ``History.data_accesses`` counts them in nonzeros of X. The driver
asks a *passes* object for them (:class:`InMemoryPasses`; ``l1scale.distributed`` runs the
same driver with the sums taken over a cluster's partitions).

Step: mu never grows (the paper's backtracking: mu <- eta^i mu with i >= 0). It starts
optimistic, from the model's curvature at the start: mu_0 = 1 / max_j h_j(x_0) for the
identity (the largest diagonal entry of the Hessian bounds its top eigenvalue from
below, so mu_0 >= 1/L), mu_0 = 1 for the scaled model (H = diag of the Hessian:
Jacobi scaling, where the scaled Hessian has top eigenvalue >= 1); the first iteration's
backtracking brings it down to what the data need.

Intercept: b is an unpenalised coordinate that is minimised exactly at every point
where f is evaluated (a jitted 1-D safeguarded Newton solve on the n margins, warm
started, no product with X), i.e. the methods run on the reduced smooth function
phi(w) = min_b f(w, b), which is convex with gradient X^T r(w, b*(w)) + lam2 w
(Danskin) and no larger a Lipschitz constant. This keeps the theory of FISTA and makes
sum_i r_i = 0 exactly at each gradient point, which the dual of the problem with an
intercept needs: the duality gap is then computed from the gradient already in hand.

Certificate: every ``check_every`` iterations, the duality gap (or KKT violation for
losses without a conjugate) at the gradient point, from its margins and X^T r
(``Problem.certificate_from``); the solver stops when its relative value <= tol and
returns that point. History rows describe the gradient point of each iteration
(objective, certificate, nnz): for ISTA the iterates themselves (monotone
objective), for FISTA the extrapolated points (not monotone).
"""

from __future__ import annotations

import math
import time

import numpy as np
from numba import njit

from .. import checkpoint as checkpoints
from .._logistic_passes import logistic_terms_at, logistic_value_change
from ..data.memory import column_moments
from ..exceptions import DivergenceError
from ..losses import (
    LOGISTIC,
    loss_terms,
    loss_value,
    weighted_derivatives,
)
from ..problems.base import ProblemLike
from ..problems.memory import newton_intercept
from .base import History, Result, Solver, Timer, certified_result

__all__ = ["FISTA", "ISTA", "MultiscaleFISTA", "ProximalGradient"]

_EPS = float(np.finfo(np.float64).eps)


def _optimal_intercept(kind, y, zw, c, b, tol, max_iter=100):
    """argmin_b sum_i c_i loss(y_i, zw_i + b) (the margins zw without b held fixed)."""
    return newton_intercept(lambda b: weighted_derivatives(kind, y, zw, b, c), b, tol, max_iter)


def margin_loss_terms(kind, y, zw, b, c, z, lv, r, D):
    """At the margins z = zw + b: lv = loss, r = c loss', D = c loss''; returns sum_i c_i lv_i (the
    logistic loss's exps and logs vectorised, ``l1scale._logistic_passes``). Shapes: all (n,)."""
    if kind == LOGISTIC:
        return logistic_terms_at(y, zw, b, c, z, lv, r, D)
    return _margin_loss_terms(kind, y, zw, b, c, z, lv, r, D)


def loss_change(kind, y, zw, b, c, lv):
    """sum_i c_i (loss(y_i, zw_i + b) - lv_i), term by term (vectorised for the logistic loss, as
    :func:`margin_loss_terms`). Shapes (n,)."""
    if kind == LOGISTIC:
        return logistic_value_change(y, zw, b, c, lv)
    return _loss_change(kind, y, zw, b, c, lv)


@njit(cache=True)
def _margin_loss_terms(kind, y, zw, b, c, z, lv, r, D):
    """At the margins z = zw + b: lv = loss, r = c loss', D = c loss''; returns sum_i c_i lv_i.

    Shapes: all (n,).
    """
    total = 0.0
    for i in range(zw.shape[0]):
        zi = zw[i] + b
        v, d1, d2 = loss_terms(kind, y[i], zi)
        z[i], lv[i], r[i], D[i] = zi, v, c[i] * d1, c[i] * d2
        total += c[i] * v
    return total


@njit(cache=True)
def _loss_change(kind, y, zw, b, c, lv):
    """sum_i c_i (loss(y_i, zw_i + b) - lv_i), summed term by term so that it stays
    accurate when far below the loss itself (backtracking near the optimum). Shapes (n,)."""
    total = 0.0
    for i in range(zw.shape[0]):
        total += c[i] * (loss_value(kind, y[i], zw[i] + b) - lv[i])
    return total


@njit(cache=True)
def _gradient_curvature(data, indices, indptr, dense, r, D, v, h):
    """One pass over the columns: v_j = sum_i r_i x_ij and h_j = sum_i D_i x_ij^2.

    Shapes: r, D (n,); v, h (d,).
    """
    for j in range(v.shape[0]):
        acc_v, acc_h = column_moments(data, indices, indptr, dense, j, r, D)
        v[j], h[j] = acc_v, acc_h


@njit(cache=True)
def _prox_step(w, g, H, mu, lam1, p):
    """p = argmin_x g.(x - w) + (x - w)^T diag(H) (x - w) / (2 mu) + lam1 ||x||_1 (eq. 5):
    p_j = sign(z_j) max(|z_j| - lam1 mu / H_j, 0), z_j = w_j - (mu / H_j) g_j.

    Shapes: w, g, H, p (d,). Returns (g.d + d^T H d / (2 mu) with d = p - w,
    ||p||^2 - ||w||^2 summed term by term, nnz(p)).
    """
    model, dsq, nnz = 0.0, 0.0, 0
    for j in range(w.shape[0]):
        s = mu / H[j]
        zj = w[j] - s * g[j]
        a = abs(zj) - lam1 * s
        pj = 0.0
        if a > 0.0:
            pj = a if zj > 0.0 else -a
            nnz += 1
        p[j] = pj
        d = pj - w[j]
        model += g[j] * d + 0.5 * H[j] * d * d / mu
        dsq += d * (pj + w[j])
    return model, dsq, nnz


@njit(cache=True)
def _update_scaling(h, H, floor, monotone):
    """H_j = max(min(h_j, H_j), floor_j) (eq. 7, monotone) or max(h_j, floor_j) (eq. 8).
    Shapes (d,)."""
    for j in range(h.shape[0]):
        v = min(h[j], H[j]) if monotone else h[j]
        H[j] = max(v, floor[j])


class ProximalGradient(Solver):
    """Proximal gradient descent with backtracking (shared driver of ISTA, FISTA and
    multi-scale FISTA; see the module docstring).

    Parameters
    ----------
    tol : float, default 1e-6
        Stop when the duality gap <= tol * P (or KKT violation <= tol * lam1 for
        losses without a conjugate).
    max_iter : int, default 10000
        Outer iterations (one gradient each).
    check_every : int, default 1
        Iterations between certificates (each costs one pass over the n margins).
    backtrack : float, default 0.5
        The factor eta in (0, 1) that shrinks the step mu.
    callback : callable, optional
        Called as ``callback(iteration, history)`` after each iteration.
    verbose : int, default 0
    random_state : ignored
        The methods are deterministic; accepted for a uniform solver signature.
    checkpoint : str or path-like, optional
        File holding the complete state (iterates, their margins, step size, momentum,
        History), written atomically at the start of an iteration, at most every
        ``checkpoint_interval`` seconds; an existing one is resumed and the resumed run
        ends with the coefficients of an uninterrupted one, bit for bit. One written for
        other data or parameters is refused (:mod:`l1scale.checkpoint`). In-memory data only.
    checkpoint_interval : float, default 5
        Least seconds between two checkpoint writes.

    Raises
    ------
    DivergenceError
        From :meth:`solve`, when the step size 1/L cannot be formed because the curvature of
        the loss along a column overflows (features on a scale such as 1e300).
    """

    data_access = "columns"
    resumable = True  # takes checkpoint= (l1scale.checkpoint)
    requires = ("smooth", "curvature_kernel")
    momentum = False

    # The most step shrinkings in one iteration before the solver gives up.
    max_backtrack = 60
    # Floor of the diagonal scaling, relative to its value at the start point.
    floor_ratio = 1e-6
    # Newton tolerance on the intercept's derivative (as Problem.optimal_intercept).
    intercept_tol = 1e-13

    def __init__(
        self,
        tol=1e-6,
        max_iter=10000,
        check_every=1,
        backtrack=0.5,
        callback=None,
        verbose=0,
        random_state=None,
        checkpoint=None,
        checkpoint_interval=checkpoints.DEFAULT_INTERVAL,
    ):
        self.checkpoint, self.checkpoint_interval = checkpoint, checkpoint_interval
        self.tol = tol
        self.max_iter = max_iter
        self.check_every = check_every
        self.backtrack = backtrack
        self.callback = callback
        self.verbose = verbose
        self.random_state = random_state

    # ------------------------------------------------------------------ options
    def _scaling(self):
        """None (identity) or "eq7" / "eq8"."""
        return

    def _check_options(self):
        if not (isinstance(self.backtrack, (int, float)) and 0.0 < self.backtrack < 1.0):
            raise ValueError(f"backtrack must be in (0, 1), got backtrack={self.backtrack!r}")
        if not (isinstance(self.check_every, (int, np.integer)) and self.check_every >= 1):
            raise ValueError(f"check_every must be an integer >= 1, got check_every={self.check_every!r}")
        if not (isinstance(self.max_iter, (int, np.integer)) and self.max_iter >= 0):
            raise ValueError(f"max_iter must be an integer >= 0, got max_iter={self.max_iter!r}")
        if not (self.tol >= 0):
            raise ValueError(f"tol must be >= 0, got tol={self.tol!r}")

    # ------------------------------------------------------------------ driver
    def solve(self, problem: ProblemLike, coef_init=None, intercept_init=None, *, passes=None) -> Result:
        """Minimise ``problem`` (kind ``"memory"``, or a ``distributed`` one through the Dask backend);
        ``passes`` computes what the driver needs from the data (default :class:`InMemoryPasses`;
        the Dask backend gives its own)."""
        self.check_problem(problem)
        self._check_options()
        scaling = self._scaling()
        timer = Timer()
        passes = InMemoryPasses(problem) if passes is None else passes
        dim, fit_b, eta = problem.n_features, problem.fit_intercept, float(self.backtrack)

        # Iterates x_k and x_{k-1} with their margins X x (without b); the gradient point
        # w with margins zw; the trial p with margins zp (arrays, or the backend's handles).
        x = np.zeros(dim) if coef_init is None else np.array(coef_init, dtype=np.float64).reshape(dim)
        b = passes.first_intercept(intercept_init) if fit_b else 0.0
        reads = 0
        if x.any():
            zx = passes.margins(x)
            reads += passes.nnz
        else:
            zx = passes.zeros()
        x_prev, zx_prev, w, zw = x.copy(), zx, x.copy(), zx
        p = np.empty(dim)
        H, floor, mu, t = np.ones(dim), None, None, 1.0
        history = History()
        stop_reason, converged, failed, cert = "max_iter", False, False, None
        it, last = 0, time.perf_counter()
        ck, saved = checkpoints.start(self, problem)
        if ck is not None and not isinstance(passes, InMemoryPasses):
            raise ValueError(
                f"{self.name}: checkpoint= needs the data in memory (a distributed solve keeps its "
                "margins on the workers); use rmmp for resumable distributed runs"
            )
        if saved is not None:
            x, zx, x_prev, zx_prev, w, zw = (
                saved.array(k, (n,))
                for k, n in (
                    ("x", dim),
                    ("zx", problem.n_samples),
                    ("x_prev", dim),
                    ("zx_prev", problem.n_samples),
                    ("w", dim),
                    ("zw", problem.n_samples),
                )
            )
            b, t, it = saved.scalar("b"), saved.scalar("t"), saved.scalar("it", int, 0)
            reads, failed, mu = saved.scalar("reads", int, 0), saved.scalar("failed", bool), saved.optional_scalar("mu")
            saved.into("H", H)
            floor = None if saved.value("floor", (type(None), np.ndarray)) is None else saved.array("floor", (dim,))
            saved.history(history)
            timer.exclude(-saved.scalar("elapsed"))
        while True:
            if ck is not None and ck.due():  # the state at the top of an iteration says all that follows
                ck.save(
                    {
                        "x": x,
                        "zx": zx,
                        "x_prev": x_prev,
                        "zx_prev": zx_prev,
                        "w": w,
                        "zw": zw,
                        "b": b,
                        "t": t,
                        "it": it,
                        "reads": reads,
                        "failed": failed,
                        "mu": mu,
                        "H": H,
                        "floor": floor,
                        "history": history.as_dict(),
                        "elapsed": timer(),
                    }
                )
            # 1. At the gradient point: optimal intercept, loss terms, gradient (+ curvature).
            want_h = scaling is not None or mu is None
            if fit_b:
                b = passes.intercept(zw, b, self.intercept_tol)
            loss_sum, r_sum, v, h = passes.gradient(zw, b, want_h)
            if fit_b and abs(r_sum) > self.intercept_tol:
                # The unchecked last Newton step fell short (a kink of the curvature).
                b = passes.intercept(zw, b, 0.0)
                loss_sum, r_sum, v, h = passes.gradient(zw, b, want_h)
            reads += passes.nnz
            lam1, lam2 = problem.penalty.l1, problem.penalty.l2  # lam_ratio: resolved by the first gradient
            g = v + lam2 * w if lam2 != 0.0 else v
            smooth = loss_sum + 0.5 * lam2 * float(
                np.square(w).sum()
            )  # NumPy: a BLAS dot over d > 10,000 runs threaded (ElasticNet.value)
            objective = smooth + lam1 * float(np.abs(w).sum())
            nnz = int(np.count_nonzero(w))
            certify = it % self.check_every == 0 or it >= self.max_iter or failed
            if certify:
                cert = passes.certificate(w, b, v, r_sum, objective)
            now = time.perf_counter()
            history.append(
                objective=objective,
                certificate=cert.value if certify else np.nan,
                nnz=nnz,
                time=timer(),
                data_accesses=reads,
                **passes.time_split(now - last),
            )
            last = now
            if self.callback is not None:
                self.callback(it, history)
            if self.verbose:
                shown = f"{cert.name}={cert.value:.3e}" if certify else ""
                print(
                    f"{self.name} iter {it:5d}  P={objective:.12g}  {shown}  nnz={nnz}  "
                    f"mu={mu if mu is not None else float('nan'):.3e}  t={timer():.3f}s"
                )
            if certify:
                if cert.relative <= self.tol:
                    stop_reason, converged = cert.name, True
                    break
                if it >= self.max_iter or failed:
                    break
            # 2. The scaling H of the quadratic model, and the first step.
            if want_h:
                h = h + lam2
            if mu is None:
                top = float(h.max(initial=0.0))
                if not np.isfinite(top):
                    raise DivergenceError(_overflow_message(self.name, problem, top))
                if scaling is None:
                    mu = 1.0 / top if top > 0.0 else 1.0
                else:
                    floor = np.where(h > 0.0, self.floor_ratio * h, 1e-12 * top if top > 0.0 else 1.0)
                    H, mu = np.maximum(h, floor), 1.0
            elif scaling is not None:
                _update_scaling(h, H, floor, scaling == "eq7")
            # 3. Backtracking: shrink mu until F(p) <= Q_mu(p; w).
            # The change f(p) - f(w) is summed term by term; the slack allows for rounding.
            slack = 8 * _EPS * abs(smooth)
            for _ in range(self.max_backtrack):
                model, dsq, _nnz = _prox_step(w, g, H, mu, lam1, p)
                zp = passes.margins(p)
                reads += passes.nnz
                bp = passes.intercept(zp, b, self.intercept_tol) if fit_b else 0.0
                change = passes.change(zp, bp) + 0.5 * lam2 * dsq
                if change <= model + slack:
                    break
                mu *= eta
            else:
                # No step satisfies the model: certify where we are, then stop.
                failed = True
                continue
            it += 1
            # 4. Next gradient point: p itself (ISTA) or extrapolated (FISTA).
            x_prev, zx_prev, x, zx = x, zx, p.copy(), zp
            b = bp
            if self.momentum:
                t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
                beta = (t - 1.0) / t_next
                t = t_next
                w = x + beta * (x - x_prev)
                zw = passes.combine(zx, zx_prev, beta)
            else:
                w, zw = x, zx
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
            line_search_message="backtracking found no step satisfying the quadratic model",
        )


def _overflow_message(name, problem, top):
    """Why the first step size cannot be formed: the curvature along a column overflowed."""
    columns = problem.columns if problem.kind == "memory" else None  # a Dask problem's are on the cluster
    scale = ""
    if columns is not None and columns.data.size:
        scale = f"; X has entries as large as {float(np.max(np.abs(columns.data))):.3g}"
    return (
        f"{name}: the step size 1/L cannot be formed: the curvature of the loss along a column, "
        f"sum_i c_i loss''(z_i) x_ij^2, is {top} (it overflows){scale}. Scale the features (e.g. with "
        "sklearn's MaxAbsScaler or StandardScaler) so that their squares stay finite"
    )


class InMemoryPasses:
    """What the proximal driver needs from the data, for a :class:`~l1scale.problems.Problem`
    held in memory: margins X x, the exact intercept, the loss terms with X^T r (and the
    diagonal curvature) at the gradient point, the certificate and the loss change of a
    trial. ``l1scale.distributed`` gives the same operations over a cluster's partitions.
    Margins are arrays here (handles to partitions there); ``nnz`` is the nonzeros one
    product with X reads.
    """

    def __init__(self, problem):
        self.problem = problem
        n, d = problem.n_samples, problem.n_features
        self.kind, self.y, self.c = problem.loss.kernel_id, problem.y, problem.c
        self.nnz = problem.columns.nnz
        # The gradient point's margins z (with b), loss values, r = c loss', D = c loss''.
        self.z, self.lv, self.r, self.D = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
        self.v, self.h = np.empty(d), np.empty(d)

    def first_intercept(self, intercept_init):
        return float(intercept_init or 0.0)

    def zeros(self):
        return np.zeros(self.problem.n_samples)

    def margins(self, x):
        return np.asarray(self.problem.X @ x, dtype=np.float64).reshape(-1)

    def combine(self, zx, zx_prev, beta):
        return zx + beta * (zx - zx_prev)

    def intercept(self, zw, b, tol):
        return _optimal_intercept(self.kind, self.y, zw, self.c, b, tol)

    def gradient(self, zw, b, curvature):
        """At zw + b: (sum c loss, sum r, X^T r, the curvature sum D x^2 per column or None)."""
        loss_sum = margin_loss_terms(self.kind, self.y, zw, b, self.c, self.z, self.lv, self.r, self.D)
        if curvature:
            _gradient_curvature(*self.problem.columns.arrays, self.r, self.D, self.v, self.h)
        else:
            self.v[:] = self.problem.X.T @ self.r
        return loss_sum, float(self.r.sum()), self.v, self.h if curvature else None

    def certificate(self, w, b, v, r_sum, objective):
        return self.problem.certificate_from(w, b, self.z, None, v, primal=objective)

    def change(self, zp, bp):
        """f(p) - f(w) of the loss part, term by term (w: the last gradient point)."""
        return loss_change(self.kind, self.y, zp, bp, self.c, self.lv)

    def time_split(self, seconds):
        return {}


class ISTA(ProximalGradient):
    """ISTA with backtracking: proximal gradient without momentum (objective monotone)."""

    name = "ista"
    momentum = False


class FISTA(ProximalGradient):
    """FISTA with backtracking (Beck & Teboulle 2009; H = I, eq. 6)."""

    name = "fista"
    momentum = True


class MultiscaleFISTA(ProximalGradient):
    """Multi-scale FISTA (Qin et al., Algorithm 1): FISTA whose quadratic model is scaled by
    the diagonal of the Hessian.

    Parameters
    ----------
    hessian : {"eq7", "eq8"}, default "eq7"
        ``"eq7"``: H_jj = min(d2f/dw_j^2 at the gradient point, previous H_jj), monotone,
        which keeps the O(1/k^2) rate; ``"eq8"``: the current diagonal as it is.
    tol : float, default 1e-6
    max_iter : int, default 10000
    check_every : int, default 1
    backtrack : float, default 0.5
    callback, verbose, random_state, checkpoint, checkpoint_interval : optional
        These as in :class:`ProximalGradient`.
    """

    name = "multiscale_fista"
    momentum = True

    def __init__(
        self,
        tol=1e-6,
        max_iter=10000,
        check_every=1,
        backtrack=0.5,
        hessian="eq7",
        callback=None,
        verbose=0,
        random_state=None,
        checkpoint=None,
        checkpoint_interval=checkpoints.DEFAULT_INTERVAL,
    ):
        super().__init__(
            tol=tol,
            max_iter=max_iter,
            check_every=check_every,
            backtrack=backtrack,
            callback=callback,
            verbose=verbose,
            random_state=random_state,
            checkpoint=checkpoint,
            checkpoint_interval=checkpoint_interval,
        )
        self.hessian = hessian

    def _scaling(self):
        if self.hessian not in ("eq7", "eq8"):
            raise ValueError(f"hessian must be 'eq7' or 'eq8', got hessian={self.hessian!r}")
        return self.hessian
