"""The Online algorithm of Balakrishnan & Madigan (Algorithm 2): one pass, per-example updates.

For each example i, with beta_{i-1} = (w, b) the estimate so far,

1. take the quadratic approximation of its log-likelihood at c_hat = x_i . beta_{i-1}:
   a_i = -s_i loss''/2, b_i = s_i (loss'' c_hat - loss') (Appendix A's a_i, b_i);
2. Psi += a_i x_i x_i^T, theta += b_i x_i (the intercept is one more coordinate of x, = 1);
3. beta_i = modified Shooting(Psi, theta, beta_{i-1}, gamma_i).

It minimises, in the limit, the problem of :class:`~l1scale.problems.StreamProblem`
(gamma = W lam l1_ratio in the paper's sum form). The two heuristics of sec. 4.1:

- ``schedule="linear"`` (default): gamma_i = W_i lam, W_i the weight of the examples seen
  so far, so the prior grows with the data instead of shrinking the early estimates
  (``"constant"``: gamma = W lam from the start, W the stream's total weight);
- ``block=B``: after each block of B examples the block's approximations are taken
  again at the beta reached at its end (the old a_i, b_i are replaced), and Shooting
  runs once more. Blocks do not span chunks.

Omega = 2 Psi' beta + theta is kept up to date in O(nnz(x_i)) per example (the change of
Psi' beta from the new term is a_i x_i (x_i . beta) - a_i x_i^2 beta). Psi is dense for small
d; otherwise only the pairs of coordinates that occur together in some example are
stored (memory grows with the data's co-occurrences, up to O(d^2) as the paper says;
for wide data use RMMP). Each example costs O(f^2) for the sketch and O(d) per Shooting
sweep plus O(column) per moved coordinate.

``partial_fit`` continues the pass with new examples; the state keeps Psi, theta,
Omega and beta.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..problems.base import ProblemLike
from .base import History, Result, Solver, Timer
from .shooting import Sketch, shooting_sweeps, taylor_terms

__all__ = ["OnlineSketch", "OnlineSketchState"]

_DENSE_SKETCH_MAX = 4096


@njit(cache=True)
def _room_needed(col_len, col_cap, pos, m_i):
    """Pool entries to reserve so that every column of the example can take m_i - 1 new pairs."""
    need = 0
    for q in range(m_i):
        j = pos[q]
        want = col_len[j] + m_i - 1
        if want > col_cap[j]:
            need += max(2 * col_cap[j], want, 8)
    return need


class _Rows(NamedTuple):
    """A chunk's examples as ``_online_rows`` reads them (not changed by the kernel).

    Attributes
    ----------
    data, indices, indptr, dense
        The rows of X in row layout (:attr:`l1scale.data.memory.Matrix.arrays`).
    y, s : ndarray (rows,)
        Labels in {-1, +1} (or targets) and weights.
    """

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    dense: bool
    y: np.ndarray
    s: np.ndarray


class _SketchArrays(NamedTuple):
    """The arrays of a :class:`~l1scale.solvers.shooting.Sketch` (changed in place by the kernels;
    ``used``, a scalar, travels beside them).

    Attributes
    ----------
    diag, col_start, col_len, col_cap, rows, vals, dense
        As :class:`~l1scale.solvers.shooting.Sketch`.
    """

    diag: np.ndarray
    col_start: np.ndarray
    col_len: np.ndarray
    col_cap: np.ndarray
    rows: np.ndarray
    vals: np.ndarray
    dense: bool

    @classmethod
    def of(cls, sk: Sketch) -> _SketchArrays:
        return cls(sk.diag, sk.col_start, sk.col_len, sk.col_cap, sk.rows, sk.vals, sk.dense)


class _Estimate(NamedTuple):
    """What Algorithm 2 updates besides the sketch, in place: shapes (m,) but for the block's
    terms (block,) and stats (3,).

    Attributes
    ----------
    theta, omega, beta : ndarray (m,)
        theta, Omega = 2 Psi' beta + theta, and beta (the intercept last).
    a_block, c_block : ndarray (block,)
        The quadratic terms a_i, b_i of the current block's examples.
    stats : ndarray of int64 (3,)
        [data accesses, Shooting sweeps, unconverged Shootings].
    """

    theta: np.ndarray
    omega: np.ndarray
    beta: np.ndarray
    a_block: np.ndarray
    c_block: np.ndarray
    stats: np.ndarray


class _Settings(NamedTuple):
    """What stays fixed over a chunk.

    Attributes
    ----------
    kind : int
        The loss's kernel id.
    block : int
        B of sec. 4.1's block heuristic.
    intercept : int
        Coordinate of the intercept in beta (-1: none).
    gamma, rho : ndarray (m,)
        L1 and L2 penalties per coordinate (0 for the intercept).
    fixed_scale : float
        The penalty scale W of the constant schedule (0: the linear schedule, max(seen, floor_scale)).
    floor_scale : float
        The linear schedule's least scale.
    tol : float
        Shooting's tolerance.
    max_sweeps : int
        Shooting's sweeps per example.
    """

    kind: int
    block: int
    intercept: int
    gamma: np.ndarray
    rho: np.ndarray
    fixed_scale: float
    floor_scale: float
    tol: float
    max_sweeps: int


@njit(cache=True)
def _add_pairs(sk, used, pos, val, m_i, a, mark, found):
    """Psi' += a (x x^T - diag(x^2)) on the example's coordinates ``pos[:m_i]``; returns ``used``.

    Dense: direct. Sparse: each column of the example is scanned once against a marker of
    the example's coordinates; missing pairs are appended (the column moves to the end of
    the pool with twice the room when full; the caller has reserved the room).
    ``sk``: ``_SketchArrays``.
    """
    col_start, col_len, col_cap, rows, vals = sk.col_start, sk.col_len, sk.col_cap, sk.rows, sk.vals
    m = col_start.shape[0]
    if sk.dense:
        for q in range(m_i):
            aq = a * val[q]
            base = pos[q] * m
            for r in range(m_i):
                if r != q:
                    vals[base + pos[r]] += aq * val[r]
        return used
    for q in range(m_i):
        mark[pos[q]] = q
    for q in range(m_i):
        j = pos[q]
        aq = a * val[q]
        start, length = col_start[j], col_len[j]
        for p in range(start, start + length):
            r = mark[np.uint64(rows[p])]
            if r >= 0:
                vals[p] += aq * val[r]
                found[r] = True
        missing = 0
        for r in range(m_i):
            if r != q and not found[r]:
                missing += 1
        if missing > 0:
            if length + missing > col_cap[j]:
                cap = max(2 * col_cap[j], length + missing, 8)
                for t in range(length):  # a loop: a slice assigned an array compiles a shape check
                    rows[used + t] = rows[start + t]
                    vals[used + t] = vals[start + t]
                start = used
                col_start[j], col_cap[j] = used, cap
                used += cap
            for r in range(m_i):
                if r != q and not found[r]:
                    rows[start + length] = pos[r]
                    vals[start + length] = aq * val[r]
                    length += 1
            col_len[j] = length
        for r in range(m_i):
            found[r] = False
    for q in range(m_i):
        mark[pos[q]] = -1
    return used


@njit(cache=True)
def _gather(chunk, i, intercept, beta, pos, val):
    """Example i's nonzero coordinates (intercept last) into pos/val; returns (m_i, margin).
    ``chunk``: ``_Rows``."""
    data, indices, indptr, dense_x = chunk.data, chunk.indices, chunk.indptr, chunk.dense
    m_i = 0
    z = 0.0
    start = indptr[i]
    for p in range(start, indptr[i + 1]):
        v = data[p]
        if v != 0.0:
            j = p - start if dense_x else indices[p]
            pos[m_i] = j
            val[m_i] = v
            z += v * beta[j]
            m_i += 1
    if intercept >= 0:
        pos[m_i] = intercept
        val[m_i] = 1.0
        z += beta[intercept]
        m_i += 1
    return m_i, z


@njit(cache=True)
def _add_term(sk, est, used, pos, val, m_i, z, a, c, mark, found):
    """Add a (x.beta)^2 + c (x.beta) to the sketch, keeping Omega = 2 Psi' beta + theta;
    returns ``used``. ``sk``: ``_SketchArrays``; ``est``: ``_Estimate``."""
    diag, theta, omega, beta = sk.diag, est.theta, est.omega, est.beta
    for q in range(m_i):
        j = pos[q]
        v = val[q]
        diag[j] += a * v * v
        theta[j] += c * v
        omega[j] += c * v + 2.0 * a * v * (z - v * beta[j])
    return _add_pairs(sk, used, pos, val, m_i, a, mark, found)


@njit(cache=True, inline="always")
def _shoot_now(sk, est, settings, seen):
    """Shooting at the penalty scale of the weight ``seen``; counts its sweeps and failures in
    est.stats[1:]."""
    scale = max(seen, settings.floor_scale) if settings.fixed_scale <= 0.0 else settings.fixed_scale
    sweeps, ok, _ = shooting_sweeps(
        sk.diag,
        sk.col_start,
        sk.col_len,
        sk.rows,
        sk.vals,
        sk.dense,
        est.omega,
        est.beta,
        settings.gamma,
        settings.rho,
        scale,
        settings.tol,
        settings.max_sweeps,
    )
    est.stats[1] += sweeps
    est.stats[2] += 0 if ok else 1


@njit(cache=True)
def _online_rows(chunk, sk, est, settings, row, block_start, used, seen):
    """Algorithm 2 over rows [row, n) of a chunk, resuming inside the block at ``block_start``.

    ``chunk`` (``_Rows``) is read; ``sk`` (``_SketchArrays``, ``used`` of its pool
    entries in use) and ``est`` (``_Estimate``) are updated in place; ``settings``:
    ``_Settings``. Returns (row reached, its block start, used, weight seen). It stops early,
    before touching an example, when the pool lacks room for it (the caller grows the pool
    and calls again).
    """
    y, s = chunk.y, chunk.s
    a_block, c_block, stats = est.a_block, est.c_block, est.stats
    kind, block, intercept = settings.kind, settings.block, settings.intercept
    n = y.shape[0]
    m = est.beta.shape[0]
    pos = np.empty(m, dtype=np.int64)
    val = np.empty(m)
    mark = np.full(m, -1, dtype=np.int64)
    found = np.zeros(m, dtype=np.bool_)
    while block_start < n:
        block_end = min(block_start + block, n)
        while row < block_end:
            m_i, z = _gather(chunk, row, intercept, est.beta, pos, val)
            if not sk.dense and used + _room_needed(sk.col_len, sk.col_cap, pos, m_i) > sk.rows.shape[0]:
                return row, block_start, used, seen
            a, c = taylor_terms(kind, y[row], s[row], z)
            a_block[row - block_start] = a
            c_block[row - block_start] = c
            used = _add_term(sk, est, used, pos, val, m_i, z, a, c, mark, found)
            seen += s[row]
            stats[0] += m_i
            _shoot_now(sk, est, settings, seen)
            row += 1
        if block > 1:
            # Sec. 4.1's block heuristic: the block's terms again, at the beta reached now.
            for i in range(block_start, block_end):
                m_i, z = _gather(chunk, i, intercept, est.beta, pos, val)
                a, c = taylor_terms(kind, y[i], s[i], z)
                used = _add_term(
                    sk,
                    est,
                    used,
                    pos,
                    val,
                    m_i,
                    z,
                    a - a_block[i - block_start],
                    c - c_block[i - block_start],
                    mark,
                    found,
                )
                stats[0] += m_i
            _shoot_now(sk, est, settings, seen)
        block_start = block_end
    return row, block_start, used, seen


class OnlineSketchState:
    """What the Online algorithm carries from one example to the next.

    Attributes
    ----------
    sketch : Sketch
        Psi over the d features (+ the intercept, last).
    theta, omega, beta : ndarray (m,)
    seen : float
        Weight of the examples processed.
    n_seen : int
    stats : ndarray of int64
        [data accesses, Shooting sweeps, unconverged Shootings].
    """

    def __init__(self, n_features: int, fit_intercept: bool, *, sketch="auto"):
        m = n_features + int(fit_intercept)
        if sketch not in ("auto", "dense", "sparse"):
            raise ValueError(f"sketch={sketch!r}; choose 'auto', 'dense' or 'sparse'")
        dense = sketch == "dense" or (sketch == "auto" and m <= _DENSE_SKETCH_MAX)
        self.sketch = Sketch.zeros_dense(m) if dense else Sketch.zeros_sparse(m, capacity=1 << 16)
        self.n_features, self.fit_intercept = n_features, fit_intercept
        self.theta, self.omega, self.beta = np.zeros(m), np.zeros(m), np.zeros(m)
        self.seen, self.n_seen = 0.0, 0
        self.stats = np.zeros(3, dtype=np.int64)

    @property
    def coef(self):
        return self.beta[: self.n_features].copy()

    @property
    def intercept(self) -> float:
        return float(self.beta[-1]) if self.fit_intercept else 0.0

    def grow(self, need: int):
        """Give the sparse pool room for ``need`` more entries (it at least doubles)."""
        sk = self.sketch
        size = max(2 * sk.rows.shape[0], sk.used + need)
        rows, vals = np.zeros(size, dtype=np.int64), np.zeros(size)
        rows[: sk.used], vals[: sk.used] = sk.rows[: sk.used], sk.vals[: sk.used]
        sk.rows, sk.vals = rows, vals


class OnlineSketch(Solver):
    """Online L1 logistic / probit regression (Algorithm 2) with sec. 4.1's heuristics.

    The problem gives lam and l1_ratio (mean-loss form): gamma_i = W_i lam l1_ratio, W_i the
    weight seen up to example i.

    Parameters
    ----------
    schedule : {"linear", "constant"}, default "linear"
        gamma_i grows with the weight seen, or is W lam from the first example
        (``total_weight`` is then needed).
    block : int, default 1
        B: re-take each block's approximations at the beta reached after it.
    shooting_tol : float, default 1e-6
        Shooting's relative-change tolerance (the paper's value).
    max_sweeps : int, default 100
        Sweeps of Shooting per example.
    sketch : {"auto", "dense", "sparse"}
    """

    name = "online"
    data_access = "stream"
    requires = ("smooth", "curvature_kernel")

    @property
    def needs_label_pass(self):
        """The constant schedule needs W before the first example; the linear one nothing."""
        return self.schedule == "constant"

    @classmethod
    def from_estimator(cls, settings):
        """One pass (Algorithm 2): no tolerance or iteration cap to take."""
        return cls(callback=settings.callback, verbose=settings.verbose)

    def __init__(
        self,
        *,
        schedule="linear",
        gamma_start=1.0,
        block=1,
        shooting_tol=1e-6,
        max_sweeps=100,
        sketch="auto",
        callback=None,
        verbose=0,
    ):
        if schedule not in ("linear", "constant"):
            raise ValueError(f"schedule={schedule!r}; choose 'linear' or 'constant'")
        if int(block) < 1:
            raise ValueError(f"block must be >= 1, got {block!r}")
        if not gamma_start >= 0:
            raise ValueError(f"gamma_start must be >= 0, got {gamma_start!r}")
        self.schedule, self.block, self.gamma_start = schedule, int(block), float(gamma_start)
        self.shooting_tol, self.max_sweeps, self.sketch = float(shooting_tol), int(max_sweeps), sketch
        self.callback, self.verbose = callback, verbose

    def new_state(self, n_features, fit_intercept) -> OnlineSketchState:
        return OnlineSketchState(n_features, fit_intercept, sketch=self.sketch)

    def partial_fit(self, state: OnlineSketchState, rows, y, s, *, kind, l1, l2, total_weight=None):
        """Process one chunk (rows: Matrix in row layout; y in {-1, +1} or targets; s weights)."""
        d = state.n_features
        m = state.beta.shape[0]
        gamma = np.full(m, float(l1))
        rho = np.full(m, float(l2))
        intercept = -1
        if state.fit_intercept:
            gamma[-1] = rho[-1] = 0.0
            intercept = d
        if self.schedule == "constant":
            if total_weight is None:
                raise ValueError("schedule='constant' needs the total weight of the data (unknown to partial_fit)")
            fixed = float(total_weight)
        else:
            fixed = 0.0
        # The linear schedule starts from gamma_start (a unit Laplace prior by default),
        # never above the final gamma when the total weight is known.
        floor = self.gamma_start / l1 if l1 > 0 else 0.0
        if total_weight is not None:
            floor = min(floor, float(total_weight))
        est = _Estimate(state.theta, state.omega, state.beta, np.empty(self.block), np.empty(self.block), state.stats)
        settings = _Settings(kind, self.block, intercept, gamma, rho, fixed, floor, self.shooting_tol, self.max_sweeps)
        chunk = _Rows(*rows.arrays, y, s)
        row = block_start = 0
        sk = state.sketch
        n = y.shape[0]
        while row < n or block_start < n:
            # The pool's arrays change when it grows: their tuple is taken at every call.
            row, block_start, used, seen = _online_rows(
                chunk, _SketchArrays.of(sk), est, settings, row, block_start, sk.used, state.seen
            )
            sk.used, state.seen = int(used), float(seen)
            if row < n:
                state.grow(1 << 16)
        state.n_seen += n
        return state

    def solve(self, problem: ProblemLike, coef_init=None, intercept_init=None, *, state=None) -> Result:
        """One pass over ``problem`` (kind ``"stream"``; Algorithm 2), continuing ``state`` when given;
        the state reached is left in ``self.state_`` (for ``partial_fit`` afterwards)."""
        self.check_problem(problem)
        if coef_init is not None or intercept_init is not None:
            raise ValueError("the Online algorithm starts from beta = 0 (Algorithm 2); it takes no warm start")
        timer = Timer()
        state = self.new_state(problem.n_features, problem.fit_intercept) if state is None else state
        self.state_ = state
        history = History()
        if problem.penalty is None:
            raise ValueError("the Online algorithm needs lam (lam_ratio needs lam_max, i.e. a pass first)")
        pen = problem.penalty
        for k, (rows, y, s, _) in enumerate(problem.chunks()):
            self.partial_fit(
                state, rows, y, s, kind=problem.loss.kernel_id, l1=pen.l1, l2=pen.l2, total_weight=problem.weight_sum
            )
            history.append(
                objective=np.nan,
                certificate=np.nan,
                nnz=np.count_nonzero(state.coef),
                time=timer(),
                data_accesses=int(state.stats[0]),
            )
            if self.verbose:
                print(
                    f"online chunk {k + 1:4d}  examples {state.n_seen:9d}  nnz {history.nnz[-1]:6d}  "
                    f"sketch {state.sketch.used if not state.sketch.dense else state.sketch.size**2:10d}  "
                    f"{history.time[-1]:7.2f}s",
                    flush=True,
                )
            if self.callback is not None:
                self.callback(k + 1, history)
        return Result(
            coef=state.coef,
            intercept=state.intercept,
            objective=np.nan,
            n_iter=1,
            converged=False,
            stop_reason="one_pass",
            certificate_name="none",
            certificate=np.nan,
            relative_certificate=np.nan,
            history=history,
            timings={"solve": timer(), "compile": timer.compiled()},
        )
