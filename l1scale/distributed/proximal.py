"""ISTA, FISTA and multi-scale FISTA with the data on a Dask cluster.

Minimises the problem of :class:`~l1scale.distributed.problem.DaskProblem`,

    P(w, b) = f(w, b) + lam1 ||w||_1,  f(w, b) = (1/W) sum_i s_i loss(y_i, x_i . w + b) + lam2/2 ||w||^2,

with the iterates of :class:`~l1scale.solvers.proximal.ProximalGradient` (read its module
docstring): the driver keeps w, makes the prox step, the backtracking decision, the
momentum and the certificate with the same jitted helpers; the partitions give the sums.
What lives on the workers, per partition: the labels and weights c = s / W, the margins
X x_k, X x_{k-1}, X y_k and X p (futures: only the sums they give travel), and the loss
values at the gradient point (for the backtracking's term-by-term change). Per
iteration: the exact intercept at the gradient point (a Newton step per round trip,
two to four), one map of loss terms + gradient (+ diagonal curvature for multi-scale
FISTA) with a tree reduction, the duality gap's conjugate sum when certifying, and per
backtracking trial one map of X p, the intercept for it and the loss change: about ten
round trips to the cluster per iteration (on Reuters earn), where an RMMP pass needs one.
The trial weights p are broadcast once each.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..losses import get_loss, weighted_conjugate
from ..problem import Certificate, newton_intercept
from ..solvers.base import History, Timer, certified_result
from ..solvers.proximal import _EPS, _loss_change, _loss_terms, _prox_step, _update_scaling, _warm_up
from . import _tasks

__all__ = ["DistributedProximal"]


# ----------------------------------------------------------------------------- on the workers


def _labels(stream, spec, weight_sum):
    """(y in +-1, c = s / W) of the partition's rows."""
    problem = _tasks.local_problem(stream, spec)
    ys, cs = [], []
    for _, y, s, _ in problem.chunks():
        ys.append(y)
        cs.append(s / weight_sum)
    return np.concatenate(ys), np.concatenate(cs)


def _margins(stream, w):
    """X w over the partition's rows."""
    out = [np.asarray(chunk.X @ w, dtype=np.float64).reshape(-1) for chunk in stream]
    return np.concatenate(out) if out else np.zeros(0)


def _zeros(yc):
    return np.zeros(yc[0].shape[0])


def _combine(zx, zx_prev, beta):
    return zx + beta * (zx - zx_prev)


def _intercept_sums(yc, zw, b, loss):
    """(sum_i c_i loss'(y_i, zw_i + b), sum_i c_i loss''(y_i, zw_i + b))."""
    y, c = yc
    loss = get_loss(loss)
    z = zw + b
    return np.array([float(c @ loss.derivative(y, z)), float(c @ loss.curvature(y, z))])


def _terms(yc, zw, b, kind):
    """At z = zw + b: (z, lv = loss, r = c loss', D = c loss'', sum c lv)."""
    y, c = yc
    n = zw.shape[0]
    z, lv, r, D = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    total = _loss_terms(kind, y, zw, b, c, z, lv, r, D)
    return z, lv, r, D, total


def _gradient(stream, terms, curvature):
    """[sum c lv, sum r, X^T r (d), X^T (D x^2) (d) or nothing]: the partition's sums."""
    _, _, r, D, total = terms
    d = stream.n_features
    v, h = np.zeros(d), np.zeros(d if curvature else 0)
    start = 0
    for chunk in stream:
        X = chunk.X
        stop = start + X.shape[0]
        v += X.T @ r[start:stop]
        if curvature:
            h += X.multiply(X).T @ D[start:stop] if hasattr(X, "multiply") else (X * X).T @ D[start:stop]
        start = stop
    return np.concatenate([[total, float(r.sum())], v, h])


def _conjugate(yc, terms, scale, kind):
    y, c = yc
    return weighted_conjugate(kind, y, terms[0], c, scale)


def _change(yc, zp, bp, terms, kind):
    y, c = yc
    return _loss_change(kind, y, zp, bp, c, terms[1])


# ----------------------------------------------------------------------------- the driver


class DistributedProximal:
    """Runs a :class:`~l1scale.solvers.proximal.ProximalGradient` (ISTA, FISTA,
    MultiscaleFISTA: its options are read from it) on a DaskProblem.

    The iterates are those of the single-machine solver (the sums over partitions differ
    from the single-machine sums by rounding only), so a run ends with the same model.
    """

    def __init__(self, solver):
        self.solver = solver
        self.name = solver.name

    def solve(self, problem, coef_init=None, intercept_init=None):
        sv = self.solver
        sv.check_problem(problem)
        sv._check_options()
        scaling = sv._scaling()
        compile_seconds = _warm_up()
        timer = Timer()
        ds, client = problem.dataset, problem.dataset.client
        self._problem, self._ds, self._client = problem, ds, client
        self._waited = {"compute": 0.0, "reduce": 0.0}
        dim, kind, loss = problem.n_features, problem.loss.kernel_id, problem.loss.name
        fit_b = problem.fit_intercept
        yc = ds.map(_labels, problem.spec, problem.weight_sum, what="labels")
        self._yc = yc
        x = np.zeros(dim) if coef_init is None else np.array(coef_init, dtype=np.float64).reshape(dim)
        b = (problem.intercept_only() if intercept_init is None else float(intercept_init)) if fit_b else 0.0
        reads = 0
        if x.any():
            zx = ds.map(_margins, problem.broadcast(x), what="margins")
            reads += problem.scan.nnz
        else:
            zx = [client.submit(_zeros, f, key=_tasks_key("zeros", i)) for i, f in enumerate(yc)]
        x_prev, zx_prev, w, zw = x.copy(), zx, x.copy(), zx
        p = np.empty(dim)
        H, floor, mu, t = np.ones(dim), None, None, 1.0
        history = History()
        stop_reason, converged, failed, cert = "max_iter", False, False, None
        it, last = 0, time.perf_counter()
        tol_b = sv.intercept_tol
        while True:
            # 1. At the gradient point: optimal intercept, loss terms, gradient (+ curvature).
            if fit_b:
                b = self._intercept(zw, b, tol_b, loss)
            want_h = scaling is not None or mu is None
            terms, sums = self._gradient_sums(zw, b, kind, want_h)
            if fit_b and abs(sums[1]) > tol_b:
                b = self._intercept(zw, b, 0.0, loss)  # the unchecked last Newton step fell short
                terms, sums = self._gradient_sums(zw, b, kind, want_h)
            reads += problem.scan.nnz
            loss_sum, v = float(sums[0]), sums[2:2 + dim]
            h = sums[2 + dim:] + problem.penalty.l2 if want_h else None
            lam1, lam2 = problem.penalty.l1, problem.penalty.l2
            g = v + lam2 * w if lam2 != 0.0 else v
            smooth = loss_sum + 0.5 * lam2 * float(w @ w)
            objective = smooth + lam1 * float(np.abs(w).sum())
            certify = it % sv.check_every == 0 or it >= sv.max_iter or failed
            if certify:
                cert = self._certificate(w, terms, v, float(sums[1]), objective, kind)
            now = time.perf_counter()
            split = self._split(now - last)
            last = now
            history.append(objective=objective, certificate=cert.value if certify else np.nan,
                           nnz=int(np.count_nonzero(w)), time=timer(), data_accesses=reads, **split)
            if sv.callback is not None:
                sv.callback(it, history)
            if sv.verbose:
                print(f"{sv.name} iter {it:5d}  P={objective:.12g}  nnz={history.nnz[-1]}  t={timer():.3f}s")
            if certify:
                if cert.relative <= sv.tol:
                    stop_reason, converged = cert.name, True
                    break
                if it >= sv.max_iter or failed:
                    break
            # 2. The scaling H of the quadratic model, and the first step.
            if mu is None:
                top = float(h.max(initial=0.0))
                if scaling is None:
                    mu = 1.0 / top if top > 0.0 else 1.0
                else:
                    floor = np.where(h > 0.0, sv.floor_ratio * h, 1e-12 * top if top > 0.0 else 1.0)
                    H, mu = np.maximum(h, floor), 1.0
            elif scaling is not None:
                _update_scaling(h, H, floor, scaling == "eq7")
            # 3. Backtracking: shrink mu until F(p) <= Q_mu(p; w).
            slack = 8 * _EPS * abs(smooth)
            for _ in range(sv.max_backtrack):
                model, dsq, _nnz = _prox_step(w, g, H, mu, lam1, p)
                zp = ds.map(_margins, problem.broadcast(p.copy()), what="margins")
                reads += problem.scan.nnz
                bp = self._intercept(zp, b, tol_b, loss) if fit_b else 0.0
                change = self._sum([client.submit(_change, yc[i], zp[i], bp, terms[i], kind,
                                                  key=_tasks_key("change", i)) for i in range(len(yc))])
                if change + 0.5 * lam2 * dsq <= model + slack:
                    break
                mu *= sv.backtrack
            else:
                failed = True
                continue
            it += 1
            # 4. Next gradient point: p itself (ISTA) or extrapolated (FISTA).
            x_prev, zx_prev, x, zx = x, zx, p.copy(), zp
            b = bp
            if sv.momentum:
                t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
                beta = (t - 1.0) / t_next
                t = t_next
                w = x + beta * (x - x_prev)
                zw = [client.submit(_combine, a, c, beta, key=_tasks_key("combine", i))
                      for i, (a, c) in enumerate(zip(zx, zx_prev))]
            else:
                w, zw = x, zx
        return certified_result(sv, coef=w, intercept=b, n_iter=it, converged=converged, stop_reason=stop_reason,
                                cert=cert, history=history, timer=timer, compile_seconds=compile_seconds,
                                line_search_failed=failed,
                                line_search_message="backtracking found no step satisfying the quadratic model")

    # ------------------------------------------------------------------ sums over partitions
    def _timed(self, part, fn, *args):
        start = time.perf_counter()
        out = fn(*args)
        self._waited[part] += time.perf_counter() - start
        return out

    def _split(self, wall):
        """This iteration's seconds: map, reduction, and the driver (the rest)."""
        c, r = self._waited["compute"], self._waited["reduce"]
        self._waited = {"compute": 0.0, "reduce": 0.0}
        return {"compute_time": c, "reduce_time": r, "driver_time": max(wall - c - r, 0.0)}

    def _sum(self, futures):
        """Scalars (or small arrays) of every partition, summed on the driver."""
        start = time.perf_counter()
        out = sum(self._ds.gather(futures))
        self._waited["compute"] += time.perf_counter() - start
        return out

    def _intercept(self, zw, b, tol, loss, max_iter=100):
        """argmin_b sum_i c_i loss(y_i, zw_i + b): :func:`~l1scale.problem.newton_intercept`, as the
        single-machine solver, each evaluation of the derivative a map over the partitions."""
        client, yc = self._client, self._yc

        def derivatives(b):
            return self._sum([client.submit(_intercept_sums, yc[i], zw[i], b, loss, key=_tasks_key("intercept", i))
                              for i in range(len(yc))])

        return newton_intercept(derivatives, b, tol, max_iter)

    def _gradient_sums(self, zw, b, kind, curvature):
        """Per-partition loss terms at zw + b (kept on the workers) and the reduced sums."""
        ds, client, yc = self._ds, self._client, self._yc
        terms = [client.submit(_terms, yc[i], zw[i], b, kind, key=_tasks_key("terms", i)) for i in range(len(yc))]
        grads = [client.submit(_tasks.apply, data, spec, _gradient, terms[i], curvature, key=_tasks_key("grad", i))
                 for i, (data, spec) in enumerate(zip(ds._data, ds.partitions))]
        total = ds.tree_reduce(grads)
        self._timed("compute", ds.wait, grads)
        sums = self._timed("reduce", ds.gather, [total])[0]
        problem = self._problem
        if problem.penalty is None:  # lam_ratio: the first gradient is at (0, b0)
            problem.resolve_lam(sums[2:2 + problem.n_features])
        return terms, sums

    def _certificate(self, w, terms, v, r_sum, primal, kind):
        """The duality gap (``Problem.certificate_from``), its conjugate sum from the partitions;
        the KKT violation for losses without a conjugate."""
        problem, pen = self._problem, self._problem.penalty
        if problem.loss.has_conjugate:
            scale = min(1.0, pen.l1 / max(float(np.max(np.abs(v), initial=0.0)), 1e-300)) if pen.l2 == 0.0 else 1.0
            conj = self._sum([self._client.submit(_conjugate, self._yc[i], terms[i], scale, kind,
                                                  key=_tasks_key("conjugate", i)) for i in range(len(terms))])
            dual = -conj if pen.l2 == 0.0 else -conj - pen.conjugate_of_negative(v)
            gap = primal - dual
            return Certificate("duality_gap", gap, gap / max(abs(primal), 1e-300), primal)
        viol = float(np.max(pen.subdifferential_distance(w, v), initial=0.0))
        if problem.fit_intercept:
            viol = max(viol, abs(r_sum))
        return Certificate("kkt", viol, viol / pen.l1, primal)


def _tasks_key(what, i):
    from .dataset import _key

    return _key(what, i)
