"""The state a CD solve carries from step to step: the iterate with its margins, losses and
residuals (:class:`Iterate`), the driver's loop state (:class:`Loop`), and the checkpoint that
saves both (:func:`saved_state`, :func:`restore_state`)."""

from __future__ import annotations

import copy
from dataclasses import MISSING, dataclass, fields

import numpy as np

from ..exceptions import CheckpointError
from ..losses import weighted_terms_along, weighted_value
from . import _cd_kernels as kernels
from ._support_factor import SupportFactor

__all__ = ["Iterate", "Loop", "restore_state", "saved_state"]

_EPS = float(np.finfo(np.float64).eps)


class Iterate:
    """The iterate (w, b) and what the driver keeps at it: margins, per-sample losses, r and
    D, the loss sum and the penalty; a second set of margins and losses for line-search
    trials, swapped in on acceptance. The problem's data are read, never written."""

    def __init__(self, problem, coef_init, intercept_init):
        n, d = problem.n_samples, problem.n_features
        self.problem = problem
        self.w = np.zeros(d) if coef_init is None else np.array(coef_init, dtype=np.float64).reshape(d)
        self.b = float(intercept_init or 0.0) if problem.fit_intercept else 0.0
        if coef_init is None and intercept_init is None and problem.fit_intercept:
            self.b = problem.null_intercept()  # the optimum at w = 0: recenter's solve starts there
        self.z, self.lv, self.z_new, self.lv_new = np.zeros(n), np.zeros(n), np.empty(n), np.empty(n)
        self.r, self.D, self.xTd = np.empty(n), np.empty(n), np.zeros(n)
        self.loss_sum, self.pen, self.reads = 0.0, 0.0, 0
        self.moves = 0  # accepted moves: a quantity solved at the iterate holds while this stays
        # Moves since the margins were last summed from scratch, and the largest max|z| + |b| since:
        # what bounds the maintained margins' rounding (``rounding_bound``).
        self.rounded, self.z_peak = 0, 0.0
        # The support's Newton systems are factorised (set by a solve, for a path's next lam): for
        # good (CG stopped at its cap), or while the last factorisation reaches the support.
        self.factorise, self.factorise_near = False, False
        self.gram_first = 0.0  # the last solve's model Gram-matrix price (a dense path's next lam starts there)
        self.factor = None  # the last factorisation of such a system (_support_newton; it preconditions the next)
        self.gram_cache = None  # CD's models' Gram matrices, where the curvature does not move (_gram_cache)
        self.refresh()

    @property
    def objective(self) -> float:
        return self.loss_sum + self.pen

    def set_problem(self, problem):
        """The same data at another lam (a path's next solve): only the penalty changes."""
        self.problem = problem
        self.pen = problem.penalty.value(self.w)

    def refresh(self):
        """Margins from scratch (from the nonzero weights), then :meth:`recenter`."""
        self.reads += kernels.support_margins(*self.problem.columns.arrays, self.w, self.b, self.z)
        self.rounded, self.z_peak = 0, kernels.largest_magnitude(self.z) + abs(self.b)
        self.pen = self.problem.penalty.value(self.w)
        self.recenter()

    def recenter(self):
        """b made optimal for the margins of w (when fitted); loss terms, r and D at the margins."""
        problem = self.problem
        if problem.fit_intercept:
            zw = self.z - self.b
            self.b = problem.optimal_intercept(zw, self.b)
            zw += self.b
            self.z = zw
        self.xTd[:] = 0.0
        self.lv[:] = 0.0
        self.loss_sum = weighted_terms_along(
            problem.loss.kernel_id,
            problem.y,
            self.z,
            self.xTd,
            0.0,
            problem.c,
            self.lv,
            self.z_new,
            self.lv_new,
            self.r,
            self.D,
        )
        self.accept()
        self.centered = True

    def recentered_copy(self):
        """A copy whose margins, losses, r and D are its own, with b made optimal for w there
        (:meth:`recenter`); everything else (w, the factorisation, the Gram cache) shared. A
        solve can take a certificate on it and adopt it (``vars(self).update(vars(copy))``) or
        drop it, the iterate left as it was."""
        other = copy.copy(self)
        for name in ("z", "lv", "z_new", "lv_new", "r", "D", "xTd"):
            setattr(other, name, getattr(self, name).copy())
        other.recenter()
        return other

    def accept(self):
        """The trial margins and losses become the current ones."""
        self.z, self.z_new, self.lv, self.lv_new = self.z_new, self.z, self.lv_new, self.lv
        self.moves += 1
        self.rounded += 1
        self.z_peak = max(self.z_peak, kernels.largest_magnitude(self.z) + abs(self.b))

    def objective_within(self, rtol) -> float:
        """P(w, b) to within rtol |P| of :meth:`exact_objective`'s, without its pass where
        :meth:`rounding_bound` allows: the maintained losses' sum (taken afresh, not the running
        sum of changes). A path's lam at tol 1e-3 (rtol 1e-6; ~150 moves, a bound ~1e-12) skips
        a read of the support's columns and a pass of exps and logs; at tol 1e-10 (1e-13) the
        margins are summed afresh, as before."""
        self.pen = self.problem.penalty.value(self.w)
        loss = float(self.problem.c @ self.lv)
        if self.rounding_bound() > rtol * abs(loss + self.pen):
            loss = self._loss_from_scratch()
        return loss + self.pen

    def rounding_bound(self) -> float:
        """A bound on how far the rounding of the maintained margins since they were last summed
        from scratch moves the loss sum_i c_i loss(y_i, z_i) (inf where the loss's curvature has
        no bound).

        Each accepted move forms z + t dz (a product and a sum) or, recentring, (z - b) + b': at
        most 3 eps (max|z| + |b|) a margin (|z - b| can exceed both), so after k moves |dz_i| <=
        delta = 3 k eps peak, peak the largest max|z| + |b| met since. With the loss's curvature at
        most beta, the loss moves by at most sum_i |r_i| delta + beta / 2 sum_i c_i delta^2."""
        beta = self.problem.loss.curvature_bound
        if beta is None:
            return np.inf
        delta = 3.0 * _EPS * self.rounded * self.z_peak
        return delta * float(np.abs(self.r).sum()) + 0.5 * beta * float(self.problem.c.sum()) * delta * delta

    def exact_objective(self) -> float:
        """P(w, b) from margins recomputed from scratch (the maintained ones drift by rounding), and
        the penalty too (``pen``, a running sum of changes, is set to it)."""
        self.pen = self.problem.penalty.value(self.w)
        return self._loss_from_scratch() + self.pen

    def _loss_from_scratch(self) -> float:
        """sum_i c_i loss(y_i, z_i) at margins summed afresh from the support's columns."""
        problem = self.problem
        z = np.empty(problem.n_samples)
        kernels.support_margins(*problem.columns.arrays, self.w, self.b, z)
        return float(weighted_value(problem.loss.kernel_id, problem.y, z, problem.c))


# The loop state's index arrays (entry -> may be None) and the lower bounds of its counters.
_LOOP_INDICES = {"kept": False, "ws": True, "last_support": True}
_LOOP_LOW = {"ws_size": 1, "it": 0, "recorded": -1, "certified_reads": 0, "newton_spent": 0}
# Entries added after checkpoints of this format were first written: a checkpoint without one
# resumes with its default (what the solver that wrote it did).
_LOOP_ADDED = {"gram_factorised", "warm_round"}


@dataclass
class Loop:
    """The driver's loop state: where the rounds stand (working set, targets, counters, flags).
    With the iterate, its arrays and the best dual point, it is what a checkpoint saves."""

    kept: np.ndarray  # features in play: not screened out
    ws: np.ndarray | None = None  # the working set of the current round
    ws_size: int = 100
    ws_target: float = np.inf  # the round ends when the working set's largest violation is below this
    full_pass: bool = True  # the next pass is over every kept feature (and certifies)
    first_step: bool = False  # no step taken yet in this round
    vmax_prev: float = np.inf  # largest violation of the last step (liblinear's shrinking)
    vsum_init: float | None = None  # sum of violations at the round's first step (inner tolerance)
    inner_eps: float = 1.0
    failed: bool = False  # a line search found no decrease
    stalled: bool = False  # the objective no longer moves (float resolution)
    it: int = 0  # Newton steps taken
    recorded: int = -1  # the iteration of the last History row
    last_support: np.ndarray | None = None
    last_gap: float = np.inf
    full_newton_step: bool = True  # the last support-Newton step was not cut short
    stall_cert: float = np.inf
    gram_first: float = 0.0  # the price of the last model's Gram matrix, when it was solved on one
    cg_capped: bool = False  # the last support-Newton CG solve stopped at its cap of products
    direct: bool = False  # support-Newton systems are factorised (a CG solve stopped at its whole cap)
    gram_factorised: bool = False  # and so since a CG solve factorised its Gram matrix, while that reaches
    warm_round: bool = False  # the round is a warm start's first (a path's lam, from the last one's gradient)
    newton_spent: int = 0  # nonzeros read by support-Newton solves since the support last moved far
    newton_below: float = np.inf  # support-Newton steps wait until the largest violation is below this
    certified_reads: int = 0  # nonzeros read by the end of the last certificate
    newton_least: float = 5.0  # the least CG products of the next budgeted support-Newton solve

    def checkpoint_entries(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def restore(self, saved, d):
        """Every entry of a checkpoint, checked (index ranges, types, bounds)."""
        for f in fields(self):
            name, kind = f.name, type(f.default) if f.default is not MISSING else np.ndarray
            if name in _LOOP_ADDED and name not in saved:
                value = f.default
            elif name in _LOOP_INDICES:
                value = saved.optional_indices(name, d) if _LOOP_INDICES[name] else saved.indices(name, d)
            elif name == "vsum_init":
                value = saved.optional_scalar(name)
            elif kind is bool:
                value = saved.scalar(name, bool)
            elif kind is int:
                value = saved.scalar(name, int, _LOOP_LOW[name])
            else:
                value = saved.scalar(name)
            setattr(self, name, value)


def saved_state(pt, wpd, g, H, st, dual, history, timer) -> dict:
    """What a checkpoint at the top of an iteration saves: the iterate, the driver's arrays, the loop
    state, the best dual point, the History, the coordinate order's random state and the time
    spent (:func:`restore_state` loads it back)."""
    return {
        "w": pt.w,
        "b": pt.b,
        "z": pt.z,
        "lv": pt.lv,
        "z_new": pt.z_new,
        "lv_new": pt.lv_new,
        "r": pt.r,
        "D": pt.D,
        "xTd": pt.xTd,
        "loss_sum": pt.loss_sum,
        "pen": pt.pen,
        "reads": pt.reads,
        "rounded": pt.rounded,
        "z_peak": pt.z_peak,
        "centered": bool(getattr(pt, "centered", False)),
        # The last factorisation, by what rebuilds it bit for bit (O(n + k) bytes).
        "factor_support": None if pt.factor is None else pt.factor.support,
        "factor_D": None if pt.factor is None else pt.factor.D,
        "factor_ridge": 0.0 if pt.factor is None else pt.factor.ridge,
        "factor_exact": pt.factor is not None and pt.factor.moves == pt.moves,
        "wpd": wpd,
        "g": g,
        "H": H,
        **st.checkpoint_entries(),
        "best_dual": dual.best_dual,
        "best_corr": dual.best_corr,
        "best_point": dual.best_point,
        "history": history.as_dict(),
        "rng": _numba_random_state(),
        "elapsed": timer(),
    }


def restore_state(saved, problem, pt, wpd, g, H, dual, history, timer, st):
    """Load a checkpoint into the iterate, the arrays, the loop state ``st`` and the coordinate
    order's random state (in place), every value checked (shapes, index ranges)."""
    d = problem.n_features
    for name in ("z", "lv", "z_new", "lv_new", "r", "D", "xTd"):
        saved.into(name, getattr(pt, name))
    saved.into("w", pt.w)
    pt.b = saved.scalar("b")
    pt.loss_sum, pt.pen = saved.scalar("loss_sum"), saved.scalar("pen")
    pt.reads, pt.centered = saved.scalar("reads", int, 0), saved.scalar("centered", bool)
    # A checkpoint written before these were saved: its margins' rounding is unknown (no bound).
    has_bound = "rounded" in saved and "z_peak" in saved
    pt.rounded = saved.scalar("rounded", int, 0) if has_bound else 2**40
    pt.z_peak = saved.scalar("z_peak", float, 0.0) if has_bound else np.inf
    factor_support = saved.optional_indices("factor_support", d)
    if factor_support is not None:
        D = saved.array("factor_D", (problem.n_samples,))
        pt.factor, _ = SupportFactor.at(problem, D, factor_support, ridge=saved.scalar("factor_ridge"))
        if pt.factor is not None:  # the move count is the run's own: only its equality carries
            pt.factor.moves = pt.moves if saved.scalar("factor_exact", bool) else -1
    for name, target in (
        ("wpd", wpd),
        ("g", g),
        ("H", H),
        ("best_corr", dual.best_corr),
        ("best_point", dual.best_point),
    ):
        saved.into(name, target)
    # ``active`` is not restored: each pass writes active[:m] before any step reads it (its tail
    # is scratch), so the saved copy would only be garbage to check.
    dual.best_dual = saved.scalar("best_dual")
    saved.history(history)
    timer.exclude(-saved.scalar("elapsed"))
    _set_numba_random_state(saved)
    st.restore(saved, d)


def _numba_random_state():
    """The state of this thread's Numba generator (``np.random`` inside jitted code, which
    draws the coordinate order): Mersenne Twister's position and 624 words."""
    from numba import _helperlib  # Numba's own accessors (what its tests use)

    index, words = _helperlib.rnd_get_state(_helperlib.rnd_get_np_state_ptr())
    return {"index": int(index), "words": [int(x) for x in words]}


def _set_numba_random_state(saved):
    from numba import _helperlib

    state = saved.value("rng", dict)
    index, words = state.get("index"), state.get("words")
    if not (
        isinstance(index, int)
        and 0 <= index <= 624
        and isinstance(words, list)
        and len(words) == 624
        and all(isinstance(x, int) and 0 <= x < 2**32 for x in words)
    ):
        raise CheckpointError("entry 'rng' is not a Mersenne Twister state", saved.path)
    _helperlib.rnd_set_state(_helperlib.rnd_get_np_state_ptr(), (index, words))
