r"""Feature cached loops (FCL; seed 4, ALGORITHMS.md sec. 6): L1 coordinate descent over a
generated feature space that never fits in memory.

Two kinds of threads share the row state (margins z and the per-row loss terms, see
``_fcl_kernels``) and a column cache with a memory budget:

- **writers** sweep the candidate features block by block: generate the block's
  columns over all n examples (``FeatureSpace.column_block``), compute each gradient
  g_j = sum_i c_i loss'(y_i, z_i) phi_j(x_i) from the shared state, and insert the
  columns that violate optimality (weight 0 and |g_j| > lam, the paper's |grad_j| > 1
  at liblinear's scale, or an evicted column's nonzero weight off its optimum) into the
  cache; when the cache is over budget, random cached columns are evicted to make room
  (those of weight 0 first);
- a **trainer** runs CDN updates (one-variable Newton step, Armijo backtracking) on
  cached columns drawn at random, and evicts a column whose weight is 0 and whose
  gradient is inside the optimality band after its update.

Both kinds run at the same time: their kernels are Numba ``nogil``. The trainer holds
the cache's lock while it works through a round of updates and the writer only while it
inserts; generating and screening a block, the expensive part, takes no lock.

The loops stop when a full writer sweep inserts nothing and the trainer has converged on
the cache. The threads are then stopped and the result is verified sequentially: the
trainer converges on the cache, then one more full sweep computes the KKT violation of
every candidate outside it. If that sweep inserts nothing, the solution is optimal over
the **whole feature space** to ``tol`` (the certificate is the largest KKT violation over
all p candidates, relative to lam); otherwise the loops resume.

Any column may be evicted, as the paper's writer does, and a weight survives the eviction
of its column: it stays in the cache's side table of *parked* weights (``FeatureCache.park``),
its contribution stays in the margins, it counts in the model and the penalty, and the
writer screens it like any other candidate, with its KKT condition for a nonzero weight
(|g_j + lam sign(w_j)| <= tol lam): a parked weight that is off its optimum is inserted
again, weight and all, and the trainer moves it. So the support need not fit in
``cache_bytes``: a smaller cache cycles the support's columns through it (slower, since
evicted columns are generated again) and still reaches the certified optimum. A column too
long for even an emptied cache is updated by the writer in place, from the generated block
(CDN steps under the cache's lock), and its weight parked.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import warnings

import numpy as np
from numba import njit

from ..exceptions import ConvergenceWarning
from ..problems.base import ProblemLike
from . import _fcl_kernels as K
from ._fcl_cache import FeatureCache, parse_bytes
from .base import History, Result, Solver, compiled_once

__all__ = ["FeatureCache", "FeatureCachedLoops", "default_writers", "parse_bytes"]

_NO_LOCK = contextlib.nullcontext()


@njit(cache=True)
def _seed_thread(seed):
    """Numba's generator is per thread: seed the calling thread's."""
    np.random.seed(seed)


@compiled_once
def _warm_up():
    """Compile (or load from Numba's cache) every kernel before the threads start: a thread
    compiling for a second would leave the others sweeping against a state that does not move."""
    cache = FeatureCache(4, 12 * 8)
    y, c = np.array([1.0, -1.0]), np.full(2, 0.5)
    z, r, D, lv = np.zeros(2), np.zeros(2), np.zeros(2), np.zeros(2)
    args = (0, y, c, z, r, D, lv)
    K.row_state(*args)
    indptr, rows, vals = np.array([0, 2], dtype=np.int64), np.array([0, 1], dtype=np.int32), np.ones(2)
    K.screen_block(indptr, rows, vals, r, 0.0, 0.0, cache.slot_of, cache.parked_w, 0, np.empty(1, dtype=np.int64))
    cache.add(0, indptr, rows, vals, [0])
    K.cdn_update(*args, rows, vals, 0, 2, 0.0, 0.1)
    K.train(*args, *cache.arrays()[:-1], cache.counts, 0.1, 1, True)
    K.cache_violation(cache.rows, cache.vals, cache.start, cache.length, cache.w, 1, r, D, 0.1)
    K.intercept_update(*args)
    K.compact(cache.rows, cache.vals, cache.start, cache.length, 1)
    K.evict(0, 1, cache.start, cache.length, cache.feature, cache.w, cache.slot_of)
    _seed_thread(0)


def default_writers() -> int:
    """Writer threads by default: the paper's 5 where the machine has the cores, one core
    left to the trainer (at least one writer)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return min(5, max(1, cores - 1))


class _Shared:
    """What the threads share besides the cache: the row state, the sweep book-keeping, the
    stop flag and the first error raised in a thread."""

    def __init__(self, problem, n_blocks):
        self.n_blocks = n_blocks
        self.stop = threading.Event()
        self.error = None
        self.lock = threading.Lock()  # the sweep counters
        self.next_block = 0
        self.sweeps = {}  # sweep -> [blocks done, inserted, worst violation outside the cache, start time]
        self.rounds = 0  # the trainer's rounds so far
        # The last complete sweep: (sweep, inserted, worst, end time, cache violation then, seconds it
        # took, trainer rounds then).
        self.last_sweep = None
        self.cache_violation = np.inf
        self.writer_reads = 0

    def take_block(self):
        with self.lock:
            k = self.next_block
            self.next_block += 1
            sweep = k // self.n_blocks
            self.sweeps.setdefault(sweep, [0, 0, 0.0, time.perf_counter()])
            return k % self.n_blocks, sweep

    def block_done(self, sweep, inserted, worst, reads):
        with self.lock:
            row = self.sweeps[sweep]
            row[0] += 1
            row[1] += inserted
            row[2] = max(row[2], worst)
            self.writer_reads += int(reads)
            if row[0] == self.n_blocks:
                now = time.perf_counter()
                self.last_sweep = (sweep, row[1], row[2], now, self.cache_violation, now - row[3], self.rounds)
                del self.sweeps[sweep]


class FeatureCachedLoops(Solver):
    r"""Feature cached loops: writer threads generate and screen candidate columns, a trainer
    thread runs CDN on the cached ones (module docstring; ALGORITHMS.md sec. 6).

    Minimises, over a generated space of p candidate features phi_j,

    .. math::

        P(w, b) = \sum_i c_i \, \mathrm{loss}(y_i, \phi(x_i) \cdot w + b) + \lambda \|w\|_1

    (:class:`~l1scale.problems.GeneratedProblem`).

    Parameters
    ----------
    cache_bytes : int or str, default "1GB"
        Memory budget of the column cache (12 bytes per cached nonzero).
    tol : float, default 1e-6
        Stop when every candidate's KKT violation is at most tol * lam.
    max_sweeps : int, default 1000
        Writer sweeps over the whole space before giving up (``max_iter`` is an alias).
    max_time : float, optional
        Seconds before giving up.
    n_writers : int, optional
        Writer threads; default min(5, cores - 1), at least 1 (the paper ran 5).
    threads : bool, default True
        False: one thread alternates a block of writing and a round of training (reproducible
        for a seed; the reference of the thread-safety test).
    report_every : float, default 0.5
        Seconds between History rows (threads) or blocks between them (sequential).
    random_state : int or None
    verbose, callback
        A progress line / ``callback(row, history)`` per History row.

    Attributes
    ----------
    progress_ : list of dict
        Per History row: seconds, objective, KKT violation on the cache, nnz, cached columns
        and bytes, parked weights (nonzero, column evicted), inserted, evicted (by the trainer,
        for room, and of those for room the nonzero ones), dropped (violators too long for an
        emptied cache, updated in place), complete sweeps.
    """

    name = "fcl"
    data_access = "generated"
    requires = ("smooth",)

    @classmethod
    def from_estimator(cls, settings):
        """``max_iter`` is the cap on sweeps; the feature cache takes ``cache_bytes`` (default 1GB)."""
        return cls(
            cache_bytes="1GB" if settings.cache_bytes is None else settings.cache_bytes,
            tol=settings.tol,
            max_sweeps=settings.max_iter,
            random_state=settings.random_state,
            callback=settings.callback,
            verbose=settings.verbose,
        )

    def __init__(
        self,
        cache_bytes="1GB",
        tol=1e-6,
        max_sweeps=1000,
        *,
        max_iter=None,
        max_time=None,
        n_writers=None,
        threads=True,
        report_every=0.5,
        random_state=None,
        verbose=0,
        callback=None,
    ):
        self.cache_bytes = parse_bytes(cache_bytes)
        if not tol > 0:
            raise ValueError(f"tol must be > 0, got {tol!r}")
        self.tol = float(tol)
        self.max_sweeps = int(max_iter if max_iter is not None else max_sweeps)
        if self.max_sweeps < 1:
            raise ValueError(f"max_sweeps must be >= 1, got {self.max_sweeps}")
        self.max_iter = self.max_sweeps
        self.max_time = None if max_time is None else float(max_time)
        self.n_writers = default_writers() if n_writers is None else int(n_writers)
        if self.n_writers < 1:
            raise ValueError(f"n_writers must be >= 1, got {n_writers!r}")
        self.threads, self.report_every = bool(threads), float(report_every)
        self.random_state, self.verbose, self.callback = random_state, verbose, callback

    # ------------------------------------------------------------------ set-up
    def solve(self, problem: ProblemLike, coef_init=None, intercept_init=None) -> Result:
        if getattr(problem, "kind", None) != "generated":
            raise TypeError("FeatureCachedLoops solves a GeneratedProblem (a feature space over raw inputs)")
        if coef_init is not None or intercept_init is not None:
            raise ValueError("fcl starts from w = 0 and the intercept-only b (no warm start)")
        self.check_problem(problem)
        compile_seconds = _warm_up()
        self.problem = problem
        self.lam1 = problem.lam
        self.threshold = self.tol * self.lam1
        n, kind = problem.n_samples, problem.loss.kernel_id
        seed = np.random.SeedSequence(self.random_state)
        self.cache = FeatureCache(problem.n_features, self.cache_bytes, np.random.default_rng(seed.spawn(1)[0]))
        self.trainer_seed = int(seed.generate_state(1)[0] % (2**31))
        self.z = np.full(n, problem.intercept_only())
        self.r, self.D, self.lv = np.empty(n), np.empty(n), np.empty(n)
        self.kernel_args = (kind, problem.y, problem.c, self.z, self.r, self.D, self.lv)
        K.row_state(*self.kernel_args)
        self.intercept = float(self.z[0]) if n else 0.0
        self.history, self.progress_ = History(), []
        self.t0 = time.perf_counter()
        self.trainer_reads = 0
        self._run()
        return self._result(compile_seconds)

    # ------------------------------------------------------------------ the loops
    def _run(self):
        shared = _Shared(self.problem, self.problem.space.n_blocks_)
        self.shared = shared
        self.stop_reason = "max_iter"
        while True:
            if self.threads:
                self._threaded_phase(shared)
            else:
                self._sequential_phase(shared)
            if shared.error is not None:
                raise shared.error
            if self.stop_reason in ("max_iter", "max_time"):
                return
            # Verify with the threads stopped: converge on the cache, then one full sweep.
            self._converge_on_cache()
            inserted, worst = self._full_sweep()
            self._record(shared)
            if inserted == 0:
                self.certificate = max(self._cache_violation(), worst, self._intercept_violation())
                # Otherwise the cache itself was not solved in _converge_on_cache's rounds.
                self.stop_reason = "kkt" if self.certificate <= self.threshold else "max_iter"
                return
            self.stop_reason = "max_iter"

    def _sweeps_done(self, shared):
        return shared.next_block // shared.n_blocks

    def _over(self, shared) -> bool:
        if self._sweeps_done(shared) >= self.max_sweeps:
            self.stop_reason = "max_iter"
            return True
        if self.max_time is not None and time.perf_counter() - self.t0 > self.max_time:
            self.stop_reason = "max_time"
            return True
        last = shared.last_sweep
        if last is not None and last[1] == 0 and shared.cache_violation <= self.threshold:
            self.stop_reason = "verify"
            return True
        return False

    def _threaded_phase(self, shared):
        shared.stop.clear()
        shared.last_sweep = None
        workers = [
            threading.Thread(
                target=self._guard, args=(shared, self._writer_loop), daemon=True, name=f"l1scale-fcl-writer-{w}"
            )
            for w in range(self.n_writers)
        ]
        workers.append(
            threading.Thread(
                target=self._guard, args=(shared, self._trainer_loop), daemon=True, name="l1scale-fcl-trainer"
            )
        )
        for t in workers:
            t.start()
        last_record = time.perf_counter()
        try:
            # The writers apply the stopping rule (they see each sweep end); this thread records
            # a History row every report_every seconds and watches the clock.
            while not shared.stop.wait(min(self.report_every, 0.05)):
                if self.max_time is not None and time.perf_counter() - self.t0 > self.max_time:
                    self.stop_reason = "max_time"
                    break
                if time.perf_counter() - last_record >= self.report_every:
                    self._record(shared)
                    last_record = time.perf_counter()
        finally:
            shared.stop.set()
            for t in workers:
                t.join()

    def _sequential_phase(self, shared):
        """One thread: a block written, then a round of training, in turn (reproducible)."""
        shared.last_sweep = None
        _seed_thread(self.trainer_seed + self._sweeps_done(shared))
        while not self._over(shared):
            if not self._idle(shared):
                self._write_one(shared)
            self._train_round(shared)
            if shared.next_block % max(1, int(self.report_every * 10)) == 0:
                self._record(shared)

    @staticmethod
    def _guard(shared, loop):
        try:
            loop(shared)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread, which raises it
            shared.error = exc
            shared.stop.set()

    def _writer_loop(self, shared):
        while not shared.stop.is_set():
            if self._over(shared):  # here, not in the main thread: a busy writer could starve it of the GIL
                shared.stop.set()
                return
            if self._idle(shared):
                time.sleep(0.001)
                continue
            self._write_one(shared)

    def _idle(self, shared) -> bool:
        """After a sweep that inserted nothing, sweeping again before the trainer has moved the
        margins finds nothing either, and takes a core from the trainer: a writer about to
        start a sweep waits until the trainer has converged on the cache (then the loops stop
        and verify), has cut its KKT violation tenfold, or has run 1000 rounds (a stalled trainer)."""
        last = shared.last_sweep
        if last is None or last[1] > 0 or shared.next_block % shared.n_blocks:
            return False
        violation, rounds = last[4], last[6]
        if shared.cache_violation <= max(self.threshold, 0.1 * violation):
            return False
        # Counted in the trainer's rounds (not seconds), so the sequential mode is reproducible.
        return shared.rounds - rounds < 1000

    def _trainer_loop(self, shared):
        _seed_thread(self.trainer_seed + self._sweeps_done(shared))
        while not shared.stop.is_set():
            if self.cache.n_slots == 0 and not self.problem.fit_intercept:
                time.sleep(0.001)
                continue
            self._train_round(shared)

    def _write_one(self, shared):
        """Generate block k, screen it against the shared state, insert its violators."""
        k, sweep = shared.take_block()
        inserted, worst, reads = self._write_block(k, lock=True)
        shared.block_done(sweep, inserted, worst, reads)

    def _write_block(self, k, lock):
        """Generate block k, screen it, insert its violators (under the cache's lock when
        ``lock``); returns (columns inserted or updated in place, the largest KKT violation
        outside the cache before insertion, nonzeros read)."""
        j0, indptr, rows, vals = self.problem.space.column_block(self.problem.raw, k)
        keep = np.empty(indptr.shape[0] - 1, dtype=np.int64)
        cache = self.cache
        count, worst, _, reads = K.screen_block(
            indptr, rows, vals, self.r, self.lam1, self.threshold, cache.slot_of, cache.parked_w, j0, keep
        )
        changed = 0
        if count:
            with cache.lock if lock else _NO_LOCK:
                inserted, dropped = cache.add(j0, indptr, rows, vals, keep[:count].tolist())
                if dropped:
                    self._update_in_place(j0, indptr, rows, vals, dropped)
            changed = inserted + len(dropped)
        return changed, worst, reads

    def _update_in_place(self, j0, indptr, rows, vals, chosen):
        """CDN steps on violators too long for even an emptied cache, on the generated block
        itself (hold the lock): their weights move and are parked."""
        cache = self.cache
        for m in chosen:
            j, a = j0 + m, int(indptr[m])
            size = int(indptr[m + 1]) - a
            w = cache.weight(j)
            for _ in range(10):  # a few Newton steps: the column is in hand only now
                w, before, _, moved = K.cdn_update(*self.kernel_args, rows, vals, a, size, w, self.lam1)
                cache.counts[2] += 1
                cache.counts[4] += 2 * size
                if not moved or before <= self.threshold:
                    break
            cache.set_uncached_weight(j, w)

    def _train_round(self, shared):
        """About one pass of random CDN updates over the cache, an intercept step, and the
        cache's KKT violation, under the lock (a writer waits at most one round to insert)."""
        cache = self.cache
        with cache.lock:
            n = cache.n_slots
            if n:
                K.train(*self.kernel_args, *cache.arrays()[:-1], cache.counts, self.lam1, n, True)
            if self.problem.fit_intercept:
                step, _ = K.intercept_update(*self.kernel_args)
                self.intercept += step
            shared.cache_violation = max(self._cache_violation(), self._intercept_violation())
            shared.rounds += 1

    def _cache_violation(self) -> float:
        c = self.cache
        worst, reads = K.cache_violation(c.rows, c.vals, c.start, c.length, c.w, c.n_slots, self.r, self.D, self.lam1)
        self.trainer_reads += int(reads)
        return float(worst)

    def _intercept_violation(self) -> float:
        return abs(float(self.r.sum())) if self.problem.fit_intercept else 0.0

    def _converge_on_cache(self, max_rounds=10000):
        _seed_thread(self.trainer_seed + 7919 * (1 + self._sweeps_done(self.shared)))
        for _ in range(max_rounds):
            self._train_round(self.shared)
            if self.shared.cache_violation <= self.threshold:
                return

    def _full_sweep(self):
        """One sequential sweep over every block with the state frozen; returns (inserted,
        the largest KKT violation outside the cache before insertion)."""
        inserted, worst = 0, 0.0
        for k in range(self.problem.space.n_blocks_):
            changed, w, reads = self._write_block(k, lock=False)
            self.shared.writer_reads += int(reads)
            worst = max(worst, w)
            inserted += changed
        return inserted, worst

    # ------------------------------------------------------------------ reporting
    def objective(self) -> float:
        return float(self.lv.sum() + self.lam1 * self.cache.l1())

    def _record(self, shared):
        c = self.cache
        with c.lock:  # the trainer's round finished: margins, weights and slots agree
            n = c.n_slots
            row = {
                "seconds": time.perf_counter() - self.t0,
                "objective": self.objective(),
                "violation": shared.cache_violation,
                "nnz": int(np.count_nonzero(c.w[:n])) + c.n_parked,
                "cached_columns": n,
                "cached_bytes": c.nbytes,
                "parked": c.n_parked,
                "inserted": c.inserted,
                "evicted": int(c.counts[3]),
                "evicted_for_room": c.evicted_for_room,
                "evicted_nonzero": c.evicted_nonzero,
                "dropped": c.dropped,
                "sweeps": self._sweeps_done(shared),
            }
        self.progress_.append(row)
        self.history.append(
            objective=row["objective"],
            certificate=row["violation"],
            nnz=row["nnz"],
            time=row["seconds"],
            data_accesses=shared.writer_reads + int(c.counts[4]),
            active=n,
        )
        if self.verbose:
            print(
                f"fcl {row['seconds']:7.2f}s  objective {row['objective']:.8g}  kkt {row['violation']:.2e}  "
                f"nnz {row['nnz']:6d}  cache {n} cols / {row['cached_bytes'] / 2**20:.1f} MiB  "
                f"inserted {row['inserted']}  evicted {row['evicted'] + row['evicted_for_room']}  "
                f"sweeps {row['sweeps']}",
                flush=True,
            )
        if self.callback is not None:
            self.callback(len(self.history), self.history)

    def _result(self, compile_seconds) -> Result:
        p = self.problem
        coef = self.cache.coef(p.n_features)
        converged = self.stop_reason == "kkt"
        cert = getattr(self, "certificate", np.nan)
        if not converged:
            cert = max(self.shared.cache_violation, self._intercept_violation())
            why = {
                "max_time": f"max_time={self.max_time} s ran out",
                "max_iter": f"max_sweeps={self.max_sweeps} writer sweeps ran out",
            }[self.stop_reason]
            warnings.warn(
                f"fcl stopped before certifying optimality over the feature space: {why}",
                ConvergenceWarning,
                stacklevel=3,
            )
        return Result(
            coef=coef,
            intercept=float(self.intercept),
            objective=self.objective(),
            n_iter=self._sweeps_done(self.shared),
            converged=converged,
            stop_reason=self.stop_reason,
            certificate_name="kkt",
            certificate=float(cert),
            relative_certificate=float(cert / self.lam1),
            history=self.history,
            timings={"solve": time.perf_counter() - self.t0, "compile": compile_seconds},
        )
