r"""Dual cached loops with SGD: the baseline that feature cached loops is compared with
(seed 4, sec. 1 and 4.1; Matsushima, Vishwanathan & Smola 2012).

A **reader** thread generates the rows phi(x_i) of a generated feature space, block of
examples by block, into a row cache with a memory budget (when the cache is full a
random cached block is replaced), and a **trainer** thread runs stochastic gradient
steps with soft-thresholding (the lazy truncated-gradient kernel, one float64 per
feature) on the examples of random cached blocks, with the paper's step size

.. math::

    \eta_t = \eta_0 \left(1 + \eta_0 \frac{t}{C n}\right)^{-1} = \frac{\eta_0}{1 + \eta_0 \lambda t}

(C n = 1 / lam in the mean form). Both threads run at once (the kernels are ``nogil``).
Unlike FCL it has no optimality certificate: it stops after ``max_epochs`` epochs
(n examples learned from each) or ``max_time`` seconds.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np

from ..data.memory import as_rows
from ..problems.base import ProblemLike
from .base import History, Result, Solver, Timer
from .fcl import parse_bytes
from .online_base import STATS, Examples
from .truncated import SPARSIFIERS, Rule, Shifted, soft_threshold_rows, unshift_all

__all__ = ["DualCachedLoopsSGD"]


class DualCachedLoopsSGD(Solver):
    r"""SGD over a row cache filled by a reader thread (module docstring): minimises, in
    the limit, the objective of :class:`~l1scale.problems.GeneratedProblem`.

    Parameters
    ----------
    cache_bytes : int or str, default "1GB"
        Budget of the row cache (16 bytes per cached nonzero: int64 index, float64 value).
    eta0 : float, optional
        eta_0 of the step size. Default: 1 / mean ||phi(x_i)||^2 over the first 100 rows
        (a larger step overshoots on the first examples: a step changes the margin by
        eta ||phi(x)||^2 loss').
    block_rows : int, optional
        Examples per generated block. Default: a 16th of the budget (measured on the first
        100 rows), so that the cache holds many blocks to sample from.
    max_epochs : float, default 10
        Stop after this many times n learning steps.
    max_time : float, optional
    snapshot_every : float, default 0.5
        Seconds between snapshots in ``snapshots_``: dicts of seconds, steps, the nonzero
        weights (``indices``, ``values``: sparse, as p can be many millions) and the
        intercept, from which a benchmark evaluates the objective afterwards (off the clock);
        ``snapshot_coef(i)`` gives snapshot i's dense coef.
    random_state : int or None
    """

    name = "dcl_sgd"
    data_access = "generated"
    requires = ()

    @classmethod
    def from_estimator(cls, settings):
        """``max_iter`` is the number of epochs; the cache takes ``cache_bytes`` (default 1GB); no tolerance."""
        return cls(
            cache_bytes="1GB" if settings.cache_bytes is None else settings.cache_bytes,
            max_epochs=settings.max_iter,
            random_state=settings.random_state,
            verbose=settings.verbose,
        )

    def __init__(
        self,
        cache_bytes="1GB",
        eta0=None,
        *,
        block_rows=None,
        max_epochs=10.0,
        max_time=None,
        snapshot_every=0.5,
        random_state=None,
        verbose=0,
    ):
        self.cache_bytes = parse_bytes(cache_bytes)
        if eta0 is not None and not eta0 > 0:
            raise ValueError(f"eta0 must be > 0, got {eta0!r}")
        self.eta0 = None if eta0 is None else float(eta0)
        self.block_rows = None if block_rows is None else int(block_rows)
        self.max_epochs, self.max_time = float(max_epochs), max_time
        self.snapshot_every, self.random_state, self.verbose = float(snapshot_every), random_state, verbose

    def solve(self, problem: ProblemLike, raw=None, coef_init=None, intercept_init=None) -> Result:
        """``raw``: the examples as given to the space (rows are sliced from it); by default
        the problem's own input."""
        if getattr(problem, "kind", None) != "generated":
            raise TypeError("DualCachedLoopsSGD solves a GeneratedProblem")
        raw = problem.raw_input if raw is None else raw
        n, p, lam = problem.n_samples, problem.n_features, problem.lam
        # One generator per thread: a numpy Generator is not safe to share between threads.
        rng, reader_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(self.random_state).spawn(2))
        probe = problem.space.transform(raw[: min(n, 100)])  # sizes the blocks and the default step
        per_row = max(probe.nnz, 1) / max(probe.shape[0], 1)
        block_rows = self.block_rows or int(max(1, min(n, self.cache_bytes / 16 / (16 * per_row))))
        eta0 = self.eta0 or 1.0 / max(float(probe.multiply(probe).sum()) / max(probe.shape[0], 1), 1e-12)
        self.eta0_ = eta0
        starts = np.arange(0, n, block_rows)
        cache, cache_lock, stop = {}, threading.Lock(), threading.Event()
        used = [0]
        error = []
        weights = problem.c * n  # mean 1: example i's gradient is c_i n loss'_i x_i

        def reader():
            try:
                while not stop.is_set():
                    for k in reader_rng.permutation(len(starts)):
                        if stop.is_set():
                            return
                        if k in cache:
                            continue
                        i0 = starts[k]
                        i1 = min(i0 + block_rows, n)
                        rows = as_rows(problem.space.transform(raw[i0:i1]))
                        size = 16 * int(rows.arrays[0].shape[0])
                        with cache_lock:
                            while cache and used[0] + size > self.cache_bytes:
                                victim = list(cache)[int(reader_rng.integers(len(cache)))]
                                used[0] -= cache.pop(victim)[1]
                            if used[0] + size <= self.cache_bytes:
                                cache[k] = (rows, size, i0, i1)
                                used[0] += size
                    if len(cache) == len(starts):
                        return  # everything fits: nothing left to read
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread, which raises it
                error.append(exc)
                stop.set()

        stored, scalars = np.zeros(p), np.zeros(2)
        clock = np.zeros(1, dtype=np.int64)
        scalars[0] = problem.intercept_only()
        t0 = 1.0 / (eta0 * lam)  # eta0 (t0 / (t0 + t - 1)) = eta0 / (1 + eta0 lam (t - 1))
        kind = problem.loss.kernel_id
        # Soft thresholding (mode and theta unread) at every step, rate eta0 t0 / (t0 + t - 1).
        rule = Rule(SPARSIFIERS["truncated"], 1, math.inf, eta0, t0, 1.0, lam, problem.fit_intercept)
        self.snapshots_ = []
        history = History()
        thread = threading.Thread(target=reader, daemon=True, name="l1scale-dcl-reader")
        timer = Timer()  # the reader thread compiles its parser in its own clock
        thread.start()
        last_snapshot = -np.inf
        steps_limit = int(self.max_epochs * n)
        stop_reason = "max_iter"
        try:
            while clock[0] < steps_limit and not stop.is_set():
                elapsed = timer()
                if self.max_time is not None and elapsed > self.max_time:
                    stop_reason = "max_time"
                    break
                if elapsed - last_snapshot >= self.snapshot_every:
                    self._snapshot(stored, scalars, clock, elapsed, history)
                    last_snapshot = elapsed
                with cache_lock:
                    entry = cache[list(cache)[int(rng.integers(len(cache)))]] if cache else None
                if entry is None:
                    time.sleep(0.001)
                    continue
                rows, _, i0, i1 = entry
                order = rng.permutation(i1 - i0)
                stats = np.zeros(len(STATS))
                ex = Examples.of(rows, problem.y[i0:i1], weights[i0:i1], order)
                soft_threshold_rows(kind, ex, rule, Shifted(stored, scalars, clock), stats)
        finally:
            stop.set()
            thread.join()
        if error:
            raise error[0]
        self._snapshot(stored, scalars, clock, timer(), history)
        coef = self.snapshot_coef(-1)
        return Result(
            coef=coef,
            intercept=float(scalars[0]),
            objective=np.nan,
            n_iter=int(clock[0]) // max(n, 1),
            converged=False,
            stop_reason=stop_reason,
            certificate_name="none",
            certificate=np.nan,
            relative_certificate=np.nan,
            history=history,
            timings={"solve": timer(), "compile": timer.compiled()},
        )

    def _snapshot(self, stored, scalars, clock, elapsed, history):
        coef = np.empty_like(stored)
        unshift_all(stored, scalars[1], coef)
        indices = np.flatnonzero(coef)
        self.snapshots_.append(
            {
                "seconds": elapsed,
                "steps": int(clock[0]),
                "indices": indices,
                "values": coef[indices],
                "intercept": float(scalars[0]),
                "n_features": coef.shape[0],
            }
        )
        history.append(
            objective=np.nan,
            certificate=np.nan,
            nnz=indices.shape[0],
            time=elapsed,
            data_accesses=0,
            examples=int(clock[0]),
        )
        if self.verbose:
            print(f"dcl_sgd {elapsed:7.2f}s  steps {int(clock[0]):10d}  nnz {indices.shape[0]}", flush=True)

    def snapshot_coef(self, i) -> np.ndarray:
        """The dense coef of snapshot i."""
        snap = self.snapshots_[i]
        coef = np.zeros(snap["n_features"])
        coef[snap["indices"]] = snap["values"]
        return coef
