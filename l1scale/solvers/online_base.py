"""Passes of an online first-order solver over a stream, the way Vowpal Wabbit runs them.

An online solver (SMIDAS, truncated gradient, SGD with cumulative penalty) learns from
one example at a time in a jitted kernel that costs O(nnz(x_i)) per example whatever d
(lazy penalties). This module drives it over a :class:`~l1scale.problems.StreamProblem`:

- ``max_iter`` passes over the stream, the learning rate decaying across passes as each
  solver defines;
- **progressive validation**: every example's loss is taken with the weights *before*
  the example is learned from, so the progressive loss of the first pass is an honest
  estimate of the test loss (river, VW);
- a **holdout**: every ``holdout``-th example (VW's default 10, used when there are
  several passes) is never learned from; its loss is the holdout loss of the pass, and
  training stops early when it has not improved for ``n_iter_no_change`` passes, keeping
  the weights of the best pass;
- one History row per pass: examples seen, progressive and holdout loss, nnz(w),
  data accesses (stored values of X read: nnz(x_i) to score an example, as many again
  to learn from it, as SCD reads a column for its gradient and again for the margins), seconds; ``compute_objective=True`` adds a pass
  that evaluates the objective P(w, b) on all the rows.

A subclass defines ``new_state(n_features, fit_intercept)`` (an object with ``coef``,
``intercept`` and ``set_weights(coef, intercept)``), optionally ``_start(problem, state, fresh)``
(what it takes from the problem before the first pass), ``_learn(state, rows, y, s, first_row, pass_index, kind, l1, l2, holdout)``
(runs its kernel on one chunk, the weights ``s`` scaled to mean 1 over the data, and the
holdout rows, ``(first_row + i) % holdout == holdout - 1``, scored but not learned from;
returns the :data:`STATS` sums) and ``_catch_up(state)``
(applies penalties still owed lazily, so the weights are exact at the end of a pass).

**Rates picked from the data** (``schedule="auto"``, the default, when the solver's rate is
not given): before the first pass, one pass over the data measures the rows' scale
(max_i ||x_i||^2, and what a solver's geometry needs) and draws a sample of up to
``CALIBRATION_ROWS`` rows; the reference rate is the solver's curvature bound (for SGD,
1 / (beta (max_i ||x_i||^2 + 1)), beta the loss's curvature bound), and Bottou's calibration
(``sgd``'s ``determineEta0``) tries it and its multiples by 2^k on the sample, one epoch each
from w = 0, keeping the rate with the lowest objective on the sample; the first pass runs at
``AUTO_RATE_FACTOR`` (2) times it (below). The rate then decays geometrically across passes,
constant within a pass, to 1 / ``AUTO_FINAL_FRACTION`` (1/300) of itself at the last of
``max_iter`` passes. A solver's subclass says what its reference rate is
(``_reference_rate``), which copy of itself runs one calibration epoch at a rate (``_trial``)
and how the resolved rate enters its kernel (``state.rate``). With ``precondition`` (the default)
the same pass sums each feature's squares and nonzeros and the rate becomes per-feature,
eta D_j with D_j = 1 / (RMS of feature j's nonzero values)^2 (:func:`feature_rates`; the
reference rate then from the rescaled sample rows x_ij sqrt(D_j)). ``partial_fit`` with no rate
calibrates on its first chunk. ``schedule="paper"`` takes the papers' (or VW's) fixed rules.

Two more parts of ``schedule="auto"``, measured on the shared data (benchmarks/results/stochastic_defaults.md):

- **shuffled rows** (``shuffle=None``, the default, is True with a calibrated rate): each chunk's rows are
  taken in a new random order every pass. Data files are often sorted (magic04 by class, w8a with
  its positives first): in file order the last rows of every pass pull the weights their way, and
  50 passes stopped 1e-3-1e-1 above the optimum where shuffled passes reach 1e-5-1e-7 (magic04
  with intercept, SGD-C: 7.7e-3 -> 1.9e-7). A given rate or ``schedule="paper"`` keeps the stream order.
- **the rate one octave above the calibrated one** (``AUTO_RATE_FACTOR``), decaying to
  1 / ``AUTO_FINAL_FRACTION`` = 1/300 of itself: the calibration picks the best rate for *one* epoch
  from w = 0, and over 50 decaying passes the runs that missed were far from the optimum, not
  noisy (a larger rate helped, averaging the passes' iterates did not). The octave is not taken
  when its trial epoch diverged (not finite, or above twice the objective at the start).
- **centred columns** (with an intercept and per-feature rates, in a fresh solve): a column whose
  |mean| exceeds ``CENTRE_RATIO`` (5) standard deviations is learned as x_ij - mean_j, with
  b + mean . w as the intercept: the same problem (the margins are the same, the penalty is
  w's), without the curvature that such offsets put along the columns' common mean (madelon,
  columns of mean ~480 and |mean| / std 10-800, 0.1 lam_max with intercept, 50 passes: SGD-C
  3.4e-2 -> 5.6e-5, SMIDAS 2.2e-2 -> 1.7e-4). The statistics come from the rate's pass, the
  per-feature rates from the centred columns, and the returned intercept (and the state left for
  ``partial_fit``) is the raw one; a checkpoint keeps the offsets (``state.center``). Sparse and
  one-hot columns never qualify (:meth:`FeatureStats.centring`).
"""

from __future__ import annotations

import copy
import math
import threading
import warnings
from queue import Empty, Queue
from typing import NamedTuple

import numpy as np
from numba import njit

from ..checkpoint import Checkpoint, problem_fingerprint, solver_fingerprint
from ..exceptions import ConvergenceWarning, DivergenceError
from ..losses import loss_value
from ..penalties import ElasticNet
from ..problems.base import ProblemLike
from ..problems.memory import CENTRE_RATIO, centred_design, centring_offsets, null_correlation
from .base import History, Result, Solver, Timer

_PREFETCH = 2  # chunks read ahead by the reader thread


def prefetched(chunks, depth: int = _PREFETCH):
    """Iterate ``chunks`` with a reader thread ``depth`` chunks ahead, as Vowpal Wabbit reads
    its cache in a parser thread: the next chunk is read (np.load, checks) while the kernel,
    which releases the GIL, learns from this one. The reader's errors are raised here."""
    done = object()
    queue: Queue = Queue(maxsize=depth)
    stop = threading.Event()

    def read():
        try:
            for item in chunks:
                if stop.is_set():
                    return
                queue.put(item)
            queue.put(done)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which raises it
            queue.put(exc)

    thread = threading.Thread(target=read, name="l1scale-reader", daemon=True)
    thread.start()
    try:
        while True:
            item = queue.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while thread.is_alive():  # unblock a reader waiting on a full queue
            try:
                queue.get_nowait()
            except Empty:
                thread.join(0.01)


__all__ = [
    "AUTO_FINAL_FRACTION",
    "AUTO_RATE_FACTOR",
    "CALIBRATION_ROWS",
    "SCHEDULES",
    "STATS",
    "CalibratedEta0",
    "Examples",
    "OnlineSolver",
    "OnlineState",
    "RowScale",
    "largest_row_norms",
    "prefetched",
    "score_example",
]

#: Rows of the sample on which ``schedule="auto"`` calibrates the rate (Bottou's sgd takes 1,000).
CALIBRATION_ROWS = 1000
#: ``schedule="auto"``: the rate of the last pass is the first pass's rate divided by this
#: (1000 before the shuffled passes and AUTO_RATE_FACTOR; 300 measured better with them).
AUTO_FINAL_FRACTION = 300.0
#: ``schedule="auto"``: the first pass's rate is the calibrated (best one-epoch) rate times this.
AUTO_RATE_FACTOR = 2.0
#: Calibration tries the reference rate times 2^k for |k| <= this.
_CALIBRATION_OCTAVES = 16
#: A calibration in which no trial beats its start is done again on the loss alone
#: (``OnlineSolver._calibrate``).
LOSS_ALONE_FALLBACK = True
SCHEDULES = ("auto", "paper")


class RowScale(NamedTuple):
    """What the automatic rates read from the data: rows read, max_i ||x_i||_2^2 and, for a
    solver that asks for it (SMIDAS), max_i ||x_i||_p^2 (nan otherwise)."""

    n: int
    max_sq: float
    max_p_sq: float


# What a kernel call adds up, in this order.
STATS = ("progressive_loss", "progressive_weight", "holdout_loss", "holdout_weight", "examples", "accesses")


class Examples(NamedTuple):
    """One chunk as an online kernel reads it (not changed by the kernel).

    Attributes
    ----------
    data, indices, indptr, dense
        The rows of X in row layout (:attr:`l1scale.data.memory.Matrix.arrays`).
    y, s : ndarray (rows,)
        Labels in {-1, +1} (or targets) and weights.
    order : ndarray of int64 (rows,)
        The rows in the order taken.
    first_row : int
        Index of the chunk's first row in the pass.
    holdout : int
        Row i is held out (scored, not learned from) when ``(first_row + i) % holdout == holdout - 1``;
        0: none.
    """

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    dense: bool
    y: np.ndarray
    s: np.ndarray
    order: np.ndarray
    first_row: int
    holdout: int

    @classmethod
    def of(cls, rows, y, s, order, first_row=0, holdout=0) -> Examples:
        """From a row-layout :class:`~l1scale.data.memory.Matrix` and the rest."""
        return cls(*rows.arrays, y, s, order, int(first_row), int(holdout))


@njit(cache=True, inline="always")
def score_example(stats, loss, weight, nnz, held):
    """Add an example's weighted loss, taken before it is learned from, to the progressive
    (or, ``held``, the holdout) sums of ``stats`` (:data:`STATS`), and count the nnz(x_i)
    values read to score it (a kernel that learns from it adds its second read)."""
    stats[4] += 1
    stats[5] += nnz
    if held:
        stats[2] += loss
        stats[3] += weight
    else:
        stats[0] += loss
        stats[1] += weight


class OnlineState:
    """What the online solvers' states share: the width, the intercept flag, scalars whose
    first is the intercept, and a random generator (for shuffling rows).

    Subclasses add their arrays, ``coef`` and ``set_weights(coef, intercept)``.
    """

    def __init__(self, n_features: int, fit_intercept: bool, n_scalars: int, random_state=None):
        self.n_features, self.fit_intercept = int(n_features), bool(fit_intercept)
        self.scal = np.zeros(n_scalars)
        self.rng = np.random.default_rng(0 if random_state is None else random_state)  # None: seed 0
        self.rate = None  # the rate schedule="auto" calibrated (kept in checkpoints); None: not yet
        self.scale = np.ones(self.n_features)  # per-feature rates in the kernel's form (precondition)
        self.scaled = False  # whether ``scale`` is in use (else the kernels run unscaled)
        # Column offsets while a solve learns on centred columns (OnlineSolver.solve); 0: none.
        self.center = np.zeros(self.n_features)

    @property
    def intercept(self) -> float:
        return float(self.scal[0])

    def shift_intercept(self, delta: float):
        """b += delta (the solve's centring undone)."""
        self.scal[0] += delta

    def _checked_coef(self, coef) -> np.ndarray:
        coef = np.asarray(coef, dtype=np.float64)
        if coef.shape != (self.n_features,):
            raise ValueError(f"coef has shape {coef.shape}, expected ({self.n_features},)")
        return coef


class CalibratedEta0:
    """``eta0`` of a solver whose initial rate is given, calibrated on the data (``schedule="auto"``
    and no rate given) or the paper's fixed ``paper_eta0`` (truncated gradient's VW rate, SGD-C's).
    The solver sets ``eta0_given`` and ``_eta0_resolved`` (the rate the last calibrated solve chose)."""

    paper_eta0 = 0.5

    @property
    def eta0(self):
        """The initial rate: as given, else the one the last calibrated solve chose (None before)."""
        return self.eta0_given if self.eta0_given is not None else self._eta0_resolved

    @eta0.setter
    def eta0(self, value):
        self.eta0_given = None if value is None else float(value)

    def _auto_rate(self) -> bool:
        return self.schedule == "auto" and self.eta0_given is None

    def _eta0_of(self, state) -> float:
        if self.eta0_given is not None:
            return self.eta0_given
        if self._auto_rate() and state.rate is not None:  # None: nothing learned yet (an empty chunk)
            return state.rate
        return self.paper_eta0


class OnlineSolver(Solver):
    """Base class of the online first-order solvers (see the module docstring).

    Parameters
    ----------
    max_iter : int, default 1
        Passes over the data.
    holdout : int or None, default None
        Every ``holdout``-th example is held out (0: none). None: 10 when ``max_iter > 1``
        (VW's holdout_period), else 0.
    n_iter_no_change : int, default 3
        Passes without a better holdout loss before stopping early.
    shuffle : bool or None, default None
        Take the rows of each chunk in a new random order every pass (the papers sample uniformly
        at random from data in memory; a stream gives its rows in order). None: True when the rate
        is calibrated (``schedule="auto"`` and no rate given: sorted files stall the passes in
        stream order, see the module docstring), else False (a given rate or ``schedule="paper"``
        keeps the stream order of the papers' and VW's runs); :meth:`shuffled` says which.
    random_state : int or None
        Seed of the shuffling (None: 0, so that runs are reproducible, as the calibration's sample).
    compute_objective : bool, default False
        Evaluate P(w, b) on all the rows after the last pass (one more pass).
    schedule : {"auto", "paper"}, default "auto"
        Where the rates the user leaves out (None) come from. "auto": the base rate is
        calibrated on the data (one pass for the rows' scale and a sample of
        ``CALIBRATION_ROWS`` rows; Bottou's search around the curvature bound, see the module
        docstring; the first pass at twice the best one-epoch rate) and decays geometrically
        across passes to 1/300 of itself at the last pass; the rows are shuffled (``shuffle``);
        a rate given explicitly keeps the solver's fixed rules for what is left out. "paper":
        the paper's (or VW's) fixed rules and rates, as each solver documents.
    precondition : bool, default True
        With a calibrated rate (``schedule="auto"``, no rate given): per-feature rates
        eta D_j, D_j = 1 / s_j^2 with s_j the RMS of feature j's nonzero values, measured in the
        same pass as the rows' scale (diagonal preconditioning; the L1 step is scaled the same
        way, eta D_j lam, so that it solves the same problem: the one in the coordinates
        w_j / sqrt(D_j)). The lazy updates stay O(nnz(x_i)): D is a constant array, and the
        kernels keep w_j / D_j (SMIDAS: w_j / sqrt(D_j)). False: one rate for every feature (the
        first ``"auto"``). Ignored with a given rate or ``schedule="paper"`` (the papers' rules).
    tol : float, optional
        After the last pass, the problem's certificate and the objective: for a stream over
        arrays in memory (``Stream.from_arrays``: an estimator's in-memory fit) the relative
        duality gap at the intercept optimal for the returned weights, which is then the returned
        intercept (:meth:`~l1scale.problems.StreamProblem.duality_gap`, two passes); for other
        streams the KKT violation relative to lam (:meth:`~l1scale.problems.StreamProblem.certificate`,
        one pass). ``converged`` is whether it is <= tol, and a ConvergenceWarning says when not
        (with the certificate reached: the gap bounds the relative suboptimality). None
        (default): no certificate; ``converged`` is False unless the holdout stopped the passes
        early.
    checkpoint : str or path-like, optional
        File holding the state after each pass (weights, lazy-update book-keeping, random
        generator, History; written atomically): an existing one is resumed, and the resumed
        run ends with the weights of an uninterrupted one; one written for other data or
        other parameters is refused (:mod:`l1scale.checkpoint`).
    checkpoint_interval : float, default 0
        Least seconds between two checkpoint writes (0: after every pass).
    callback : callable, optional
        ``callback(pass, history)`` after each pass (after the pass's checkpoint is written).
    verbose : int

    Raises
    ------
    DivergenceError
        From :meth:`solve`, when a pass leaves non-finite weights or a progressive loss more than
        ``diverged_factor`` (10^4) times that of the zero model: the learning rate is too large for
        the scale of the features (an entry of 1e300, unscaled counts). Scale the features or
        lower the rate.
    """

    data_access = "stream"
    resumable = True  # takes checkpoint= (l1scale.checkpoint)
    #: A pass whose mean progressive loss exceeds this multiple of the zero model's has diverged.
    diverged_factor = 1e4
    requires = ()
    pure_l1 = False  # True: the solver has no L2 (elastic-net) part; l1_ratio must be 1

    @classmethod
    def from_estimator(cls, settings):
        """``max_iter`` passes at the solver's default rates (``schedule="auto"``: calibrated on the
        data; give an instance for other rates, e.g. ``solver=TruncatedGradient(eta0=...)``). Every
        row is learned from for all the passes (no holdout: the estimator fits the minimiser of its
        objective at lam, which early stopping on a holdout loss is not; with it, 0-1 of the
        stochastic-defaults page's 48 rows came within 1e-3, stopped after 4-24 passes, against
        30-36 now), from arrays as from a file. On data held in memory the estimator's ``tol`` is
        then checked with the duality gap: a run that stops short says so. A streamed fit keeps no
        tolerance (a solver instance with ``tol=`` checks the KKT violation, one more pass)."""
        return cls(
            max_iter=settings.max_iter,
            holdout=0,
            tol=settings.tol if settings.in_memory else None,
            checkpoint=settings.checkpoint,
            callback=settings.callback,
            verbose=settings.verbose,
        )

    def __init__(
        self,
        *,
        max_iter=1,
        holdout=None,
        n_iter_no_change=3,
        compute_objective=False,
        shuffle=None,
        random_state=None,
        schedule="auto",
        precondition=True,
        tol=None,
        checkpoint=None,
        checkpoint_interval=0.0,
        callback=None,
        verbose=0,
    ):
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule={schedule!r}; choose one of {list(SCHEDULES)}")
        if tol is not None and not tol > 0:
            raise ValueError(f"tol must be > 0 or None, got {tol!r}")
        self.schedule, self.tol = schedule, None if tol is None else float(tol)
        if precondition not in (True, False):
            raise ValueError(f"precondition must be True or False, got {precondition!r}")
        self.precondition = bool(precondition)
        if int(max_iter) < 1:
            raise ValueError(f"max_iter must be >= 1, got {max_iter!r}")
        if holdout is not None and int(holdout) < 0:
            raise ValueError(f"holdout must be >= 0, got {holdout!r}")
        self.max_iter = int(max_iter)
        self.holdout = (10 if self.max_iter > 1 else 0) if holdout is None else int(holdout)
        self.n_iter_no_change = int(n_iter_no_change)
        self.compute_objective = bool(compute_objective)
        self.shuffle = None if shuffle is None else bool(shuffle)  # None: see shuffled()
        self.random_state = random_state
        self.callback, self.verbose = callback, verbose
        self.checkpoint, self.checkpoint_interval = checkpoint, float(checkpoint_interval)

    # -- subclass API
    def new_state(self, n_features: int, fit_intercept: bool):  # pragma: no cover - interface
        raise NotImplementedError

    def _learn(self, state, rows, y, s, first_row, pass_index, *, kind, l1, l2, holdout):  # pragma: no cover
        raise NotImplementedError

    def _catch_up(self, state):
        """Apply what lazy updates still owe (default: nothing)."""

    # -- rates picked from the data (schedule="auto")
    def _auto_rate(self) -> bool:
        """Whether the base rate is calibrated on the data (schedule "auto" and no rate given)."""
        return False

    def _reference_rate(self, scale: RowScale, state, fit_intercept: bool, beta: float) -> float:  # pragma: no cover
        """The rate the calibration starts from (the solver's curvature bound; ``beta`` the loss's
        curvature bound, 1 for a loss without one)."""
        raise NotImplementedError

    def _norm_p(self, state):
        """The p of the row norm the reference rate needs besides ||x||_2 (None: none)."""
        return None

    def _trial(self, rate):  # pragma: no cover - interface
        """A copy of the solver that learns at the constant base rate ``rate`` (calibration)."""
        raise NotImplementedError

    def auto_pass_decay(self) -> float:
        """``schedule="auto"``: the factor of the rate per pass, AUTO_FINAL_FRACTION^(-1/(max_iter - 1))."""
        return AUTO_FINAL_FRACTION ** (-1.0 / (self.max_iter - 1)) if self.max_iter > 1 else 1.0

    def _calibrate(self, state, X, y, s, scale, *, loss, l1, l2):
        """Bottou's calibration: one epoch on the sample (X, y, s) from ``state`` at the reference
        rate times 2^k, k = 0, 1, 2, ... while the sample's objective falls, else k = -1, -2, ...;
        sets ``state.rate`` to the best and returns the objectives tried ({k: P_sample}).

        When no rate's epoch ends below the objective it started from, the search says nothing
        about the rate (it would take the smallest it tried, the one that moves least), and unless
        w = 0 is optimal on the sample (lam at or above lam_max: the smallest rate is then right,
        :func:`_zero_model_optimal`) it is done again on the loss alone: the trials without the L1
        penalty (``_unpenalised``) and their objective without it. Truncated gradient on madelon at 0.1 lam_max: it shrinks each
        weight after each noisy step and keeps no memory of it, so one epoch from w = 0 leaves
        every weight the noise moved as dust, whose penalty put every rate's objective above the
        zero model's (dense centred columns, |x_ij g| 10-50 against lam 0.85): it took 2e-7 and 50
        passes stayed at the zero model (3.5e-2); on the loss alone, 6.4e-3 and 1.5e-3. Always
        calibrating on the loss alone lost 9 of truncated gradient's 26 rows within 1e-3 (the
        penalised objective keeps the rate down where the noise would leave dust)."""
        tried, best_k, start, ref = self._rate_search(state, X, y, s, scale, loss, l1, l2, penalised=True)
        if (
            LOSS_ALONE_FALLBACK
            and l1 > 0.0
            and not min(tried.values()) < start
            and not _zero_model_optimal(state, X, y, s, loss, l1)
        ):
            tried, best_k, start, ref = self._rate_search(state, X, y, s, scale, loss, 0.0, l2, penalised=False)
        # One octave above the best one-epoch rate (AUTO_RATE_FACTOR = 2) unless its trial epoch
        # diverged (not finite, or above twice the objective at the start, the zero model's loss
        # for w = 0, b = 0): the runs are many passes long and their rate decays.
        up = round(math.log2(AUTO_RATE_FACTOR))
        above = tried.get(best_k + up, np.inf) if up > 0 else tried[best_k]
        if not (np.isfinite(above) and above <= 2.0 * start):
            up = 0
        state.rate = ref * 2.0 ** (best_k + up)
        return tried

    def _rate_search(self, state, X, y, s, scale, loss, l1, l2, *, penalised):
        """The search of :meth:`_calibrate` with the penalty l1: (objectives tried {k: P_sample},
        the best k, the sample's objective at ``state``, the reference rate)."""
        from ..data.memory import as_rows

        beta = float(getattr(loss, "curvature_bound", None) or 1.0)
        ref = float(self._reference_rate(scale, state, state.fit_intercept, beta))
        if not (np.isfinite(ref) and ref > 0):
            ref = 1.0
        rows, y = as_rows(X), np.ascontiguousarray(y, dtype=np.float64)
        s = np.ascontiguousarray(s, dtype=np.float64)
        W = float(s.sum())
        tried = {}
        seed = 0 if self.random_state is None else self.random_state

        def sample_objective(w, b):
            """P(w, b) on the calibration sample (mean-form loss, the elastic net)."""
            z = np.asarray(X @ w, dtype=np.float64).reshape(-1) + b
            return (
                float(np.sum(s * loss.value(y, z))) / W
                + l1 * float(np.abs(w).sum())
                + 0.5 * l2 * float(np.square(w).sum())
            )

        def value(k):
            trial = self._trial(ref * 2.0**k)
            if not penalised:
                trial = self._unpenalised(trial)
            # The state's own copy, sharing what is not data (a solver it refers to: callbacks, files).
            st = copy.deepcopy(state, {id(v): v for v in vars(state).values() if isinstance(v, Solver)})
            st.rng = np.random.default_rng(seed)  # every trial takes the sample in the same order
            try:
                with np.errstate(all="ignore"):
                    trial._learn(st, rows, y, s, 0, 0, kind=loss.kernel_id, l1=l1, l2=l2, holdout=0)
                    trial._catch_up(st)
                    f = sample_objective(st.coef, st.intercept)
            except (ZeroDivisionError, FloatingPointError, OverflowError):
                f = np.inf
            tried[k] = f if np.isfinite(f) else np.inf
            return tried[k]

        best_k, best = 0, value(0)
        step = 1 if value(1) < best else -1
        k = 0
        while abs(k) < _CALIBRATION_OCTAVES:
            k += step
            f = tried[k] if k in tried else value(k)
            if not f < best:
                break
            best_k, best = k, f
        return tried, best_k, sample_objective(state.coef, state.intercept), ref

    def _unpenalised(self, trial):
        """A calibration trial without the L1 penalty (its ``_learn`` is then given l1 = 0; a
        solver with a penalty of its own, truncated gradient's gravity, drops it here)."""
        return trial

    # -- per-feature rates (schedule="auto", precondition=True)
    def _supports_scale(self) -> bool:
        """Whether the solver's kernel takes per-feature rates (a subclass says)."""
        return False

    def _preconditioned(self) -> bool:
        """Whether the calibrated rate comes with per-feature rates (diagonal preconditioning)."""
        return self.precondition and self._auto_rate() and self._supports_scale()

    def _kernel_scale(self, D: np.ndarray) -> np.ndarray:
        """The array the kernel takes for the per-feature rates D (default: D itself, the
        preconditioned step w_j -= eta D_j g x_ij, kept as u_j = w_j / D_j)."""
        return D

    def _apply_preconditioning(self, state, feats, X, p=None):
        """Set the state's per-feature rates from the feature statistics ``feats`` (max |x_ij|,
        sum x_ij^2, nnz per feature) and return the :class:`RowScale` of the sample X in the
        rescaled coordinates x_ij sqrt(D_j) (the geometry the calibration's reference rate needs).
        The weights already in the state (a warm start) are carried over unchanged."""
        D = feature_rates(feats)
        coef, b = state.coef, state.intercept
        state.scale[:] = self._kernel_scale(D)
        state.scaled = True
        state.set_weights(coef, b)
        import scipy.sparse as sp

        root = np.sqrt(D)
        max_sq, max_p = largest_row_norms(X @ sp.diags(root) if sp.issparse(X) else np.asarray(X) * root, p)
        return RowScale(X.shape[0], max_sq, max_p if p is not None else np.nan)

    def _scan_for_rate(self, problem, state):
        """One pass: the rows' scale (:class:`RowScale`) and a Bernoulli sample of about
        ``CALIBRATION_ROWS`` rows (X, y, s with the weights scaled to mean 1)."""
        p = self._norm_p(state)
        n_total = problem.n_samples  # known: streams without a label scan calibrate on their first chunk
        q = 1.0 if not n_total else min(1.0, CALIBRATION_ROWS / n_total)
        rng = np.random.default_rng(0 if self.random_state is None else self.random_state)
        mean_scale = n_total / problem.weight_sum if n_total else 1.0
        n, max_sq, max_p = 0, 0.0, 0.0
        parts = []
        feats = FeatureStats.zeros(problem.n_features)
        for rows, y, s, _ in problem.chunks():
            X = _chunk_matrix(rows)
            feats.add(X)
            chunk_sq, chunk_p = largest_row_norms(X, p)
            n += y.shape[0]
            max_sq, max_p = max(max_sq, chunk_sq), max(max_p, chunk_p)
            taken = np.flatnonzero(rng.random(y.shape[0]) < q)
            if taken.size:
                parts.append((X[taken], y[taken], s[taken] * mean_scale))
        X, y, s = _stack(parts, problem.n_features)
        return RowScale(n, max_sq, max_p if p is not None else np.nan), X, y, s, feats

    def _rate_from_chunk(self, state, rows, y, s, *, kind, l1, l2, loss):
        """partial_fit with no rate yet: calibrate on (a sample of) this chunk."""
        X = _chunk_matrix(rows)
        scale = RowScale(y.shape[0], *largest_row_norms(X, self._norm_p(state)))
        feats = FeatureStats.zeros(X.shape[1])
        feats.add(X)
        if y.shape[0] > CALIBRATION_ROWS:
            rng = np.random.default_rng(0 if self.random_state is None else self.random_state)
            taken = np.sort(rng.choice(y.shape[0], CALIBRATION_ROWS, replace=False))
            X, y, s = X[taken], y[taken], s[taken]
        self._choose_rates(state, X, y, s, scale, feats, loss=loss, l1=l1, l2=l2)

    def _choose_rates(self, state, X, y, s, scale, feats, *, loss, l1, l2):
        """Calibrate the rate on the sample (X, y, s); with per-feature rates (``precondition``),
        in the rescaled coordinates (the reference rate from the rescaled rows). Choosing between
        the two geometries by the sample's one-epoch objective was tried and lost more than it
        won (benchmarks/results/stochastic_defaults.md)."""
        if self._preconditioned():
            scale = self._apply_preconditioning(state, feats, X, self._norm_p(state))
        self._calibrate(state, X, y, s, scale, loss=loss, l1=l1, l2=l2)

    def _final_weights(self, state, coef):
        """The coefficients ``solve`` returns, from the weights after the last (or best) pass
        (default: as they are)."""
        return coef

    def _start(self, problem, state, fresh: bool):
        """Before the first pass of ``solve``: what the solver takes from the problem
        (``fresh``: a new state, no warm start). Default: nothing (w = 0, b = 0, as the papers)."""

    def _check_restored(self, state, saved):
        """Check what a checkpoint restored into ``state`` beyond shapes and types (index
        ranges the kernels rely on); raise ``saved``'s CheckpointError. Default: nothing."""

    def check_problem(self, problem):
        super().check_problem(problem)
        if self.pure_l1 and problem.l1_ratio != 1.0:
            raise ValueError(
                f"solver {self.name!r} minimises the pure L1 problem: l1_ratio must be 1, got {problem.l1_ratio!r}"
            )

    def shuffled(self) -> bool:
        """Whether the rows of each chunk are shuffled: ``shuffle`` as given, else (None) whether
        the rate is calibrated (``schedule="auto"`` and no rate given)."""
        return self._auto_rate() if self.shuffle is None else self.shuffle

    def _order(self, state, n: int) -> np.ndarray:
        """The order in which a chunk's n rows are taken (the state's generator when shuffling)."""
        return state.rng.permutation(n) if self.shuffled() else np.arange(n)

    # -- driving
    def partial_fit(self, state, rows, y, s, *, kind, l1, l2, total_weight=None, first_row=0, pass_index=0):
        """Learn from one chunk (no holdout); the weights are brought up to date after it."""
        if self.pure_l1 and l2 > 0:
            raise ValueError(f"solver {self.name!r} minimises the pure L1 problem: l1_ratio must be 1")
        if self._auto_rate() and getattr(state, "rate", None) is None and y.shape[0] > 0:
            from ..losses import LOSSES, get_loss

            loss = get_loss(next(name for name, cls in LOSSES.items() if cls.kernel_id == kind))
            self._rate_from_chunk(state, rows, y, s, kind=kind, l1=l1, l2=l2, loss=loss)
        out = self._learn(state, rows, y, s, first_row, pass_index, kind=kind, l1=l1, l2=l2, holdout=0)
        self._catch_up(state)
        return out

    def solve(self, problem: ProblemLike, coef_init=None, intercept_init=None, *, state=None) -> Result:
        """``max_iter`` passes over ``problem`` (kind ``"stream"``); the state reached is left in
        ``self.state_``."""
        self.check_problem(problem)
        ck = saved = None
        if self.checkpoint is not None:
            ck = Checkpoint(
                self.checkpoint, {**solver_fingerprint(self), **problem_fingerprint(problem)}, self.checkpoint_interval
            )
            saved = ck.load()
        if problem.penalty is None:
            if saved is not None:  # lam_ratio: lam as the saved run resolved it (no pass for lam_max)
                problem.penalty = ElasticNet(saved.scalar("lam", float, 0.0), problem.l1_ratio)
            else:
                problem.resolve_lam(problem.gradient_at_start())  # lam_ratio: one pass for lam_max
        pen, kind = problem.penalty, problem.loss.kernel_id
        fresh = state is None and coef_init is None and intercept_init is None and saved is None
        state = self.new_state(problem.n_features, problem.fit_intercept) if state is None else state
        if saved is None and not fresh and (coef_init is not None or intercept_init is not None):
            state.set_weights(
                np.zeros(problem.n_features) if coef_init is None else np.asarray(coef_init, dtype=np.float64),
                0.0 if intercept_init is None else float(intercept_init),
            )
        self._start(problem, state, fresh)
        self.state_ = state
        history, timer = History(), Timer()
        # Weights scaled to mean 1 (n / W); declared classes (no label pass) leave them as given.
        mean_scale = 1.0 if problem.n_samples is None else problem.n_samples / problem.weight_sum
        best, waited, stop_reason = None, 0, "max_iter"
        totals = np.zeros(len(STATS))
        first_pass = 1
        if saved is not None:
            first_pass, best, waited, totals = self._restore(saved, state, history, problem)
            timer.exclude(-saved.scalar("elapsed", float, 0.0))
        # Without a label scan (declared classes: stdin, a one-pass generator) the stream may be
        # read only once, so the rate is calibrated on its first chunk as it arrives (as
        # partial_fit does); otherwise one pass before learning scans the whole data for it.
        rate_from_first_chunk = problem.n_samples is None
        if self._auto_rate() and getattr(state, "rate", None) is None and not rate_from_first_chunk:
            scale, Xs, ys, ss, feats = self._scan_for_rate(problem, state)
            if fresh and problem.fit_intercept and self._preconditioned():
                # Dense columns far from zero are learned centred (an exact change of variables:
                # x_i . w + b = (x_i - center) . w + (b + center . w), the penalty unchanged), which
                # removes the direction of their common mean from the curvature (madelon, 0.1
                # lam_max: SGD-C 3.4e-2 -> 5.6e-5 after 50 passes); the intercept is mapped back
                # at the end.
                state.center[:] = feats.centring()
                if state.center.any():
                    Xs, feats = centred_design(Xs, state.center), feats.centred(state.center)
            self._choose_rates(state, Xs, ys, ss, scale, feats, loss=problem.loss, l1=pen.l1, l2=pen.l2)
            if self.verbose:
                per = " with per-feature rates" if getattr(state, "scaled", False) else ""
                print(f"{self.name}: rate {state.rate:.4g}{per} calibrated on {ys.shape[0]} rows", flush=True)
        zero_loss = _zero_model_loss(problem)
        last_pass = self.max_iter
        if saved is not None and self.holdout > 0 and waited >= self.n_iter_no_change:
            stop_reason, last_pass = "early_stopping", 0  # the checkpoint of a run that stopped early
        z = first_pass - 1
        center = state.center.copy() if state.center.any() else None  # a resumed solve's too
        for z in range(first_pass, last_pass + 1):
            sums = np.zeros(len(STATS))
            try:
                for rows, y, s, first in prefetched(problem.chunks()):
                    if center is not None:
                        rows = _centred_rows(rows, center)
                    if rate_from_first_chunk and self._auto_rate() and getattr(state, "rate", None) is None:
                        self._rate_from_chunk(
                            state, rows, y, s * mean_scale, kind=kind, l1=pen.l1, l2=pen.l2, loss=problem.loss
                        )
                    # Weights scaled to mean 1: example i's stochastic gradient of the mean-form
                    # objective is s_i/mean(s) loss'_i x_i plus the penalty's.
                    sums += self._learn(
                        state,
                        rows,
                        y,
                        s * mean_scale,
                        first,
                        z - 1,
                        kind=kind,
                        l1=pen.l1,
                        l2=pen.l2,
                        holdout=self.holdout,
                    )
                self._catch_up(state)
            except (ZeroDivisionError, FloatingPointError) as exc:  # a kernel's scale (norm) overflowed to 0 or inf
                raise DivergenceError(f"{self.name}: the weights diverged in pass {z} ({exc}): {_REMEDY}") from exc
            totals += sums
            progressive = sums[0] / max(sums[1], 1e-300)
            held = sums[2] / sums[3] if sums[3] > 0 else np.nan
            coef_now = state.coef
            self._check_diverged(z, coef_now, state.intercept, progressive, held, zero_loss)
            history.append(
                objective=np.nan,
                certificate=np.nan,
                nnz=np.count_nonzero(coef_now),
                time=timer(),
                data_accesses=int(totals[5]),
                examples=int(totals[4]),
                progressive_loss=progressive,
                holdout_loss=held,
            )
            if self.verbose:
                print(
                    f"{self.name} pass {z:3d}  examples {int(totals[4]):10d}  progressive {progressive:.6f}  "
                    f"holdout {held:.6f}  nnz {history.nnz[-1]:7d}  {history.time[-1]:7.2f}s",
                    flush=True,
                )
            stop = False
            if self.holdout > 0 and np.isfinite(held):
                if best is None or held < best[0]:
                    best, waited = (held, coef_now.copy(), state.intercept, z), 0
                else:
                    waited += 1
                    if waited >= self.n_iter_no_change:
                        stop_reason, stop = "early_stopping", True
            if ck is not None and (ck.due() or z == self.max_iter or stop):
                self._save(ck, state, z + 1, best, waited, totals, history, problem, timer())
            if self.callback is not None:
                self.callback(z, history)
            if stop:
                break
        coef, intercept = state.coef.copy(), state.intercept
        if stop_reason == "early_stopping":
            coef, intercept = best[1], best[2]  # the weights of the pass with the best holdout loss
        if center is not None:  # the intercept of the raw columns; the state's too (partial_fit goes on raw)
            intercept -= float(center @ coef)
            state.shift_intercept(-float(center @ state.coef))
            state.center[:] = 0.0
        coef = self._final_weights(state, coef)
        converged, cert = stop_reason == "early_stopping", None
        if self.tol is not None:
            cert, intercept = _final_certificate(problem, coef, intercept)
            objective = cert.objective
            converged = bool(cert.relative <= self.tol)
            if converged:
                stop_reason = cert.name
            else:
                # The certificate is over every row: one that the holdout kept out of learning
                # is still in the objective, so say so where it may be what stops the run short.
                held_out = (
                    f"; 1 example in {self.holdout} is held out of learning for early stopping "
                    "(holdout=0 learns from all)"
                    if self.holdout > 0
                    else ""
                )
                warnings.warn(
                    f"{self.name} did not reach tol={self.tol:g} in {z} passes (relative {cert.name} "
                    f"{cert.relative:.2e}, objective {cert.objective:.8g}); increase max_iter or give a "
                    f"rate{held_out}",
                    ConvergenceWarning,
                    stacklevel=2,
                )
        else:
            objective = problem.objective(coef, intercept) if self.compute_objective else np.nan
        if (self.compute_objective or cert is not None) and len(history):
            history.objective[-1] = objective
            if cert is not None:
                history.certificate[-1] = cert.value
        return Result(
            coef=coef,
            intercept=float(intercept),
            objective=float(objective),
            n_iter=int(z),
            converged=converged,
            stop_reason=stop_reason,
            certificate_name="none" if cert is None else cert.name,
            certificate=np.nan if cert is None else float(cert.value),
            relative_certificate=np.nan if cert is None else float(cert.relative),
            history=history,
            timings={"solve": timer(), "compile": timer.compiled()},
        )

    # -- divergence
    def _check_diverged(self, z, coef, intercept, progressive, held, zero_loss):
        """Raise a DivergenceError when pass ``z`` left non-finite weights or a loss far above the
        zero model's (``zero_loss``, the mean loss at w = 0, b = 0; None: unknown)."""
        finite = np.isfinite(progressive) and np.isfinite(intercept) and bool(np.isfinite(coef).all())
        big = float(np.max(np.abs(coef), initial=0.0)) if finite else np.inf
        if finite and (zero_loss is None or zero_loss <= 0.0 or progressive <= self.diverged_factor * zero_loss):
            return
        what = (
            "non-finite weights or losses"
            if not finite
            else f"a progressive loss of {progressive:.3g}, {progressive / zero_loss:.2g} times that of the zero "
            f"model ({zero_loss:.3g})"
        )
        raise DivergenceError(
            f"{self.name}: the weights diverged in pass {z} ({what}; largest |w_j| = {big:.3g}): " + _REMEDY
        )

    # -- checkpoints
    def _save(self, ck, state, next_pass, best, waited, totals, history, problem, elapsed):
        out = {
            "next_pass": next_pass,
            "waited": waited,
            "totals": totals,
            "lam": problem.penalty.lam,
            "elapsed": elapsed,
            "has_best": best is not None,
            "history": history.as_dict(),
        }
        if best is not None:
            out.update(best_loss=best[0], best_coef=best[1], best_intercept=best[2], best_pass=best[3])
        for k, v in vars(state).items():
            if isinstance(v, np.random.Generator):
                out[f"rng.{k}"] = v.bit_generator.state
            elif isinstance(v, (np.ndarray, bool, int, float, np.generic)) or v is None:
                out[f"state.{k}"] = v
        ck.save(out)

    def _restore(self, saved, state, history, problem):
        """Load the checkpoint ``saved`` into ``state`` and ``history`` (every array checked for
        the shape and dtype of the fresh state's); returns (first pass, best, waited, totals)."""
        for k, cur in list(vars(state).items()):
            if isinstance(cur, np.random.Generator):
                saved.generator(f"rng.{k}", cur)
            elif isinstance(cur, np.ndarray):
                kind = "f" if cur.dtype.kind == "f" else "iu" if cur.dtype.kind in "iu" else cur.dtype.kind
                cur[...] = saved.array(f"state.{k}", cur.shape, kind)  # in place: views stay views
            elif isinstance(cur, (bool, int, float)):
                setattr(state, k, saved.scalar(f"state.{k}", type(cur)))
            elif cur is None and f"state.{k}" in saved:
                value = saved[f"state.{k}"]
                setattr(
                    state,
                    k,
                    None
                    if value is None
                    else saved.scalar(f"state.{k}", float if np.asarray(value).dtype.kind == "f" else int),
                )
        self._check_restored(state, saved)
        saved.history(history)
        best = None
        if saved.scalar("has_best", bool):
            best = (
                saved.scalar("best_loss"),
                saved.array("best_coef", (problem.n_features,)),
                saved.scalar("best_intercept"),
                saved.scalar("best_pass", int),
            )
        totals = saved.array("totals", (len(STATS),))
        return (saved.scalar("next_pass", int, 1), best, saved.scalar("waited", int, 0), totals)


_REMEDY = (
    "the learning rate is too large for the scale of the features. Scale the features (e.g. rows of unit "
    "norm, or columns to [-1, 1] with sklearn's MaxAbsScaler) or lower the learning rate (eta0, or eta for "
    "SMIDAS; the CLI's --learning-rate)"
)


def _zero_model_loss(problem):
    """The mean (weighted) loss at w = 0, b = 0: loss(+-1, 0) for the classification losses (the
    same for both labels), sum_v W_v v^2 / 2 / W for the squared loss when the label scan kept a
    class table; None when unknown."""
    name = problem.loss.name
    if name != "squared":
        return float(loss_value(problem.loss.kernel_id, 1.0, 0.0))
    scan = problem.scan
    if scan is None or scan.classes.shape[0] == 0 or problem.weight_sum <= 0:
        return None
    return float(np.sum(scan.weights * scan.classes.astype(np.float64) ** 2) / 2.0 / problem.weight_sum)


class FeatureStats:
    """Per-feature statistics of a pass (for the per-feature rates and the centring): sum_i x_ij,
    sum_i x_ij^2 and the number of rows where x_ij != 0, added chunk by chunk (O(nnz)), and the
    rows seen."""

    def __init__(self, sum_sq, nnz, sums=None, rows=0):
        self.sum_sq, self.nnz = sum_sq, nnz
        self.sums = np.zeros_like(sum_sq) if sums is None else sums
        self.rows = rows

    @classmethod
    def zeros(cls, d: int) -> FeatureStats:
        return cls(np.zeros(d), np.zeros(d))

    def add(self, X):
        import scipy.sparse as sp

        d = self.sum_sq.shape[0]
        self.rows += X.shape[0]
        if sp.issparse(X):
            X = X.tocsr()
            a = np.asarray(X.data, dtype=np.float64)
            self.sums += np.bincount(X.indices, weights=a, minlength=d)
            self.sum_sq += np.bincount(X.indices, weights=a * a, minlength=d)
            self.nnz += np.bincount(X.indices[a != 0], minlength=d)
            return
        A = np.asarray(X, dtype=np.float64)
        if A.shape[0]:
            self.sums += A.sum(axis=0)
            self.sum_sq += np.einsum("ij,ij->j", A, A)
            self.nnz += np.count_nonzero(A, axis=0)

    def centring(self) -> np.ndarray:
        """The offsets of the columns worth centring (d,): the mean of each column whose mean
        is more than ``CENTRE_RATIO`` times its standard deviation in size, 0 for the others
        (``problems.memory.centring_offsets``, where the criterion and its measurements are)."""
        if self.rows == 0:
            return np.zeros_like(self.sums)
        mean = self.sums / self.rows
        with np.errstate(over="ignore", invalid="ignore"):
            variance = self.sum_sq / self.rows - mean * mean
        return centring_offsets(mean, variance, CENTRE_RATIO)

    def centred(self, center) -> FeatureStats:
        """The statistics of the columns after ``x_ij - center_j``: every row holds a value of a
        centred column, and its sum of squares is sum_i x_ij^2 - n center_j^2 (its mean is
        center_j)."""
        on = center != 0.0
        n = float(self.rows)
        sum_sq = np.where(on, np.maximum(self.sum_sq - n * center * center, 0.0), self.sum_sq)
        return FeatureStats(sum_sq, np.where(on, n, self.nnz), np.where(on, 0.0, self.sums), self.rows)


def _final_certificate(problem, coef, intercept):
    """(certificate, intercept) of a solve's result for ``tol``: over a stream of arrays in
    memory, the duality gap at the intercept optimal for ``coef`` (which the result then takes:
    the same weights, a P no higher), since the KKT violation bounds nothing of the objective
    where weights hover near zero; otherwise the problem's own certificate (one pass)."""
    stream = getattr(problem, "stream", None)
    if getattr(stream, "in_memory", False) and problem.loss.has_conjugate:
        return problem.duality_gap(coef, intercept)
    return problem.certificate(coef, intercept), intercept


def _centred_rows(rows, center):
    """A chunk's row-layout Matrix with its columns centred (``problems.memory.centred_design``)."""
    from ..data.memory import as_rows

    return as_rows(centred_design(_chunk_matrix(rows), center), checked=True)


def _zero_model_optimal(state, X, y, s, loss, l1) -> bool:
    """Whether w = 0 (with the intercept-only optimum) is optimal on the calibration sample
    (|X^T (c loss')| <= l1 there): no rate can then beat the start, and the smallest one, which
    keeps the weights at zero, is the right one (lam at or above lam_max). False for a state that
    does not start from w = 0."""
    if np.any(state.coef):
        return False
    c = np.asarray(s, dtype=np.float64) / float(np.sum(s))
    return null_correlation(X, np.asarray(y, dtype=np.float64), loss, c, state.fit_intercept) <= l1


def feature_rates(feats: FeatureStats) -> np.ndarray:
    """Per-feature rates D_j (d,) = 1 / s_j^2, s_j the RMS of feature j's nonzero values
    (sum_i x_ij^2 / #{i: x_ij != 0}); 1 for a feature never seen.

    Measured against the alternatives on the shared data (benchmarks/results/stochastic_defaults.md):
    1 / max_i x_ij^2 (Vowpal Wabbit's normalised updates) leaves the unscaled UCI sets 10-100x
    further from the optimum; 1 / mean_i x_ij^2 over all rows (the inverse diagonal Hessian)
    gives rare features huge rates and loses on sparse text. Over the nonzeros, binary features
    keep D = 1 (the unscaled algorithm) and features of scale 1e4 get 1e-8."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        D = np.maximum(feats.nnz, 1) / feats.sum_sq
    return np.where(np.isfinite(D) & (D > 0), D, 1.0)


def _chunk_matrix(rows):
    """A row-layout Matrix as a matrix over its arrays (scipy CSR or a C-ordered array)."""
    import scipy.sparse as sp

    if rows.dense:
        return rows.data.reshape(rows.shape)
    return sp.csr_matrix((rows.data, rows.indices, rows.indptr), shape=rows.shape)


def largest_row_norms(X, p=None):
    """(max_i ||x_i||_2^2, max_i ||x_i||_p^2) over the rows of X (0 for no rows; the second
    0 without p); rows of 1e300 give an infinite scale (a rate of 0, then 1), not an error."""
    with np.errstate(over="ignore"):
        sq, pn = _row_norms(X, p)
    return float(np.max(sq, initial=0.0)), float(np.max(pn, initial=0.0))


def _row_norms(X, p=None):
    """(||x_i||_2^2, ||x_i||_p^2 or zeros) of every row of X (CSR or dense), the same to the bit for
    both layouts: each row's terms are summed in column order (:func:`_row_sums`; a dense row's
    zeros add exactly nothing), where scipy's and NumPy's reductions sum in orders of their own
    (NumPy's einsum in vector lanes whose width is the host's: on an AVX2 host a dense and a CSR
    X got rates one unit in the last place apart)."""
    import scipy.sparse as sp

    if sp.issparse(X):
        A = abs(X).tocsr()
        if not A.has_sorted_indices:
            A = A.sorted_indices()
        sq = _row_sums(A.data * A.data, A.indptr)
        if p is None:
            return sq, np.zeros_like(sq)
        top = np.zeros(A.shape[0])
        nonempty = np.diff(A.indptr) > 0
        top[nonempty] = np.maximum.reduceat(A.data, A.indptr[:-1][nonempty]) if A.nnz else 0.0
        inv = np.divide(1.0, top, out=np.zeros_like(top), where=top > 0)
        R = (sp.diags(inv) @ A).tocsr()
        R.sort_indices()  # scipy's product may store a row's values out of column order
        sums = _row_sums(R.data**p, R.indptr)
        return sq, (top * sums ** (1.0 / p)) ** 2
    A = np.abs(np.asarray(X, dtype=np.float64))
    sq = _dense_square_sums(A)
    if p is None:
        return sq, np.zeros_like(sq)
    top = A.max(axis=1, initial=0.0)
    inv = np.divide(1.0, top, out=np.zeros_like(top), where=top > 0)
    n, d = A.shape
    rows = np.arange(n + 1, dtype=np.int64) * d  # the dense rows as compressed ones
    sums = _row_sums(np.ascontiguousarray((A * inv[:, None]) ** p).reshape(-1), rows)
    return sq, (top * sums ** (1.0 / p)) ** 2


@njit(cache=True, nogil=True)
def _dense_square_sums(A):
    """sum_j A_ij^2 for every row i, in column order (what :func:`_row_sums` gives on the stored
    values' squares of the same rows)."""
    out = np.zeros(A.shape[0])
    for i in range(A.shape[0]):
        acc = 0.0
        for j in range(A.shape[1]):
            acc += A[i, j] * A[i, j]
        out[i] = acc
    return out


@njit(cache=True, nogil=True)
def _row_sums(values, indptr):
    """sum(values[indptr[i]:indptr[i + 1]]) for every row i, each in order."""
    out = np.zeros(indptr.shape[0] - 1)
    for i in range(indptr.shape[0] - 1):
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            acc += values[k]
        out[i] = acc
    return out


def _stack(parts, n_features):
    """The sampled rows of every chunk as one matrix (CSR when any part is sparse), y and s."""
    import scipy.sparse as sp

    if not parts:
        return sp.csr_matrix((0, n_features)), np.zeros(0), np.zeros(0)
    Xs = [part[0] for part in parts]
    X = sp.vstack([sp.csr_matrix(x) for x in Xs]).tocsr() if any(sp.issparse(x) for x in Xs) else np.vstack(Xs)
    return X, np.concatenate([part[1] for part in parts]), np.concatenate([part[2] for part in parts])
