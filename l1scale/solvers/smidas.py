"""SMIDAS: stochastic mirror descent made sparse (Shalev-Shwartz & Tewari 2009, Algorithm 3).

It minimises the streamed problem of :class:`~l1scale.problems.StreamProblem`

    P(w, b) = (1/W) sum_i s_i loss(y_i, x_i . w + b) + lam ||w||_1

(pure L1; the paper's form with m = n) by mirror descent with the p-norm link,
p = 2 ln d (d >= 3; p = 2, plain truncated SGD, below; with calibrated rates
min(2 ln d, max(3, 2 ln(k / n))), :func:`auto_p`), q = p / (p - 1). It keeps a dual
vector theta in R^d; the weights are

    w = f^{-1}(theta),   w_j = sign(theta_j) |theta_j|^(p-1) / ||theta||_p^(p-2)   (w = 0 when theta = 0)

and each example i (the paper samples i uniformly at random from the m examples; here the
rows of each chunk are shuffled every pass with a calibrated rate, ``shuffle``, and come in stream order
with ``shuffle=False``, a given ``eta`` or ``schedule="paper"``) makes the step

    v       = s_i loss'(w . x_i + b, y_i) x_i
    theta~  = theta - eta v
    theta_j = sign(theta~_j) max(0, |theta~_j| - eta lam)      for all j
    b      -= eta_b s_i loss'(...)                             (the unpenalised intercept: a plain SGD step)

The paper has a constant ``eta`` (tuned over 1e-6..1e-1) and no intercept. Two additions:
``eta_decay`` lowers both rates across passes, eta_z = eta / (1 + eta_decay z) at pass
z = 0, 1, ... (``eta_decay=0``: the paper's constant rate; a constant rate leaves the
iterates at a noise floor, and in stream order they settle into a cycle that repeats every
pass); and the intercept has its own rate ``eta_intercept``, because the p-norm link moves w_j
by about eta (|theta_j| / ||theta||_p)^(p-2) (p - 1), a small fraction of eta for all but the largest
coordinates, so the eta that suits w (0.1-3 in our tests) is far too large for a plain
SGD step on b. A fresh :meth:`SMIDAS.solve` starts b at the intercept-only optimum b0.

**Cost per example: O(nnz(x_i)), amortised.** Sec. 3.1 of the paper keeps
zeta_j = |theta_j|^(p-1) and the scalar sigma_1 = sum_j |theta_j|^p (so w_j = zeta_j / sigma_1^(1-2/p))
and updates them through the nonzeros of x_i, with the L1 shrink of the other coordinates
applied lazily (ALGORITHMS.md section 3). Shrinks compose (two by a and by b are one by
a + b), so a coordinate can owe them exactly: ``shrunk`` is the shrink every coordinate has
been owed since the chunk began and shrunk_to[j] what j has had. An example first makes its
own coordinates pay (so every w_j its score reads is exact), then takes its step on them.
What deferral cannot keep exact is sigma_1: the shrink ``for all j`` lowers every nonzero
|theta_j|, and sum_j (|theta_j| - S_j)_+^p has, for non-integer p, no finite set of running
sums. So sigma_1 is a running sum, exact for the coordinates paid and late by the others'
debts, and the whole support pays (sigma_1 summed anew) once the coordinates updated since the
last time reach the support's size (``SETTLE``): each sweep costs at most what the examples
since did, so an example costs O(nnz(x_i)) amortised, where Algorithm 3 as written
(``exact=True``: the sweep after every example) costs O(nnz(x_i) + nnz(theta)).
``History.data_accesses`` counts the nonzeros of X read (nnz(x_i) per example, as the paper's
Figure 1); ``state.support_work`` counts the coordinate updates, sweeps included.

Measured on the 48 settings of the stochastic-defaults page (3,000 rows, 50 passes, logistic,
0.1 and 0.01 lam_max, with and without intercept; ``benchmarks/bench_smidas_deferred.py``): the
relative suboptimality of the deferred form is that of the exact one to within 3% of itself in
every setting (32 of 48 within 1e-3 with either), and the support work per nonzero read falls
from up to 176 to at most 1.75: earn at 0.01 lam_max 5.1 s -> 1.1 s, text 3,000 x 20,000 at 0.01
25 s -> 0.7 s, 10,000 x 100,000 at 0.01 200 s -> 2.9 s.

Numerics: zeta_j is stored relative to a scale c (||theta||_p at a sweep, moved only when the
norm leaves [c / 2, 2 c]): zeta_j = (|theta_j| / c)^(p-1) and w_j = sign(theta_j) zeta_j c
(c / ||theta||_p)^(p-2), so that |theta_j|^p never overflows at p = 2 ln d ~ 20-30; the running
sum is summed anew whenever it falls below ``_LOST`` of its last exact value (its rounding is
relative to that value).
"""

from __future__ import annotations

import copy
from typing import NamedTuple

import numpy as np
from numba import njit

from ..exceptions import CheckpointError
from ..losses import loss_derivative, loss_value
from .online_base import STATS, Examples, OnlineSolver, OnlineState, largest_row_norms, score_example

__all__ = ["AUTO_P", "SETTLE", "SMIDAS", "SMIDASState", "auto_p", "smidas_p"]


def smidas_p(n_features: int) -> float:
    """The paper's p = 2 ln d (d >= 3); 2 (plain truncated gradient) for d < 3."""
    return max(2.0, 2.0 * np.log(n_features)) if n_features >= 3 else 2.0


#: ``schedule="auto"`` with no ``p`` given: the least p of the link (:func:`auto_p`).
AUTO_P = 3.0

#: The deferred shrinks are paid once the coordinates updated since they last were reach SETTLE
#: times the support's size (``exact=False``): the sweep costs at most what the examples did.
SETTLE = 1.0
#: The running sum of (|theta_j| / c)^p is summed anew once it falls below this share of its
#: last exact value (its rounding is relative to that value).
_LOST = 1e-3


def auto_p(n_features: int, mean_row_nnz: float = 0.0, n_rows: int = 0) -> float:
    """The link's p under calibrated rates: min(2 ln d, max(AUTO_P, 2 ln(k / n))), with k the
    mean number of nonzeros of a row and n the rows (without them, min(2 ln d, AUTO_P)).

    The p-norm bound is (p - 1) ||x||_p^2 ||w*||_q^2 per step. The paper's p = 2 ln d makes
    ||x||_p <= e^(1/2) ||x||_inf for any row, so that its bound needs only the largest |x_ij|; but
    with w_j ~ |theta_j|^(p-1) (p - 1 = 19 on earn) only the largest few coordinates of theta
    move, and the many weights of a solution at small lam are learned slowly. For a row of k
    nonzeros and a solution of s, the bound is least near p = 2 ln(k / s); s is unknown before the
    solve, but an L1 solution has at most n nonzeros, so p >= 2 ln(k / n): that is what the
    paper's p is kept near on wide dense data with few rows (arcene: k = 5,400, n = 100, p = 8).
    Measured over the 48 settings of benchmarks/results/stochastic_defaults.md (50 passes),
    p = 3 or 4 beats 2 ln d wherever the rows are sparse: text at 0.01 lam_max 0.47 -> 0.032
    relative suboptimality, w8a at 0.01 with intercept 0.43 -> 0.036, earn at 0.01 without
    intercept 2.3e-3 -> 7.7e-5."""
    p = AUTO_P
    if n_rows > 0 and mean_row_nnz > n_rows:
        p = max(p, 2.0 * np.log(mean_row_nnz / n_rows))
    return min(smidas_p(n_features), p)


@njit(cache=True, inline="always")
def _drop(theta, zeta, active, where, counts, shrunk_to, j):
    """Take j off the support (theta_j = zeta_j = shrunk_to[j] = 0): the last entry takes its place."""
    theta[j] = zeta[j] = shrunk_to[j] = 0.0
    m = where[j]
    last = active[counts[0] - 1]
    active[m], where[last] = last, m
    where[j] = -1
    counts[0] -= 1


@njit(cache=True, inline="always")
def _pay(theta, zeta, active, where, counts, shrunk_to, j, owed, reset, c, p, scale):
    """Coordinate j (on the support) pays the shrink ``owed`` (times scale[j]): theta_j and zeta_j =
    (|theta_j| / c)^(p-1) afresh and shrunk_to[j] = ``reset``, or j off the support once it reaches
    0. Returns its term (|theta_j| / c)^p of the norm's sum (0 when it left)."""
    r = abs(theta[j]) - (owed if scale is None else owed * scale[j])
    if r <= 0.0:
        _drop(theta, zeta, active, where, counts, shrunk_to, j)
        return 0.0
    shrunk_to[j] = reset
    theta[j] = np.copysign(r, theta[j])
    zeta[j] = (r / c) ** (p - 1.0)
    return zeta[j] * (r / c)


@njit(cache=True, inline="always")
def _settle(theta, zeta, active, where, counts, shrunk_to, shrunk, reset, c, p, scale=None):
    """Every shrink the support still owes, applied: coordinate j owes ``shrunk - shrunk_to[j]``
    (times scale[j]); then shrunk_to[j] = ``reset`` and zeta_j = (|theta_j| / c)^(p-1) afresh.
    Returns sum_j (|theta_j| / c)^p over the support, summed anew (no running sum's rounding)."""
    total = 0.0
    counts[1] += counts[0]
    m = counts[0] - 1
    while m >= 0:  # backwards: the entry swapped into a freed place has been done already
        j = active[m]
        total += _pay(theta, zeta, active, where, counts, shrunk_to, j, shrunk - shrunk_to[j], reset, c, p, scale)
        m -= 1
    return total


@njit(cache=True, inline="always")
def _largest(theta, active, counts):
    """max_j |theta_j| over the support (0 when it is empty)."""
    c = 0.0
    for m in range(counts[0]):
        c = max(c, abs(theta[active[m]]))
    return c


@njit(cache=True, inline="always")
def _factor(c, total, p):
    """F with w_j = sign(theta_j) zeta_j F: c (c / ||theta||_p)^(p-2), ||theta||_p = c total^(1/p)."""
    return c * total ** ((2.0 - p) / p) if total > 0.0 else 0.0


class _Rule(NamedTuple):
    """SMIDAS's step for one chunk: lam (the L1 weight), the rates of w and of the intercept,
    the p of the p-norm link, and ``settle``: the support's owed shrinks are applied once the
    coordinates updated since they last were reach ``settle`` times the support's size (0: after
    every example, Algorithm 3 as written)."""

    lam: float
    eta: float
    eta_b: float
    p: float
    settle: float


class _Weights(NamedTuple):
    """SMIDAS's state (changed in place; see :func:`_smidas_rows`)."""

    theta: np.ndarray
    zeta: np.ndarray
    active: np.ndarray
    where: np.ndarray
    scal: np.ndarray
    counts: np.ndarray
    shrunk_to: np.ndarray


@njit(cache=True, nogil=True)  # the reader thread reads the next chunk meanwhile
def _smidas_rows(kind, examples, rule, weights, stats, scale=None):
    """SMIDAS over the rows of one chunk, in place, in O(nnz(x_i)) per example (amortised).

    ``examples``: the chunk (:class:`~l1scale.solvers.online_base.Examples`); ``rule``:
    :class:`_Rule`; ``weights``: :class:`_Weights` (theta, zeta, where, shrunk_to (d,); active (d,)
    the support of theta in its first counts[0] entries, where[j] j's position there or -1; scal
    (3,) = [intercept b, scale c, factor F] with w_j = sign(theta_j) zeta_j F and zeta_j =
    (|theta_j| / c)^(p-1); counts (2,) int64 = [support size, coordinate updates]); stats (6,)
    the :data:`STATS` sums (added to). ``scale`` (d,), optional: per-feature scales r_j (diagonal
    preconditioning): SMIDAS then runs in the coordinates v_j = w_j / r_j, on the features
    r_j x_ij with the L1 weight lam r_j (the same problem); None (the default): r = 1.

    The shrink of the coordinates an example does not touch is deferred (the module docstring):
    ``shrunk`` is the shrink every coordinate has been owed since the chunk began, shrunk_to[j]
    how much of it j has had. On entry and on return theta owes nothing (shrunk_to = 0 on the
    support) and zeta is relative to scal[1].
    """
    data, indices, indptr, dense, y, s, order, first_row, holdout = examples
    lam, eta, eta_b, p, settle = rule
    theta, zeta, active, where, scal, counts, shrunk_to = weights
    c = scal[1] if scal[1] > 0.0 else _largest(theta, active, counts)
    total = _settle(theta, zeta, active, where, counts, shrunk_to, 0.0, 0.0, c, p, scale) if c > 0.0 else 0.0
    settled_total, since, shrunk = total, 0, 0.0
    F = _factor(c, total, p)
    for t in range(order.shape[0]):
        i = order[t]
        start, end = indptr[i], indptr[i + 1]
        # The coordinates of x_i pay what they owe: w_j is then exact where the score reads it.
        if shrunk > 0.0:
            for pp in range(np.uint64(start), np.uint64(end)):  # unsigned: no wrap-around checks
                j = pp - np.uint64(start) if dense else np.uint64(indices[pp])
                if where[j] < 0 or shrunk_to[j] == shrunk or data[pp] == 0.0:
                    continue
                total -= zeta[j] * (abs(theta[j]) / c)
                owed = shrunk - shrunk_to[j]
                total += _pay(theta, zeta, active, where, counts, shrunk_to, j, owed, shrunk, c, p, scale)
                since += 1
                counts[1] += 1
            if total < _LOST * settled_total:  # the running sum lost its digits: sum it anew
                total = _settle(theta, zeta, active, where, counts, shrunk_to, shrunk, shrunk, c, p, scale)
                settled_total, since = total, 0
            F = _factor(c, total, p)
        z = scal[0]
        for pp in range(np.uint64(start), np.uint64(end)):  # unsigned: no wrap-around checks
            j = pp - np.uint64(start) if dense else np.uint64(indices[pp])
            if zeta[j] != 0.0:
                xj = data[pp] if scale is None else data[pp] * scale[j]
                z += xj * np.copysign(zeta[j], theta[j]) * F
        held = holdout > 0 and (first_row + i) % holdout == holdout - 1
        score_example(stats, s[i] * loss_value(kind, y[i], z), s[i], end - start, held)
        if held:
            continue
        stats[5] += end - start  # the update reads x_i again
        dz = s[i] * loss_derivative(kind, y[i], z)
        g = eta * dz
        shrunk += eta * lam  # this example's shrink, owed by every coordinate
        empty = c == 0.0  # theta was 0: zeta's scale is the largest new |theta_j|
        for pp in range(
            np.uint64(start), np.uint64(end)
        ):  # theta~ = theta - eta v, then the shrink, on x_i's coordinates
            j = pp - np.uint64(start) if dense else np.uint64(indices[pp])
            if data[pp] == 0.0:  # a stored zero leaves theta_j as an absent one does: its shrink waits
                continue
            xj = data[pp] if scale is None else data[pp] * scale[j]
            a = abs(theta[j])
            if where[j] >= 0 and not empty:
                total -= zeta[j] * (a / c)
            v = theta[j] - g * xj
            r = abs(v) - (eta * lam if scale is None else eta * lam * scale[j])
            since += 1
            counts[1] += 1
            if r <= 0.0:
                if where[j] >= 0:
                    _drop(theta, zeta, active, where, counts, shrunk_to, j)
                continue
            if where[j] < 0:
                where[j] = counts[0]
                active[counts[0]] = j
                counts[0] += 1
            theta[j] = np.copysign(r, v)
            shrunk_to[j] = shrunk
            if empty:
                c = max(c, r)
            else:
                zeta[j] = (r / c) ** (p - 1.0)
                total += zeta[j] * (r / c)
        scal[0] -= eta_b * dz
        if empty and c > 0.0:
            total = _settle(theta, zeta, active, where, counts, shrunk_to, shrunk, shrunk, c, p, scale)
            settled_total, since = total, 0
        elif since >= settle * counts[0] or total < _LOST * settled_total:
            # The untouched coordinates pay what they owe (amortised: at most once per
            # ``settle`` times the support's size of updates), and ||theta||_p is exact again.
            total = _settle(theta, zeta, active, where, counts, shrunk_to, shrunk, shrunk, c, p, scale)
            if total > 0.0 and not 0.5 <= total ** (1.0 / p) <= 2.0:
                c *= total ** (1.0 / p)  # zeta's scale follows ||theta||_p (no overflow at p ~ 20-30)
                total = _settle(theta, zeta, active, where, counts, shrunk_to, shrunk, shrunk, c, p, scale)
            settled_total, since = total, 0
        if counts[0] == 0:
            c = total = settled_total = 0.0
        F = _factor(c, total, p)
    if c > 0.0:
        total = _settle(theta, zeta, active, where, counts, shrunk_to, shrunk, 0.0, c, p, scale)
    scal[1], scal[2] = c, _factor(c, total, p)
    return stats


def _link(v, r):
    """sign(v_j) |v_j|^(r-1) / ||v||_r^(r-2): the p-norm link (r = p: theta -> w) and its
    inverse (r = q: w -> theta), computed with the largest |v_j| factored out (no overflow)."""
    a = np.abs(v)
    if not a.any():
        return np.zeros_like(a)
    norm = float(np.sum((a / a.max()) ** r) ** (1.0 / r) * a.max())
    return np.sign(v) * norm * (a / norm) ** (r - 1.0)


class SMIDASState(OnlineState):
    """What SMIDAS carries from one example to the next.

    Attributes
    ----------
    theta : ndarray (d,)
        The dual vector.
    zeta : ndarray (d,)
        (|theta_j| / c)^(p-1) (0 off the support).
    active, where : ndarray (d,) of int64
        The support of theta (first ``counts[0]`` entries) and each coordinate's place in it (-1: none).
    scal : ndarray (3,)
        [intercept, c, F]: w_j = sign(theta_j) zeta_j F, with c zeta's scale (near ||theta||_p).
    counts : ndarray (2,) of int64
        [support size, support work (coordinate updates so far: an example's own and the sweeps')].
    shrunk_to : ndarray (d,)
        The kernel's record of the deferred shrinks each coordinate has had (0 between chunks).
    p : float
    """

    def __init__(self, n_features: int, fit_intercept: bool, p=None, random_state=None):
        super().__init__(n_features, fit_intercept, 3, random_state)
        self.p = smidas_p(n_features) if p is None else float(p)
        self.theta, self.zeta = np.zeros(n_features), np.zeros(n_features)
        self.active = np.zeros(n_features, dtype=np.int64)
        self.where = np.full(n_features, -1, dtype=np.int64)
        self.counts = np.zeros(2, dtype=np.int64)
        self.shrunk_to = np.zeros(n_features)  # the kernel's deferred shrinks (0 between chunks)
        # schedule="auto": the reference rates of theta and of the intercept (set with the rate)
        self.rate_ref = self.intercept_ref = None

    @property
    def coef(self) -> np.ndarray:
        """w = f^{-1}(theta), from theta itself (times the per-feature scales, when in use)."""
        w = _link(self.theta, self.p)
        return w * self.scale if self.scaled else w

    @property
    def support_work(self) -> int:
        return int(self.counts[1])

    def set_weights(self, coef, intercept=0.0):
        """theta = f(coef): f_j(w) = sign(w_j) |w_j|^(q-1) / ||w||_q^(q-2), q = p / (p - 1)."""
        coef = self._checked_coef(coef)
        self.theta[:] = _link(coef / self.scale if self.scaled else coef, self.p / (self.p - 1.0))
        support = np.flatnonzero(self.theta)
        self.where[:] = -1
        self.active[: support.size] = support
        self.where[support] = np.arange(support.size)
        self.counts[0] = support.size
        self.shrunk_to[:] = 0.0
        a = np.abs(self.theta)
        c = float(np.sum((a / a.max()) ** self.p) ** (1.0 / self.p) * a.max()) if support.size else 0.0
        self.zeta[:] = 0.0 if c == 0.0 else (a / c) ** (self.p - 1.0)
        self.scal[:] = (float(intercept) if self.fit_intercept else 0.0, c, c)


class SMIDAS(OnlineSolver):
    """SMIDAS (Algorithm 3): p-norm stochastic mirror descent with an L1 shrink of the dual.

    Minimises P(w, b) = (1/W) sum_i s_i loss(y_i, x_i . w + b) + lam ||w||_1; see the module
    docstring for the update and its cost, O(nnz(x_i)) per example (amortised).

    With the defaults (``schedule="auto"``, no ``eta``) the rates are calibrated on the data
    (:mod:`~l1scale.solvers.online_base`): the reference rate of theta is the curvature bound of
    the p-norm geometry, (q - 1) / (beta max_i ||x_i||_p^2) (the link is (q - 1)-strongly convex
    in the q-norm, the loss beta ||x_i||_p^2-smooth in it), that of the intercept
    1 / (beta (max_i ||x_i||_2^2 + 1)); Bottou's search scales both by the same 2^k. Both then
    decay geometrically across passes to 1/300 at the last pass. A given ``eta`` keeps the
    fixed rules for what is left out (eta_intercept = 0.03, eta_decay = 1); ``schedule="paper"``
    is the paper's constant rate (eta = 0.1, eta_decay = 0, eta_intercept = 0.03).

    Parameters
    ----------
    eta : float, optional
        Learning rate of theta (the paper's eta). Default: calibrated (``schedule="auto"``),
        0.1 with ``schedule="paper"`` (tune it, as the paper does). After a calibrated solve,
        ``eta`` reads the rate it chose.
    eta_intercept : float, optional
        Learning rate of the intercept (a plain SGD step). Default: calibrated with eta, else 0.03.
    eta_decay : float, optional
        Both rates are divided by 1 + eta_decay z at pass z = 0, 1, ... (0: the paper's constant
        rate). Default: the geometric decay to 1/300 with calibrated rates, 1 with a given
        ``eta``, 0 with ``schedule="paper"``.
    p : float, optional
        The link's p (>= 2). Default: with calibrated rates (``schedule="auto"``, no ``eta``)
        min(2 ln d, max(3, 2 ln(k / n))), k the mean nonzeros of a row and n the rows, from the
        rate's pass (:func:`auto_p`); with the paper's rules or a given ``eta``, the paper's
        2 ln d (2 when d < 3).
    exact : bool, default False
        True: every example shrinks the whole support of theta and recomputes ||theta||_p
        (Algorithm 3 as written, O(nnz(x_i) + nnz(theta)) per example). False: the shrink of the
        coordinates an example does not touch is deferred and paid in one sweep once the
        coordinates updated reach the support's size (O(nnz(x_i)) per example, amortised); an
        example's own coordinates are always exact, ||theta||_p counts the others' deferred shrink
        late (see the module docstring).
    **kw
        ``max_iter``, ``holdout``, ``n_iter_no_change``, ``compute_objective``, ``shuffle`` (take the
        rows of each chunk in a random order: the paper samples uniformly with replacement from
        the whole data set; a stream gives them in order), ``random_state``, ``schedule``, ``tol``,
        ``checkpoint``, ``callback``, ``verbose``: see :class:`~l1scale.solvers.online_base.OnlineSolver`.
    """

    name = "smidas"
    pure_l1 = True

    def __init__(self, *, eta=None, eta_intercept=None, eta_decay=None, p=None, exact=False, **kw):
        super().__init__(**kw)
        self.exact = bool(exact)
        if eta is not None and not eta > 0:
            raise ValueError(f"eta must be > 0, got {eta!r}")
        if eta_decay is not None and not eta_decay >= 0:
            raise ValueError(f"eta_decay must be >= 0, got {eta_decay!r}")
        if p is not None and not p >= 2:
            raise ValueError(f"p must be >= 2, got {p!r}")
        if eta_intercept is not None and not eta_intercept >= 0:
            raise ValueError(f"eta_intercept must be >= 0, got {eta_intercept!r}")
        self.eta_given = None if eta is None else float(eta)
        self.eta_decay, self.p = (None if eta_decay is None else float(eta_decay)), p
        self.eta_intercept = None if eta_intercept is None else float(eta_intercept)
        self._eta_resolved = None

    # -- the rates: given, calibrated (schedule="auto") or fixed (a given eta, schedule="paper")
    @property
    def eta(self):
        """The rate of theta: as given, else the one the last calibrated solve chose (None before)."""
        return self.eta_given if self.eta_given is not None else self._eta_resolved

    @eta.setter
    def eta(self, value):
        self.eta_given = None if value is None else float(value)

    def _auto_rate(self) -> bool:
        return self.schedule == "auto" and self.eta_given is None

    def _rates(self, state, pass_index):
        """(eta, eta_intercept) of pass ``pass_index`` (0-based)."""
        if self._auto_rate() and state.rate is not None:  # None: nothing learned yet (an empty chunk)
            eta = state.rate
            eta_b = self.eta_intercept if self.eta_intercept is not None else _intercept_rate(eta, state)
            decay = 1.0 / self.auto_pass_decay() ** pass_index if self.eta_decay is None else None
        else:
            eta = self.eta_given if self.eta_given is not None else 0.1
            eta_b = self.eta_intercept if self.eta_intercept is not None else 0.03
            decay = None
        if decay is None:
            rule = self.eta_decay if self.eta_decay is not None else (1.0 if self.eta_given is not None else 0.0)
            decay = 1.0 + rule * pass_index
        return eta / decay, eta_b / decay

    def _norm_p(self, state):
        return state.p

    def _reference_rate(self, scale, state, fit_intercept, beta):
        q_minus_1 = 1.0 / (state.p - 1.0)
        ref = q_minus_1 / (beta * scale.max_p_sq) if scale.max_p_sq > 0 else 1.0
        ref = ref if np.isfinite(ref) and ref > 0 else 1.0  # rows of 1e300: the calibration finds out
        state.rate_ref, state.intercept_ref = ref, 1.0 / (beta * (scale.max_sq + 1.0))
        return ref

    def _supports_scale(self) -> bool:
        return True

    def _kernel_scale(self, D):
        return np.sqrt(D)  # r_j: the rescaled coordinates v_j = w_j / r_j

    def _trial(self, rate):
        trial = copy.copy(self)
        trial.eta_given, trial.eta_decay = float(rate), 0.0
        trial.holdout, trial.shuffle, trial.random_state, trial.checkpoint = 0, True, 0, None
        trial._trial_intercept_ratio = True
        return trial

    def link_p(self, n_features: int) -> float:
        """The link's p for ``n_features`` when the state is made: as given; else :func:`auto_p`
        with calibrated rates (``schedule="auto"``, no ``eta``; the rate's pass then refines it
        from the rows, :meth:`_choose_rates`), the paper's 2 ln d with its rules or a given rate."""
        if self.p is not None:
            return float(self.p)
        return auto_p(n_features) if self._auto_rate() else smidas_p(n_features)

    def new_state(self, n_features, fit_intercept) -> SMIDASState:
        return SMIDASState(n_features, fit_intercept, self.link_p(n_features), self.random_state)

    def _choose_rates(self, state, X, y, s, scale, feats, *, loss, l1, l2):
        """With no ``p`` given, the link's p from the rows the rate's pass read (:func:`auto_p`:
        their mean nonzeros and number), then the rates calibrated in that geometry."""
        if self.p is None and feats.rows > 0:
            p = auto_p(state.n_features, float(feats.nnz.sum()) / feats.rows, feats.rows)
            if p != state.p:
                coef, b = state.coef, state.intercept  # a warm start's weights, kept
                state.p = p
                state.set_weights(coef, b)
                if not self._preconditioned():  # else the preconditioning measures the sample in p
                    scale = scale._replace(max_p_sq=largest_row_norms(X, p)[1])
        super()._choose_rates(state, X, y, s, scale, feats, loss=loss, l1=l1, l2=l2)

    def _check_restored(self, state, saved):
        """The support list and its inverse, which the kernel indexes with, are consistent:
        ``active[:counts[0]]`` in [0, d) and ``where[active[k]] == k``, every other ``where`` -1."""
        d, m = state.n_features, int(state.counts[0])
        ok = 0 <= m <= d and state.counts[1] >= 0
        if ok:
            support = state.active[:m]
            ok = bool(((support >= 0) & (support < d)).all()) and bool(((state.where >= -1) & (state.where < d)).all())
            ok = ok and bool((state.where[support] == np.arange(m)).all()) and int((state.where >= 0).sum()) == m
        if not ok:
            raise CheckpointError("the SMIDAS support list is inconsistent (corrupted state)", saved.path)

    def _start(self, problem, state, fresh):
        """A fresh state starts at w = 0 and the intercept-only optimum b0 (from the problem's
        label scan): the p-norm steps are slow to move the intercept."""
        if fresh and problem.fit_intercept:
            state.scal[0] = problem.intercept_only()

    def _learn(self, state, rows, y, s, first_row, pass_index, *, kind, l1, l2, holdout):
        n = y.shape[0]
        order = self._order(state, n)
        if getattr(self, "_trial_intercept_ratio", False):  # calibration: both rates scaled together
            eta = self.eta_given
            eta_b = self.eta_intercept if self.eta_intercept is not None else _intercept_rate(eta, state)
        else:
            if self._auto_rate() and state.rate is not None:
                self._eta_resolved = state.rate
            eta, eta_b = self._rates(state, pass_index)
        examples = Examples.of(rows, y, s, order, first_row, holdout)
        rule = _Rule(l1, eta, eta_b if state.fit_intercept else 0.0, state.p, 0.0 if self.exact else SETTLE)
        weights = _Weights(
            state.theta, state.zeta, state.active, state.where, state.scal, state.counts, state.shrunk_to
        )
        if state.scaled:
            return _smidas_rows(kind, examples, rule, weights, np.zeros(len(STATS)), state.scale)
        return _smidas_rows(kind, examples, rule, weights, np.zeros(len(STATS)))


def _intercept_rate(eta, state):
    """schedule="auto": the intercept's rate for the rate ``eta`` of theta, the reference
    intercept rate scaled as eta is scaled from its reference, but never above it (the
    curvature bound of a plain SGD step on b)."""
    return state.intercept_ref * min(eta / state.rate_ref, 1.0)
