"""ISTA, FISTA and multi-scale FISTA with the data on a Dask cluster.

Minimises the problem of :class:`~l1scale.distributed.problem.DaskProblem`,

    P(w, b) = f(w, b) + lam1 ||w||_1,  f(w, b) = (1/W) sum_i s_i loss(y_i, x_i . w + b) + lam2/2 ||w||^2,

by the driver of :class:`~l1scale.solvers.proximal.ProximalGradient` itself (read its module
docstring): it keeps w and makes the prox step, the backtracking decision, the momentum
and the certificate; :class:`DaskPasses` gives it the sums from the partitions.
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

import time

import numpy as np

from ..losses import get_loss, weighted_conjugate
from ..problems.base import Certificate
from ..problems.memory import dual_scale, newton_intercept
from ..solvers.proximal import loss_change, margin_loss_terms
from . import _tasks
from .dataset import task_key

__all__ = ["DaskPasses", "DistributedProximal"]


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
    total = margin_loss_terms(kind, y, zw, b, c, z, lv, r, D)
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
    return loss_change(kind, y, zp, bp, c, terms[1])


# ----------------------------------------------------------------------------- the driver


class DistributedProximal:
    """Runs a :class:`~l1scale.solvers.proximal.ProximalGradient` (ISTA, FISTA,
    MultiscaleFISTA) on a DaskProblem: the solver's own driver, with :class:`DaskPasses`
    computing what it needs from the partitions.

    The iterates are those of the single-machine solver (the sums over partitions differ
    from the single-machine sums by rounding only), so a run ends with the same model.
    """

    def __init__(self, solver):
        self.solver = solver
        self.name = solver.name

    def solve(self, problem, coef_init=None, intercept_init=None):
        return self.solver.solve(problem, coef_init, intercept_init, passes=DaskPasses(problem))


class DaskPasses:
    """The operations of :class:`~l1scale.solvers.proximal.InMemoryPasses` over the
    partitions of a DaskProblem: margins are lists of futures (one per partition, kept on
    the workers), sums come back through a tree reduction, and each History row gets the
    seconds spent in the map, the reduction and the driver."""

    def __init__(self, problem):
        ds = problem.dataset
        self._problem, self._ds, self._client = problem, ds, ds.client
        self._kind, self._loss = problem.loss.kernel_id, problem.loss.name
        self.nnz = problem.scan.nnz
        self._yc = ds.map(_labels, problem.spec, problem.weight_sum, what="labels")
        self._terms = None  # the loss terms at the last gradient point, per partition
        self._waited = {"compute": 0.0, "reduce": 0.0}

    def first_intercept(self, intercept_init):
        return self._problem.intercept_only() if intercept_init is None else float(intercept_init)

    def zeros(self):
        return [self._client.submit(_zeros, f, key=task_key("zeros", i)) for i, f in enumerate(self._yc)]

    def margins(self, x):
        return self._ds.map(_margins, self._problem.broadcast(x.copy()), what="margins")

    def combine(self, zx, zx_prev, beta):
        return [
            self._client.submit(_combine, a, c, beta, key=task_key("combine", i))
            for i, (a, c) in enumerate(zip(zx, zx_prev))
        ]

    def intercept(self, zw, b, tol, max_iter=100):
        """argmin_b sum_i c_i loss(y_i, zw_i + b): :func:`~l1scale.problems.newton_intercept`, as the
        single-machine solver, each evaluation of the derivative a map over the partitions."""
        client, yc, loss = self._client, self._yc, self._loss

        def derivatives(b):
            return self._sum(
                [
                    client.submit(_intercept_sums, yc[i], zw[i], b, loss, key=task_key("intercept", i))
                    for i in range(len(yc))
                ]
            )

        return newton_intercept(derivatives, b, tol, max_iter)

    def gradient(self, zw, b, curvature):
        """Per-partition loss terms at zw + b (kept on the workers) and the reduced sums."""
        ds, client, yc = self._ds, self._client, self._yc
        terms = [client.submit(_terms, yc[i], zw[i], b, self._kind, key=task_key("terms", i)) for i in range(len(yc))]
        grads = [
            client.submit(_tasks.apply, data, spec, _gradient, terms[i], curvature, key=task_key("grad", i))
            for i, (data, spec) in enumerate(zip(ds._data, ds.partitions))
        ]
        total = ds.tree_reduce(grads)
        self._timed("compute", ds.wait, grads)
        sums = self._timed("reduce", ds.gather, [total])[0]
        problem, d = self._problem, self._problem.n_features
        if problem.penalty is None:  # lam_ratio: the first gradient is at (0, b0)
            problem.resolve_lam(sums[2 : 2 + d])
        self._terms = terms
        return float(sums[0]), float(sums[1]), sums[2 : 2 + d], sums[2 + d :] if curvature else None

    def certificate(self, w, b, v, r_sum, primal):
        """The duality gap (``Problem.certificate_from``), its conjugate sum from the partitions;
        the KKT violation for losses without a conjugate."""
        problem, pen, terms = self._problem, self._problem.penalty, self._terms
        if problem.loss.has_conjugate:
            scale = dual_scale(pen, v)
            conj = self._sum(
                [
                    self._client.submit(
                        _conjugate, self._yc[i], terms[i], scale, self._kind, key=task_key("conjugate", i)
                    )
                    for i in range(len(terms))
                ]
            )
            dual = -conj if pen.l2 == 0.0 else -conj - pen.conjugate_of_negative(v)
            gap = primal - dual
            return Certificate("duality_gap", gap, gap / max(abs(primal), 1e-300), primal)
        viol = float(np.max(pen.subdifferential_distance(w, v), initial=0.0))
        if problem.fit_intercept:
            viol = max(viol, abs(r_sum))
        return Certificate("kkt", viol, viol / pen.l1, primal)

    def change(self, zp, bp):
        """f(p) - f(w) of the loss part, term by term on the partitions, summed."""
        return self._sum(
            [
                self._client.submit(
                    _change, self._yc[i], zp[i], bp, self._terms[i], self._kind, key=task_key("change", i)
                )
                for i in range(len(self._yc))
            ]
        )

    def time_split(self, wall):
        """This iteration's seconds: map, reduction, and the driver (the rest)."""
        c, r = self._waited["compute"], self._waited["reduce"]
        self._waited = {"compute": 0.0, "reduce": 0.0}
        return {"compute_time": c, "reduce_time": r, "driver_time": max(wall - c - r, 0.0)}

    def _timed(self, part, fn, *args):
        start = time.perf_counter()
        out = fn(*args)
        self._waited[part] += time.perf_counter() - start
        return out

    def _sum(self, futures):
        """Scalars (or small arrays) of every partition, summed on the driver."""
        return self._timed("compute", lambda: sum(self._ds.gather(futures)))
