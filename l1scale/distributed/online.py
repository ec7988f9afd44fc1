"""Online first-order solvers on a Dask cluster: local passes and averaged weights.

Each pass, every partition runs one pass of the online solver (truncated gradient,
SGD with cumulative penalty, ...) over its own rows, with the solver's own kernel
(:meth:`~l1scale.solvers.online_base.OnlineSolver.partial_fit`), starting from the
weights broadcast by the driver; the driver then averages the partitions' weights,
each weighted by its share of the sample weight, sum_p (W_p / W) w_p, and broadcasts
the average for the next pass. This is Vowpal Wabbit's AllReduce mode
(``--span_server``: one pass per node, weights averaged after each pass). Each
partition keeps its own learner state between passes (its step counter, hence its
learning rate, as a VW node does); only the weights are replaced by the average.

This is **not** the algorithm of a single machine and does not reach the same point:
the average of P local SGD passes is not the SGD pass over all the rows, and with a
decaying rate it approaches the optimum of

    P(w, b) = (1/W) sum_i s_i loss(y_i, x_i . w + b) + lam ||w||_1

more slowly (averaging also shrinks the support less sharply: a weight that is zero
on one partition and not on another is not zero in the average). Use MP, RMMP or
FISTA for the batch optimum; use this for VW-style learning at scale.
"""

from __future__ import annotations

import copy
import time

import numpy as np

from ..solvers.base import History, Result
from ..solvers.online_base import STATS
from . import _tasks
from .dataset import task_key

__all__ = ["AveragedOnline"]


def _local_pass(stream, spec, solver, state, point, pass_index, kind, l1, l2, mean_scale):
    """One pass of ``solver`` over this partition from the broadcast ``point = (w, b)``;
    returns (the partition's state, [W_p, W_p w, W_p b, the pass's STATS sums])."""
    problem = _tasks.local_problem(stream, spec)
    # A copy: the task must not change its argument (the scheduler may run it again).
    state = solver.new_state(problem.n_features, problem.fit_intercept) if state is None else copy.deepcopy(state)
    w, b = point
    state.set_weights(w, b)
    if getattr(state, "n_per_pass", 0) is None:  # SGD-C's N: the rows of a pass over this partition
        state.n_per_pass = sum(chunk.X.shape[0] for chunk in stream)
    weight = 0.0
    stats = np.zeros(len(STATS))
    for X, y, s, first in problem.chunks():
        stats += solver.partial_fit(
            state, X, y, s * mean_scale, kind=kind, l1=l1, l2=l2, first_row=first, pass_index=pass_index
        )
        weight += float(s.sum())
    return state, np.concatenate([[weight], weight * state.coef, [weight * state.intercept], stats])


def _state(out):
    return out[0]


def _summary(out):
    return out[1]


class AveragedOnline:
    """Runs an :class:`~l1scale.solvers.online_base.OnlineSolver` on a DaskProblem: one
    local pass per partition, weights averaged after each pass (see the module docstring).

    The solver's ``max_iter`` (passes), learning-rate options and ``random_state`` apply;
    its holdout does not (every row is learned from; the progressive loss is reported).
    """

    def __init__(self, solver):
        self.solver = solver
        self.name = solver.name

    def solve(self, problem, coef_init=None, intercept_init=None):
        sv = self.solver
        sv.check_problem(problem)
        if problem.penalty is None:
            problem.resolve_lam(problem.gradient_at_start())  # lam_ratio: one pass for lam_max
        pen, kind, d = problem.penalty, problem.loss.kernel_id, problem.n_features
        ds, client = problem.dataset, problem.dataset.client
        task_solver = copy.copy(sv)
        task_solver.callback = None  # the driver's callback stays on the driver
        w = np.zeros(d) if coef_init is None else np.array(coef_init, dtype=np.float64).reshape(d)
        b = 0.0 if intercept_init is None or not problem.fit_intercept else float(intercept_init)
        mean_scale = problem.n_samples / problem.weight_sum
        states = [None] * ds.n_partitions
        history, t0, totals = History(), time.perf_counter(), np.zeros(len(STATS))
        last = t0
        for z in range(1, sv.max_iter + 1):
            start = time.perf_counter()
            point = problem.broadcast((w, b))
            outs = [
                client.submit(
                    _tasks.apply,
                    data,
                    spec,
                    _local_pass,
                    problem.spec,
                    task_solver,
                    states[i],
                    point,
                    z - 1,
                    kind,
                    pen.l1,
                    pen.l2,
                    mean_scale,
                    key=task_key(f"online{z}", i),
                )
                for i, (data, spec) in enumerate(zip(ds._data, ds.partitions))
            ]
            states = [client.submit(_state, o, key=task_key("state", i)) for i, o in enumerate(outs)]
            summaries = [client.submit(_summary, o, key=task_key("summary", i)) for i, o in enumerate(outs)]
            total = ds.tree_reduce(summaries)
            compute = ds.wait(summaries)
            mapped = time.perf_counter()
            total = ds.gather([total])[0]
            reduced = time.perf_counter()
            weight = total[0]
            w, b = total[1 : 1 + d] / weight, float(total[1 + d]) / weight
            sums = total[2 + d :]
            totals += sums
            progressive = sums[0] / max(sums[1], 1e-300)
            history.append(
                objective=np.nan,
                certificate=np.nan,
                nnz=np.count_nonzero(w),
                time=time.perf_counter() - t0,
                data_accesses=int(totals[5]),
                examples=int(totals[4]),
                progressive_loss=progressive,
                holdout_loss=np.nan,
                compute_time=compute,
                reduce_time=reduced - mapped,
                driver_time=start - last if z > 1 else 0.0,
            )
            last = reduced
            if sv.verbose:
                print(
                    f"{sv.name} (averaged) pass {z:3d}  examples {int(totals[4]):10d}  progressive "
                    f"{progressive:.6f}  nnz {history.nnz[-1]:7d}  {history.time[-1]:7.2f}s",
                    flush=True,
                )
            if sv.callback is not None:
                sv.callback(z, history)
        return Result(
            coef=w,
            intercept=b,
            objective=np.nan,
            n_iter=sv.max_iter,
            converged=False,
            stop_reason="max_iter",
            certificate_name="none",
            certificate=np.nan,
            relative_certificate=np.nan,
            history=history,
            timings={"solve": time.perf_counter() - t0, "compile": 0.0},
        )
