"""SGD with a cumulative L1 penalty (SGD-C: Tsuruoka, Tsujii & Ananiadou 2009; Qin et al., Algorithm 4).

It minimises the streamed problem of :class:`~l1scale.problems.StreamProblem`

    P(w, b) = (1/W) sum_i s_i loss(y_i, x_i . w + b) + lam ||w||_1

(pure L1; the paper's lambda is n * lam) one example at a time. Example k (k = 0, 1, ...
counting the examples learned from over all passes) makes the step

    eta_k = eta0 * a^(-k/N)                       (eq. 12: N examples per pass; eta0 = 0.5, a = 2)
    u    += eta_k * lam                           (the total L1 penalty a weight could have received)
    w_j  -= eta_k * s_k loss'(y_k, z_k) x_kj      (j in the example; z_k = x_k . w + b)
    clip:  w_j > 0: w_j = max(0, w_j - (u + q_j));  w_j < 0: w_j = min(0, w_j + (u - q_j))
    q_j  += (w_j after - w_j before)              (q_j: the penalty w_j has actually received)
    b    -= eta_k * s_k loss'(y_k, z_k)           (the intercept is not penalised)

**Lazy and exact.** Algorithm 4 clips every coordinate at every step (O(d)). Clipping is
cumulative: clipping a coordinate at u_1 and then at u_2 >= u_1 gives what one clipping at
u_2 gives (the amount owed, u - |applied|, is paid at once, and a weight clipped to zero stays
zero until a gradient moves it). So a coordinate is clipped only when it is read: before the
example's margin (with the u of the previous step, which brings w_j to the value the dense
algorithm has), after its gradient step, and for all j at the end of a pass
(:meth:`CumulativePenaltySGD._catch_up`, O(d) per pass). Each example costs O(nnz(x_k)) and the
weights equal those of the dense algorithm (up to rounding) at every pass's end. (Tsuruoka et
al.'s own lazy loop clips only after the gradient step, so its margins use weights that still
owe the penalty of the steps since they were last touched; the clip before the margin, nnz(x_k)
more cheap operations, removes that difference.)

**Gradient averaging** (``average_gradient=True``, Qin et al. eq. 11):
h_k = (1/k) h_{k-1} + ((k-1)/k) grad_k, with k the 1-based count of examples learned from, and
the step w -= eta_k h_k on every coordinate, then every coordinate clipped. Two remarks on eq. 11:
its weights are the *reverse* of a running mean (RDA's h_k = ((k-1)/k) h_{k-1} + (1/k) grad_k);
the paper says so on purpose ("more weight on the gradient estimated by the current point"), so
we implement it as written: for large k it is plain SGD plus a vanishing 1/k share of the previous
direction. And at k = 1 it gives h_1 = h_0 = 0 (the first gradient would be lost); we take
h_1 = grad_1. The step is dense: O(d) per example (the paper did the same, its kernel features
being dense).

Tsuruoka and Qin sample at random from memory; here the rows of each chunk are taken in a new
random order every pass (``shuffle``, on by default with a calibrated rate, seeded by
``random_state``), in stream order with ``shuffle=False``, a given ``eta0`` or ``schedule="paper"``.
"""

from __future__ import annotations

import copy
from typing import NamedTuple

import numpy as np
from numba import njit

from ..losses import loss_derivative, loss_value
from .online_base import STATS, CalibratedEta0, Examples, OnlineSolver, OnlineState, score_example

__all__ = ["CumulativePenaltySGD", "CumulativePenaltyState"]


@njit(cache=True, inline="always")
def _clip(w, q, j, u):
    """Apply to w_j the cumulative penalty it is owed (Algorithm 4, lines 9-15)."""
    z = w[j]
    if z > 0.0:
        w[j] = max(0.0, z - (u + q[j]))
    elif z < 0.0:
        w[j] = min(0.0, z + (u - q[j]))
    q[j] += w[j] - z


class _Rule(NamedTuple):
    """SGD-C's step rule for one chunk: lam (the L1 weight), the rate eta0 a^(-k / n_pass),
    Qin et al.'s gradient averaging, and whether the intercept learns."""

    lam: float
    eta0: float
    a: float
    n_pass: float
    average: bool
    fit_intercept: bool


class _Weights(NamedTuple):
    """SGD-C's state (changed in place): w, q (d,) Tsuruoka et al.'s weights and penalties taken;
    h (d,) the averaged gradient; scal (4,) = [b, u, k, averaged intercept gradient]."""

    w: np.ndarray
    q: np.ndarray
    h: np.ndarray
    scal: np.ndarray


@njit(cache=True, nogil=True)  # the reader thread reads the next chunk meanwhile
def _sgd_c_rows(kind, examples, rule, weights, stats, scale=None):
    """SGD-C over the rows of one chunk, in place.

    ``examples``: the chunk (:class:`~l1scale.solvers.online_base.Examples`); ``rule``:
    :class:`_Rule`; ``weights``: :class:`_Weights` (scal[0], the intercept b, moves only when
    ``fit_intercept``; scal[2] counts the examples learned); stats (6,) the :data:`STATS` sums
    (added to). Held-out rows ((first_row + i) % holdout == holdout - 1) are scored and not
    learned from (k and u do not move). ``scale`` (d,), optional: per-feature rates D_j
    (diagonal preconditioning); the weights are then kept as u_j = w_j / D_j, so that the step
    w_j -= eta D_j g x_kj and the penalty eta D_j lam are the unscaled updates of u, and only the
    margin reads D_j. None (the default): D = 1.
    """
    data, indices, indptr, dense, y, s, order, first_row, holdout = examples
    lam, eta0, a, n_pass, average, fit_intercept = rule
    w, q, h, scal = weights
    for t in range(order.shape[0]):
        i = order[t]
        start, end = indptr[i], indptr[i + 1]
        u = scal[1]
        z = scal[0]
        for p in range(np.uint64(start), np.uint64(end)):  # unsigned: no wrap-around checks
            j = p - np.uint64(start) if dense else np.uint64(indices[p])
            _clip(w, q, j, u)  # catch up: w_j as the dense algorithm has it now
            if scale is None:
                z += data[p] * w[j]
            else:
                z += data[p] * scale[j] * w[j]
        held = holdout > 0 and (first_row + i) % holdout == holdout - 1
        score_example(stats, s[i] * loss_value(kind, y[i], z), s[i], end - start, held)
        if held:
            continue
        stats[5] += end - start  # the update reads x_i again
        k = scal[2]
        eta = eta0 * a ** (-k / n_pass)
        u += eta * lam
        scal[1] = u
        g = s[i] * loss_derivative(kind, y[i], z)
        if average:
            keep, new = (1.0 / (k + 1.0), k / (k + 1.0)) if k > 0 else (0.0, 1.0)
            h *= keep
            for p in range(np.uint64(start), np.uint64(end)):
                h[p - np.uint64(start) if dense else np.uint64(indices[p])] += new * g * data[p]
            scal[3] = keep * scal[3] + new * g
            for j in range(w.shape[0]):
                w[j] -= eta * h[j]
                _clip(w, q, j, u)
            if fit_intercept:
                scal[0] -= eta * scal[3]
        else:
            for p in range(np.uint64(start), np.uint64(end)):  # unsigned: no wrap-around checks
                j = p - np.uint64(start) if dense else np.uint64(indices[p])
                w[j] -= eta * g * data[p]
                _clip(w, q, j, u)
            if fit_intercept:
                scal[0] -= eta * g
        scal[2] = k + 1.0
    return stats


@njit(cache=True)
def _clip_all(w, q, u):
    """The penalty owed by every coordinate (end of a pass): O(d)."""
    for j in range(w.shape[0]):
        _clip(w, q, j, u)


class CumulativePenaltyState(OnlineState):
    """What SGD-C carries from one example to the next.

    Attributes
    ----------
    w, q : ndarray (d,)
        Weights and the L1 penalty each has received (signed sum of the clippings).
    h : ndarray (d,)
        The averaged gradient (``average_gradient=True``; zeros otherwise).
    scal : ndarray (4,)
        [intercept, u (total penalty per weight so far), k (examples learned from), averaged intercept gradient].
    n_seen : int
        Rows read (learned from or held out), for ``partial_fit``'s default N.
    rng : numpy Generator
        For ``shuffle``.
    """

    def __init__(self, n_features: int, fit_intercept: bool, random_state=None):
        super().__init__(n_features, fit_intercept, 4, random_state)
        self.w, self.q, self.h = np.zeros(n_features), np.zeros(n_features), np.zeros(n_features)
        self.n_seen = 0
        self.n_per_pass = None  # N: set from the problem by solve

    @property
    def coef(self) -> np.ndarray:
        return self.w * self.scale if self.scaled else self.w.copy()

    @property
    def n_updates(self) -> int:
        return int(self.scal[2])

    def set_weights(self, coef, intercept=0.0):
        """Start from (coef, intercept); the cumulative penalty starts afresh (u = q = 0)."""
        coef = self._checked_coef(coef)
        self.w[:] = coef / self.scale if self.scaled else coef
        self.q[:] = 0.0
        self.scal[0] = float(intercept) if self.fit_intercept else 0.0
        self.scal[1] = 0.0


class CumulativePenaltySGD(CalibratedEta0, OnlineSolver):
    """SGD with cumulative L1 penalty (SGD-C), lazy: O(nnz(x_k)) per example.

    Minimises P(w, b) = (1/W) sum_i s_i loss(y_i, x_i . w + b) + lam ||w||_1 (see the module
    docstring for the update; lam = the problem's lam, the paper's lambda / n).

    With the defaults (``schedule="auto"``, no ``eta0``) eta0 is calibrated on the data
    (:mod:`~l1scale.solvers.online_base`: Bottou's search around 1 / (beta (max_i ||x_i||^2 + 1)),
    beta the loss's curvature bound; the first pass at twice the best one-epoch rate) and ``a`` =
    300^(1/(max_iter - 1)) (``AUTO_FINAL_FRACTION``), so that the rate falls
    to eta0 / 300 at the last pass (the paper's a = 2 halves it every pass: sum_k eta_k =
    eta0 N / ln 2 is finite and the iterates stall short of the optimum). A given ``eta0`` (or
    ``schedule="paper"``) takes the paper's rule for what is left out: eta0 = 0.5, a = 2.

    Parameters
    ----------
    eta0 : float, optional
        Initial learning rate. Default: calibrated (``schedule="auto"``), 0.5 with
        ``schedule="paper"`` (the paper's). A stable step needs roughly eta loss'' ||x_i||^2 < 2.
        After a calibrated solve, ``eta0`` reads the rate it chose.
    a : float, optional
        Decay base: eta_k = eta0 * a^(-k/N), k counting the examples learned over all passes.
        Default 300^(1/(max_iter - 1)) with a calibrated rate, else 2 (the paper's: the rate
        halves every pass).
    n_per_pass : int, optional
        N. Default: the StreamProblem's n in :meth:`solve`; in ``partial_fit`` without it,
        the rows seen so far (this chunk's included).
    average_gradient : bool, default False
        Qin et al.'s eq. 11 gradient averaging; makes each step O(d).
    **kw
        ``max_iter``, ``holdout``, ``n_iter_no_change``, ``compute_objective``, ``shuffle`` (take the
        rows of each chunk in a random order), ``random_state``, ``schedule``, ``tol``,
        ``checkpoint``, ``callback``, ``verbose``: see :class:`~l1scale.solvers.online_base.OnlineSolver`.
    """

    name = "sgd_cumulative"
    pure_l1 = True

    def __init__(self, *, eta0=None, a=None, n_per_pass=None, average_gradient=False, **kw):
        super().__init__(**kw)
        if eta0 is not None and not eta0 > 0:
            raise ValueError(f"eta0 must be > 0, got {eta0!r}")
        if a is not None and not a >= 1:
            raise ValueError(f"a must be >= 1, got {a!r}")
        if n_per_pass is not None and int(n_per_pass) < 1:
            raise ValueError(f"n_per_pass must be >= 1, got {n_per_pass!r}")
        self.eta0_given = None if eta0 is None else float(eta0)
        self.a = None if a is None else float(a)
        self._eta0_resolved = None
        self.n_per_pass = None if n_per_pass is None else int(n_per_pass)
        self.average_gradient = bool(average_gradient)

    # -- the rates: given, calibrated (schedule="auto") or the paper's (schedule="paper")
    def _a(self) -> float:
        if self.a is not None:
            return self.a
        return 1.0 / self.auto_pass_decay() if self._auto_rate() else 2.0

    def _reference_rate(self, scale, state, fit_intercept, beta):
        return 1.0 / (beta * (scale.max_sq + float(fit_intercept))) if scale.max_sq > 0 else 1.0

    def _supports_scale(self) -> bool:
        return True

    def _trial(self, rate):
        trial = copy.copy(self)
        trial.eta0_given, trial.a = float(rate), 1.0
        trial.holdout, trial.shuffle, trial.random_state, trial.checkpoint = 0, True, 0, None
        return trial

    def new_state(self, n_features, fit_intercept) -> CumulativePenaltyState:
        return CumulativePenaltyState(n_features, fit_intercept, self.random_state)

    def _start(self, problem, state, fresh):
        super()._start(problem, state, fresh)
        state.n_per_pass = problem.n_samples  # N of eta_k = eta0 a^(-k/N)

    def _learn(self, state, rows, y, s, first_row, pass_index, *, kind, l1, l2, holdout):
        n = y.shape[0]
        state.n_seen += n
        n_pass = self.n_per_pass or state.n_per_pass or state.n_seen
        order = self._order(state, n)
        examples = Examples.of(rows, y, s, order, first_row, holdout)
        if self._auto_rate() and state.rate is not None:
            self._eta0_resolved = state.rate
        rule = _Rule(l1, self._eta0_of(state), self._a(), float(n_pass), self.average_gradient, state.fit_intercept)
        weights = _Weights(state.w, state.q, state.h, state.scal)
        if state.scaled:
            return _sgd_c_rows(kind, examples, rule, weights, np.zeros(len(STATS)), state.scale)
        return _sgd_c_rows(kind, examples, rule, weights, np.zeros(len(STATS)))

    def _catch_up(self, state):
        _clip_all(state.w, state.q, state.scal[1])
