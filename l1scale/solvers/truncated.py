"""Truncated gradient, coefficient rounding and the L1 subgradient (Langford, Li & Zhang, seed 3).

Online stochastic gradient descent on the mean-form problem of
:class:`~l1scale.problems.StreamProblem` (ALGORITHMS.md section 4): per example,
with the margin z_i = x_i . w + b taken *before* the example is learned from,

    w <- w - eta_t s_i loss'(y_i, z_i) x_i,     b <- b - eta_t s_i loss'(y_i, z_i),

followed, at every K-th learning step (steps t = K, 2K, ...), by one of three sparsifiers:

- ``"truncated"``: w_j <- T1(w_j, eta_t K g, theta), with
  T1(v, a, theta) = sgn(v) max(0, |v| - a) if |v| <= theta, else v;
  theta = inf (the default) is the Lasso-like special case (sec. 3.5);
- ``"rounding"``: w_j <- T0(w_j, theta) = 0 if |w_j| <= theta, else w_j (sec. 3.1);
- ``"l1_subgradient"``: w_j <- w_j - eta_t K g sgn(w_j) (eq. 5, K = 1 by default); the weights returned
  by ``solve`` are rounded to zero at the end of training where |w_j| <= theta (when given) or the
  amplitude of the last penalty step, eta_T K g (the state keeps the unrounded weights).

The intercept b is never penalised. Lazy updates (sec. 4): each feature keeps the step
through which its penalties have been applied and the running sum C = sum_t eta_t g_t
at that step; when the feature next occurs, the penalties owed since then are applied
at once, then the gradient step; a step costs O(nnz(x_i)), whatever d, and
:meth:`TruncatedGradient._catch_up` settles every feature at the end of a pass (O(d)).
The lazy weights equal those of the dense algorithm (every weight penalised at every
K-th step) to rounding: see ``_settle`` for why. For the default sparsifier (truncated,
theta = inf: soft-thresholding) a feature's state is one float64, sign(w_j) (|w_j| + c_j)
with c_j the running sum when it was last touched: the weight now is
sgn max(0, |stored| - C), computed without a branch (see ``soft_threshold_rows``). One exception to the cost: an L1
subgradient weight whose owed penalty crosses 0 oscillates around 0 in the dense
algorithm, and the owed steps are replayed one by one (O(steps since its last
update)); that dust of tiny nonzeros is why the paper finds the subgradient method
infeasible at scale.
"""

from __future__ import annotations

import copy
import math
from typing import NamedTuple

import numpy as np
from numba import njit

from ..losses import loss_derivative, loss_value
from .online_base import STATS, CalibratedEta0, Examples, OnlineSolver, score_example

__all__ = ["SPARSIFIERS", "TruncatedGradient", "TruncatedState"]

SPARSIFIERS = {"truncated": 0, "rounding": 1, "l1_subgradient": 2}


@njit(cache=True, inline="always")
def _eta(t, eta0, t0, power):
    """Learning rate of learning step t = 1, 2, ...: eta0 (t0 / (t0 + t - 1))^power."""
    if power == 0.0:
        return eta0
    return eta0 * (t0 / (t0 + (t - 1))) ** power


class Rule(NamedTuple):
    """The update rule of a chunk's steps (fixed during the kernel call).

    Attributes
    ----------
    mode : int
        The sparsifier (:data:`SPARSIFIERS`).
    K : int
        The sparsifier acts at every K-th learning step.
    theta : float
        Threshold of T1 and of rounding (inf: none).
    eta0, t0, power : float
        The learning rate of step t, eta0 (t0 / (t0 + t - 1))^power (eta0 with the pass's decay).
    gK : float
        The penalty of a sparsifier step per unit rate, gravity * K.
    fit_intercept : bool
        The intercept learns (else it stays as it is).
    """

    mode: int
    K: int
    theta: float
    eta0: float
    t0: float
    power: float
    gK: float
    fit_intercept: bool


class Slots(NamedTuple):
    """The lazy weights of any sparsifier (changed in place): w, last, c_last (d,) (views of one
    (d, 3) array: the three values of a feature share a cache line); scalars = [b, C] (2,);
    clock = [t] (1,), the learning steps so far."""

    w: np.ndarray
    last: np.ndarray
    c_last: np.ndarray
    scalars: np.ndarray
    clock: np.ndarray


class Shifted(NamedTuple):
    """The soft-threshold weights (changed in place): stored (d,), sign(w_j) (|w_j| + c_j);
    scalars = [b, C] (2,); clock = [t] (1,)."""

    stored: np.ndarray
    scalars: np.ndarray
    clock: np.ndarray


@njit(cache=True, inline="always")
def _settle(rule, wj, last_j, c_last_j, t, C):
    """w_j after the penalties of steps last_j + 1 .. t (owed since its last update), under ``rule``
    (:class:`Rule`).

    Between two occurrences of feature j only the sparsifier changes w_j, so the owed
    penalties compose in closed form:

    - truncated: each T1 either leaves w_j (|w_j| > theta, which then stays > theta) or
      shrinks it toward 0 and stops at 0 (|w_j| <= theta, which stays <= theta), so
      T1(T1(v, a1), a2) = T1(v, a1 + a2): one shrink by the owed C - c_last_j, exactly
      (for theta = inf, soft-thresholding by the owed sum);
    - rounding: T0 is idempotent: applied once if a rounding step (a multiple of K)
      lies in (last_j, t];
    - L1 subgradient: exact in O(1) while the owed sum is below |w_j| (no sign change);
      beyond that the weight oscillates around 0 with steps eta_t K g, and the owed
      steps are replayed one by one (the cost of the subgradient's dust of tiny nonzeros).
    """
    mode, K, theta = rule.mode, rule.K, rule.theta
    if mode == 1:
        if t // K > int(last_j) // K and abs(wj) <= theta:
            return 0.0
        return wj
    owed = C - c_last_j
    if owed <= 0.0 or wj == 0.0:
        return wj
    if mode == 0:
        if abs(wj) > theta:
            return wj
        if wj > 0.0:
            return max(0.0, wj - owed)
        return min(0.0, wj + owed)
    if abs(wj) > owed:
        return wj - owed if wj > 0.0 else wj + owed
    k = (int(last_j) // K + 1) * K
    while k <= t and wj != 0.0:
        a = _eta(k, rule.eta0, rule.t0, rule.power) * rule.gK
        wj = wj - a if wj > 0.0 else wj + a
        k += K
    return wj


@njit(cache=True, nogil=True)  # the reader thread reads the next chunk meanwhile
def _truncated_rows(kind, ex, rule, lazy, stats):
    """Progressive validation and lazy truncated-gradient learning over one chunk, in place.

    ``ex``: the chunk (:class:`~l1scale.solvers.online_base.Examples`), read; ``rule``:
    :class:`Rule`; ``lazy``: :class:`Slots`, updated; stats (6,) as online_base.STATS.
    Row i is scored with its features' owed penalties applied; a holdout row
    ((first_row + i) % holdout == holdout - 1) is then skipped, any other learned from.
    """
    data, indices, indptr, dense, y, s = ex.data, ex.indices, ex.indptr, ex.dense, ex.y, ex.s
    order, first_row, holdout = ex.order, ex.first_row, ex.holdout
    w, last, c_last, scalars, clock = lazy.w, lazy.last, lazy.c_last, lazy.scalars, lazy.clock
    K, eta0, t0, power, gK = rule.K, rule.eta0, rule.t0, rule.power, rule.gK
    b, C, t = scalars[0], scalars[1], clock[0]
    for r in range(order.shape[0]):
        i = order[r]
        start, end = indptr[i], indptr[i + 1]
        z = b
        for p in range(np.uint64(start), np.uint64(end)):  # unsigned: no wrap-around checks
            j = p - np.uint64(start) if dense else np.uint64(indices[p])
            wj = _settle(rule, w[j], last[j], c_last[j], t, C)
            w[j] = wj
            last[j] = t
            c_last[j] = C
            z += data[p] * wj
        held = holdout > 0 and (first_row + i) % holdout == holdout - 1
        score_example(stats, s[i] * loss_value(kind, y[i], z), s[i], end - start, held)
        if held:
            continue
        t += 1
        eta = _eta(t, eta0, t0, power)
        step = eta * s[i] * loss_derivative(kind, y[i], z)
        if step != 0.0:
            stats[5] += end - start  # the update reads x_i again
            for p in range(np.uint64(start), np.uint64(end)):  # unsigned: no wrap-around checks
                j = p - np.uint64(start) if dense else np.uint64(indices[p])
                w[j] -= step * data[p]
            if rule.fit_intercept:
                b -= step
        if t % K == 0:
            C += eta * gK  # this step's penalty: owed by every feature, x_i's included
    scalars[0], scalars[1], clock[0] = b, C, t


@njit(cache=True, inline="always")
def _unshift(stored, C):
    """Feature j's weight now, from its stored sign(w) (|w| + c_j): sgn max(0, |stored| - C).
    A weight stored as 0 (or as +-c_j for w = 0) stays 0: it owes nothing."""
    return math.copysign(max(abs(stored) - C, 0.0), stored)


@njit(cache=True, nogil=True)  # the reader thread reads the next chunk meanwhile
def soft_threshold_rows(kind, ex, rule, shifted, stats, scale=None):
    """``_truncated_rows`` for the soft-threshold sparsifier (truncated, theta = inf), in place.

    ``shifted`` (:class:`Shifted`): stored (d,), sign(w_j) (|w_j| + c_j) with c_j = C when w_j
    was last touched; ``rule.mode`` and ``rule.theta`` are not read; the rest as ``_truncated_rows``.
    A truncation owed since then is a shrink by C - c_j,
    so w_j = sgn max(0, |stored_j| - C): one float64 per feature (8 MiB at d = 2^20, where
    the (d, 3) layout takes 24) and no data-dependent branch, whose mispredictions
    (zero or not, sign) cost more than the arithmetic on wide text.

    ``scale`` (d,), optional: per-feature rates D_j (diagonal preconditioning). The weights are
    then kept as u_j = w_j / D_j: the step w_j -= eta D_j g x_ij and the truncation by
    eta D_j gK are u_j -= eta g x_ij and a shrink of u_j by eta gK, the same lazy updates, and
    only the margin reads D_j (w_j = D_j u_j). None (the default): D = 1, the paper's steps.
    """
    data, indices, indptr, dense, y, s = ex.data, ex.indices, ex.indptr, ex.dense, ex.y, ex.s
    order, first_row, holdout = ex.order, ex.first_row, ex.holdout
    stored, scalars, clock = shifted.stored, shifted.scalars, shifted.clock
    K, eta0, t0, power, gK = rule.K, rule.eta0, rule.t0, rule.power, rule.gK
    b, C, t = scalars[0], scalars[1], clock[0]
    for r in range(order.shape[0]):
        i = order[r]
        start, end = indptr[i], indptr[i + 1]
        z = b
        for p in range(np.uint64(start), np.uint64(end)):  # unsigned: no wrap-around checks
            j = p - np.uint64(start) if dense else np.uint64(indices[p])
            if scale is None:
                z += data[p] * _unshift(stored[j], C)
            else:
                z += data[p] * scale[j] * _unshift(stored[j], C)
        held = holdout > 0 and (first_row + i) % holdout == holdout - 1
        score_example(stats, s[i] * loss_value(kind, y[i], z), s[i], end - start, held)
        if held:
            continue
        t += 1
        eta = _eta(t, eta0, t0, power)
        step = eta * s[i] * loss_derivative(kind, y[i], z)
        if step != 0.0:
            stats[5] += end - start  # the update reads x_i again
            for p in range(np.uint64(start), np.uint64(end)):  # unsigned: no wrap-around checks
                j = p - np.uint64(start) if dense else np.uint64(indices[p])
                wj = _unshift(stored[j], C) - step * data[p]
                stored[j] = math.copysign(abs(wj) + C, wj)  # w_j = 0 stores +-C: it unshifts to 0
            if rule.fit_intercept:
                b -= step
        if t % K == 0:
            C += eta * gK
    scalars[0], scalars[1], clock[0] = b, C, t


@njit(cache=True)
def unshift_all(stored, C, out):
    """out = the weights of a soft-threshold state (stored, out of shape (d,))."""
    for j in range(stored.shape[0]):
        out[j] = _unshift(stored[j], C)


@njit(cache=True)
def _settle_all(rule, w, last, c_last, t, C):
    """Apply every feature's owed penalties under ``rule`` (w, last, c_last of shape (d,)), in place."""
    for j in range(w.shape[0]):
        w[j] = _settle(rule, w[j], last[j], c_last[j], t, C)
        last[j] = t
        c_last[j] = C


class TruncatedState:
    """Weights and lazy-update book-keeping of :class:`TruncatedGradient`.

    Two layouts, chosen by the solver's sparsifier:

    - soft-threshold (truncated with theta = inf, the default): ``w`` (d,) holds
      sign(w_j) (|w_j| + c_j), c_j the running penalty sum C when w_j was last touched
      (``soft_threshold_rows``); at the end of a pass ``settle`` rebases C to 0, so ``w``
      then holds the weights themselves;
    - any other sparsifier: ``slots`` (d, 3), one row [w_j, c_last_j, last_j] per feature
      (``w``, ``c_last``, ``last`` are views), so that a visit touches one cache line.

    Attributes
    ----------
    soft_threshold : bool
        Which layout.
    w : ndarray (d,) of float64
        The weights as last touched (shifted in the soft-threshold layout; ``coef`` applies
        what they still owe).
    last, c_last : ndarray (d,) or None
        Step through which each feature's penalties are applied and C at that step (slots layout).
    scalars : ndarray (2,)
        [intercept, C now].
    clock : ndarray (1,) of int64
        Learning steps taken (over all passes).
    """

    def __init__(self, n_features: int, fit_intercept: bool, solver: TruncatedGradient):
        self.n_features, self.fit_intercept = int(n_features), bool(fit_intercept)
        self.scalars = np.zeros(2)
        self.clock = np.zeros(1, dtype=np.int64)
        self.solver = solver
        self._layout(solver.soft_threshold)
        self.rng = np.random.default_rng(0 if solver.random_state is None else solver.random_state)  # shuffle
        self.gravity = 0.0  # g, set by the solver's first chunk
        self.rate_scale = 1.0  # pass_decay ** pass of the current pass
        self.rate = None  # eta0 as schedule="auto" calibrated it (None: not yet, or eta0 given)
        self.scale = np.ones(self.n_features)  # per-feature rates D (soft-threshold layout; precondition)
        self.scaled = False  # whether ``scale`` is in use: then ``w`` holds w_j / D_j
        # Column offsets while a solve learns on centred columns (OnlineSolver.solve); 0: none.
        self.center = np.zeros(self.n_features)

    def _layout(self, soft_threshold: bool):
        self.soft_threshold = bool(soft_threshold)
        if self.soft_threshold:
            self.slots = self.last = self.c_last = None
            self.w = np.zeros(self.n_features)
        else:
            self.slots = np.zeros((self.n_features, 3))
            self.w, self.c_last, self.last = self.slots[:, 0], self.slots[:, 1], self.slots[:, 2]
            self.last[:] = self.clock[0]
            self.c_last[:] = self.scalars[1]

    def relayout(self, soft_threshold: bool):
        """Switch layouts (a solver with another sparsifier continues from this state)."""
        if bool(soft_threshold) != self.soft_threshold:
            coef = self.coef
            self._layout(soft_threshold)
            self.scale[:], self.scaled = 1.0, False  # per-feature rates: soft-threshold layout only
            self.set_weights(coef, self.scalars[0])

    def rule(self) -> Rule:
        """The kernels' update rule: the solver's sparsifier and schedule, at the state's gravity
        and pass."""
        sv = self.solver
        return Rule(
            SPARSIFIERS[sv.sparsifier],
            sv.K,
            sv._theta,
            sv._eta0_of(self) * self.rate_scale,
            sv.t0,
            sv._power_t,
            self.gravity * sv.K,
            self.fit_intercept,
        )

    def settle(self):
        """Apply all owed penalties to w (O(d)); the soft-threshold layout rebases C to 0."""
        if self.soft_threshold:
            unshift_all(self.w, self.scalars[1], self.w)
            self.scalars[1] = 0.0
            return
        _settle_all(self.rule(), self.w, self.last, self.c_last, int(self.clock[0]), float(self.scalars[1]))

    @property
    def coef(self) -> np.ndarray:
        """The up-to-date weights (a copy; the state is not changed)."""
        if self.soft_threshold:
            out = np.empty(self.n_features)
            unshift_all(self.w, self.scalars[1], out)
            return out * self.scale if self.scaled else out
        slots = self.slots.copy()
        _settle_all(self.rule(), slots[:, 0], slots[:, 2], slots[:, 1], int(self.clock[0]), float(self.scalars[1]))
        return slots[:, 0].copy()

    @property
    def intercept(self) -> float:
        return float(self.scalars[0]) if self.fit_intercept else 0.0

    def shift_intercept(self, delta: float):
        """b += delta (the solve's centring undone)."""
        self.scalars[0] += delta

    @property
    def steps(self) -> int:
        return int(self.clock[0])

    def set_weights(self, coef, intercept=0.0):
        coef = np.asarray(coef, dtype=np.float64)
        if coef.shape != (self.n_features,):
            raise ValueError(f"coef has shape {coef.shape}, expected ({self.n_features},)")
        if self.soft_threshold:
            self.scalars[1] = 0.0  # nothing owed: stored = w
        else:
            self.last[:] = self.clock[0]
            self.c_last[:] = self.scalars[1]
        self.w[:] = coef / self.scale if self.scaled else coef
        self.scalars[0] = float(intercept) if self.fit_intercept else 0.0


class TruncatedGradient(CalibratedEta0, OnlineSolver):
    r"""Online L1 learning by truncated gradient, rounding or L1 subgradient (Langford, Li & Zhang 2009).

    Minimises, in the limit of a decaying rate, the mean-form problem

    .. math::

        P(w, b) = \frac{1}{W} \sum_i s_i \, \mathrm{loss}(y_i, x_i \cdot w + b) + \lambda \, \|w\|_1,
        \qquad W = \sum_i s_i,

    by stochastic (sub)gradient steps on one example at a time: example i's gradient
    s_i / mean(s) loss'(y_i, z_i) x_i is an unbiased estimate of the loss part's, and the
    sparsifier applies the penalty every K steps (see the module docstring for the update
    rules and the lazy updates that make a step cost O(nnz(x_i))).

    Conversion from the paper: its gravity g is a per-example penalty, so g = lam * l1_ratio
    of the mean form (the default); its learning rate eta is ours; its K and theta are ours.
    With ``sparsifier="truncated"``, theta = inf and K = 1 the update is the proximal
    (soft-thresholding) stochastic gradient step on P; rounding and the L1 subgradient
    do not minimise P exactly (rounding is a heuristic; the subgradient leaves weights
    oscillating around 0 with amplitude eta_t g instead of exact zeros).

    Learning rate, t counting the learning steps over all passes (holdout examples excluded),
    p = pass - 1 (``pass_decay`` is VW's ``--decay_learning_rate``, the paper's "decay of the
    learning rate across passes"):

    .. math::

        \eta_t = \eta_0 \, \mathrm{pass\_decay}^{p} \, \left(\frac{t_0}{t_0 + t - 1}\right)^{\mathrm{power\_t}},
        \quad t = 1, 2, \dots

    With the defaults (``schedule="auto"``, no ``eta0``) eta0 is calibrated on the data
    (:mod:`~l1scale.solvers.online_base`: Bottou's search around 1 / (beta (max_i ||x_i||^2 + 1)),
    beta the loss's curvature bound), the rate is constant within a pass (power_t = 0) and
    decays across passes by ``pass_decay`` = 300^(-1/(max_iter - 1)): the paper's multiple-pass
    mode, with the rate and decay taken from the data and the number of passes. A given
    ``eta0`` (or ``schedule="paper"``) takes VW's schedule for what is left out: eta0 = 0.5,
    power_t = 0.5, t0 = 1, pass_decay = 1.

    Parameters
    ----------
    sparsifier : {"truncated", "rounding", "l1_subgradient"}, default "truncated"
    gravity : float, optional
        g. Default: the problem's lam * l1_ratio.
    K : int, default 1
        Apply the sparsifier every K learning steps (with gravity K g).
    theta : float, optional
        Threshold of T1 (default inf: every weight is truncated) and of rounding (required
        there: it has no sensible default); the L1 subgradient ignores it.
    eta0 : float, optional
        Initial learning rate. Default: calibrated (``schedule="auto"``), 0.5 with
        ``schedule="paper"`` (VW's, for rows of norm about 1). After a calibrated solve,
        ``eta0`` reads the rate it chose.
    power_t : float, optional
        Decay exponent within the passes (0: constant rate). Default 0 with a calibrated rate,
        else 0.5 (VW's).
    t0 : float, default 1.0
        Offset of the step count (VW's initial_t): the rate is eta0 at t = 1 and starts to
        decay after about t0 steps.
    pass_decay : float, optional
        Multiplies the rate once per pass. Default 300^(-1/(max_iter - 1)) with a calibrated
        rate, else 1.
    **kw
        ``max_iter``, ``holdout``, ``n_iter_no_change``, ``compute_objective``, ``shuffle``,
        ``random_state``, ``schedule``, ``tol``, ``checkpoint``, ``callback``, ``verbose``: see
        :class:`~l1scale.solvers.online_base.OnlineSolver`.

    Notes
    -----
    VW's schedule makes a good online learner in one pass; to approach the batch optimum
    the default (or the paper's multiple-pass mode, a constant rate within a pass decayed
    across passes) is the one to use. The last weights touched keep a dust of size eta_t
    (the penalty owed since has not yet caught up with their gradient step): the final model
    is sparse, but not the batch support.

    Only the pure L1 penalty (l1_ratio = 1) is supported: the L2 part of an elastic net
    would scale every weight at every step, which the lazy updates do not carry.
    """

    name = "truncated_gradient"
    pure_l1 = True
    needs_label_pass = False  # starts at w = 0, b = 0; its rates do not depend on n
    requires = ()

    def __init__(
        self,
        *,
        sparsifier="truncated",
        gravity=None,
        K=1,
        theta=None,
        eta0=None,
        power_t=None,
        t0=1.0,
        pass_decay=None,
        **kw,
    ):
        super().__init__(**kw)
        if sparsifier not in SPARSIFIERS:
            raise ValueError(f"sparsifier={sparsifier!r}; choose one of {sorted(SPARSIFIERS)}")
        if gravity is not None and not (np.isfinite(gravity) and gravity >= 0):
            raise ValueError(f"gravity must be a finite number >= 0, got {gravity!r}")
        if int(K) != K or K < 1:
            raise ValueError(f"K must be an integer >= 1, got {K!r}")
        if theta is not None and not theta >= 0:
            raise ValueError(f"theta must be >= 0, got {theta!r}")
        if sparsifier == "rounding" and (theta is None or not np.isfinite(theta)):
            raise ValueError("sparsifier='rounding' needs a finite theta (the rounding threshold)")
        for what, v, low in (("eta0", eta0, 0.0), ("t0", t0, 0.0), ("pass_decay", pass_decay, 0.0)):
            if v is not None and not (np.isfinite(v) and v > low):
                raise ValueError(f"{what} must be a finite number > 0, got {v!r}")
        if power_t is not None and not (np.isfinite(power_t) and power_t >= 0):
            raise ValueError(f"power_t must be a finite number >= 0, got {power_t!r}")
        self.sparsifier, self.gravity, self.K, self.theta = sparsifier, gravity, int(K), theta
        self.eta0_given = None if eta0 is None else float(eta0)
        self.power_t = None if power_t is None else float(power_t)
        self.t0 = float(t0)
        self.pass_decay = None if pass_decay is None else float(pass_decay)
        self._theta = math.inf if theta is None else float(theta)
        self._eta0_resolved = None

    # -- the rates: given, calibrated (schedule="auto") or VW's (schedule="paper")
    @property
    def _power_t(self) -> float:
        return self.power_t if self.power_t is not None else (0.0 if self._auto_rate() else 0.5)

    def _pass_decay(self) -> float:
        if self.pass_decay is not None:
            return self.pass_decay
        return self.auto_pass_decay() if self._auto_rate() else 1.0

    def _reference_rate(self, scale, state, fit_intercept, beta):
        return 1.0 / (beta * (scale.max_sq + float(fit_intercept))) if scale.max_sq > 0 else 1.0

    def _supports_scale(self) -> bool:
        return self.soft_threshold

    def _trial(self, rate):
        trial = copy.copy(self)
        trial.eta0_given, trial.power_t, trial.pass_decay = float(rate), 0.0, 1.0
        trial.holdout, trial.shuffle, trial.random_state, trial.checkpoint = 0, True, 0, None
        return trial

    def _unpenalised(self, trial):
        trial.gravity = 0.0  # a gravity given explicitly too
        return trial

    @property
    def soft_threshold(self) -> bool:
        """Truncation at theta = inf: every weight soft-thresholded (the compact state layout)."""
        return self.sparsifier == "truncated" and self._theta == math.inf

    def new_state(self, n_features, fit_intercept) -> TruncatedState:
        return TruncatedState(n_features, fit_intercept, self)

    def _learn(self, state, rows, y, s, first_row, pass_index, *, kind, l1, l2, holdout):
        gravity = float(l1) if self.gravity is None else float(self.gravity)
        scale = self._pass_decay() ** pass_index
        if self._auto_rate() and state.rate is not None:
            self._eta0_resolved = state.rate
        if (gravity != state.gravity or scale != state.rate_scale) and state.steps > 0:
            state.settle()  # the owed penalties were accrued at the old gravity and rate
        state.relayout(self.soft_threshold)
        state.solver, state.gravity, state.rate_scale = self, gravity, scale
        stats = np.zeros(len(STATS))
        s = np.ascontiguousarray(s, dtype=np.float64)
        ex = Examples.of(rows, y, s, self._order(state, y.shape[0]), first_row, holdout)
        if state.soft_threshold and state.scaled:
            shifted = Shifted(state.w, state.scalars, state.clock)
            soft_threshold_rows(kind, ex, state.rule(), shifted, stats, state.scale)
        elif state.soft_threshold:
            soft_threshold_rows(kind, ex, state.rule(), Shifted(state.w, state.scalars, state.clock), stats)
        else:
            lazy = Slots(state.w, state.last, state.c_last, state.scalars, state.clock)
            _truncated_rows(kind, ex, state.rule(), lazy, stats)
        return stats

    def _catch_up(self, state):
        state.settle()

    def _final_weights(self, state, coef):
        """The L1 subgradient's weights oscillate around 0 instead of reaching it: at the end of
        training they are rounded (ALGORITHMS.md sec. 4), at ``theta`` when given, else at the
        amplitude of the last penalty step, eta_T K g."""
        if self.sparsifier != "l1_subgradient":
            return coef
        if np.isfinite(self._theta):
            threshold = self._theta
        else:
            t = max(int(state.clock[0]), 1)
            eta = self._eta0_of(state) * state.rate_scale * (self.t0 / (self.t0 + t - 1)) ** self._power_t
            threshold = eta * self.K * state.gravity
        return np.where(np.abs(coef) <= threshold, 0.0, coef)
